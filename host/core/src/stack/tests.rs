use std::sync::Mutex;

use super::*;
use crate::error::Cause;
use crate::event::{CompletionCall, InvalidToolCall, TextDelta, ToolCall, ToolOutcome, ToolResult};
use crate::event::{EventKind, EventKinds, HookContext, StepEvent};
use crate::flow::Document;
use crate::flow::{Flow, RequestPatch};
use std::sync::Arc;

/// A hook that answers with `answer(event)` and records what it saw.
struct Fake<F> {
    name: &'static str,
    answer: F,
    seen: Arc<Mutex<Vec<StepEvent>>>,
}

impl<F: Fn(&StepEvent) -> Flow + Send + Sync> Hook for Fake<F> {
    fn name(&self) -> &str {
        self.name
    }
    fn on_event(&self, _ctx: &HookContext, event: &StepEvent) -> Flow {
        self.seen.lock().unwrap().push(event.clone());
        (self.answer)(event)
    }
}

type Seen = Arc<Mutex<Vec<StepEvent>>>;

fn fake(
    stack: &mut HookStack,
    name: &'static str,
    answer: impl Fn(&StepEvent) -> Flow + Send + Sync + 'static,
) -> Seen {
    let seen = Seen::default();
    stack.push_hook(Fake {
        name,
        answer,
        seen: seen.clone(),
    });
    seen
}

