//! One test per row of hookbox-llm-stack's mapping table (src/lib.rs),
//! through llm-stack's own tool loop: the puppet guest answers the flow the
//! event's text names (`puppet:flow:<flow>:<payload>`), and each test
//! checks what the loop then did.

#![allow(clippy::result_large_err, reason = "llm-stack's own error type")]

use std::sync::{Arc, Mutex};

use hookbox::{
    Cause, EventKind, Flow, HookStack, Plugin, PluginOptions, RequestPatch, Runtime, RuntimeConfig,
    StepEvent, Stopped, ToolOutcome,
};
use hookbox_llm_stack::Guard;
use hookbox_tests::guests;
use llm_stack::mock::MockProvider;
use llm_stack::test_helpers::{mock_for, sample_response, sample_tool_response};
use llm_stack::tool::{ToolError, ToolLoopResult, tool_fn};
use llm_stack::{ChatMessage, ChatParams, JsonSchema, LlmError, StreamEvent, ToolCall};
use llm_stack::{ToolDefinition, ToolLoopConfig, ToolRegistry};
use serde_json::{Value, json};
use support::runtime;

#[path = "../../../tests/adapters/support.rs"]
mod support;

mod common;
use common::{model, sent, stop_of, terminated};

/// The puppet, answering on the event kinds named (comma-separated).
fn puppet(subscribe: &str) -> Guard {
    Guard::new(support::puppet(subscribe))
}

fn registry(names: &[&str]) -> (ToolRegistry<()>, Arc<Mutex<Vec<String>>>) {
    let ran = Arc::new(Mutex::new(Vec::new()));
    let mut registry = ToolRegistry::new();
    for name in names {
        let (seen, name) = (ran.clone(), name.to_string());
        registry.register(tool_fn(
            ToolDefinition {
                name: name.clone(),
                description: "a test tool".into(),
                parameters: JsonSchema::new(json!({"type": "object"})),
                retry: None,
            },
            move |_: Value| {
                seen.lock().unwrap().push(name.clone());
                async { Ok::<_, ToolError>("secret stuff".to_owned()) }
            },
        ));
    }
    (registry, ran)
}

fn calls(names: &[&str]) -> llm_stack::ChatResponse {
    sample_tool_response(
        names
            .iter()
            .enumerate()
            .map(|(i, name)| ToolCall {
                id: format!("c{i}"),
                name: name.to_string(),
                arguments: json!({}),
            })
            .collect(),
    )
}

async fn run(
    guard: &Guard,
    model: &Arc<MockProvider>,
    registry: &ToolRegistry<()>,
    prompt: &str,
) -> Result<ToolLoopResult, LlmError> {
    let run = guard.start_run("test").expect("a run starts");
    let params = ChatParams {
        system: Some("You are plain.".into()),
        messages: vec![ChatMessage::user(prompt)],
        tools: Some(registry.definitions()),
        ..Default::default()
    };
    let config = ToolLoopConfig::default();
    hookbox_llm_stack::tool_loop(&run, model.clone(), registry, params, config, &()).await
}

