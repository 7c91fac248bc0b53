//! The fixture of `languages/conformance/` against toolguard as built in
//! every language: all must answer exactly what the fixture expects.
//!
//! The Rust guard is built by this crate's build script. The others are built
//! by `languages/build.sh` into `target/languages/<language>/toolguard.wasm`;
//! a language whose component is missing is skipped with a message, unless
//! it is named in `HOOKBOX_LANGUAGES` (comma-separated, as CI sets it), which
//! makes its absence a failure.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use hookbox::{EventKind, HookStack, Plugin, PluginOptions, Runtime, RuntimeConfig, StepEvent};
use hookbox_author::cases::{self, CaseFile, Target};
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

/// The fixture, in the case format `hookbox test` reads
/// (`hookbox_author::cases`): the same files run through
/// `hookbox test GUARD.wasm --cases languages/conformance`.
fn fixture() -> Vec<CaseFile> {
    let dir = workspace().join("languages/conformance");
    let files = cases::read_cases(&dir).unwrap_or_else(|e| panic!("{e}"));
    assert!(files.len() >= 10, "the fixture is in {}", dir.display());
    files
}

/// Runs the whole fixture against the component at `path`; returns every
/// disagreement.
fn disagreements(path: &Path) -> Vec<String> {
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
    found.extend(large_result(&compiled));
    let report = cases::run(&Target::Guard(compiled), &fixture());
    assert!(report.steps > 50, "the fixture has its steps: {report:?}");
    found.extend(report.failures.iter().map(ToString::to_string));
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
