//! hookbox-llm-stack driven by llm-stack's own tool loop: its mock provider
//! scripted with tool calls, real tool handlers, the example plugins and
//! misbehaving guests. Every test checks what the loop really did: which
//! tools ran with what, what the model was sent, how the loop ended.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use hookbox::watch::{DirWatcher, StackSource};
use hookbox::{Cause, EventKind, Plugin, Stopped};
use hookbox_llm_stack::Guard;
use hookbox_tests::guests;
use llm_stack::mock::MockProvider;
use llm_stack::test_helpers::{sample_response, sample_tool_response};
use llm_stack::tool::{ToolError, ToolLoopResult, tool_fn, tool_loop};
use llm_stack::{ChatMessage, ChatParams, JsonSchema, LlmError, ToolCall, ToolDefinition};
use llm_stack::{ToolLoopConfig, ToolRegistry};
use serde_json::{Value, json};
use support::{plugin, plugin_dir, runtime, stack, write_manifest};

#[path = "../../../tests/adapters/support.rs"]
mod support;

mod common;
use common::{model, sent, stopped};

fn guard(plugins: &[Arc<Plugin>]) -> Guard {
    Guard::new(stack(plugins))
}

type Calls = Arc<Mutex<Vec<Value>>>;

/// Adds a tool that records the arguments it ran with and answers `output`.
fn add_tool(registry: &mut ToolRegistry<()>, name: &str, output: &str) -> Calls {
    let calls = Calls::default();
    let seen = calls.clone();
    let output = output.to_owned();
    registry.register(tool_fn(
        ToolDefinition {
            name: name.into(),
            description: "a test tool".into(),
            parameters: JsonSchema::new(json!({"type": "object"})),
            retry: None,
        },
        move |args: Value| {
            seen.lock().unwrap().push(args);
            let output = output.clone();
            async move { Ok::<_, ToolError>(output) }
        },
    ));
    calls
}

fn call(id: &str, name: &str, args: Value) -> llm_stack::ChatResponse {
    sample_tool_response(vec![ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args,
    }])
}

/// One guarded tool loop, as an application writes it.
#[allow(clippy::result_large_err, reason = "llm-stack's own error type")]
async fn run(
    guard: &Guard,
    model: &Arc<MockProvider>,
    registry: &ToolRegistry<()>,
    prompt: &str,
) -> Result<ToolLoopResult, LlmError> {
    let run = guard.start_run("test").expect("a run starts");
    let provider = run.provider(model.clone());
    let tools = run.registry(registry);
    let config = run.config(ToolLoopConfig::default(), registry);
    let params = ChatParams {
        system: Some("You are careful.".into()),
        messages: vec![ChatMessage::user(prompt)],
        tools: Some(registry.definitions()),
        ..Default::default()
    };
    let result = run.check(tool_loop(&provider, &tools, params, config, &()).await);
    if let Err(err) = &result {
        assert_eq!(hookbox_llm_stack::stopped(err), run.stopped(), "{err}");
    }
    result
}

