//! Test cases for guards: sequences of events, each with the net flow it
//! must get, run against a guard or a plugin directory.
//!
//! A case file is JSON:
//!
//! ```json
//! {
//!   "about": "what the file shows (optional)",
//!   "runs": [
//!     {
//!       "name": "shell is denied",
//!       "config": {"deny": "shell"},
//!       "steps": [
//!         {"event": {"event": "tool-call", "tool_name": "shell", "args": "{}"},
//!          "flow": {"flow": "skip", "reason": "`shell` is denied by policy"},
//!          "plugin": "no-shell",
//!          "logs": [["warn", "denied a call to `shell`"]],
//!          "scratchpad": {"denials": "1"}}
//!       ]
//!     }
//!   ]
//! }
//! ```
//!
//! | key | meaning |
//! |---|---|
//! | `runs` | each run is a fresh run: new instances, empty scratchpads |
//! | `name` | how failures name the run (default: `run N`) |
//! | `config` | the guard's settings for this run (a single guard only: a directory's plugins take theirs from `hookbox.toml`) |
//! | `event` | an event in its JSON form (docs/contract.md#json-forms) |
//! | `flow` | the net flow in its JSON form, exactly; a run that fails closed is `{"fail_closed": {"plugin": P, "cause": C}}` |
//! | `plugin` | the plugin that decided (`null`: none did) |
//! | `logs` | the guests' log lines for this event, `[level, message]` |
//! | `scratchpad` | the guard's scratchpad after the event, exactly; for a directory, `{PLUGIN: {KEY: VALUE}}` for the plugins named |
//! | `shadow` | what shadow plugins would have done (`Decision::shadow` in JSON) |
//!
//! Keys left out of a step are not checked, but `flow`, which is required.
//! A step may also be written short, `[event, flow, logs, scratchpad]`, as
//! `languages/conformance/` does; there, logs and scratchpad left out mean
//! none.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use hookbox::{HookStack, Outcome, Plugin, PluginOptions, StepEvent};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::Error;

/// One case file.
#[derive(Clone, Debug)]
pub struct CaseFile {
    /// Where it was read from.
    pub path: PathBuf,
    /// What it shows.
    pub about: Option<String>,
    /// Its runs.
    pub runs: Vec<CaseRun>,
}

/// A fresh run and its steps.
#[derive(Clone, Debug)]
pub struct CaseRun {
    /// How failures name it.
    pub name: String,
    /// The guard's settings for this run.
    pub config: Option<BTreeMap<String, String>>,
    /// Its events, in order.
    pub steps: Vec<Step>,
}

/// An event and what must follow it.
#[derive(Clone, Debug)]
pub struct Step {
    /// The event.
    pub event: StepEvent,
    /// What is expected, by what it is about (`flow`, `plugin`, `logs`,
    /// `scratchpad`, `shadow`); what is not here is not checked.
    pub expect: BTreeMap<&'static str, Value>,
}

/// The checks a step can carry, in the order failures list them.
const CHECKS: [&str; 5] = ["flow", "plugin", "logs", "scratchpad", "shadow"];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileForm {
    #[serde(default)]
    about: Option<String>,
    runs: Vec<RunForm>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RunForm {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    config: Option<BTreeMap<String, ConfigText>>,
    steps: Vec<Value>,
}

/// A setting: text, or a number or boolean written as JSON.
#[derive(Deserialize)]
#[serde(untagged)]
enum ConfigText {
    Text(String),
    Other(serde_json::Number),
    Bool(bool),
}

impl ConfigText {
    fn text(self) -> String {
        match self {
            ConfigText::Text(s) => s,
            ConfigText::Other(n) => n.to_string(),
            ConfigText::Bool(b) => b.to_string(),
        }
    }
}

impl CaseFile {
    /// Reads and parses a case file.
    ///
    /// # Errors
    /// [`Error::Cases`] naming the run and step at fault.
    pub fn read(path: &Path) -> Result<CaseFile, Error> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        CaseFile::parse(path, &text)
    }

    /// Parses `text`, read from `path`.
    ///
    /// # Errors
    /// [`Error::Cases`] naming the run and step at fault.
    pub fn parse(path: &Path, text: &str) -> Result<CaseFile, Error> {
        let bad = |reason: String| Error::Cases {
            path: path.to_path_buf(),
            reason,
        };
        let form: FileForm = serde_json::from_str(text).map_err(|e| bad(format!("{e}")))?;
        let mut runs = Vec::with_capacity(form.runs.len());
        for (r, run) in form.runs.into_iter().enumerate() {
            let name = run.name.unwrap_or_else(|| format!("run {}", r + 1));
            let steps = run
                .steps
                .into_iter()
                .enumerate()
                .map(|(s, step)| {
                    parse_step(step).map_err(|e| bad(format!("run `{name}`, step {}: {e}", s + 1)))
                })
                .collect::<Result<_, _>>()?;
            runs.push(CaseRun {
                name,
                config: run
                    .config
                    .map(|c| c.into_iter().map(|(k, v)| (k, v.text())).collect()),
                steps,
            });
        }
        Ok(CaseFile {
            path: path.to_path_buf(),
            about: form.about,
            runs,
        })
    }
}

