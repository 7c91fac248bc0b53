//! The tool loop end to end: a scripted model, the real workspace tools, and
//! real WASM plugins (the `director` test guest answers the flows its config
//! names). Every flow on every event that honours it, parallel calls,
//! streaming, loop detection, the timeouts, loop events and telemetry.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use hookbox::{
    Cause, EventKind, HookStack, Plugin, Role, StepEvent, ToolChoice, ToolOutcome, hook_fn,
};
use hookbox_runner::{
    Agent, ChatMessage, LoopAction, LoopConfig, LoopDetection, LoopEvent, ModelRequest, RunReport,
    RunStatus, ScriptedModel, Tool, ToolOutput, ToolSet, ToolSpec, Workspace,
};
use serde_json::json;

use crate::support::{plugin, puppet};

/// A director plugin with `config`.
fn director(config: &[(&str, &str)]) -> Arc<Plugin> {
    plugin(hookbox_tests::guests::DIRECTOR, config)
}

/// What a native hook at the end of the stack saw, in order.
type Seen = Arc<Mutex<Vec<StepEvent>>>;

struct Setup {
    agent: Agent,
    model: Arc<ScriptedModel>,
    workspace: PathBuf,
    seen: Seen,
    events: Arc<Mutex<Vec<LoopEvent>>>,
}

impl Setup {
    fn new(script: serde_json::Value, plugins: &[Arc<Plugin>]) -> Setup {
        Setup::with(script, plugins, LoopConfig::default(), ToolSet::new())
    }

    fn with(
        script: serde_json::Value,
        plugins: &[Arc<Plugin>],
        config: LoopConfig,
        extra_tools: ToolSet,
    ) -> Setup {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let workspace = std::env::temp_dir().join(format!(
            "hookbox-runner-{}-{}",
            std::process::id(),
            N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&workspace);
        std::fs::create_dir_all(&workspace).unwrap();
        std::fs::write(workspace.join("notes.txt"), "token=hunter2\n").unwrap();
        let mut tools = extra_tools;
        for tool in Workspace::new(&workspace).unwrap().file_tools() {
            tools.add(tool).unwrap();
        }
        let seen: Seen = Arc::default();
        let mut stack = HookStack::new();
        for p in plugins {
            stack.push_plugin(p.clone());
        }
        let record = seen.clone();
        stack.push_hook(hook_fn("recorder", move |_, event| {
            record.lock().unwrap().push(event.clone());
            hookbox::Flow::Continue
        }));
        let model = Arc::new(ScriptedModel::from_json(&script.to_string()).unwrap());
        let events: Arc<Mutex<Vec<LoopEvent>>> = Arc::default();
        let sink = events.clone();
        let agent = Agent::new(model.clone())
            .tools(tools)
            .stack(stack)
            .preamble("You are careful.")
            .config(config)
            .on_event(move |e| sink.lock().unwrap().push(e.clone()));
        Setup {
            agent,
            model,
            workspace,
            seen,
            events,
        }
    }

    fn run(&self, prompt: &str) -> RunReport {
        block_on(self.agent.run(prompt))
    }

    fn requests(&self) -> Vec<ModelRequest> {
        self.model.requests()
    }

    fn seen(&self, kind: EventKind) -> Vec<StepEvent> {
        let seen = self.seen.lock().unwrap();
        seen.iter().filter(|e| e.kind() == kind).cloned().collect()
    }

    fn events(&self) -> Vec<LoopEvent> {
        self.events.lock().unwrap().clone()
    }
}

fn block_on<F: Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(future)
}

/// A script: one model turn calling `calls`, then a closing turn.
fn calls_then_done(calls: serde_json::Value) -> serde_json::Value {
    json!({"turns": [{"content": "On it.", "tool_calls": calls}, {"content": "All done."}]})
}

fn tool_messages(request: &ModelRequest) -> Vec<&str> {
    request
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.content.as_str())
        .collect()
}

fn terminated_at(report: &RunReport) -> (EventKind, &str, Option<&str>) {
    match &report.status {
        RunStatus::Terminated {
            event,
            reason,
            plugin,
        } => (*event, reason, plugin.as_deref()),
        other => panic!("expected a terminate, got {other}"),
    }
}

// completion-call: patch-request, terminate