fn answers(flows: Vec<(&'static str, Flow)>) -> (HookStack, Vec<Seen>) {
    let mut stack = HookStack::new();
    let seen = flows
        .into_iter()
        .map(|(name, flow)| fake(&mut stack, name, move |_| flow.clone()))
        .collect();
    (stack, seen)
}

fn dispatch(stack: &HookStack, event: &StepEvent) -> Outcome {
    let mut run = stack.start_run("r");
    run.dispatch(&run.context(1), event)
}

fn call(args: &str) -> StepEvent {
    StepEvent::ToolCall(ToolCall {
        tool_name: "t".into(),
        args: args.into(),
        ..Default::default()
    })
}

fn result(text: &str) -> StepEvent {
    StepEvent::ToolResult(ToolResult {
        tool_name: "t".into(),
        args: "{}".into(),
        result: text.into(),
        outcome: ToolOutcome::Error(crate::event::ToolError {
            kind: crate::event::ToolErrorKind::Execution,
            message: "raw".into(),
        }),
        extensions: r#"{"exit":1}"#.into(),
        ..Default::default()
    })
}

fn completion() -> StepEvent {
    StepEvent::CompletionCall(CompletionCall {
        prompt: "p".into(),
        history: vec![],
        turn: 1,
    })
}

fn invalid() -> StepEvent {
    StepEvent::InvalidToolCall(InvalidToolCall {
        tool_name: "shel".into(),
        ..Default::default()
    })
}

fn patch(f: impl FnOnce(&mut RequestPatch)) -> Flow {
    let mut p = RequestPatch::default();
    f(&mut p);
    Flow::PatchRequest(p)
}

fn doc(id: &str) -> Document {
    Document {
        id: id.into(),
        text: id.into(),
    }
}

fn asked(seen: &Seen) -> usize {
    seen.lock().unwrap().len()
}

#[test]
fn completion_call_asks_every_hook_and_merges_patches_in_registration_order() {
    let (stack, seen) = answers(vec![
        ("a", patch(|p| p.extra_context = Some(vec![doc("a")]))),
        ("b", Flow::Continue),
        ("c", patch(|p| p.extra_context = Some(vec![doc("c")]))),
    ]);
    let decision = dispatch(&stack, &completion()).unwrap();
    assert_eq!(
        decision.flow,
        patch(|p| p.extra_context = Some(vec![doc("a"), doc("c")]))
    );
    assert_eq!(decision.plugin.as_deref(), Some("a+c"));
    assert!(seen.iter().all(|s| asked(s) == 1));
}

#[test]
fn completion_call_conflicting_fields_take_the_later_hook() {
    let (stack, _) = answers(vec![
        ("a", patch(|p| p.temperature = Some(0.9))),
        ("b", patch(|p| p.temperature = Some(0.1))),
    ]);
    assert_eq!(
        dispatch(&stack, &completion()).unwrap().flow,
        patch(|p| p.temperature = Some(0.1))
    );
}

#[test]
fn completion_call_terminate_stops_the_stack_and_discards_the_patch() {
    let (stack, seen) = answers(vec![
        ("a", patch(|p| p.preamble = Some("x".into()))),
        ("b", Flow::terminate("stop")),
        ("c", patch(|p| p.preamble = Some("y".into()))),
    ]);
    let decision = dispatch(&stack, &completion()).unwrap();
    assert_eq!(decision.flow, Flow::terminate("stop"));
    assert_eq!(decision.plugin.as_deref(), Some("b"));
    assert_eq!(asked(&seen[2]), 0, "hooks after a terminate are not asked");
}

#[test]
fn completion_call_with_only_continues_is_continue() {
    let (stack, _) = answers(vec![("a", Flow::Continue), ("b", Flow::Continue)]);
    assert_eq!(
        dispatch(&stack, &completion()).unwrap().flow,
        Flow::Continue
    );
}

#[test]
fn tool_call_rewrites_thread_into_the_next_hook() {
    let mut stack = HookStack::new();
    fake(&mut stack, "a", |_| Flow::rewrite_args(r#"{"n":1}"#));
    let seen_b = fake(&mut stack, "b", |_| Flow::Continue);
    fake(&mut stack, "c", |_| Flow::rewrite_args(r#"{"n":2}"#));
    let decision = dispatch(&stack, &call("{}")).unwrap();
    assert_eq!(decision.flow, Flow::rewrite_args(r#"{"n":2}"#));
    assert_eq!(decision.plugin.as_deref(), Some("c"));
    assert_eq!(
        seen_b.lock().unwrap()[0],
        call(r#"{"n":1}"#),
        "b saw a's rewrite"
    );
}

#[test]
fn tool_call_skip_ends_the_chain_and_keeps_the_earlier_rewrite() {
    let (stack, seen) = answers(vec![
        ("jail", Flow::rewrite_args(r#"{"path":"/w/a"}"#)),
        ("deny", Flow::skip("no")),
        ("later", Flow::rewrite_args("{}")),
    ]);
    let decision = dispatch(&stack, &call("{}")).unwrap();
    assert_eq!(decision.flow, Flow::skip("no"));
    assert_eq!(decision.plugin.as_deref(), Some("deny"));
    assert_eq!(decision.rewritten.as_deref(), Some(r#"{"path":"/w/a"}"#));
    assert_eq!(asked(&seen[2]), 0);
}

#[test]
fn tool_call_terminate_ends_the_chain_and_keeps_the_earlier_rewrite() {
    let (stack, _) = answers(vec![
        ("a", Flow::rewrite_args("[1]")),
        ("b", Flow::terminate("budget")),
    ]);
    let decision = dispatch(&stack, &call("{}")).unwrap();
    assert_eq!(
        (decision.flow, decision.rewritten.as_deref()),
        (Flow::terminate("budget"), Some("[1]"))
    );
}

#[test]
fn tool_result_rewrites_chain_while_outcome_and_extensions_stay_raw() {
    let mut stack = HookStack::new();
    fake(&mut stack, "redact", |_| Flow::rewrite_result("[redacted]"));
    let seen = fake(&mut stack, "truncate", |e| match e {
        StepEvent::ToolResult(r) => Flow::rewrite_result(format!("{}!", r.result)),
        _ => Flow::Continue,
    });
    let decision = dispatch(&stack, &result("secret")).unwrap();
    assert_eq!(decision.flow, Flow::rewrite_result("[redacted]!"));
    let StepEvent::ToolResult(second) = &seen.lock().unwrap()[0] else {
        unreachable!()
    };
    let StepEvent::ToolResult(original) = result("secret") else {
        unreachable!()
    };
    assert_eq!(second.result, "[redacted]");
    assert_eq!(
        (&second.outcome, &second.extensions),
        (&original.outcome, &original.extensions)
    );
}

#[test]
fn other_events_take_the_first_non_continue_and_ask_no_further() {
    let (stack, seen) = answers(vec![
        ("a", Flow::Continue),
        ("b", Flow::terminate("first")),
        ("c", Flow::terminate("second")),
    ]);
    let event = StepEvent::ToolCallDelta(crate::event::ToolCallDelta {
        delta: "d".into(),
        ..Default::default()
    });
    let decision = dispatch(&stack, &event).unwrap();
    assert_eq!(
        (decision.flow, decision.plugin.as_deref()),
        (Flow::terminate("first"), Some("b"))
    );
    assert_eq!(asked(&seen[2]), 0);
}

#[test]
fn text_delta_rewrites_chain_on_the_text_so_far() {
    let mut stack = HookStack::new();
    fake(&mut stack, "secrets", |e| match e {
        StepEvent::TextDelta(d) => {
            Flow::rewrite_result(d.aggregated.replace("sk-live-1", "[REDACTED]"))
        }
        _ => Flow::Continue,
    });
    let seen = fake(&mut stack, "pii", |e| match e {
        StepEvent::TextDelta(d) => {
            Flow::rewrite_result(d.aggregated.replace("ada@example.com", "[EMAIL]"))
        }
        _ => Flow::Continue,
    });
    let event = StepEvent::TextDelta(TextDelta {
        delta: "example.com".into(),
        aggregated: "key sk-live-1, mail ada@example.com".into(),
    });
    let decision = dispatch(&stack, &event).unwrap();
    assert_eq!(
        decision.flow,
        Flow::rewrite_result("key [REDACTED], mail [EMAIL]")
    );
    let StepEvent::TextDelta(second) = &seen.lock().unwrap()[0] else {
        unreachable!()
    };
    assert_eq!(
        (second.aggregated.as_str(), second.delta.as_str()),
        ("key [REDACTED], mail ada@example.com", "example.com")
    );
}

#[test]
fn invalid_tool_call_continue_passes_to_the_next_hook() {
    let (stack, _) = answers(vec![("a", Flow::Continue), ("b", Flow::repair("shell"))]);
    assert_eq!(
        dispatch(&stack, &invalid()).unwrap().flow,
        Flow::repair("shell")
    );
}

#[test]
fn invalid_tool_call_where_every_hook_continues_fails_the_run() {
    let (stack, _) = answers(vec![("a", Flow::Continue)]);
    let mut run = stack.start_run("r");
    let decision = run.dispatch(&run.context(1), &invalid()).unwrap();
    assert_eq!((decision.flow, decision.plugin), (Flow::Fail, None));
    assert!(run.is_over());
    assert_eq!(
        HookStack::new()
            .start_run("r")
            .dispatch(&HookContext::default(), &invalid())
            .unwrap()
            .flow,
        Flow::Fail
    );
}

#[test]
fn a_stack_of_continue_only_hooks_continues() {
    let (stack, _) = answers(vec![("a", Flow::Continue), ("b", Flow::Continue)]);
    for event in [completion(), call("{}"), result("r")] {
        assert_eq!(
            dispatch(&stack, &event).unwrap(),
            Decision::new(Flow::Continue)
        );
    }
}

#[test]
fn hooks_run_in_registration_order() {
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut stack = HookStack::new();
    for name in ["first", "second", "third"] {
        let order = order.clone();
        stack.push_hook(hook_fn(name, move |_, _| {
            order.lock().unwrap().push(name);
            Flow::Continue
        }));
    }
    dispatch(&stack, &completion()).unwrap();
    assert_eq!(*order.lock().unwrap(), ["first", "second", "third"]);
}

#[test]
fn nesting_a_stack_inside_a_stack_changes_nothing() {
    let flows = || {
        vec![
            (
                "a",
                patch(|p| p.active_tools = Some(vec!["x".into(), "y".into()])),
            ),
            ("b", Flow::rewrite_args(r#"{"b":1}"#)),
            ("c", patch(|p| p.active_tools = Some(vec!["y".into()]))),
        ]
    };
    let (flat, _) = answers(flows());
    let mut flows = flows();
    let last = flows.pop().unwrap();
    let (inner, _) = answers(flows);
    let mut nested = HookStack::new();
    nested.push_stack(inner);
    fake(&mut nested, last.0, move |_| last.1.clone());
    for event in [completion(), call("{}"), result("r")] {
        let (flat, nested) = (dispatch(&flat, &event), dispatch(&nested, &event));
        assert_eq!(flat.map(|d| d.flow), nested.map(|d| d.flow), "{event:?}");
    }
}

#[test]
fn a_nested_stack_keeps_its_rewrite_before_a_skip() {
    let (inner, _) = answers(vec![
        ("jail", Flow::rewrite_args("[2]")),
        ("deny", Flow::skip("no")),
    ]);
    let mut outer = HookStack::new();
    outer.push_stack(inner);
    let decision = dispatch(&outer, &call("{}")).unwrap();
    assert_eq!(
        (decision.flow, decision.rewritten.as_deref()),
        (Flow::skip("no"), Some("[2]"))
    );
}

#[test]
fn a_nested_stack_that_continues_on_invalid_tool_call_lets_the_next_hook_decide() {
    let (inner, _) = answers(vec![("a", Flow::Continue)]);
    let mut outer = HookStack::new();
    outer.push_stack(inner);
    fake(&mut outer, "repair", |_| Flow::repair("shell"));
    assert_eq!(
        dispatch(&outer, &invalid()).unwrap().flow,
        Flow::repair("shell")
    );
}

#[test]
fn a_hook_not_subscribed_to_a_kind_is_not_asked() {
    struct OnlyToolCalls(Seen);
    impl Hook for OnlyToolCalls {
        fn name(&self) -> &str {
            "only"
        }
        fn subscriptions(&self) -> EventKinds {
            EventKinds::NONE.with(EventKind::ToolCall)
        }
        fn on_event(&self, _: &HookContext, event: &StepEvent) -> Flow {
            self.0.lock().unwrap().push(event.clone());
            Flow::terminate("asked")
        }
    }
    let seen = Seen::default();
    let mut stack = HookStack::new();
    stack.push_hook(OnlyToolCalls(seen.clone()));
    assert_eq!(
        dispatch(&stack, &completion()).unwrap().flow,
        Flow::Continue
    );
    assert_eq!(asked(&seen), 0);
    assert_eq!(
        dispatch(&stack, &call("{}")).unwrap().flow,
        Flow::terminate("asked")
    );
}

#[test]
fn every_flow_an_event_does_not_honour_fails_closed_naming_the_hook() {
    let events = [
        completion(),
        StepEvent::CompletionResponse(Default::default()),
        StepEvent::ModelTurnFinished(Default::default()),
        invalid(),
        call("{}"),
        result("r"),
        StepEvent::TextDelta(Default::default()),
        StepEvent::ToolCallDelta(Default::default()),
        StepEvent::StreamResponseFinish(Default::default()),
    ];
    let mut refused = 0;
    for event in &events {
        for flow in crate::rules::every_flow() {
            let flow = match flow {
                Flow::RewriteArgs(_) => Flow::rewrite_args("{}"),
                other => other,
            };
            let honoured = event.kind().honours(&flow);
            let (stack, _) = answers(vec![("guard", flow.clone())]);
            match dispatch(&stack, event) {
                Err(failure) => {
                    assert!(!honoured, "{} refused on {}", flow.name(), event.kind());
                    assert_eq!(
                        (&*failure.plugin, failure.cause),
                        ("guard", Cause::UnsupportedFlow)
                    );
                    refused += 1;
                }
                Ok(_) => assert!(honoured, "{} accepted on {}", flow.name(), event.kind()),
            }
        }
    }
    assert_eq!(refused, 81 - 27, "9 events x 9 flows, 27 honoured pairs");
}

#[test]
fn a_rewrite_args_that_is_not_json_fails_closed() {
    let (stack, _) = answers(vec![("bad", Flow::rewrite_args("{not json"))]);
    let failure = dispatch(&stack, &call("{}")).unwrap_err();
    assert_eq!(
        (&*failure.plugin, failure.cause),
        ("bad", Cause::InvalidJson)
    );
}

#[test]
fn additional_params_that_are_not_a_json_object_fail_closed() {
    let (stack, _) = answers(vec![(
        "bad",
        patch(|p| p.additional_params = Some("[1]".into())),
    )]);
    assert_eq!(
        dispatch(&stack, &completion()).unwrap_err().cause,
        Cause::InvalidJson
    );
}

#[test]
fn after_a_terminate_the_run_is_over_and_stays_over() {
    let (stack, seen) = answers(vec![("a", Flow::terminate("done"))]);
    let mut run = stack.start_run("r");
    let ctx = run.context(1);
    let first = run.dispatch(&ctx, &call("{}"));
    assert!(run.is_over());
    assert_eq!(run.dispatch(&ctx, &completion()), first);
    assert_eq!(asked(&seen[0]), 1, "no hook is asked after the end");
}

#[test]
fn an_unloadable_required_plugin_fails_every_run_closed() {
    let mut stack = HookStack::new();
    stack.push_unloadable("broken", "corrupt file");
    for run in 0..2 {
        let failure = stack
            .start_run(format!("r{run}"))
            .dispatch(&HookContext::default(), &call("{}"))
            .unwrap_err();
        assert_eq!((&*failure.plugin, failure.cause), ("broken", Cause::Load));
    }
}
