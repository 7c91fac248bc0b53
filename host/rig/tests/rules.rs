//! One test per row of hookbox-rig's mapping table (src/lib.rs), through
//! rig's own runner: the puppet guest answers the flow the event's text
//! names (`puppet:flow:<flow>:<payload>`), and each test checks what rig
//! then did.

use std::sync::{Arc, Mutex};

use futures_util::StreamExt;
use hookbox::{
    Cause, EventKind, Flow, HookStack, Message, Plugin, PluginOptions, RequestPatch, Role, Runtime,
    RuntimeConfig, StepEvent, Stopped,
};
use hookbox_rig::Guard;
use hookbox_tests::guests;
use rig_agent::AgentBuilder;
use rig_agent::agent::MultiTurnStreamItem;
use rig_agent::completion::PromptError;
use rig_agent::test_utils::{MockCompletionModel, MockStreamEvent, MockTurn};
use rig_core::tool::ToolOutput;
use serde_json::{Value, json};

#[path = "../../../tests/adapters/support.rs"]
mod support;

mod common;
use common::{sent, stop_of, terminated, tool};

/// The puppet, answering on the event kinds named (comma-separated).
fn puppet(subscribe: &str) -> Guard {
    Guard::new(support::puppet(subscribe))
}

#[tokio::test]
async fn run_start_without_free_instance_slots_stops_before_the_model() {
    let runtime = Runtime::new(RuntimeConfig {
        max_instances: 1,
        ..Default::default()
    })
    .unwrap();
    let mut stack = HookStack::new();
    for name in ["a", "b"] {
        let options = PluginOptions {
            config: [("name".to_owned(), name.to_owned())].into(),
            ..Default::default()
        };
        stack.push_plugin(Arc::new(
            Plugin::from_file(&runtime, guests::PUPPET.as_ref(), options).unwrap(),
        ));
    }
    let model = MockCompletionModel::from_turns([MockTurn::text("never")]);
    let agent = AgentBuilder::new(model.clone())
        .add_hook(Guard::new(stack))
        .build();
    let stop = stop_of(agent.prompt("go").await);
    assert!(
        matches!(&stop, Stopped::FailedClosed(f) if f.cause == Cause::Limit && &*f.plugin == "hookbox"),
        "{stop}"
    );
    assert_eq!(model.request_count(), 0);
}

#[tokio::test]
async fn completion_call_patch_request_is_this_turns_request() {
    let model = MockCompletionModel::from_turns([MockTurn::text("arr")]);
    let agent = AgentBuilder::new(model.clone())
        .preamble("You are plain.")
        .add_hook(puppet("completion-call"))
        .build();
    agent
        .prompt("puppet:flow:patch-request:Speak like a pirate.")
        .await
        .expect("run");
    let request = sent(&model, 0);
    assert!(request.contains("Speak like a pirate."), "{request}");
    assert!(!request.contains("You are plain."), "{request}");
}

#[tokio::test]
async fn completion_call_terminate_stops_before_the_model() {
    let model = MockCompletionModel::from_turns([MockTurn::text("never")]);
    let agent = AgentBuilder::new(model.clone())
        .add_hook(puppet("completion-call"))
        .build();
    let stop = stop_of(agent.prompt("puppet:flow:terminate:no").await);
    assert_eq!(stop, terminated(EventKind::CompletionCall, "no"));
    assert_eq!(model.request_count(), 0);
}