#[test]
fn a_run_without_free_instance_slots_does_not_start() {
    let runtime = Runtime::new(RuntimeConfig {
        max_instances: 1,
        ..Default::default()
    })
    .unwrap();
    let mut stack = HookStack::new();
    for _ in 0..2 {
        let plugin = Plugin::from_file(&runtime, guests::PUPPET.as_ref(), PluginOptions::default());
        stack.push_plugin(Arc::new(plugin.unwrap()));
    }
    let Err(stop) = Guard::new(stack).start_run("r") else {
        panic!("the run started");
    };
    assert!(
        matches!(&stop, Stopped::FailedClosed(f) if f.cause == Cause::Limit && &*f.plugin == "hookbox"),
        "{stop}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn completion_call_patch_request_is_this_calls_params() {
    let model = model(vec![sample_response("arr")]);
    let (registry, _) = registry(&[]);
    let prompt = "puppet:flow:patch-request:Speak like a pirate.";
    run(&puppet("completion-call"), &model, &registry, prompt)
        .await
        .expect("run");
    let system = model.recorded_calls()[0].system.clone();
    assert_eq!(system.as_deref(), Some("Speak like a pirate."));
}

#[tokio::test(flavor = "multi_thread")]
async fn completion_call_terminate_stops_before_the_model() {
    let model = model(vec![sample_response("never")]);
    let (registry, _) = registry(&[]);
    let result = run(
        &puppet("completion-call"),
        &model,
        &registry,
        "puppet:flow:terminate:no",
    )
    .await;
    assert_eq!(stop_of(result), terminated(EventKind::CompletionCall, "no"));
    assert!(model.recorded_calls().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn tool_call_delta_terminate_ends_the_stream() {
    let mock = mock_for("mock", "mock-model");
    mock.queue_stream(vec![
        StreamEvent::ToolCallStart {
            index: 0,
            id: "c0".into(),
            name: "noop".into(),
        },
        StreamEvent::ToolCallDelta {
            index: 0,
            json_chunk: "puppet:flow:terminate:d".into(),
        },
    ]);
    let model = Arc::new(mock);
    let (registry, ran) = registry(&["noop"]);
    let result = run(&puppet("tool-call-delta"), &model, &registry, "go").await;
    assert_eq!(stop_of(result), terminated(EventKind::ToolCallDelta, "d"));
    assert!(ran.lock().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn stream_response_finish_terminate_stops_before_the_turns_tools() {
    let model = model(vec![calls(&["noop"]), sample_response("never")]);
    let (registry, ran) = registry(&["noop"]);
    let result = run(
        &puppet("stream-response-finish"),
        &model,
        &registry,
        "puppet:flow:terminate:s",
    )
    .await;
    assert_eq!(
        stop_of(result),
        terminated(EventKind::StreamResponseFinish, "s")
    );
    assert!(ran.lock().unwrap().is_empty());
}

/// A streamed answer is a completion-response too (after its
/// stream-response-finish), as in every door: a guard of the model's
/// answer is not passed by streaming.
#[tokio::test(flavor = "multi_thread")]
async fn completion_response_terminate_stops_a_streamed_turn_before_its_tools() {
    let model = model(vec![calls(&["noop"]), sample_response("never")]);
    let (registry, ran) = registry(&["noop"]);
    let result = run(
        &puppet("completion-response"),
        &model,
        &registry,
        "puppet:flow:terminate:r",
    )
    .await;
    assert_eq!(
        stop_of(result),
        terminated(EventKind::CompletionResponse, "r")
    );
    assert!(ran.lock().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn model_turn_finished_terminate_stops_the_loop() {
    let model = model(vec![sample_response("puppet:flow:terminate:t")]);
    let (registry, _) = registry(&[]);
    let result = run(&puppet("model-turn-finished"), &model, &registry, "go").await;
    assert_eq!(
        stop_of(result),
        terminated(EventKind::ModelTurnFinished, "t")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn invalid_tool_call_skip_answers_the_call_with_the_reason() {
    let model = model(vec![
        calls(&["puppet:flow:skip:no such tool"]),
        sample_response("done"),
    ]);
    let (registry, _) = registry(&["read_file"]);
    run(&puppet("invalid-tool-call"), &model, &registry, "go")
        .await
        .expect("run");
    assert!(
        sent(&model, 1).contains("no such tool"),
        "{}",
        sent(&model, 1)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn invalid_tool_call_fail_ends_the_loop() {
    let model = model(vec![calls(&["puppet:flow:fail"]), sample_response("never")]);
    let (registry, _) = registry(&["read_file"]);
    let result = run(&puppet("invalid-tool-call"), &model, &registry, "go").await;
    let stop = stop_of(result);
    assert!(
        matches!(&stop, Stopped::Terminated { event: EventKind::InvalidToolCall, plugin, .. } if plugin == "puppet"),
        "{stop}"
    );
    assert_eq!(model.recorded_calls().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn invalid_tool_call_terminate_ends_the_loop() {
    let model = model(vec![
        calls(&["puppet:flow:terminate:x"]),
        sample_response("never"),
    ]);
    let (registry, _) = registry(&["read_file"]);
    let result = run(&puppet("invalid-tool-call"), &model, &registry, "go").await;
    assert_eq!(stop_of(result), terminated(EventKind::InvalidToolCall, "x"));
    assert_eq!(model.recorded_calls().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn invalid_tool_call_with_no_plugin_answering_is_llm_stacks_to_answer() {
    let model = model(vec![calls(&["nonexistent"]), sample_response("done")]);
    let (registry, _) = registry(&["read_file"]);
    run(&puppet("text-delta"), &model, &registry, "go")
        .await
        .expect("run");
    assert!(
        sent(&model, 1).contains("Unknown tool: nonexistent"),
        "{}",
        sent(&model, 1)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn tool_call_terminate_runs_no_tool_of_the_turn_and_calls_no_model() {
    // Two calls in one answer, run in parallel by llm-stack: the first one's
    // terminate stops the second too.
    let stop_tool = "puppet:flow:terminate:halt";
    let model = model(vec![calls(&[stop_tool, "noop"]), sample_response("never")]);
    let (registry, ran) = registry(&[stop_tool, "noop"]);
    let result = run(&puppet("tool-call"), &model, &registry, "go").await;
    assert_eq!(stop_of(result), terminated(EventKind::ToolCall, "halt"));
    assert!(
        ran.lock().unwrap().is_empty(),
        "ran: {:?}",
        ran.lock().unwrap()
    );
    assert_eq!(model.recorded_calls().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn tool_result_rewrite_result_is_what_the_model_reads() {
    let name = "puppet:flow:rewrite-result:all clean";
    let model = model(vec![calls(&[name]), sample_response("done")]);
    let (registry, ran) = registry(&[name]);
    run(&puppet("tool-result"), &model, &registry, "go")
        .await
        .expect("run");
    assert_eq!(ran.lock().unwrap().len(), 1);
    let seen = sent(&model, 1);
    assert!(
        seen.contains("all clean") && !seen.contains("secret stuff"),
        "{seen}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn tool_result_terminate_stops_before_the_model_reads_it() {
    let name = "puppet:flow:terminate:leak";
    let model = model(vec![calls(&[name]), sample_response("never")]);
    let (registry, ran) = registry(&[name]);
    let result = run(&puppet("tool-result"), &model, &registry, "go").await;
    assert_eq!(stop_of(result), terminated(EventKind::ToolResult, "leak"));
    assert_eq!(ran.lock().unwrap().len(), 1);
    assert_eq!(model.recorded_calls().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_flow_the_event_does_not_honour_fails_closed() {
    let model = model(vec![sample_response("never")]);
    let (registry, _) = registry(&[]);
    let result = run(
        &puppet("completion-call"),
        &model,
        &registry,
        "puppet:flow:skip:x",
    )
    .await;
    let stop = stop_of(result);
    assert!(
        matches!(&stop, Stopped::FailedClosed(f) if f.cause == Cause::UnsupportedFlow),
        "{stop}"
    );
    assert!(model.recorded_calls().is_empty());
}

#[tokio::test(flavor = "current_thread")]
async fn a_current_thread_runtime_works_too() {
    // on_tool_call cannot leave the thread there: it asks in place.
    let model = model(vec![
        calls(&["puppet:flow:skip:not here"]),
        sample_response("done"),
    ]);
    let (registry, _) = registry(&["read_file"]);
    run(
        &puppet("invalid-tool-call,tool-call"),
        &model,
        &registry,
        "go",
    )
    .await
    .expect("run");
    assert!(sent(&model, 1).contains("not here"), "{}", sent(&model, 1));
}

#[tokio::test(flavor = "multi_thread")]
async fn invalid_tool_call_every_plugin_continuing_ends_the_loop() {
    // The puppet subscribes and continues (`other` is no command of its):
    // the stack's answer is fail.
    let model = model(vec![calls(&["other"]), sample_response("never")]);
    let (registry, _) = registry(&["read_file"]);
    let result = run(&puppet("invalid-tool-call"), &model, &registry, "go").await;
    let stop = stop_of(result);
    assert!(
        matches!(
            &stop,
            Stopped::Terminated {
                event: EventKind::InvalidToolCall,
                ..
            }
        ),
        "{stop}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unknown_tool_no_plugin_minds_leaves_the_guards_on() {
    // No plugin subscribes to invalid tool calls: llm-stack answers the
    // unknown one, and the next call is guarded as ever.
    let guarded = "puppet:flow:skip:still guarded";
    let model = model(vec![
        calls(&["zzz"]),
        calls(&[guarded]),
        sample_response("done"),
    ]);
    let (registry, ran) = registry(&[guarded]);
    run(&puppet("tool-call"), &model, &registry, "go")
        .await
        .expect("run");
    assert!(
        sent(&model, 1).contains("Unknown tool: zzz"),
        "{}",
        sent(&model, 1)
    );
    assert!(ran.lock().unwrap().is_empty(), "the guarded tool ran");
    assert!(
        sent(&model, 2).contains("still guarded"),
        "{}",
        sent(&model, 2)
    );
}

/// A native hook offering only `read_file` each turn; it subscribes to
/// completion calls only.
struct ReadOnly;

impl hookbox::Hook for ReadOnly {
    fn name(&self) -> &str {
        "read-only"
    }
    fn subscriptions(&self) -> hookbox::EventKinds {
        hookbox::EventKinds::NONE.with(EventKind::CompletionCall)
    }
    fn on_event(&self, _: &hookbox::HookContext, _: &StepEvent) -> Flow {
        Flow::PatchRequest(RequestPatch {
            active_tools: Some(vec!["read_file".into()]),
            ..Default::default()
        })
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_the_turns_request_did_not_offer_does_not_run() {
    let mut stack = HookStack::new();
    stack.push_hook(ReadOnly);
    let model = model(vec![calls(&["shell"]), sample_response("done")]);
    let (registry, ran) = registry(&["read_file", "shell"]);
    run(&Guard::new(stack), &model, &registry, "go")
        .await
        .expect("run");
    assert!(
        ran.lock().unwrap().is_empty(),
        "ran: {:?}",
        ran.lock().unwrap()
    );
    let seen = sent(&model, 1);
    assert!(seen.contains("not a tool you may call now"), "{seen}");
    assert!(
        !model.recorded_calls()[0]
            .tools
            .as_ref()
            .unwrap()
            .iter()
            .any(|t| t.name == "shell")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stream_that_ends_without_done_is_still_asked_about() {
    let mock = mock_for("mock", "mock-model");
    mock.queue_stream(vec![StreamEvent::TextDelta(
        "puppet:flow:terminate:e".into(),
    )]);
    let model = Arc::new(mock);
    let (registry, _) = registry(&[]);
    let result = run(&puppet("model-turn-finished"), &model, &registry, "go").await;
    assert_eq!(
        stop_of(result),
        terminated(EventKind::ModelTurnFinished, "e")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stop_in_the_last_iteration_is_a_stop_not_a_result() {
    // llm-stack checks its iteration limit before the next model call, so
    // the loop itself ends `Ok(MaxIterations)`: the check makes it the stop.
    let name = "puppet:flow:terminate:last";
    let model = model(vec![calls(&[name]), sample_response("never")]);
    let (registry, _) = registry(&[name]);
    let run = puppet("tool-call").start_run("last").unwrap();
    let params = ChatParams {
        messages: vec![ChatMessage::user("go")],
        ..Default::default()
    };
    let config = ToolLoopConfig {
        max_iterations: 1,
        ..Default::default()
    };
    let raw = llm_stack::tool::tool_loop(
        &run.provider(model.clone()),
        &run.registry(&registry),
        params,
        run.config(config, &registry),
        &(),
    )
    .await;
    assert!(raw.is_ok(), "llm-stack ended it first: {raw:?}");
    assert_eq!(
        stop_of(run.check(raw)),
        terminated(EventKind::ToolCall, "last")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_skipped_call_is_asked_about_as_a_skipped_result() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    let mut stack = HookStack::new();
    stack.push_plugin(Arc::new(
        Plugin::from_file(
            runtime(),
            guests::DENY_TOOLS.as_ref(),
            PluginOptions::default(),
        )
        .unwrap(),
    ));
    stack.push_hook(hookbox::hook_fn("audit", move |_, event| {
        if let StepEvent::ToolResult(result) = event {
            record.lock().unwrap().push(result.outcome.clone());
        }
        Flow::Continue
    }));
    let model = Arc::new(mock_for("mock", "mock-model"));
    model.queue_response(sample_tool_response(vec![ToolCall {
        id: "c0".into(),
        name: "shell".into(),
        arguments: json!({"cmd": "rm -rf /"}),
    }]));
    model.queue_response(sample_response("done"));
    let (registry, ran) = registry(&["shell"]);
    run(&Guard::new(stack), &model, &registry, "go")
        .await
        .expect("run");
    assert!(ran.lock().unwrap().is_empty());
    let seen = seen.lock().unwrap();
    assert!(
        matches!(seen.as_slice(), [ToolOutcome::Skipped(r)] if r.contains("denied")),
        "{seen:?}"
    );
}

/// The streamed loop, `tool_loop_stream`, with the pieces plugged in by
/// hand: its events until the end, and how it ended.
async fn streamed(
    guard: &Guard,
    model: &Arc<MockProvider>,
    registry: ToolRegistry<()>,
) -> (Vec<llm_stack::tool::LoopEvent>, Option<LlmError>) {
    use futures_util::StreamExt;
    let run = guard.start_run("streamed").expect("a run starts");
    let params = ChatParams {
        messages: vec![ChatMessage::user("go")],
        tools: Some(registry.definitions()),
        ..Default::default()
    };
    let config = run.config(ToolLoopConfig::default(), &registry);
    let provider: Arc<dyn llm_stack::DynProvider> = Arc::new(run.provider(model.clone()));
    let tools = Arc::new(run.registry(&registry));
    let mut stream =
        llm_stack::tool::tool_loop_stream(provider, tools, params, config, Arc::new(()));
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(event) => events.push(event),
            Err(err) => return (events, Some(err)),
        }
    }
    (events, None)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_streamed_loop_is_guarded_the_same_way() {
    // A skip: the tool never runs, the loop goes on to its answer.
    let skip = "puppet:flow:skip:not now";
    let model = model(vec![calls(&[skip]), sample_response("done")]);
    let (registry, ran) = registry(&[skip]);
    let (events, end) = streamed(&puppet("tool-call"), &model, registry).await;
    assert!(end.is_none(), "{end:?}");
    assert!(ran.lock().unwrap().is_empty());
    assert!(matches!(
        events.last(),
        Some(llm_stack::tool::LoopEvent::Done(_))
    ));
    assert!(sent(&model, 1).contains("not now"), "{}", sent(&model, 1));

    // A terminate on a delta: the stream ends with the stop, no tool runs.
    let model = self::model(vec![sample_response("puppet:flow:terminate:enough")]);
    let (tools, _) = self::registry(&[]);
    let (_, end) = streamed(&puppet("text-delta"), &model, tools).await;
    let stop = common::stopped(end.expect("the stream ended with an error"));
    assert_eq!(stop, terminated(EventKind::TextDelta, "enough"));
}