fn parse_step(step: Value) -> Result<Step, String> {
    let event = |value: &Value| {
        serde_json::from_value::<StepEvent>(value.clone()).map_err(|e| {
            format!(
                "`event` is not an event in hookbox's JSON form (docs/contract.md#json-forms): {e}"
            )
        })
    };
    let mut expect = BTreeMap::new();
    let event = match step {
        Value::Array(parts) => {
            if !(2..=4).contains(&parts.len()) {
                return Err(
                    "a short step is [event, flow, logs, scratchpad] (2 to 4 items)".into(),
                );
            }
            let mut parts = parts.into_iter();
            let event = event(&parts.next().unwrap_or_default())?;
            expect.insert("flow", parts.next().unwrap_or_default());
            expect.insert("logs", parts.next().unwrap_or_else(|| json!([])));
            expect.insert("scratchpad", parts.next().unwrap_or_else(|| json!({})));
            event
        }
        Value::Object(mut fields) => {
            let event = event(&fields.remove("event").ok_or("`event` is missing")?)?;
            if !fields.contains_key("flow") {
                return Err("`flow` is missing: every step says what must happen".into());
            }
            for check in CHECKS {
                if let Some(value) = fields.remove(check) {
                    expect.insert(check, value);
                }
            }
            if let Some(unknown) = fields.keys().next() {
                return Err(format!(
                    "unknown key `{unknown}`; a step has event, {}",
                    CHECKS.join(", ")
                ));
            }
            event
        }
        _ => return Err("a step is an object, or a list [event, flow, logs, scratchpad]".into()),
    };
    Ok(Step { event, expect })
}

/// What cases run against.
pub enum Target {
    /// One guard: each run gets it alone, with the run's config.
    Guard(Plugin),
    /// A plugin directory's stack, as loaded (its manifest's order, config,
    /// modes and pins).
    Stack(HookStack),
}

/// One disagreement between a case and what the target did.
#[derive(Clone, Debug)]
pub struct Failure {
    /// The case file.
    pub file: PathBuf,
    /// The run's name.
    pub run: String,
    /// The step, from 1; 0 when the run could not start.
    pub step: usize,
    /// The event, in a few words (`tool-call shell`).
    pub event: String,
    /// What disagreed: `flow`, `plugin`, `logs`, `scratchpad`, `shadow` or `config`.
    pub what: String,
    /// What the case expects.
    pub expected: Value,
    /// What happened.
    pub got: Value,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "FAIL {} › {} › step {} ({})",
            self.file.display(),
            self.run,
            self.step,
            self.event
        )?;
        write!(f, "{}", diff(&self.what, &self.expected, &self.got))
    }
}

/// A readable diff: for two objects, each key that differs; else both values.
fn diff(path: &str, expected: &Value, got: &Value) -> String {
    match (expected, got) {
        (Value::Object(a), Value::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter()
                .filter(|k| a.get(*k) != b.get(*k))
                .map(|k| {
                    diff(
                        &format!("{path}.{k}"),
                        a.get(k).unwrap_or(&Value::Null),
                        b.get(k).unwrap_or(&Value::Null),
                    )
                })
                .collect()
        }
        _ => format!("  {path}\n    - expected {expected}\n    + got      {got}\n"),
    }
}

