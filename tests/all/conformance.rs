//! The fixture of `languages/conformance/` against toolguard as built in
//! every language: all must answer exactly what the fixture expects.
//!
//! The Rust guard is built by this crate's build script. The others are built
//! by `languages/build.sh` into `target/languages/<language>/toolguard.wasm`;
//! a language whose component is missing is skipped with a message, unless
//! it is named in `HOOKBOX_LANGUAGES` (comma-separated, as CI sets it), which
//! makes its absence a failure.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use hookbox::{EventKind, HookStack, Plugin, PluginOptions, Runtime, RuntimeConfig, StepEvent};
use serde_json::Value;

fn workspace() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap()
}

/// Where `languages/build.sh` puts its builds.
fn languages_dir() -> PathBuf {
    // A relative CARGO_TARGET_DIR is taken from the workspace root, as
    // languages/build.sh takes it when run from there.
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(|dir| workspace().join(dir))
        .unwrap_or_else(|| workspace().join("target"));
    target.join("languages")
}

/// Where `languages/build.sh` puts `language`'s guard.
fn built(language: &str) -> PathBuf {
    languages_dir().join(language).join("toolguard.wasm")
}

const LANGUAGES: [&str; 5] = ["rust", "javascript", "python", "c", "go"];

/// A runtime with a compile cache (in the target directory), so big guests
/// (JavaScript, Python) compile once per build, not once per test run.
fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        let cache = languages_dir().join("compile-cache");
        Runtime::new(RuntimeConfig {
            cache_dir: Some(cache),
            ..RuntimeConfig::default()
        })
        .expect("runtime")
    })
}

/// Whether `HOOKBOX_LANGUAGES` names `language`.
fn is_required(language: &str) -> bool {
    required().iter().any(|l| l == language)
}

/// The languages `HOOKBOX_LANGUAGES` says must be there.
fn required() -> Vec<String> {
    std::env::var("HOOKBOX_LANGUAGES")
        .unwrap_or_default()
        .split(',')
        .map(|l| l.trim().to_owned())
        .filter(|l| !l.is_empty())
        .collect()
}

/// One file of the fixture: runs, each with its settings and steps.
struct Case {
    name: String,
    runs: Vec<CaseRun>,
}

/// A run's settings, and its steps.
type CaseRun = (BTreeMap<String, String>, Vec<Step>);

/// An event, then what must follow it: the flow, the guest's log lines
/// (`[level, message]`; none when not given) and the guest's whole
/// scratchpad (empty when not given).
struct Step {
    event: StepEvent,
    flow: Value,
    logs: Value,
    scratchpad: Value,
}

/// The guest log lines (`hookbox::guest` events) of this thread, as
/// `[level, message]` pairs.
#[derive(Clone, Default)]
struct GuestLog(Arc<Mutex<Vec<Value>>>);

impl GuestLog {
    fn take(&self) -> Value {
        Value::Array(std::mem::take(&mut *self.0.lock().unwrap()))
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
            .unwrap()
            .push(serde_json::json!([level, message.0]));
    }
}

fn fixture() -> Vec<Case> {
    let dir = workspace().join("languages/conformance");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    assert!(files.len() >= 10, "the fixture is in {}", dir.display());
    files
        .iter()
        .map(|path| {
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(path).unwrap();
            let case: Value = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("{}: not JSON: {e}", path.display()));
            let runs = case["runs"]
                .as_array()
                .unwrap_or_else(|| panic!("{name}: `runs` must be a list"))
                .iter()
                .map(|run| {
                    let config = serde_json::from_value(run["config"].clone())
                        .unwrap_or_else(|e| panic!("{name}: bad config: {e}"));
                    let steps = run["steps"]
                        .as_array()
                        .unwrap_or_else(|| panic!("{name}: `steps` must be a list"))
                        .iter()
                        .map(|step| {
                            let event = serde_json::from_value(step[0].clone())
                                .unwrap_or_else(|e| panic!("{name}: bad event {}: {e}", step[0]));
                            let or =
                                |i: usize, default: Value| step.get(i).cloned().unwrap_or(default);
                            Step {
                                event,
                                flow: step[1].clone(),
                                logs: or(2, serde_json::json!([])),
                                scratchpad: or(3, serde_json::json!({})),
                            }
                        })
                        .collect();
                    (config, steps)
                })
                .collect();
            Case { name, runs }
        })
        .collect()
}

