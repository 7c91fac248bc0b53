//! hookbox-rig driven by rig's own runner: a rig agent on rig's scripted
//! mock model, real tools, the example plugins and misbehaving guests. Every
//! test checks what rig really did: which tools ran with what, what the
//! model was sent, how the run ended.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use hookbox::watch::{DirWatcher, StackSource};
use hookbox::{Cause, EventKind, Plugin, Stopped};
use hookbox_rig::Guard;
use hookbox_tests::guests;
use rig_agent::AgentBuilder;
use rig_agent::agent::MultiTurnStreamItem;
use rig_agent::test_utils::{MockCompletionModel, MockStreamEvent, MockTurn};
use rig_core::completion::message::ToolName;
use rig_core::tool::{DynamicTool, ToolOutput};
use serde_json::json;
use support::{plugin, plugin_dir, runtime, stack, write_manifest};

#[path = "../../../tests/adapters/support.rs"]
mod support;

mod common;
use common::{sent, stopped, tool};

fn guard(plugins: &[Arc<Plugin>]) -> Guard {
    Guard::new(stack(plugins))
}

#[tokio::test]
async fn a_skipped_call_never_runs_and_the_model_reads_why() {
    let model = MockCompletionModel::from_turns([
        MockTurn::tool_call("c1", "shell", json!({"cmd": "rm -rf /"})),
        MockTurn::text("done"),
    ]);
    let (shell, ran) = tool("shell", ToolOutput::text("ran"));
    let agent = AgentBuilder::new(model.clone())
        .dynamic_tool(shell)
        .add_hook(guard(&[plugin(guests::DENY_TOOLS, &[])]))
        .build();
    let answer = agent
        .prompt("clean up")
        .max_turns(3)
        .await
        .expect("the run goes on");
    assert_eq!(answer.output(), "done");
    assert!(ran.lock().unwrap().is_empty(), "the denied tool ran");
    assert!(
        sent(&model, 1).contains("denied by policy"),
        "{}",
        sent(&model, 1)
    );
}

#[tokio::test]
async fn the_tool_runs_with_the_rewritten_arguments() {
    let model = MockCompletionModel::from_turns([
        MockTurn::tool_call(
            "c1",
            "write_file",
            json!({"path": "/etc/passwd", "text": "x"}),
        ),
        MockTurn::tool_call(
            "c2",
            "write_file",
            json!({"text": "\u{2d}y", "path": "notes.md"}),
        ),
        MockTurn::text("done"),
    ]);
    let (write, ran) = tool("write_file", ToolOutput::text("ok"));
    let jail = plugin(guests::PATH_JAIL, &[("root", "/workspace")]);
    let agent = AgentBuilder::new(model)
        .dynamic_tool(write)
        .add_hook(guard(&[jail]))
        .build();
    agent.prompt("write").max_turns(4).await.expect("run");
    let ran = ran.lock().unwrap();
    assert_eq!(
        ran[0],
        json!({"path": "/workspace/etc/passwd", "text": "x"})
    );
    assert_eq!(ran[1], json!({"path": "/workspace/notes.md", "text": "-y"}));
}

