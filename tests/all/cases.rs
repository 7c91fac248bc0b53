//! Every example plugin's cases (`plugins/*/cases/`), as `hookbox test`
//! runs them, against the plugins this crate's build script built.

use std::path::Path;

use hookbox::{Plugin, PluginOptions};
use hookbox_author::cases::{self, Target};
use hookbox_tests::guests;

use super::support::runtime;

fn passes(name: &str, component: &str) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../plugins")
        .join(name)
        .join("cases");
    let files = cases::read_cases(&dir).unwrap_or_else(|e| panic!("{e}"));
    let plugin =
        Plugin::from_file(runtime(), component.as_ref(), PluginOptions::default()).unwrap();
    let report = cases::run(&Target::Guard(plugin), &files);
    assert!(
        report.runs >= 3 && report.steps >= 5,
        "{name} has real cases: {report:?}"
    );
    let failures: Vec<String> = report.failures.iter().map(ToString::to_string).collect();
    assert!(failures.is_empty(), "{name}:\n{}", failures.join("\n"));
}

#[test]
fn call_budget() {
    passes("call-budget", guests::CALL_BUDGET);
}

#[test]
fn deny_tools() {
    passes("deny-tools", guests::DENY_TOOLS);
}

#[test]
fn egress() {
    passes("egress", guests::EGRESS);
}

#[test]
fn pii() {
    passes("pii", guests::PII);
}

#[test]
fn provenance() {
    passes("provenance", guests::PROVENANCE);
}

#[test]
fn shell_guard() {
    passes("shell-guard", guests::SHELL_GUARD);
}

#[test]
fn inject_context() {
    passes("inject-context", guests::INJECT_CONTEXT);
}

#[test]
fn path_jail() {
    passes("path-jail", guests::PATH_JAIL);
}

#[test]
fn redact_secrets() {
    passes("redact-secrets", guests::REDACT_SECRETS);
}

#[test]
fn repair_tools() {
    passes("repair-tools", guests::REPAIR_TOOLS);
}

/// A case that does not hold is a failure naming the run, the step and
/// the event, with the difference: the runner cannot pass everything.
#[test]
fn a_case_that_does_not_hold_is_reported_with_its_place_and_difference() {
    let file = cases::CaseFile::parse(
        Path::new("wrong.json"),
        r#"{"runs": [{"name": "shell", "config": {"deny": "shell"}, "steps": [
            {"event": {"event": "tool-call", "tool_name": "read_file", "args": "{}"}, "flow": {"flow": "continue"}, "plugin": null, "scratchpad": {}},
            {"event": {"event": "tool-call", "tool_name": "shell", "args": "{}"}, "flow": {"flow": "continue"}, "plugin": "someone", "logs": [["info", "never said"]]}
        ]}]}"#,
    )
    .unwrap();
    let plugin = Plugin::from_file(
        runtime(),
        guests::DENY_TOOLS.as_ref(),
        PluginOptions::default(),
    )
    .unwrap();
    let report = cases::run(&Target::Guard(plugin), &[file]);
    let found: Vec<(usize, &str)> = report
        .failures
        .iter()
        .map(|f| (f.step, f.what.as_str()))
        .collect();
    assert_eq!(
        found,
        [(2, "flow"), (2, "logs"), (2, "plugin")],
        "{report:?}"
    );
    let shown = report.failures[0].to_string();
    assert!(shown.starts_with("FAIL wrong.json › shell › step 2 (tool-call shell)\n  flow.flow\n    - expected \"continue\"\n    + got      \"skip\""), "{shown}");
}
