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

use hookbox::{HookStack, Plugin, PluginOptions, Runtime, RuntimeConfig, StepEvent};
use serde_json::Value;

fn workspace() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap()
}

/// Where `languages/build.sh` puts `language`'s guard.
fn built(language: &str) -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target"));
    target
        .join("languages")
        .join(language)
        .join("toolguard.wasm")
}

/// One file of the fixture: runs, each with its settings and steps.
struct Case {
    name: String,
    runs: Vec<CaseRun>,
}

/// A run's settings, and its steps: each event with the flow expected.
type CaseRun = (BTreeMap<String, String>, Vec<(StepEvent, Value)>);

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
                            (event, step[1].clone())
                        })
                        .collect();
                    (config, steps)
                })
                .collect();
            Case { name, runs }
        })
        .collect()
}

/// Runs the whole fixture against the component at `path`; returns every
/// disagreement.
fn disagreements(path: &Path) -> Vec<String> {
    // A runtime of its own with a compile cache, so big guests (JavaScript,
    // Python) compile once per machine, not once per test run.
    let cache = std::env::temp_dir().join("hookbox-conformance-cache");
    let runtime = Runtime::new(RuntimeConfig {
        cache_dir: Some(cache),
        ..RuntimeConfig::default()
    })
    .expect("runtime");
    let compiled = match Plugin::from_file(&runtime, path, PluginOptions::default()) {
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
            for (s, (event, expected)) in steps.iter().enumerate() {
                let answer = match run.dispatch(&ctx, event) {
                    Ok(decision) => serde_json::to_value(&decision.flow).unwrap(),
                    Err(failure) => Value::String(format!("failed closed: {failure}")),
                };
                if &answer != expected {
                    found.push(format!(
                        "{} run {r} step {s}:\n    expected {expected}\n    answered {answer}",
                        case.name
                    ));
                }
            }
        }
    }
    found
}

/// The language's guard agrees with the fixture, or is skipped when not
/// built and not required.
fn conforms(language: &str, path: &Path) {
    let required = std::env::var("HOOKBOX_LANGUAGES")
        .unwrap_or_default()
        .split(',')
        .any(|l| l.trim() == language);
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
    let found = disagreements(path);
    assert!(
        found.is_empty(),
        "{language} toolguard ({}) disagrees with languages/conformance/ in {} place(s):\n{}",
        path.display(),
        found.len(),
        found.join("\n")
    );
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
        return; // conformance::javascript reports whether it must be built
    }
    match Plugin::from_file(super::support::runtime(), &path, PluginOptions::default()) {
        Err(hookbox::Error::Load {
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