#[tokio::test]
async fn the_model_reads_the_redacted_result_and_json_stays_json() {
    let secret = "sk-live-0123456789abcdefghijklmnop";
    let model = MockCompletionModel::from_turns([
        MockTurn::tool_call("c1", "read_env", json!({})),
        MockTurn::tool_call("c2", "read_config", json!({})),
        MockTurn::text("done"),
    ]);
    let (env, _) = tool("read_env", ToolOutput::text(format!("OPENAI_KEY={secret}")));
    let (config, _) = tool(
        "read_config",
        ToolOutput::json(json!({"key": secret, "n": 1})),
    );
    let agent = AgentBuilder::new(model.clone())
        .dynamic_tool(env)
        .dynamic_tool(config)
        .add_hook(guard(&[plugin(guests::REDACT_SECRETS, &[])]))
        .build();
    let answer = agent.prompt("show me").max_turns(4).await.expect("run");
    for n in 1..3 {
        let text = sent(&model, n);
        assert!(!text.contains(secret), "the model saw the secret: {text}");
        assert!(text.contains("REDACTED"), "{text}");
    }
    // The JSON output went back as JSON: the object's other field is intact.
    assert!(
        sent(&model, 2).contains(r#"{"type":"json","value":{"key":"[REDACTED]","n":1}}"#),
        "{}",
        sent(&model, 2)
    );
    assert_eq!(answer.output(), "done");
}

#[tokio::test]
async fn a_request_patch_reaches_the_model_for_its_turn_only() {
    let model = MockCompletionModel::from_turns([
        MockTurn::tool_call("c1", "noop", json!({})),
        MockTurn::text("done"),
    ]);
    let (noop, _) = tool("noop", ToolOutput::text("ok"));
    let inject = plugin(
        guests::INJECT_CONTEXT,
        &[("doc.rules", "House rules: never delete files.")],
    );
    let agent = AgentBuilder::new(model.clone())
        .preamble("You are careful.")
        .dynamic_tool(noop)
        .add_hook(guard(&[inject]))
        .build();
    agent.prompt("go").max_turns(3).await.expect("run");
    assert!(
        sent(&model, 0).contains("House rules"),
        "{}",
        sent(&model, 0)
    );
    assert!(
        !sent(&model, 1).contains("House rules"),
        "the patch stuck: {}",
        sent(&model, 1)
    );
}

#[tokio::test]
async fn a_trapping_guard_stops_the_run_before_the_tool_and_the_next_model_call() {
    let model = MockCompletionModel::from_turns([
        MockTurn::tool_call("c1", "puppet:panic", json!({})),
        MockTurn::text("never"),
    ]);
    let (tool, ran) = tool("puppet:panic", ToolOutput::text("ran"));
    let agent = AgentBuilder::new(model.clone())
        .dynamic_tool(tool)
        .add_hook(guard(&[plugin(guests::PUPPET, &[])]))
        .build();
    let err = agent.prompt("go").max_turns(3).await.expect_err("stopped");
    let stop = stopped(err);
    assert_eq!(stop.plugin(), "puppet");
    assert!(
        matches!(&stop, Stopped::FailedClosed(f) if f.cause == Cause::Trap),
        "{stop}"
    );
    assert!(
        ran.lock().unwrap().is_empty(),
        "the tool ran after the guard failed"
    );
    assert_eq!(model.request_count(), 1, "the model was called again");
}

#[tokio::test]
async fn a_looping_guard_stops_the_run_at_its_deadline_before_the_model_is_called() {
    let model = MockCompletionModel::from_turns([MockTurn::text("never")]);
    let agent = AgentBuilder::new(model.clone())
        .add_hook(guard(&[plugin(guests::PUPPET, &[])]))
        .build();
    let err = agent.prompt("puppet:loop").await.expect_err("stopped");
    let stop = stopped(err);
    assert!(
        matches!(&stop, Stopped::FailedClosed(f) if f.cause == Cause::Deadline),
        "{stop}"
    );
    assert_eq!(model.request_count(), 0, "the model was called");
}

#[tokio::test]
async fn a_terminate_while_streaming_ends_the_stream_with_the_stop() {
    let model = MockCompletionModel::from_stream_turns([vec![
        MockStreamEvent::text("hello "),
        MockStreamEvent::text("puppet:flow:terminate:enough"),
        MockStreamEvent::final_response_with_total_tokens(3),
    ]]);
    let agent = AgentBuilder::new(model)
        .add_hook(guard(&[plugin(
            guests::PUPPET,
            &[("subscribe", "text-delta")],
        )]))
        .build();
    let mut stream = agent.prompt("go").stream();
    let mut end = None;
    while let Some(item) = stream.next().await {
        match item {
            Err(err) => end = Some(stopped(err)),
            Ok(MultiTurnStreamItem::FinalResponse(_)) => panic!("the run finished"),
            Ok(_) => {}
        }
    }
    let end = end.expect("the stream ended with the stop");
    assert_eq!(
        end,
        Stopped::Terminated {
            plugin: "puppet".into(),
            event: EventKind::TextDelta,
            reason: "enough".into(),
        }
    );
}

#[tokio::test]
async fn an_invalid_tool_call_is_repaired_to_the_tool_it_meant() {
    let model = MockCompletionModel::from_turns([
        MockTurn::tool_call("c1", "read_fiel", json!({"path": "a"})),
        MockTurn::text("done"),
    ]);
    let (read, ran) = tool("read_file", ToolOutput::text("contents"));
    let agent = AgentBuilder::new(model)
        .dynamic_tool(read)
        .add_hook(guard(&[plugin(guests::REPAIR_TOOLS, &[])]))
        .build();
    let answer = agent.prompt("read").max_turns(3).await.expect("run");
    assert_eq!(answer.output(), "done");
    assert_eq!(*ran.lock().unwrap(), vec![json!({"path": "a"})]);
}

// On a multi-threaded runtime: guards are asked in place (block_in_place).
#[tokio::test(flavor = "multi_thread")]
async fn concurrent_runs_do_not_share_guest_state() {
    // The puppet's `count` answers with its instance's own counter and its
    // run's scratchpad: both must start over in each run.
    let guard = guard(&[plugin(guests::PUPPET, &[("subscribe", "tool-call")])]);
    let run = |guard: Guard| async move {
        let model = MockCompletionModel::from_turns([
            MockTurn::tool_call("c1", "puppet:count", json!({})),
            MockTurn::tool_call("c2", "puppet:count", json!({})),
            MockTurn::text("done"),
        ]);
        let (count, _) = tool("puppet:count", ToolOutput::text("ran"));
        let agent = AgentBuilder::new(model.clone())
            .dynamic_tool(count)
            .add_hook(guard)
            .build();
        agent.prompt("count").max_turns(4).await.expect("run");
        sent(&model, 2)
    };
    let (a, b) = tokio::join!(run(guard.clone()), run(guard.clone()));
    for seen in [a, b] {
        assert!(seen.contains("global=1 scratch=1"), "{seen}");
        assert!(seen.contains("global=2 scratch=2"), "{seen}");
        assert!(!seen.contains("global=3"), "an instance was shared: {seen}");
    }
}

#[tokio::test]
async fn a_run_keeps_its_snapshot_when_the_directory_reloads_mid_run() {
    let dir = plugin_dir("reload");
    let watcher = Arc::new(DirWatcher::start(runtime(), &dir, Duration::from_millis(50)).unwrap());
    let source = StackSource::Watched(Arc::clone(&watcher));
    let guard = Guard::new(source);
    let model = MockCompletionModel::from_turns([
        MockTurn::tool_call("c1", "reload", json!({})),
        MockTurn::tool_call("c2", "shell", json!({"cmd": "ls"})),
        MockTurn::text("done"),
        MockTurn::tool_call("c3", "shell", json!({"cmd": "ls"})),
        MockTurn::text("done"),
    ]);
    // The first tool changes the manifest (now nothing is denied) and waits
    // for the reload to land, in the middle of the run.
    let reloader = {
        let (dir, watcher) = (dir.clone(), watcher.clone());
        DynamicTool::new(
            ToolName::new("reload").unwrap(),
            "reload",
            json!({"type": "object"}),
            move |_| {
                let (dir, watcher) = (dir.clone(), watcher.clone());
                Box::pin(async move {
                    write_manifest(&dir, "nothing-at-all");
                    let report = tokio::task::spawn_blocking(move || watcher.reload_now())
                        .await
                        .unwrap();
                    Ok(ToolOutput::text(format!(
                        "generation {}",
                        report.generation
                    )))
                })
            },
        )
    };
    let (shell, ran) = tool("shell", ToolOutput::text("files"));
    let agent = AgentBuilder::new(model.clone())
        .dynamic_tool(reloader)
        .dynamic_tool(shell)
        .add_hook(guard)
        .build();
    agent.prompt("go").max_turns(4).await.expect("first run");
    assert!(
        sent(&model, 1).contains("generation 2"),
        "{}",
        sent(&model, 1)
    );
    assert!(
        ran.lock().unwrap().is_empty(),
        "the run moved to the new snapshot mid-run"
    );
    agent
        .prompt("again")
        .max_turns(4)
        .await
        .expect("second run");
    assert_eq!(
        ran.lock().unwrap().len(),
        1,
        "a new run did not take the new snapshot"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A model turn calling `name` with `text` as its raw arguments.
fn raw_call(name: &str, text: &str) -> MockTurn {
    use rig_core::completion::message::{AssistantContent, ToolCall, ToolFunction};
    let function = ToolFunction::parse(ToolName::new(name).unwrap(), text);
    MockTurn::from_contents([AssistantContent::ToolCall(ToolCall::from_wire(
        "c1", function,
    ))])
}

#[tokio::test]
async fn escaped_arguments_reach_the_guards_decoded() {
    // `\u002d` is `-`: a text check on the raw arguments would miss it.
    let model = MockCompletionModel::from_turns([
        raw_call("shell", r#"{"cmd":  "rm \u002drf /"}"#),
        MockTurn::text("done"),
    ]);
    let (shell, ran) = tool("shell", ToolOutput::text("ran"));
    let agent = AgentBuilder::new(model.clone())
        .dynamic_tool(shell)
        .add_hook(guard(&[plugin(guests::DENY_TOOLS, &[])]))
        .build();
    agent.prompt("go").max_turns(3).await.expect("run");
    assert!(ran.lock().unwrap().is_empty(), "the escaped command ran");
    assert!(
        sent(&model, 1).contains("denied by policy"),
        "{}",
        sent(&model, 1)
    );
}

#[tokio::test]
async fn arguments_that_are_not_json_are_rigs_to_answer() {
    // repair-tools answers every invalid tool call; arguments that are not
    // a JSON object are not one (the tool is known), so rig gives the model
    // its own feedback and the run goes on.
    let model = MockCompletionModel::from_turns([
        raw_call("read_file", "{not json"),
        MockTurn::text("done"),
    ]);
    let (read, ran) = tool("read_file", ToolOutput::text("contents"));
    let agent = AgentBuilder::new(model.clone())
        .dynamic_tool(read)
        .add_hook(guard(&[plugin(guests::REPAIR_TOOLS, &[])]))
        .build();
    let answer = agent.prompt("read").max_turns(3).await.expect("run");
    assert_eq!(answer.output(), "done");
    assert!(ran.lock().unwrap().is_empty());
}