#[test]
fn a_request_patch_shapes_its_turn_only() {
    let guard = director(&[
        ("completion-call", "patch-request"),
        ("completion-call.turn", "1"),
        ("patch.preamble", "Answer in French."),
        ("patch.temperature", "0.25"),
        ("patch.max-tokens", "64"),
        ("patch.tool-choice", "required"),
        ("patch.active-tools", "read_file,list_files"),
        ("patch.additional-params", r#"{"seed":7}"#),
        ("patch.extra-context", "house-rules=Never touch .git"),
    ]);
    let setup = Setup::new(
        calls_then_done(json!([{"name": "read_file", "arguments": {"path": "notes.txt"}}])),
        &[guard],
    );
    let report = setup.run("read my notes");
    assert_eq!(report.status, RunStatus::Finished);
    let [patched, baseline] = &setup.requests()[..] else {
        panic!("two model calls")
    };
    let system = &patched.messages[0];
    assert_eq!(system.role, Role::System);
    assert!(
        system.content.starts_with("Answer in French."),
        "{system:?}"
    );
    assert!(
        system
            .content
            .contains("<document id=\"house-rules\">\nNever touch .git\n</document>")
    );
    assert_eq!(patched.temperature, Some(0.25));
    assert_eq!(patched.max_tokens, Some(64));
    assert_eq!(patched.tool_choice, ToolChoice::Required);
    let names: Vec<_> = patched.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["list_files", "read_file"]);
    assert_eq!(patched.additional_params["seed"], 7);

    // The next turn starts from the baseline again.
    assert_eq!(baseline.messages[0].content, "You are careful.");
    assert_eq!(baseline.temperature, None);
    assert_eq!(baseline.max_tokens, None);
    assert_eq!(baseline.tool_choice, ToolChoice::Auto);
    assert_eq!(baseline.tools.len(), 3);
    assert!(baseline.additional_params.is_empty());
}

#[test]
fn a_history_patch_replaces_what_the_model_sees_this_turn() {
    let guard = director(&[
        ("completion-call", "patch-request"),
        ("patch.history", "user:only this|assistant:ok|tool:42"),
    ]);
    let setup = Setup::new(json!({"turns": [{"content": "fine"}]}), &[guard]);
    assert_eq!(setup.run("the real prompt").status, RunStatus::Finished);
    let request = &setup.requests()[0];
    let contents: Vec<_> = request
        .messages
        .iter()
        .map(|m| (m.role, m.content.as_str()))
        .collect();
    assert_eq!(
        contents,
        [
            (Role::System, "You are careful."),
            (Role::User, "only this"),
            (Role::Assistant, "ok"),
            (Role::User, "[tool result] 42"),
        ]
    );
}

#[test]
fn patches_from_two_plugins_merge_and_active_tools_narrow() {
    let a = director(&[
        ("completion-call", "patch-request"),
        ("patch.active-tools", "read_file,write_file"),
        ("patch.temperature", "0.9"),
    ]);
    let b = director(&[
        ("completion-call", "patch-request"),
        ("patch.active-tools", "read_file,list_files"),
        ("patch.temperature", "0.1"),
    ]);
    let setup = Setup::new(json!({"turns": [{"content": "fine"}]}), &[a, b]);
    setup.run("x");
    let request = &setup.requests()[0];
    assert_eq!(request.temperature, Some(0.1), "the later hook wins");
    let names: Vec<_> = request.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["read_file"], "allow-lists intersect");
}

#[test]
fn terminate_on_completion_call_ends_the_run_before_the_model_is_called() {
    let guard = director(&[("completion-call", "terminate:budget spent")]);
    let setup = Setup::new(json!({"turns": [{"content": "never"}]}), &[guard]);
    let report = setup.run("x");
    assert_eq!(
        terminated_at(&report),
        (EventKind::CompletionCall, "budget spent", Some("director"))
    );
    assert!(setup.requests().is_empty());
}

// completion-response, model-turn-finished: terminate

#[test]
fn terminate_on_the_response_events_ends_the_run() {
    for kind in ["completion-response", "model-turn-finished"] {
        let guard = director(&[(kind, "terminate:no"), (&format!("{kind}.when"), "On it")]);
        let setup = Setup::new(
            calls_then_done(
                json!([{"name": "write_file", "arguments": {"path": "a", "content": "x"}}]),
            ),
            &[guard],
        );
        let report = setup.run("x");
        assert_eq!(terminated_at(&report).0.name(), kind);
        assert!(!setup.workspace.join("a").exists(), "{kind}: no tool ran");
        assert_eq!(
            report.text, "",
            "{kind}: a blocked answer is not the run's text"
        );
    }
}

// tool-call: continue, rewrite-args, skip, terminate

#[test]
fn skip_returns_the_reason_to_the_model_without_running_the_tool() {
    let guard = director(&[(
        "tool-call",
        "skip:Not executed: writes are off. Do not retry.",
    )]);
    let setup = Setup::new(
        calls_then_done(
            json!([{"name": "write_file", "arguments": {"path": "out.txt", "content": "x"}}]),
        ),
        &[guard],
    );
    let report = setup.run("write");
    assert_eq!(report.status, RunStatus::Finished);
    assert!(!setup.workspace.join("out.txt").exists());
    let call = &report.tool_calls[0];
    assert!(!call.executed);
    assert_eq!(
        call.outcome,
        ToolOutcome::Denied("Not executed: writes are off. Do not retry.".into())
    );
    assert_eq!(
        tool_messages(&setup.requests()[1]),
        ["Not executed: writes are off. Do not retry."]
    );
    // Later hooks see the skipped call's tool-result, outcome denied.
    let StepEvent::ToolResult(result) = &setup.seen(EventKind::ToolResult)[0] else {
        unreachable!()
    };
    assert!(matches!(result.outcome, ToolOutcome::Denied(_)));
    assert!(
        !setup
            .events()
            .iter()
            .any(|e| matches!(e, LoopEvent::ToolExecutionStart { .. }))
    );
}

