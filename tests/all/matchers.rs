//! Tool matchers: a plugin scoped to tools is asked about their tool
//! events only, and a tool no plugin is scoped to enters no guest. One test
//! per rule of `hookbox::matcher`.

use hookbox::matcher::ToolMatcher;
use hookbox::{Cause, Flow, HookStack};

use super::directory::{put, scratch_dir};
use super::support::*;
use hookbox_tests::guests;

fn scoped(names: &[&str]) -> HookStack {
    let mut stack = HookStack::new();
    for name in names {
        stack.push_scoped(
            named_puppet(name),
            ToolMatcher::new([format!("{name}:*")]),
            false,
        );
    }
    stack
}

#[test]
fn a_scoped_plugin_is_asked_about_its_tools_calls_results_and_invalid_calls() {
    let stack = scoped(&["a", "b"]);
    assert_eq!(
        decided(once(&stack, &tool_call("b:flow:skip:b", "{}"))).flow,
        Flow::skip("b")
    );
    assert_eq!(
        decided(once(&stack, &tool_result("a:flow:rewrite-result:x", "y"))).flow,
        Flow::rewrite_result("x")
    );
    assert_eq!(
        decided(once(
            &stack,
            &invalid_tool_call("a:flow:repair:read_file", &["read_file"])
        ))
        .flow,
        Flow::repair("read_file")
    );
}

#[test]
fn a_scoped_plugin_is_not_asked_about_another_tool() {
    // `a` would answer `b:`-commands only if asked: it is not, so b's
    // command reaches b alone, and a call for neither reaches nobody.
    let stack = scoped(&["a"]);
    let mut run = stack.start_run("r");
    assert_eq!(
        decided(dispatch(&mut run, &tool_call("puppet:flow:skip:all", "{}"))).flow,
        Flow::Continue
    );
    assert!(
        run.scratchpads().is_empty(),
        "no guest was entered, not even started"
    );
}

#[test]
fn other_kinds_reach_a_scoped_plugin_as_it_subscribed() {
    let stack = scoped(&["a"]);
    assert_eq!(
        decided(once(&stack, &completion_call("a:flow:terminate:done"))).flow,
        Flow::terminate("done")
    );
}

#[test]
fn an_invalid_call_to_a_tool_nobody_is_scoped_to_fails() {
    let stack = scoped(&["a"]);
    assert_eq!(
        decided(once(&stack, &invalid_tool_call("other", &["read_file"]))).flow,
        Flow::Fail
    );
}

#[test]
fn one_unscoped_plugin_is_asked_about_every_tool() {
    let mut stack = scoped(&["a"]);
    stack.push_plugin(named_puppet("free"));
    assert_eq!(
        decided(once(&stack, &tool_call("free:flow:skip:asked", "{}"))).flow,
        Flow::skip("asked")
    );
}

#[test]
fn a_nested_stack_keeps_its_plugins_scopes() {
    let mut outer = HookStack::new();
    outer.push_stack(scoped(&["a"]));
    assert_eq!(
        decided(once(&outer, &tool_call("a:flow:skip:in", "{}"))).flow,
        Flow::skip("in")
    );
    let mut run = outer.start_run("r");
    assert_eq!(
        decided(dispatch(&mut run, &tool_call("b:flow:skip:out", "{}"))).flow,
        Flow::Continue
    );
    assert!(run.scratchpads().is_empty());
}

#[test]
fn a_required_plugin_that_cannot_load_still_fails_every_tool_closed() {
    let mut stack = scoped(&["a"]);
    stack.push_unloadable("missing", "no such file");
    let failure = once(&stack, &tool_call("other", "{}")).unwrap_err();
    assert_eq!((&*failure.plugin, failure.cause), ("missing", Cause::Load));
}

#[test]
fn the_manifests_tools_scope_a_plugin_and_a_change_to_them_reloads() {
    let dir = scratch_dir("matchers");
    put(&dir, "guard.wasm", guests::PUPPET);
    let manifest = |tools: &str| {
        std::fs::write(
            dir.join("hookbox.toml"),
            format!("[[plugin]]\nfile = \"guard.wasm\"\ntools = {tools}\n[plugin.config]\nname = \"guard\"\n"),
        )
        .unwrap()
    };
    manifest(r#"["guard:flow:skip*"]"#);
    let watcher =
        hookbox::watch::DirWatcher::start(runtime(), &dir, std::time::Duration::from_millis(50))
            .unwrap();
    let ask = |tool: &str| decided(once(&watcher.snapshot().stack, &tool_call(tool, "{}"))).flow;
    assert_eq!(ask("guard:flow:skip:scoped"), Flow::skip("scoped"));
    assert_eq!(
        ask("guard:flow:terminate:not"),
        Flow::Continue,
        "not among its tools"
    );

    manifest(r#"["guard:flow:terminate*"]"#);
    let report = watcher.reload_now();
    assert!(report.errors.is_empty(), "{report:?}");
    assert_eq!(ask("guard:flow:terminate:now"), Flow::terminate("now"));
    assert_eq!(ask("guard:flow:skip:scoped"), Flow::Continue);
}