#[tokio::test(flavor = "multi_thread")]
async fn a_skipped_call_never_runs_and_the_model_reads_why() {
    let model = model(vec![
        call("c1", "shell", json!({"cmd": "rm -rf /"})),
        sample_response("done"),
    ]);
    let mut registry = ToolRegistry::new();
    let ran = add_tool(&mut registry, "shell", "ran");
    let guard = guard(&[plugin(guests::DENY_TOOLS, &[])]);
    let done = run(&guard, &model, &registry, "clean up")
        .await
        .expect("the loop goes on");
    assert_eq!(done.response.text(), Some("done"));
    assert!(ran.lock().unwrap().is_empty(), "the denied tool ran");
    assert!(
        sent(&model, 1).contains("denied by policy"),
        "{}",
        sent(&model, 1)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_tool_runs_with_the_rewritten_arguments() {
    let model = model(vec![
        call(
            "c1",
            "write_file",
            json!({"path": "/etc/passwd", "text": "x"}),
        ),
        sample_response("done"),
    ]);
    let mut registry = ToolRegistry::new();
    let ran = add_tool(&mut registry, "write_file", "ok");
    let guard = guard(&[plugin(guests::PATH_JAIL, &[("root", "/workspace")])]);
    run(&guard, &model, &registry, "write").await.expect("run");
    assert_eq!(
        *ran.lock().unwrap(),
        vec![json!({"path": "/workspace/etc/passwd", "text": "x"})]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_model_reads_the_redacted_result() {
    let secret = "sk-live-0123456789abcdefghijklmnop";
    let model = model(vec![
        call("c1", "read_env", json!({})),
        sample_response("done"),
    ]);
    let mut registry = ToolRegistry::new();
    add_tool(&mut registry, "read_env", &format!("OPENAI_KEY={secret}"));
    let guard = guard(&[plugin(guests::REDACT_SECRETS, &[])]);
    run(&guard, &model, &registry, "show me")
        .await
        .expect("run");
    let seen = sent(&model, 1);
    assert!(!seen.contains(secret), "the model saw the secret: {seen}");
    assert!(seen.contains("OPENAI_KEY=[REDACTED]"), "{seen}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_request_patch_reaches_the_model_for_its_turn_only() {
    let model = model(vec![call("c1", "noop", json!({})), sample_response("done")]);
    let mut registry = ToolRegistry::new();
    add_tool(&mut registry, "noop", "ok");
    let inject = plugin(
        guests::INJECT_CONTEXT,
        &[("doc.rules", "House rules: never delete files.")],
    );
    run(&guard(&[inject]), &model, &registry, "go")
        .await
        .expect("run");
    let calls = model.recorded_calls();
    let first = calls[0].system.as_deref().unwrap_or_default();
    assert!(
        first.starts_with("You are careful.") && first.contains("House rules"),
        "{first}"
    );
    assert_eq!(
        calls[1].system.as_deref(),
        Some("You are careful."),
        "the patch stuck"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_trapping_guard_ends_the_loop_before_the_tool_and_the_next_model_call() {
    let model = model(vec![
        call("c1", "puppet:panic", json!({})),
        sample_response("never"),
    ]);
    let mut registry = ToolRegistry::new();
    let ran = add_tool(&mut registry, "puppet:panic", "ran");
    let guard = guard(&[plugin(guests::PUPPET, &[])]);
    let stop = stopped(
        run(&guard, &model, &registry, "go")
            .await
            .expect_err("stopped"),
    );
    assert_eq!(stop.plugin(), "puppet");
    assert!(
        matches!(&stop, Stopped::FailedClosed(f) if f.cause == Cause::Trap),
        "{stop}"
    );
    assert!(
        ran.lock().unwrap().is_empty(),
        "the tool ran after the guard failed"
    );
    assert_eq!(
        model.recorded_calls().len(),
        1,
        "the model was called again"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_looping_guard_ends_the_loop_at_its_deadline_before_the_model_is_called() {
    let model = model(vec![sample_response("never")]);
    let guard = guard(&[plugin(guests::PUPPET, &[])]);
    let err = run(&guard, &model, &ToolRegistry::new(), "puppet:loop")
        .await
        .expect_err("stopped");
    let stop = stopped(err);
    assert!(
        matches!(&stop, Stopped::FailedClosed(f) if f.cause == Cause::Deadline),
        "{stop}"
    );
    assert!(model.recorded_calls().is_empty(), "the model was called");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_terminate_on_a_streamed_delta_ends_the_loop() {
    let model = model(vec![sample_response("puppet:flow:terminate:enough")]);
    let guard = guard(&[plugin(guests::PUPPET, &[("subscribe", "text-delta")])]);
    let err = run(&guard, &model, &ToolRegistry::new(), "go")
        .await
        .expect_err("stopped");
    assert_eq!(
        stopped(err),
        Stopped::Terminated {
            plugin: "puppet".into(),
            event: EventKind::TextDelta,
            reason: "enough".into(),
        }
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unknown_tool_is_retried_with_feedback_and_a_repair_fails_closed() {
    // Nothing close to `zzz`: repair-tools answers retry, listing the tools.
    let model = model(vec![call("c1", "zzz", json!({})), sample_response("done")]);
    let mut registry = ToolRegistry::new();
    add_tool(&mut registry, "read_file", "contents");
    let repair = guard(&[plugin(guests::REPAIR_TOOLS, &[])]);
    run(&repair, &model, &registry, "read").await.expect("run");
    assert!(sent(&model, 1).contains("read_file"), "{}", sent(&model, 1));

    // `read_fiel` is one edit away: a repair, which llm-stack cannot do.
    let model2 = common::model(vec![
        call("c1", "read_fiel", json!({})),
        sample_response("never"),
    ]);
    let err = run(&repair, &model2, &registry, "read")
        .await
        .expect_err("stopped");
    let stop = stopped(err);
    assert!(
        matches!(&stop, Stopped::FailedClosed(f) if f.cause == Cause::UnsupportedFlow && &*f.plugin == "repair-tools"),
        "{stop}"
    );
    assert_eq!(model2.recorded_calls().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_loops_do_not_share_guest_state() {
    let guard = guard(&[plugin(guests::PUPPET, &[("subscribe", "tool-call")])]);
    let one = |guard: Guard| async move {
        let model = model(vec![
            call("c1", "puppet:count", json!({})),
            call("c2", "puppet:count", json!({})),
            sample_response("done"),
        ]);
        let mut registry = ToolRegistry::new();
        add_tool(&mut registry, "puppet:count", "ran");
        run(&guard, &model, &registry, "count").await.expect("run");
        sent(&model, 2)
    };
    let (a, b) = tokio::join!(one(guard.clone()), one(guard.clone()));
    for seen in [a, b] {
        assert!(seen.contains("global=1 scratch=1"), "{seen}");
        assert!(seen.contains("global=2 scratch=2"), "{seen}");
        assert!(!seen.contains("global=3"), "an instance was shared: {seen}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_loop_keeps_its_snapshot_when_the_directory_reloads_mid_run() {
    let dir = plugin_dir("reload");
    let watcher = Arc::new(DirWatcher::start(runtime(), &dir, Duration::from_millis(50)).unwrap());
    let guard = Guard::new(StackSource::Watched(watcher.clone()));
    let mut registry = ToolRegistry::new();
    let shell = add_tool(&mut registry, "shell", "files");
    // A tool that changes the manifest (now nothing is denied) and waits for
    // the reload to land, in the middle of the loop.
    let (reload_dir, reload_watcher) = (dir.clone(), watcher.clone());
    registry.register(tool_fn(
        ToolDefinition {
            name: "reload".into(),
            description: "reload".into(),
            parameters: JsonSchema::new(json!({"type": "object"})),
            retry: None,
        },
        move |_: Value| {
            let (dir, watcher) = (reload_dir.clone(), reload_watcher.clone());
            async move {
                write_manifest(&dir, "nothing-at-all");
                let report = tokio::task::spawn_blocking(move || watcher.reload_now())
                    .await
                    .unwrap();
                Ok::<_, ToolError>(format!("generation {}", report.generation))
            }
        },
    ));
    let first = model(vec![
        call("c1", "reload", json!({})),
        call("c2", "shell", json!({"cmd": "ls"})),
        sample_response("done"),
    ]);
    run(&guard, &first, &registry, "go")
        .await
        .expect("first loop");
    assert!(
        sent(&first, 1).contains("generation 2"),
        "{}",
        sent(&first, 1)
    );
    assert!(
        shell.lock().unwrap().is_empty(),
        "the loop moved to the new snapshot mid-run"
    );
    let second = model(vec![
        call("c3", "shell", json!({"cmd": "ls"})),
        sample_response("done"),
    ]);
    run(&guard, &second, &registry, "again")
        .await
        .expect("second loop");
    assert_eq!(
        shell.lock().unwrap().len(),
        1,
        "a new loop did not take the new snapshot"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