#[test]
fn rewrite_args_runs_the_tool_with_the_new_arguments_and_reports_them() {
    let guard = director(&[(
        "tool-call",
        r#"rewrite-args:{"path":"safe/out.txt","content":"rewritten"}"#,
    )]);
    let setup = Setup::new(
        calls_then_done(
            json!([{"name": "write_file", "arguments": {"path": "out.txt", "content": "original"}}]),
        ),
        &[guard],
    );
    let report = setup.run("write");
    assert_eq!(report.status, RunStatus::Finished);
    assert!(!setup.workspace.join("out.txt").exists());
    assert_eq!(
        std::fs::read_to_string(setup.workspace.join("safe/out.txt")).unwrap(),
        "rewritten"
    );
    let call = &report.tool_calls[0];
    assert_eq!(
        call.emitted_args,
        r#"{"path":"out.txt","content":"original"}"#
    );
    assert_eq!(
        call.args,
        r#"{"path":"safe/out.txt","content":"rewritten"}"#
    );
    // The following tool-result carries the rewritten arguments ...
    let StepEvent::ToolResult(result) = &setup.seen(EventKind::ToolResult)[0] else {
        unreachable!()
    };
    assert_eq!(result.args, call.args);
    // ... and so do the loop events; the transcript keeps what the model said.
    assert!(setup.events().iter().any(|e| matches!(e,
        LoopEvent::ToolExecutionStart { arguments, .. } if arguments["path"] == "safe/out.txt")));
    let assistant = &report.messages[1];
    assert_eq!(assistant.tool_calls[0].arguments, call.emitted_args);
}

