//! Properties of the host boundary, checked over many generated cases (a
//! seeded generator, so a failure names a reproducible case):
//!
//! - no input panics the decoders of events, flows and patches;
//! - a stack of continue-only hooks answers the event's default;
//! - active-tools only ever narrow, to the intersection of the allow-lists;
//! - a chain of rewrites equals applying them in order;
//! - nesting part of a stack inside a stack changes no decision.

use std::sync::Arc;

use hookbox::{
    EventKind, Flow, HookStack, RequestPatch, StepEvent, hook_fn, rules::flows_honoured_by,
};

/// xorshift64*: small, seeded, reproducible.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Cases per property; `HOOKBOX_PROPERTY_CASES` raises it for a longer
/// search.
fn cases(default: usize) -> usize {
    std::env::var("HOOKBOX_PROPERTY_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

const SEEDS: &[&str] = &[
    r#"{"event":"tool-call","tool_name":"shell","tool_call_id":"c1","internal_call_id":"i1","args":"{\"cmd\":\"ls\"}"}"#,
    r#"{"event":"tool-result","tool_name":"read_file","args":{"path":"a"},"result":"x","outcome":{"error":{"kind":"timeout","message":"m"}}}"#,
    r#"{"event":"completion-call","prompt":"p","history":[{"role":"user","content":"hi"}],"turn":2}"#,
    r#"{"event":"invalid-tool-call","tool_name":"x","available_tools":["a"],"allowed_tools":["a"],"tool_choice":{"specific":["a"]}}"#,
    r#"{"flow":"patch-request","patch":{"temperature":0.2,"active_tools":["a"],"additional_params":"{\"k\":1}","extra_context":[{"id":"d","text":"t"}]}}"#,
    r#"{"flow":"rewrite-args","args":"{\"a\":[1,2,{\"b\":null}]}"}"#,
    r#"{"flow":"terminate","reason":"é ✓ \ud83d\ude00"}"#,
];

#[test]
fn no_input_panics_the_decoders() {
    let mut rng = Rng(0x5eed_0001);
    for case in 0..cases(20_000) {
        let mut bytes = rng.pick(SEEDS).as_bytes().to_vec();
        for _ in 0..=rng.below(4) {
            let at = rng.below(bytes.len() + 1);
            match rng.below(4) {
                0 if at < bytes.len() => bytes[at] = rng.next() as u8,
                1 => bytes.insert(at, *rng.pick(b"{}[]\":,\\0-e.\x00\xff")),
                2 if at < bytes.len() => {
                    bytes.remove(at);
                }
                _ => bytes.truncate(at),
            }
        }
        let text = String::from_utf8_lossy(&bytes);
        // Each may fail; none may panic.
        let _ = serde_json::from_str::<StepEvent>(&text);
        let _ = serde_json::from_str::<Flow>(&text);
        let _ = serde_json::from_str::<RequestPatch>(&text);
        if let Ok(flow) = serde_json::from_str::<Flow>(&text) {
            let again = serde_json::to_string(&flow).expect("a decoded flow encodes");
            assert_eq!(
                serde_json::from_str::<Flow>(&again).ok(),
                Some(flow),
                "case {case}: {text}"
            );
        }
    }
}

fn event_of(kind: EventKind) -> StepEvent {
    let json = match kind {
        EventKind::CompletionCall => r#"{"event":"completion-call","prompt":"p"}"#,
        EventKind::CompletionResponse => {
            r#"{"event":"completion-response","response":{"content":"c"}}"#
        }
        EventKind::ModelTurnFinished => r#"{"event":"model-turn-finished","content":"c"}"#,
        EventKind::InvalidToolCall => r#"{"event":"invalid-tool-call","tool_name":"x"}"#,
        EventKind::ToolCall => r#"{"event":"tool-call","tool_name":"t","args":"{\"s\":\"\"}"}"#,
        EventKind::ToolResult => r#"{"event":"tool-result","tool_name":"t","result":""}"#,
        EventKind::TextDelta => r#"{"event":"text-delta","delta":"d"}"#,
        EventKind::ToolCallDelta => r#"{"event":"tool-call-delta","delta":"d"}"#,
        EventKind::StreamResponseFinish => {
            r#"{"event":"stream-response-finish","response":{"content":"c"}}"#
        }
    };
    serde_json::from_str(json).unwrap()
}

fn decide(stack: &HookStack, kind: EventKind) -> hookbox::Outcome {
    let mut run = stack.start_run("prop");
    let ctx = run.context(1);
    run.dispatch(&ctx, &event_of(kind))
}

#[test]
fn a_stack_of_continue_only_hooks_answers_the_default() {
    let mut rng = Rng(0x5eed_0002);
    for _ in 0..cases(300) {
        let mut stack = HookStack::new();
        for i in 0..rng.below(6) {
            stack.push_hook(hook_fn(format!("h{i}"), |_, _| Flow::Continue));
        }
        let kind = *rng.pick(&EventKind::ALL);
        let decision = decide(&stack, kind).expect("continue never fails closed");
        assert_eq!(decision.flow, kind.default_flow(), "{kind}");
        assert_eq!(decision.plugin, None);
    }
}

#[test]
fn active_tools_only_ever_narrow() {
    const TOOLS: [&str; 5] = ["a", "b", "c", "d", "e"];
    let mut rng = Rng(0x5eed_0003);
    for _ in 0..cases(500) {
        let mut stack = HookStack::new();
        let mut expected: Option<Vec<&str>> = None;
        for i in 0..1 + rng.below(5) {
            let list: Vec<&str> = TOOLS
                .iter()
                .copied()
                .filter(|_| rng.below(2) == 0)
                .collect();
            expected = Some(match expected {
                None => list.clone(),
                Some(before) => before.into_iter().filter(|t| list.contains(t)).collect(),
            });
            let patch = RequestPatch {
                active_tools: Some(list.iter().map(|s| s.to_string()).collect()),
                ..Default::default()
            };
            stack.push_hook(hook_fn(format!("h{i}"), move |_, _| {
                Flow::PatchRequest(patch.clone())
            }));
        }
        let Flow::PatchRequest(merged) = decide(&stack, EventKind::CompletionCall).unwrap().flow
        else {
            panic!("patches merge into a patch")
        };
        let mut got = merged.active_tools.unwrap();
        got.sort();
        let mut want: Vec<String> = expected.unwrap().iter().map(|s| s.to_string()).collect();
        want.sort();
        assert_eq!(got, want);
    }
}

#[test]
fn a_chain_of_rewrites_equals_applying_them_in_order() {
    let mut rng = Rng(0x5eed_0004);
    for _ in 0..cases(300) {
        let kind = *rng.pick(&[EventKind::ToolCall, EventKind::ToolResult]);
        let mut stack = HookStack::new();
        let mut expected = match event_of(kind) {
            StepEvent::ToolCall(call) => call.args,
            StepEvent::ToolResult(result) => result.result,
            _ => unreachable!(),
        };
        let mut rewrote = false;
        for i in 0..1 + rng.below(6) {
            if rng.below(3) == 0 {
                stack.push_hook(hook_fn(format!("h{i}"), |_, _| Flow::Continue));
                continue;
            }
            // Each hook appends its mark to what it was given: the chain
            // only adds up if every hook saw the previous rewrite.
            let mark = format!("{i}");
            expected = append(&expected, &mark, kind);
            rewrote = true;
            stack.push_hook(hook_fn(format!("h{i}"), move |_, event| match event {
                StepEvent::ToolCall(call) => Flow::RewriteArgs(append(&call.args, &mark, kind)),
                StepEvent::ToolResult(r) => Flow::RewriteResult(append(&r.result, &mark, kind)),
                _ => Flow::Continue,
            }));
        }
        let flow = decide(&stack, kind).unwrap().flow;
        let want = match (rewrote, kind) {
            (false, _) => Flow::Continue,
            (true, EventKind::ToolCall) => Flow::RewriteArgs(expected),
            (true, _) => Flow::RewriteResult(expected),
        };
        assert_eq!(flow, want);
    }
}

/// `text` with `mark` appended: inside the JSON string for arguments (so
/// they stay JSON), plainly for results.
fn append(text: &str, mark: &str, kind: EventKind) -> String {
    match kind {
        EventKind::ToolCall => {
            let mut args: serde_json::Value = serde_json::from_str(text).unwrap();
            let s = args["s"].as_str().unwrap().to_owned() + mark;
            args["s"] = s.into();
            args.to_string()
        }
        _ => format!("{text}{mark}"),
    }
}

/// A flow `kind` honours, chosen by `rng`, with a payload that is valid
/// for it.
fn honoured_flow(rng: &mut Rng, kind: EventKind, i: usize) -> Flow {
    let names: Vec<&str> = flows_honoured_by(kind).collect();
    match *rng.pick(&names) {
        "continue" => Flow::Continue,
        "terminate" => Flow::terminate(format!("t{i}")),
        "skip" => Flow::skip(format!("s{i}")),
        "rewrite-args" => Flow::rewrite_args(format!(r#"{{"s":"{i}"}}"#)),
        "rewrite-result" => Flow::rewrite_result(format!("r{i}")),
        "patch-request" => Flow::PatchRequest(RequestPatch {
            temperature: Some(i as f64),
            active_tools: Some(vec!["a".into(), format!("t{}", i % 2)]),
            extra_context: Some(vec![hookbox::Document {
                id: format!("d{i}"),
                text: String::new(),
            }]),
            ..Default::default()
        }),
        "fail" => Flow::Fail,
        "retry" => Flow::retry(format!("f{i}")),
        "repair" => Flow::repair(format!("n{i}")),
        other => unreachable!("{other}"),
    }
}

#[test]
fn nesting_part_of_a_stack_changes_no_decision() {
    let mut rng = Rng(0x5eed_0005);
    for case in 0..cases(1_000) {
        let kind = *rng.pick(&EventKind::ALL);
        let n = 1 + rng.below(6);
        let flows: Vec<Arc<Flow>> = (0..n)
            .map(|i| Arc::new(honoured_flow(&mut rng, kind, i)))
            .collect();
        let hook = |i: usize| {
            let flow = flows[i].clone();
            hook_fn(format!("h{i}"), move |_, _| (*flow).clone())
        };
        let mut flat = HookStack::new();
        for i in 0..n {
            flat.push_hook(hook(i));
        }
        let (from, to) = {
            let a = rng.below(n + 1);
            let b = rng.below(n + 1);
            (a.min(b), a.max(b))
        };
        let mut nested = HookStack::new();
        let mut inner = HookStack::new();
        for i in 0..n {
            if (from..to).contains(&i) {
                inner.push_hook(hook(i));
                if i + 1 == to {
                    nested.push_stack(std::mem::take(&mut inner));
                }
            } else {
                nested.push_hook(hook(i));
            }
        }
        let (a, b) = (decide(&flat, kind), decide(&nested, kind));
        match (a, b) {
            (Ok(a), Ok(b)) => assert_eq!(
                (a.flow, a.rewritten),
                (b.flow, b.rewritten),
                "case {case}: {kind}, flows {flows:?}, nested {from}..{to}"
            ),
            (a, b) => panic!("case {case}: {kind}: {a:?} vs {b:?}"),
        }
    }
}