#[tokio::test]
async fn a_history_patch_keeps_the_tool_messages_it_did_not_change() {
    // A native hook in the stack redacts the user's first message in the
    // history it is given and sends everything else back as it was.
    let mut stack = HookStack::new();
    stack.push_hook(hookbox::hook_fn("redact-history", |_, event| {
        let StepEvent::CompletionCall(call) = event else {
            return Flow::Continue;
        };
        if call.history.len() < 2 {
            return Flow::Continue;
        }
        let history: Vec<Message> = call
            .history
            .iter()
            .map(|m| Message {
                role: m.role,
                content: if m.role == Role::User {
                    m.content.replace("hunter2", "[redacted]")
                } else {
                    m.content.clone()
                },
            })
            .collect();
        Flow::PatchRequest(RequestPatch {
            history: Some(history),
            ..Default::default()
        })
    }));
    let model = MockCompletionModel::from_turns([
        MockTurn::text("noted"),
        MockTurn::tool_call("c1", "read", json!({"path": "a"})),
        MockTurn::text("done"),
    ]);
    let (read, _) = tool("read", ToolOutput::text("contents of a"));
    let agent = AgentBuilder::new(model.clone())
        .dynamic_tool(read)
        .add_hook(Guard::new(stack))
        .build();
    let first = agent.prompt("my password is hunter2").await.expect("run");
    let history = vec![
        rig_core::completion::message::Message::user("my password is hunter2"),
        rig_core::completion::message::Message::assistant(first.output()),
    ];
    agent
        .prompt("read a")
        .history(history)
        .max_turns(3)
        .await
        .expect("second run");
    let last = sent(&model, 2);
    assert!(!last.contains("hunter2"), "{last}");
    assert!(last.contains("[redacted]"), "{last}");
    // The tool call and its result went out as such, with their call id.
    assert!(
        last.contains(r#""type":"toolcall","id":{"provider":"c1"}"#),
        "{last}"
    );
    assert!(
        last.contains(r#""type":"toolresult","call":{"provider":"c1"}"#),
        "{last}"
    );
}

#[tokio::test]
async fn completion_response_terminate_stops_before_the_turns_tools() {
    let model = MockCompletionModel::from_turns([
        MockTurn::tool_call("c1", "noop", json!({})),
        MockTurn::text("never"),
    ]);
    let (noop, ran) = tool("noop", ToolOutput::text("ok"));
    let agent = AgentBuilder::new(model.clone())
        .dynamic_tool(noop)
        .add_hook(puppet("completion-response"))
        .build();
    let stop = stop_of(agent.prompt("puppet:flow:terminate:r").max_turns(3).await);
    assert_eq!(stop, terminated(EventKind::CompletionResponse, "r"));
    assert!(ran.lock().unwrap().is_empty());
    assert_eq!(model.request_count(), 1);
}

/// How a streamed one-turn run on `prompt` ends under a puppet
/// subscribed to `event`: the stop it ended with (it must not finish).
async fn streamed_end(event: &str, prompt: &str) -> Option<hookbox::Stopped> {
    let model = MockCompletionModel::from_stream_turns([vec![
        MockStreamEvent::text("hi"),
        MockStreamEvent::final_response_with_total_tokens(2),
    ]]);
    let agent = AgentBuilder::new(model).add_hook(puppet(event)).build();
    let mut stream = agent.prompt(prompt).stream();
    let mut end = None;
    while let Some(item) = stream.next().await {
        match item {
            Err(err) => end = hookbox_rig::stopped(&err),
            Ok(MultiTurnStreamItem::FinalResponse(_)) => panic!("the run finished"),
            Ok(_) => {}
        }
    }
    end
}

#[tokio::test]
async fn stream_response_finish_is_asked_at_the_end_of_a_streamed_answer() {
    let end = streamed_end("stream-response-finish", "puppet:flow:terminate:s").await;
    assert_eq!(end, Some(terminated(EventKind::StreamResponseFinish, "s")));
}

/// A streamed answer is a completion-response too (after its
/// stream-response-finish), as in every door: a guard of the model's
/// answer is not passed by streaming.
#[tokio::test]
async fn a_streamed_answer_is_a_completion_response_too() {
    let end = streamed_end("completion-response", "puppet:flow:terminate:r").await;
    assert_eq!(end, Some(terminated(EventKind::CompletionResponse, "r")));
}

#[tokio::test]
async fn model_turn_finished_terminate_stops_the_run() {
    let model = MockCompletionModel::from_turns([MockTurn::text("puppet:flow:terminate:t")]);
    let agent = AgentBuilder::new(model)
        .add_hook(puppet("model-turn-finished"))
        .build();
    let stop = stop_of(agent.prompt("go").await);
    assert_eq!(stop, terminated(EventKind::ModelTurnFinished, "t"));
}

/// A run whose model first calls `name`, a tool the agent does not have,
/// then answers "done"; the agent has `read_file`.
async fn invalid_call(
    name: &str,
    guard: Guard,
) -> (Result<String, PromptError>, MockCompletionModel) {
    let model = MockCompletionModel::from_turns([
        MockTurn::tool_call("c1", name, json!({})),
        MockTurn::text("done"),
    ]);
    let (read, _) = tool("read_file", ToolOutput::text("contents"));
    let agent = AgentBuilder::new(model.clone())
        .dynamic_tool(read)
        .add_hook(guard)
        .build();
    let result = agent
        .prompt("read")
        .max_turns(3)
        .max_invalid_tool_call_retries(1)
        .await
        .map(|r| r.output());
    (result, model)
}

#[tokio::test]
async fn invalid_tool_call_fail_is_rigs_unknown_tool_error() {
    let (result, _) = invalid_call("puppet:flow:fail", puppet("invalid-tool-call")).await;
    assert!(
        matches!(result, Err(PromptError::UnknownToolCall { .. })),
        "{result:?}"
    );
}

#[tokio::test]
async fn invalid_tool_call_every_plugin_continuing_is_fail() {
    // The puppet subscribes and continues (`other` is no command of its):
    // the stack's answer is fail, whatever rig's own policy.
    let (result, _) = invalid_call("other", puppet("invalid-tool-call")).await;
    assert!(
        matches!(result, Err(PromptError::UnknownToolCall { .. })),
        "{result:?}"
    );
}

#[tokio::test]
async fn invalid_tool_call_repair_to_a_tool_not_allowed_fails_closed() {
    let (result, _) = invalid_call(
        "puppet:flow:repair:rm_everything",
        puppet("invalid-tool-call"),
    )
    .await;
    let stop = stop_of(result);
    assert!(
        matches!(&stop, Stopped::FailedClosed(f) if f.cause == Cause::UnsupportedFlow && &*f.plugin == "puppet"),
        "{stop}"
    );
}

#[tokio::test]
async fn invalid_tool_call_repair_runs_the_named_tool() {
    let model = MockCompletionModel::from_turns([
        MockTurn::tool_call("c1", "puppet:flow:repair:read_file", json!({"path": "a"})),
        MockTurn::text("done"),
    ]);
    let (read, ran) = tool("read_file", ToolOutput::text("contents"));
    let agent = AgentBuilder::new(model)
        .dynamic_tool(read)
        .add_hook(puppet("invalid-tool-call"))
        .build();
    agent.prompt("read").max_turns(3).await.expect("run");
    assert_eq!(*ran.lock().unwrap(), vec![json!({"path": "a"})]);
}

#[tokio::test]
async fn invalid_tool_call_retry_reprompts_with_the_feedback() {
    let (result, model) = invalid_call(
        "puppet:flow:retry:call read_file instead",
        puppet("invalid-tool-call"),
    )
    .await;
    assert_eq!(result.expect("run"), "done");
    assert!(
        sent(&model, 1).contains("call read_file instead"),
        "{}",
        sent(&model, 1)
    );
}

#[tokio::test]
async fn invalid_tool_call_skip_answers_the_call_with_the_reason() {
    let (result, model) =
        invalid_call("puppet:flow:skip:no such tool", puppet("invalid-tool-call")).await;
    assert_eq!(result.expect("run"), "done");
    assert!(
        sent(&model, 1).contains("no such tool"),
        "{}",
        sent(&model, 1)
    );
}

#[tokio::test]
async fn invalid_tool_call_terminate_stops_the_run() {
    let (result, _) = invalid_call("puppet:flow:terminate:x", puppet("invalid-tool-call")).await;
    let stop = stop_of(result);
    assert_eq!(stop, terminated(EventKind::InvalidToolCall, "x"));
}

#[tokio::test]
async fn invalid_tool_call_with_no_plugin_answering_is_rigs_to_decide() {
    // The puppet does not subscribe to invalid tool calls: rig's default
    // policy (fail) applies, as if the guard were not there.
    let (result, _) = invalid_call("nonexistent", puppet("text-delta")).await;
    assert!(
        matches!(result, Err(PromptError::UnknownToolCall { .. })),
        "{result:?}"
    );
}

#[tokio::test]
async fn tool_call_terminate_stops_before_the_tool() {
    let name = "puppet:flow:terminate:halt";
    let model = MockCompletionModel::from_turns([
        MockTurn::tool_call("c1", name, json!({})),
        MockTurn::text("never"),
    ]);
    let (t, ran) = tool(name, ToolOutput::text("ran"));
    let agent = AgentBuilder::new(model.clone())
        .dynamic_tool(t)
        .add_hook(puppet("tool-call"))
        .build();
    let stop = stop_of(agent.prompt("go").max_turns(3).await);
    assert_eq!(stop, terminated(EventKind::ToolCall, "halt"));
    assert!(ran.lock().unwrap().is_empty());
    assert_eq!(model.request_count(), 1);
}

/// A run whose model calls tool `name` (answering `output`) once, then
/// answers "done".
async fn tool_result(
    name: &str,
    output: ToolOutput,
) -> (
    Result<String, PromptError>,
    MockCompletionModel,
    Arc<Mutex<Vec<Value>>>,
) {
    let model = MockCompletionModel::from_turns([
        MockTurn::tool_call("c1", name, json!({})),
        MockTurn::text("done"),
    ]);
    let (t, ran) = tool(name, output);
    let agent = AgentBuilder::new(model.clone())
        .dynamic_tool(t)
        .add_hook(puppet("tool-result"))
        .build();
    let result = agent.prompt("go").max_turns(3).await.map(|r| r.output());
    (result, model, ran)
}

#[tokio::test]
async fn tool_result_rewrite_result_is_what_the_model_reads() {
    let (result, model, ran) = tool_result(
        "puppet:flow:rewrite-result:all clean",
        ToolOutput::text("secret stuff"),
    )
    .await;
    assert_eq!(result.expect("run"), "done");
    assert_eq!(ran.lock().unwrap().len(), 1);
    let seen = sent(&model, 1);
    assert!(
        seen.contains("all clean") && !seen.contains("secret stuff"),
        "{seen}"
    );
}

#[tokio::test]
async fn tool_result_rewrite_of_json_that_does_not_fit_withholds_it() {
    let (result, model, _) = tool_result(
        "puppet:flow:rewrite-result:not json",
        ToolOutput::json(json!({"a": "s3cret", "n": 7})),
    )
    .await;
    // The run goes on; the model reads the output's structure with every
    // value withheld, and the reason, never the output.
    assert_eq!(result.expect("run"), "done");
    let seen = sent(&model, 1);
    assert!(
        !seen.contains("s3cret") && seen.contains("the result is withheld"),
        "{seen}"
    );
}

#[tokio::test]
async fn tool_result_terminate_stops_before_the_model_reads_it() {
    let (result, model, ran) = tool_result(
        "puppet:flow:terminate:leak",
        ToolOutput::text("secret stuff"),
    )
    .await;
    assert_eq!(stop_of(result), terminated(EventKind::ToolResult, "leak"));
    assert_eq!(ran.lock().unwrap().len(), 1);
    assert_eq!(model.request_count(), 1);
}

#[tokio::test]
async fn a_flow_the_event_does_not_honour_fails_closed() {
    let model = MockCompletionModel::from_turns([MockTurn::text("never")]);
    let agent = AgentBuilder::new(model.clone())
        .add_hook(puppet("completion-call"))
        .build();
    let stop = stop_of(agent.prompt("puppet:flow:skip:x").await);
    assert!(
        matches!(&stop, Stopped::FailedClosed(f) if f.cause == Cause::UnsupportedFlow),
        "{stop}"
    );
    assert_eq!(model.request_count(), 0);
}