/// How a set of case files fared.
#[derive(Debug, Default)]
pub struct Report {
    /// Steps checked.
    pub steps: usize,
    /// Runs made.
    pub runs: usize,
    /// Every disagreement.
    pub failures: Vec<Failure>,
}

impl Report {
    /// Whether every step got what its case expects.
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }
}

/// Runs every run of `files` against `target`, each a fresh run.
pub fn run(target: &Target, files: &[CaseFile]) -> Report {
    use tracing_subscriber::layer::SubscriberExt;
    let log = GuestLog::default();
    let subscriber = tracing_subscriber::registry().with(log.clone());
    tracing::subscriber::with_default(subscriber, || {
        let mut report = Report::default();
        for file in files {
            for (r, case) in file.runs.iter().enumerate() {
                report.runs += 1;
                run_one(target, file, r, case, &log, &mut report);
            }
        }
        report
    })
}

fn run_one(
    target: &Target,
    file: &CaseFile,
    r: usize,
    case: &CaseRun,
    log: &GuestLog,
    report: &mut Report,
) {
    let fail = |step: usize, event: String, what: &str, expected: Value, got: Value| Failure {
        file: file.path.clone(),
        run: case.name.clone(),
        step,
        event,
        what: what.to_owned(),
        expected,
        got,
    };
    let single = matches!(target, Target::Guard(_));
    let stack = match (target, &case.config) {
        (Target::Guard(plugin), config) => {
            let options = PluginOptions {
                config: config.clone().unwrap_or_default(),
                ..PluginOptions::default()
            };
            match plugin.with_options(options) {
                Ok(plugin) => {
                    let mut stack = HookStack::new();
                    stack.push_plugin(Arc::new(plugin));
                    stack
                }
                Err(e) => {
                    let got = json!(format!("the guard does not start: {e}"));
                    report.failures.push(fail(
                        0,
                        "start".into(),
                        "config",
                        json!("a guard that starts"),
                        got,
                    ));
                    return;
                }
            }
        }
        (Target::Stack(stack), None) => stack.clone(),
        (Target::Stack(_), Some(_)) => {
            report.failures.push(fail(
                0,
                "start".into(),
                "config",
                json!("no `config`: a directory's plugins take theirs from hookbox.toml"),
                json!("a `config` in the case"),
            ));
            return;
        }
    };
    let stem = file
        .path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut run = stack.start_run(format!("test-{stem}-{}", r + 1));
    log.take();
    for (s, step) in case.steps.iter().enumerate() {
        report.steps += 1;
        let outcome = run.step(&step.event);
        let logs = log.take();
        for (what, expected) in &step.expect {
            let got = match *what {
                "flow" => flow_json(&outcome),
                "plugin" => match &outcome {
                    Ok(decision) => json!(decision.plugin.as_deref()),
                    Err(failure) => json!(&*failure.plugin),
                },
                "logs" => logs.clone(),
                "scratchpad" => scratchpad_json(&run, single, expected),
                "shadow" => match &outcome {
                    Ok(decision) => hookbox::shadow_json(&decision.shadow),
                    Err(_) => json!([]),
                },
                _ => continue,
            };
            if *expected != got {
                report.failures.push(fail(
                    s + 1,
                    describe(&step.event),
                    what,
                    expected.clone(),
                    got,
                ));
            }
        }
    }
}

/// The net flow as a case writes it.
fn flow_json(outcome: &Outcome) -> Value {
    match outcome {
        Ok(decision) => serde_json::to_value(&decision.flow).unwrap_or(Value::Null),
        Err(failure) => json!({
            "fail_closed": { "plugin": &*failure.plugin, "cause": failure.cause }
        }),
    }
}

fn scratchpad_json(run: &hookbox::Run, single: bool, expected: &Value) -> Value {
    let mut pads = run.scratchpads();
    if single {
        return json!(pads.pop_first().map(|(_, pad)| pad).unwrap_or_default());
    }
    let named = expected
        .as_object()
        .map(|o| o.keys().cloned().collect::<Vec<_>>())
        .unwrap_or_default();
    named
        .into_iter()
        .map(|name| {
            let pad = pads.remove(&name).unwrap_or_default();
            (name, json!(pad))
        })
        .collect::<serde_json::Map<_, _>>()
        .into()
}