/// Runs the whole fixture against the component at `path`, capturing the
/// guest's log; returns every disagreement.
fn disagreements(path: &Path) -> Vec<String> {
    use tracing_subscriber::layer::SubscriberExt;
    let log = GuestLog::default();
    let subscriber = tracing_subscriber::registry().with(log.clone());
    tracing::subscriber::with_default(subscriber, || run_fixture(path, &log))
}

fn run_fixture(path: &Path, log: &GuestLog) -> Vec<String> {
    let runtime = runtime();
    let compiled = match Plugin::from_file(runtime, path, PluginOptions::default()) {
        Ok(plugin) => plugin,
        Err(e) => return vec![format!("does not load: {e}")],
    };
    // Whatever the language: the world's imports only, no WASI.
    let info = compiled.info();
    let mut found: Vec<String> = info
        .imports
        .iter()
        .filter(|import| !import.starts_with("hookbox:hook/") && *import != "log")
        .map(|import| format!("imports {import}: the build must leave WASI out"))
        .collect();
    // The spec: tool-call and tool-result, nothing else (the host never
    // delivers other kinds, so the steps alone could not tell).
    for kind in EventKind::ALL {
        let wanted = matches!(kind, EventKind::ToolCall | EventKind::ToolResult);
        match (compiled.subscriptions().contains(kind), wanted) {
            (false, true) => found.push(format!("does not subscribe to {kind}")),
            (true, false) => found.push(format!("subscribes to {kind}, which the spec leaves out")),
            _ => {}
        }
    }
    for case in fixture() {
        for (r, (config, steps)) in case.runs.iter().enumerate() {
            let options = PluginOptions {
                config: config.clone(),
                ..PluginOptions::default()
            };
            // The same compiled guard, with this run's settings.
            let plugin = match compiled.with_options(options) {
                Ok(plugin) => plugin,
                Err(e) => {
                    found.push(format!("{} run {r}: does not load: {e}", case.name));
                    continue;
                }
            };
            let mut stack = HookStack::new();
            stack.push_plugin(plugin.into());
            let mut run = stack.start_run(format!("{}-{r}", case.name));
            let ctx = run.context(1);
            log.take();
            for (s, step) in steps.iter().enumerate() {
                let answer = answer_json(run.dispatch(&ctx, &step.event));
                let logged = log.take();
                let kept = match run.scratchpads().pop_first() {
                    Some((_, entries)) => serde_json::json!(entries),
                    None => serde_json::json!({}),
                };
                for (what, expected, got) in [
                    ("flow", &step.flow, answer),
                    ("log", &step.logs, logged),
                    ("scratchpad", &step.scratchpad, kept),
                ] {
                    if expected != &got {
                        found.push(format!(
                            "{} run {r} step {s}: the {what}\n    expected {expected}\n    got      {got}",
                            case.name
                        ));
                    }
                }
            }
        }
    }
    found.extend(large_result(&compiled));
    found
}

/// A 64 KiB tool result (a log with a few secrets in it), redacted within
/// the default limits (a 100 ms deadline per call) exactly as the Rust guard
/// redacts it: the fixture's cases are small, guards must also be fast
/// enough for real output. (The JavaScript guard takes ~25 ms for it, most
/// of it handing the rewritten string back; see its guide.)
fn large_result(compiled: &Plugin) -> Vec<String> {
    let mut text = String::new();
    let mut n = 0;
    while text.len() < 64 << 10 {
        n += 1;
        text.push_str(&match n % 97 {
            0 => format!("export SESSION_TOKEN=tok{n}\n"),
            50 => format!("auth: Bearer sk-{n:012}abcdef for user {n}\n"),
            _ => format!("{n:06} GET /api/items/{n}?page=2 200 12ms \"Mozilla/5.0\" key: value\n"),
        });
    }
    let event = StepEvent::ToolResult(hookbox::ToolResult {
        tool_name: "read_file".into(),
        tool_call_id: None,
        internal_call_id: "large".into(),
        args: "{}".into(),
        result: text,
        outcome: hookbox::ToolOutcome::Success,
        extensions: "{}".into(),
    });
    let answer = |plugin: &Plugin| {
        let plugin = plugin.with_options(PluginOptions::default()).unwrap();
        let mut stack = HookStack::new();
        stack.push_plugin(plugin.into());
        let mut run = stack.start_run("large");
        let ctx = run.context(1);
        answer_json(run.dispatch(&ctx, &event))
    };
    let reference = Plugin::from_file(
        runtime(),
        Path::new(hookbox_tests::guests::TOOLGUARD),
        PluginOptions::default(),
    )
    .unwrap();
    let (expected, answered) = (answer(&reference), answer(compiled));
    assert_eq!(
        expected["flow"], "rewrite-result",
        "the Rust guard redacts it"
    );
    if answered == expected {
        return vec![];
    }
    let shown = |v: &Value| v.to_string().chars().take(300).collect::<String>();
    vec![format!(
        "a 64 KiB result:\n    expected {}...\n    answered {}...",
        shown(&expected),
        shown(&answered)
    )]
}