#[test]
fn a_rewrite_before_a_skip_is_what_the_tool_result_reports() {
    let rewrite = director(&[(
        "tool-call",
        r#"rewrite-args:{"path":"jailed.txt","content":"x"}"#,
    )]);
    let skip = director(&[("tool-call", "skip:denied after rewrite")]);
    let setup = Setup::new(
        calls_then_done(
            json!([{"name": "write_file", "arguments": {"path": "/etc/x", "content": "x"}}]),
        ),
        &[rewrite, skip],
    );
    let report = setup.run("write");
    let StepEvent::ToolResult(result) = &setup.seen(EventKind::ToolResult)[0] else {
        unreachable!()
    };
    assert_eq!(result.args, r#"{"path":"jailed.txt","content":"x"}"#);
    assert_eq!(
        report.tool_calls[0].outcome,
        ToolOutcome::Denied("denied after rewrite".into())
    );
}

#[test]
fn terminate_on_a_tool_call_ends_the_run_before_the_tool_runs() {
    let guard = director(&[
        ("tool-call", "terminate:dangerous"),
        ("tool-call.when", "write_file"),
    ]);
    let setup = Setup::new(
        calls_then_done(json!([
            {"name": "list_files", "arguments": {}},
            {"name": "write_file", "arguments": {"path": "a", "content": "x"}},
        ])),
        &[guard],
    );
    let report = setup.run("x");
    assert_eq!(
        terminated_at(&report),
        (EventKind::ToolCall, "dangerous", Some("director"))
    );
    assert!(!setup.workspace.join("a").exists());
    assert!(report.tool_calls.is_empty(), "no tool of the turn ran");
}

// tool-result: continue, rewrite-result, terminate

#[test]
fn rewrite_result_changes_what_the_model_sees_not_the_raw_outcome() {
    let guard = director(&[("tool-result", "rewrite-result:token=[REDACTED]")]);
    let setup = Setup::new(
        calls_then_done(json!([{"name": "read_file", "arguments": {"path": "notes.txt"}}])),
        &[guard],
    );
    let report = setup.run("read");
    assert_eq!(tool_messages(&setup.requests()[1]), ["token=[REDACTED]"]);
    assert_eq!(report.tool_calls[0].result, "token=[REDACTED]");
    // The recorder after the guard sees the rewritten result but the raw
    // outcome; the loop event shows what the tool really returned.
    let StepEvent::ToolResult(seen) = &setup.seen(EventKind::ToolResult)[0] else {
        unreachable!()
    };
    assert_eq!(seen.result, "token=[REDACTED]");
    assert_eq!(seen.outcome, ToolOutcome::Success);
    assert!(setup.events().iter().any(|e| matches!(e,
        LoopEvent::ToolExecutionEnd { result, .. } if result == "token=hunter2\n")));
}

#[test]
fn terminate_on_a_tool_result_ends_the_run() {
    let guard = director(&[
        ("tool-result", "terminate:leak"),
        ("tool-result.when", "hunter2"),
    ]);
    let setup = Setup::new(
        calls_then_done(json!([
            {"name": "read_file", "arguments": {"path": "notes.txt"}},
            {"name": "list_files", "arguments": {}},
        ])),
        &[guard],
    );
    let report = setup.run("read");
    assert_eq!(
        terminated_at(&report),
        (EventKind::ToolResult, "leak", Some("director"))
    );
    assert_eq!(setup.requests().len(), 1, "the model never saw the result");
    assert_eq!(
        report.tool_calls.len(),
        2,
        "every call that ran stays on the record"
    );
}

// invalid-tool-call: fail (default), retry, repair, skip, terminate

#[test]
fn an_invalid_call_nobody_handles_fails_the_run() {
    let setup = Setup::new(
        calls_then_done(json!([{"name": "raed_file", "arguments": {}}])),
        &[],
    );
    let report = setup.run("x");
    assert!(
        matches!(&report.status, RunStatus::InvalidToolCall { tool_name, plugin: None, .. } if tool_name == "raed_file"),
        "{}",
        report.status
    );
    let guard = director(&[("invalid-tool-call", "fail")]);
    let setup = Setup::new(
        calls_then_done(json!([{"name": "raed_file", "arguments": {}}])),
        &[guard],
    );
    assert!(matches!(
        setup.run("x").status,
        RunStatus::InvalidToolCall {
            plugin: Some(_),
            ..
        }
    ));
}

#[test]
fn terminate_on_an_invalid_call_ends_the_run() {
    let guard = director(&[("invalid-tool-call", "terminate:the model is confused")]);
    let setup = Setup::new(
        calls_then_done(json!([{"name": "rm_rf", "arguments": {}}])),
        &[guard],
    );
    let report = setup.run("x");
    assert_eq!(
        terminated_at(&report),
        (
            EventKind::InvalidToolCall,
            "the model is confused",
            Some("director")
        )
    );
    assert!(report.tool_calls.is_empty());
}

#[test]
fn retry_discards_the_turn_and_reprompts_with_feedback() {
    let guard = director(&[(
        "invalid-tool-call",
        "retry:Use one of: read_file, list_files.",
    )]);
    let setup = Setup::new(
        json!({"turns": [
            {"tool_calls": [{"name": "raed_file", "arguments": {"path": "notes.txt"}}, {"name": "write_file", "arguments": {"path": "a", "content": "x"}}]},
            {"content": "Sorry.", "tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]},
            {"content": "Done."}
        ]}),
        &[guard],
    );
    let report = setup.run("x");
    assert_eq!(report.status, RunStatus::Finished);
    assert!(
        !setup.workspace.join("a").exists(),
        "no tool of the retried turn ran"
    );
    let second = &setup.requests()[1];
    let last = second.messages.last().unwrap();
    assert_eq!(
        (last.role, last.content.as_str()),
        (Role::User, "Use one of: read_file, list_files.")
    );
    assert!(
        second.messages.iter().all(|m| m.tool_calls.is_empty()),
        "the invalid turn is not in the transcript"
    );
    assert_eq!(report.tool_calls.len(), 1);
}

#[test]
fn repair_renames_the_call_which_is_then_revalidated() {
    let guard = director(&[("invalid-tool-call", "repair:read_file")]);
    let setup = Setup::new(
        calls_then_done(json!([{"name": "raed_file", "arguments": {"path": "notes.txt"}}])),
        &[guard],
    );
    let report = setup.run("x");
    assert_eq!(report.status, RunStatus::Finished);
    let call = &report.tool_calls[0];
    assert_eq!(
        (call.emitted_name.as_str(), call.tool_name.as_str()),
        ("raed_file", "read_file")
    );
    assert_eq!(call.result, "token=hunter2\n");

    // A repair to another invalid name is asked about again, and gives up.
    let guard = director(&[("invalid-tool-call", "repair:still_wrong")]);
    let setup = Setup::new(
        calls_then_done(json!([{"name": "raed_file", "arguments": {}}])),
        &[guard],
    );
    let report = setup.run("x");
    assert!(
        matches!(&report.status, RunStatus::InvalidToolCall { reason, .. } if reason.contains("after 3 repairs")),
        "{}",
        report.status
    );
}

#[test]
fn skip_on_an_invalid_call_records_the_reason_as_its_result() {
    let guard = director(&[("invalid-tool-call", "skip:No such tool; carry on.")]);
    let setup = Setup::new(
        calls_then_done(json!([{"name": "rm_rf", "arguments": {}}])),
        &[guard],
    );
    let report = setup.run("x");
    assert_eq!(report.status, RunStatus::Finished);
    assert_eq!(
        tool_messages(&setup.requests()[1]),
        ["No such tool; carry on."]
    );
    assert_eq!(
        report.tool_calls[0].outcome,
        ToolOutcome::Skipped("No such tool; carry on.".into())
    );
}

#[test]
fn a_tool_the_turn_does_not_allow_is_an_invalid_call() {
    let narrow = director(&[
        ("completion-call", "patch-request"),
        ("patch.active-tools", "read_file"),
    ]);
    let setup = Setup::new(
        calls_then_done(
            json!([{"name": "write_file", "arguments": {"path": "a", "content": "x"}}]),
        ),
        &[narrow],
    );
    let report = setup.run("x");
    assert!(
        matches!(&report.status, RunStatus::InvalidToolCall { reason, .. } if reason.contains("not allowed this turn")),
        "{}",
        report.status
    );
    let StepEvent::InvalidToolCall(invalid) = &setup.seen(EventKind::InvalidToolCall)[0] else {
        unreachable!()
    };
    assert_eq!(invalid.allowed_tools, ["read_file"]);
    assert_eq!(
        invalid.available_tools,
        ["list_files", "read_file", "write_file"]
    );
    assert!(!setup.workspace.join("a").exists());
}

// streaming: text-delta, tool-call-delta, stream-response-finish

fn streaming() -> LoopConfig {
    LoopConfig {
        stream: true,
        ..LoopConfig::default()
    }
}

#[test]
fn streamed_deltas_reach_the_hooks_and_add_up() {
    let setup = Setup::with(
        calls_then_done(json!([{"name": "read_file", "arguments": {"path": "notes.txt"}}])),
        &[],
        streaming(),
        ToolSet::new(),
    );
    assert_eq!(setup.run("x").status, RunStatus::Finished);
    let deltas = setup.seen(EventKind::TextDelta);
    let StepEvent::TextDelta(last) = deltas.last().unwrap() else {
        unreachable!()
    };
    assert_eq!(last.aggregated, "All done.");
    let args: String = setup
        .seen(EventKind::ToolCallDelta)
        .iter()
        .map(|e| match e {
            StepEvent::ToolCallDelta(d) => d.delta.clone(),
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(args, r#"{"path":"notes.txt"}"#);
    assert_eq!(setup.seen(EventKind::StreamResponseFinish).len(), 2);
}

#[test]
fn terminate_mid_stream_stops_the_answer() {
    for (kind, when) in [
        ("text-delta", "All done"),
        ("tool-call-delta", "notes"),
        ("stream-response-finish", "All done"),
    ] {
        let guard = director(&[(kind, "terminate:stop"), (&format!("{kind}.when"), when)]);
        let setup = Setup::with(
            calls_then_done(json!([{"name": "read_file", "arguments": {"path": "notes.txt"}}])),
            &[guard],
            streaming(),
            ToolSet::new(),
        );
        let report = setup.run("x");
        assert_eq!(terminated_at(&report).0.name(), kind);
        if kind == "tool-call-delta" {
            assert!(report.tool_calls.is_empty(), "the call never ran");
        }
    }
}

// parallel tool calls

/// Waits until `parties` calls are inside at once: it only finishes when
/// the calls really run concurrently.
struct Rendezvous {
    spec: ToolSpec,
    parties: usize,
    /// Calls inside right now; a call that gives up (a timeout drops it)
    /// leaves.
    inside: Arc<std::sync::atomic::AtomicUsize>,
    met: std::sync::atomic::AtomicBool,
}

struct Inside(Arc<std::sync::atomic::AtomicUsize>);

impl Drop for Inside {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Rendezvous {
    fn tools(parties: usize) -> ToolSet {
        let mut tools = ToolSet::new();
        tools
            .add(Rendezvous {
                spec: ToolSpec {
                    name: "meet".into(),
                    description: "waits for the others".into(),
                    parameters: json!({"type": "object"}),
                },
                parties,
                inside: Arc::default(),
                met: Default::default(),
            })
            .unwrap();
        tools
    }
}

impl Tool for Rendezvous {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    fn call(&self, args: serde_json::Value) -> futures_util::future::BoxFuture<'_, ToolOutput> {
        Box::pin(async move {
            use std::sync::atomic::Ordering::SeqCst;
            self.inside.fetch_add(1, SeqCst);
            let _inside = Inside(self.inside.clone());
            while !self.met.load(SeqCst) {
                if self.inside.load(SeqCst) >= self.parties {
                    self.met.store(true, SeqCst);
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            ToolOutput::success(format!("met {}", args["who"]))
        })
    }
}

#[test]
fn parallel_calls_run_at_once_and_hooks_see_them_in_order() {
    let guard = director(&[
        ("tool-call", "skip:over budget"),
        ("tool-call.when", "\"c\""),
    ]);
    let script = calls_then_done(json!([
        {"name": "meet", "arguments": {"who": "a"}},
        {"name": "meet", "arguments": {"who": "b"}},
        {"name": "meet", "arguments": {"who": "c"}},
    ]));
    let config = LoopConfig {
        tool_timeout: Duration::from_secs(20),
        ..LoopConfig::default()
    };
    let setup = Setup::with(script, &[guard], config, Rendezvous::tools(2));
    let report = setup.run("x");
    assert_eq!(report.status, RunStatus::Finished);
    let outcomes: Vec<_> = report
        .tool_calls
        .iter()
        .map(|c| (c.args.as_str(), c.result.as_str()))
        .collect();
    assert_eq!(outcomes[0], (r#"{"who":"a"}"#, r#"met "a""#));
    assert_eq!(outcomes[1], (r#"{"who":"b"}"#, r#"met "b""#));
    assert_eq!(
        report.tool_calls[2].outcome,
        ToolOutcome::Denied("over budget".into())
    );
    let ids: Vec<_> = setup
        .seen(EventKind::ToolResult)
        .iter()
        .map(|e| match e {
            StepEvent::ToolResult(r) => r.tool_call_id.clone().unwrap(),
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(ids, ["call_1_0", "call_1_1", "call_1_2"]);
}

#[test]
fn sequential_calls_run_one_at_a_time() {
    let config = LoopConfig {
        parallel_tools: false,
        tool_timeout: Duration::from_millis(300),
        ..LoopConfig::default()
    };
    let script = calls_then_done(json!([
        {"name": "meet", "arguments": {"who": "a"}},
        {"name": "meet", "arguments": {"who": "b"}},
    ]));
    let setup = Setup::with(script, &[], config, Rendezvous::tools(2));
    let report = setup.run("x");
    // Alone at the rendezvous, each call times out.
    for call in &report.tool_calls {
        assert!(
            matches!(&call.outcome, ToolOutcome::Error(e) if e.kind == hookbox::ToolErrorKind::Timeout),
            "{call:?}"
        );
    }
}

// loop detection, iterations, timeout

fn same_call_turns(n: usize) -> serde_json::Value {
    let mut turns: Vec<_> = (0..n)
        .map(|_| json!({"tool_calls": [{"name": "list_files", "arguments": {"path": "."}}]}))
        .collect();
    turns.push(json!({"content": "Giving up."}));
    json!({ "turns": turns })
}

fn detecting(action: LoopAction) -> LoopConfig {
    LoopConfig {
        loop_detection: Some(LoopDetection {
            threshold: 3,
            action,
        }),
        ..LoopConfig::default()
    }
}

#[test]
fn a_loop_is_detected_and_handled_as_configured() {
    let stop = Setup::with(
        same_call_turns(4),
        &[],
        detecting(LoopAction::Stop),
        ToolSet::new(),
    );
    let report = stop.run("x");
    assert_eq!(
        report.status,
        RunStatus::LoopStopped {
            tool_name: "list_files".into(),
            count: 3
        }
    );
    assert!(stop.events().contains(&LoopEvent::LoopDetected {
        tool_name: "list_files".into(),
        consecutive_count: 3,
        action: LoopAction::Stop
    }));

    let inject = Setup::with(
        same_call_turns(4),
        &[],
        detecting(LoopAction::InjectWarning),
        ToolSet::new(),
    );
    let report = inject.run("x");
    assert_eq!(report.status, RunStatus::Finished);
    let executed = report.tool_calls.iter().filter(|c| c.executed).count();
    assert_eq!(
        executed, 2,
        "the third and fourth identical calls did not run"
    );
    assert!(
        report.tool_calls[2]
            .result
            .starts_with("Not executed: you called `list_files`")
    );

    let warn = Setup::with(
        same_call_turns(4),
        &[],
        detecting(LoopAction::Warn),
        ToolSet::new(),
    );
    let report = warn.run("x");
    assert_eq!(report.tool_calls.iter().filter(|c| c.executed).count(), 4);
    assert_eq!(
        warn.events()
            .iter()
            .filter(|e| matches!(e, LoopEvent::LoopDetected { .. }))
            .count(),
        2
    );
}

#[test]
fn max_iterations_bounds_the_run() {
    let config = LoopConfig {
        max_iterations: 2,
        loop_detection: None,
        ..LoopConfig::default()
    };
    let setup = Setup::with(same_call_turns(5), &[], config, ToolSet::new());
    let report = setup.run("x");
    assert_eq!(report.status, RunStatus::MaxIterations(2));
    assert_eq!(report.iterations, 2);
}

#[test]
fn the_run_timeout_ends_a_run_that_hangs_and_keeps_what_was_done() {
    let config = LoopConfig {
        timeout: Some(Duration::from_millis(400)),
        tool_timeout: Duration::from_secs(60),
        ..LoopConfig::default()
    };
    // One party at a rendezvous for two: the call never returns.
    let setup = Setup::with(
        calls_then_done(json!([{"name": "meet", "arguments": {}}])),
        &[],
        config,
        Rendezvous::tools(2),
    );
    let report = setup.run("x");
    assert_eq!(
        report.status,
        RunStatus::TimedOut(Duration::from_millis(400))
    );
    assert_eq!(report.iterations, 1);
    assert_eq!(
        report.messages.len(),
        2,
        "the prompt and the assistant's call"
    );
}

// fail-closed

#[test]
fn a_misbehaving_plugin_ends_the_run_with_its_diagnostic() {
    for (prompt, cause) in [
        ("puppet:panic", Cause::Trap),
        ("puppet:loop", Cause::Deadline),
    ] {
        let setup = Setup::new(json!({"turns": [{"content": "never"}]}), &[puppet("p")]);
        let report = setup.run(prompt);
        let RunStatus::FailedClosed(failure) = &report.status else {
            panic!("{prompt}: {}", report.status)
        };
        assert_eq!((&*failure.plugin, failure.cause), ("puppet", cause));
        assert!(setup.requests().is_empty(), "the model was never called");
    }
    // An unhonoured flow: skip on a completion-call.
    let setup = Setup::new(
        json!({"turns": [{"content": "x"}]}),
        &[director(&[("completion-call", "skip:no")])],
    );
    let RunStatus::FailedClosed(failure) = setup.run("x").status else {
        panic!()
    };
    assert_eq!(failure.cause, Cause::UnsupportedFlow);
}

// loop events and telemetry

#[test]
fn loop_events_arrive_in_order_by_callback_and_by_stream() {
    let script =
        calls_then_done(json!([{"name": "read_file", "arguments": {"path": "notes.txt"}}]));
    let guard = director(&[("tool-result", "rewrite-result:hidden")]);
    let setup = Setup::new(script, &[guard]);
    let agent = Arc::new(setup.agent.clone());
    let (streamed, report) = block_on(async move {
        let (events, handle) = agent.run_stream("x");
        let events: Vec<LoopEvent> = events.collect().await;
        (events, handle.await.unwrap())
    });
    assert_eq!(report.status, RunStatus::Finished);
    assert_eq!(streamed, setup.events(), "callback and stream agree");
    let names: Vec<&str> = streamed
        .iter()
        .map(|e| match e {
            LoopEvent::IterationStart { .. } => "iteration-start",
            LoopEvent::LlmResponseReceived { .. } => "llm-response-received",
            LoopEvent::ToolExecutionStart { .. } => "tool-execution-start",
            LoopEvent::ToolExecutionEnd { .. } => "tool-execution-end",
            LoopEvent::HookDecision { .. } => "hook-decision",
            LoopEvent::LoopDetected { .. } => "loop-detected",
        })
        .collect();
    assert_eq!(
        names,
        [
            "iteration-start",
            "llm-response-received",
            "tool-execution-start",
            "tool-execution-end",
            "hook-decision",
            "iteration-start",
            "llm-response-received",
        ]
    );
    let LoopEvent::IterationStart { message_count, .. } = &streamed[5] else {
        unreachable!()
    };
    assert_eq!(*message_count, 3);
    let json = serde_json::to_value(&streamed[3]).unwrap();
    assert_eq!(json["type"], "tool-execution-end");
    assert!(json["duration"].is_f64());
}

#[test]
fn hooks_and_the_tool_read_the_same_arguments() {
    // A duplicate key: the tool would take the last; so do the hooks.
    let guard = director(&[
        ("tool-call", "skip:no deleting"),
        ("tool-call.when", "rm -rf"),
    ]);
    let setup = Setup::new(
        calls_then_done(
            json!([{"name": "write_file", "arguments": r#"{"path":"a","content":"ok","content":"rm -rf ~"}"#}]),
        ),
        &[guard],
    );
    let report = setup.run("x");
    assert_eq!(
        report.tool_calls[0].outcome,
        ToolOutcome::Denied("no deleting".into())
    );
    assert!(!setup.workspace.join("a").exists());
}

/// Arguments that are not a JSON object reach no guard and no tool: the
/// runner asks through the door, whose one argument policy refuses them
/// (`Call::Refuse` by the host); the model reads why, the run goes on.
#[test]
fn arguments_no_guard_could_read_do_not_run() {
    let guard = director(&[("tool-call", "skip:never asked")]);
    let setup = Setup::new(
        calls_then_done(json!([{"name": "write_file", "arguments": "path=a content=rm -rf ~"}])),
        &[guard],
    );
    let report = setup.run("x");
    assert_eq!(report.status, RunStatus::Finished);
    let call = &report.tool_calls[0];
    assert!(!call.executed);
    let ToolOutcome::Denied(why) = &call.outcome else {
        panic!("{:?}", call.outcome)
    };
    assert!(why.contains("not a JSON object"), "{why}");
    assert!(!setup.workspace.join("a").exists());
}

#[test]
fn the_conversation_keeps_tool_calls_tied_to_their_results() {
    let setup = Setup::new(
        calls_then_done(json!([{"id": "abc", "name": "list_files", "arguments": {}}])),
        &[],
    );
    let report = setup.run("x");
    let tool: &ChatMessage = &report.messages[2];
    assert_eq!(tool.tool_call_id.as_deref(), Some("abc"));
    assert_eq!(report.messages[1].tool_calls[0].id, "abc");
    assert_eq!(report.text, "All done.");
}

/// Every span opened while a test ran: its name and its fields, as text.
#[derive(Clone, Default)]
struct Spans(Arc<Mutex<Vec<(String, SpanFields)>>>);

type SpanFields = std::collections::BTreeMap<String, String>;

struct Fields<'a>(&'a mut SpanFields);

impl tracing::field::Visit for Fields<'_> {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

impl Spans {
    fn index(id: &tracing::span::Id) -> usize {
        id.into_u64() as usize
    }

    fn named(&self, name: &str) -> Vec<SpanFields> {
        let spans = self.0.lock().unwrap();
        spans
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, f)| f.clone())
            .collect()
    }
}

/// A minimal subscriber: spans get ids in creation order.
impl tracing::Subscriber for Spans {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        let mut spans = self.0.lock().unwrap();
        let mut fields = Default::default();
        span.record(&mut Fields(&mut fields));
        spans.push((span.metadata().name().to_owned(), fields));
        tracing::span::Id::from_u64(spans.len() as u64)
    }
    fn record(&self, span: &tracing::span::Id, values: &tracing::span::Record<'_>) {
        let mut spans = self.0.lock().unwrap();
        let (_, fields) = &mut spans[Spans::index(span) - 1];
        values.record(&mut Fields(fields));
    }
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, _: &tracing::Event<'_>) {}
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[test]
fn telemetry_follows_the_genai_conventions_and_names_each_decision() {
    let rewrite = director(&[
        (
            "tool-call",
            r#"rewrite-args:{"path":"b.txt","content":"safe"}"#,
        ),
        ("tool-result", "rewrite-result:written"),
    ]);
    let setup = Setup::new(
        calls_then_done(
            json!([{"id": "w1", "name": "write_file", "arguments": {"path": "a.txt", "content": "x"}}]),
        ),
        &[rewrite],
    );
    let spans = Spans::default();
    let report = tracing::subscriber::with_default(spans.clone(), || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(setup.agent.run("write"))
    });
    assert_eq!(report.status, RunStatus::Finished);

    let chats = spans.named("chat");
    assert_eq!(chats.len(), 2);
    assert_eq!(chats[0]["gen_ai.operation.name"], "chat");
    assert_eq!(chats[0]["gen_ai.request.model"], "scripted");
    assert_eq!(chats[0]["gen_ai.provider.name"], "scripted");
    assert!(
        chats[0]["gen_ai.usage.input_tokens"]
            .parse::<u64>()
            .unwrap()
            > 0
    );
    assert!(
        chats[0]["gen_ai.usage.output_tokens"]
            .parse::<u64>()
            .unwrap()
            > 0
    );

    let [tool] = &spans.named("execute_tool")[..] else {
        panic!("one tool ran")
    };
    assert_eq!(tool["gen_ai.operation.name"], "execute_tool");
    assert_eq!(tool["gen_ai.tool.name"], "write_file");
    assert_eq!(tool["gen_ai.tool.call.id"], "w1");
    assert!(
        !tool.contains_key("gen_ai.tool.call.arguments")
            && !tool.contains_key("gen_ai.tool.call.result"),
        "content is captured only when asked for (the CLI's OTLP tests): {tool:?}"
    );

    let [root] = &spans.named("invoke_agent")[..] else {
        panic!("one root span per run")
    };
    assert_eq!(root["gen_ai.operation.name"], "invoke_agent");
    assert_eq!(root["gen_ai.provider.name"], "scripted");
    assert_eq!(root["hookbox.status"], "finished");

    let decisions = spans.named("apply_guardrail");
    let rewrote = decisions
        .iter()
        .find(|d| d["hookbox.event"] == "tool-call")
        .unwrap();
    assert_eq!(rewrote["gen_ai.operation.name"], "apply_guardrail");
    assert_eq!(rewrote["gen_ai.security.target.type"], "tool_call");
    assert_eq!(rewrote["gen_ai.security.decision.type"], "modify");
    assert_eq!(rewrote["gen_ai.guardian.name"], "director");
    assert_eq!(
        &rewrote["gen_ai.conversation.id"],
        &root["gen_ai.conversation.id"]
    );
    assert_eq!(rewrote["hookbox.flow"], "rewrite-args");
}