/// `tool-call shell`, `completion-call`, ...
fn describe(event: &StepEvent) -> String {
    match event {
        StepEvent::ToolCall(call) => format!("tool-call {}", call.tool_name),
        StepEvent::ToolResult(result) => format!("tool-result {}", result.tool_name),
        StepEvent::InvalidToolCall(call) => format!("invalid-tool-call {}", call.tool_name),
        other => other.kind().name().to_owned(),
    }
}

/// The guests' log lines (`hookbox::guest` events) of this thread, as
/// `[level, message]` pairs, as the host logs them.
#[derive(Clone, Default)]
struct GuestLog(Arc<Mutex<Vec<Value>>>);

impl GuestLog {
    fn take(&self) -> Value {
        let mut lines = self.0.lock().unwrap_or_else(|p| p.into_inner());
        Value::Array(std::mem::take(&mut *lines))
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for GuestLog {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        struct Message(String);
        impl tracing::field::Visit for Message {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                if field.name() == "message" {
                    self.0 = format!("{value:?}");
                }
            }
        }
        if event.metadata().target() != "hookbox::guest" {
            return;
        }
        let mut message = Message(String::new());
        event.record(&mut message);
        let level = event.metadata().level().as_str().to_ascii_lowercase();
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(json!([level, message.0]));
    }
}

/// The case files at `path`: the file itself, or every `*.json` of the
/// folder, in name order.
///
/// # Errors
/// [`Error::Io`] when it cannot be read, [`Error::Cases`] when a file does
/// not parse or there are none.
pub fn read_cases(path: &Path) -> Result<Vec<CaseFile>, Error> {
    let files = if path.is_dir() {
        let mut files: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(|e| Error::io(path, e))?
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect();
        files.sort();
        files
    } else {
        vec![path.to_path_buf()]
    };
    if files.is_empty() {
        return Err(Error::Cases {
            path: path.to_path_buf(),
            reason: "no case files (*.json) here".into(),
        });
    }
    files.iter().map(|f| CaseFile::read(f)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_step_forms_parse_and_the_short_one_expects_no_logs() {
        let file = CaseFile::parse(
            Path::new("c.json"),
            r#"{"runs": [{"config": {"max": 2, "on": true}, "steps": [
                [{"event": "tool-call", "tool_name": "shell", "args": "{}"}, {"flow": "continue"}],
                {"event": {"event": "tool-call", "tool_name": "x", "args": "{}"}, "flow": {"flow": "continue"}, "plugin": null}
            ]}]}"#,
        )
        .unwrap();
        let run = &file.runs[0];
        assert_eq!(run.name, "run 1");
        assert_eq!(run.config.as_ref().unwrap()["max"], "2");
        assert_eq!(run.steps[0].expect["logs"], json!([]));
        assert_eq!(
            run.steps[1].expect.keys().copied().collect::<Vec<_>>(),
            ["flow", "plugin"]
        );
    }

    #[test]
    fn a_bad_step_is_named_by_run_and_step() {
        for (text, says) in [
            (
                r#"{"runs": [{"name": "a", "steps": [{"event": {"event": "tool-call", "tool_name": "s", "args": "{}"}}]}]}"#,
                "run `a`, step 1: `flow` is missing",
            ),
            (
                r#"{"runs": [{"steps": [{"event": {"event": "nope"}, "flow": {}}]}]}"#,
                "run `run 1`, step 1: `event` is not an event",
            ),
            (
                r#"{"runs": [{"steps": [{"event": {"event": "tool-call", "tool_name": "s", "args": "{}"}, "flow": {}, "flows": 1}]}]}"#,
                "unknown key `flows`",
            ),
            (r#"{"run": []}"#, "unknown field `run`"),
        ] {
            let err = CaseFile::parse(Path::new("c.json"), text)
                .unwrap_err()
                .to_string();
            assert!(err.starts_with("c.json: ") && err.contains(says), "{err}");
        }
    }

    #[test]
    fn a_diff_names_each_differing_key() {
        let d = diff(
            "flow",
            &json!({"flow": "skip", "reason": "a"}),
            &json!({"flow": "continue"}),
        );
        assert_eq!(
            d,
            "  flow.flow\n    - expected \"skip\"\n    + got      \"continue\"\n  flow.reason\n    - expected \"a\"\n    + got      null\n"
        );
    }
}