/// An outcome as the fixture writes it: the flow's JSON form, or the
/// fail-closed diagnostic as a string (which no expected flow equals).
fn answer_json(outcome: hookbox::Outcome) -> Value {
    match outcome {
        Ok(decision) => serde_json::to_value(&decision.flow).unwrap(),
        Err(failure) => Value::String(format!("failed closed: {failure}")),
    }
}

/// The language's guard agrees with the fixture, or is skipped when not
/// built and not required.
fn conforms(language: &str, path: &Path) {
    let required = is_required(language);
    if !path.exists() {
        assert!(
            !required,
            "{language}: {} is missing; build it with `languages/build.sh {language}`",
            path.display()
        );
        eprintln!(
            "skipped {language}: {} is not built (`languages/build.sh {language}` builds it)",
            path.display()
        );
        return;
    }
    if language != "rust"
        && let Some(stale) = stale_build(language, path)
    {
        panic!("{language}: {stale}; rebuild it with `languages/build.sh {language}`");
    }
    let found = disagreements(path);
    assert!(
        found.is_empty(),
        "{language} toolguard ({}) disagrees with languages/conformance/ in {} place(s):\n{}",
        path.display(),
        found.len(),
        found.join("\n")
    );
}

/// Why the build of `language` at `path` is older than its sources, if it
/// is: `build.sh` lists a build's inputs next to it and touches its stamp
/// when it finds the build up to date.
fn stale_build(language: &str, path: &Path) -> Option<String> {
    let dir = path.parent().unwrap();
    let modified = |file: &Path| std::fs::metadata(file).and_then(|m| m.modified()).ok();
    let Some(built) = modified(&dir.join("stamp")) else {
        return Some(format!("{} has no stamp", dir.display()));
    };
    let Ok(inputs) = std::fs::read_to_string(dir.join("inputs")) else {
        return Some(format!("{} has no list of inputs", dir.display()));
    };
    inputs
        .lines()
        .find(|input| modified(&workspace().join(input)).is_none_or(|time| time > built))
        .map(|input| format!("{input} changed after {language}'s guard was built"))
}

#[test]
fn hookbox_languages_names_only_known_languages() {
    for language in required() {
        assert!(
            LANGUAGES.contains(&language.as_str()),
            "HOOKBOX_LANGUAGES names `{language}`; the languages are {LANGUAGES:?}"
        );
    }
}

#[test]
fn rust() {
    conforms("rust", Path::new(hookbox_tests::guests::TOOLGUARD));
}

#[test]
fn javascript() {
    conforms("javascript", &built("javascript"));
}

#[test]
fn python() {
    conforms("python", &built("python"));
}

#[test]
fn c() {
    conforms("c", &built("c"));
}

#[test]
fn go() {
    conforms("go", &built("go"));
}

/// componentize-js's default build imports wasi:http: refused at link, with
/// the flag that fixes it.
#[test]
fn javascript_built_with_its_default_imports_is_refused_with_the_fix() {
    let path = built("javascript").with_file_name("toolguard-http.wasm");
    if !path.exists() {
        assert!(
            !is_required("javascript"),
            "{} is missing; `languages/build.sh javascript` builds it",
            path.display()
        );
        return;
    }
    match Plugin::from_file(runtime(), &path, PluginOptions::default()) {
        Err(hookbox::LoadError {
            phase: hookbox::LoadPhase::Link,
            reason,
            ..
        }) => {
            assert!(reason.contains("wasi:http/outgoing-handler"), "{reason}");
            assert!(reason.contains("`-d http fetch-event`"), "{reason}");
        }
        other => panic!("must be refused at link: {other:?}"),
    }
}
