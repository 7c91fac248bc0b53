//! A test guest that does what the event tells it: misbehave in a chosen way
//! or answer a chosen flow. The command is the event's main text (the tool
//! name of a tool call, the prompt of a completion call, the delta of a text
//! delta ...): `puppet:<command>` for every puppet, `<name>:<command>` for
//! the puppet whose config sets `name`. Anything else: continue.
//!
//! Commands: `loop`, `grow`, `recurse`, `panic`, `huge`, `log-flood`,
//! `scratch-flood`, `scratch-control`, `count`, `version` (skip with the `version` setting), and `flow:<case>[:<payload>]`.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};

use hookbox_sdk::{
    EventKind, Flow, Hook, HookContext, RequestPatch, StepEvent, config, log, scratchpad,
};

struct Puppet;

static CALLS: AtomicU64 = AtomicU64::new(0);

impl Hook for Puppet {
    fn subscriptions() -> Vec<EventKind> {
        let only = config::list("subscribe");
        EventKind::ALL
            .into_iter()
            .filter(|k| only.is_empty() || only.iter().any(|o| *o == k.name()))
            .collect()
    }

    fn on_event(_ctx: &HookContext, event: StepEvent) -> Flow {
        let script = script(&event);
        let name = config::get("name");
        let command = script.strip_prefix("puppet:").or_else(|| {
            let name = name.as_deref()?;
            script.strip_prefix(name)?.strip_prefix(':')
        });
        let Some(command) = command else {
            return Flow::Continue;
        };
        // A command list: `a:flow:skip:x;b:flow:continue` lets one event
        // steer several named puppets.
        let command = command.split(';').next().unwrap_or_default();
        run(command)
    }
}

fn run(command: &str) -> Flow {
    match command {
        "loop" => loop {
            black_box(CALLS.fetch_add(1, Ordering::Relaxed));
        },
        "grow" => {
            let mut hoard: Vec<Vec<u8>> = Vec::new();
            loop {
                // Reserved, never touched: the growth is all memory.grow,
                // so the memory limit, not the deadline, is what stops it.
                hoard.push(black_box(Vec::with_capacity(1 << 20)));
            }
        }
        "recurse" => Flow::Terminate(format!("depth {}", recurse(black_box(1)))),
        "panic" => panic!("the puppet was told to panic"),
        "huge" => Flow::RewriteResult("x".repeat(black_box(8 << 20))),
        "log-flood" => loop {
            log::info(&"flood ".repeat(200));
        },
        // Empty messages: free once, so they flooded the log unbounded.
        "log-empty-flood" => loop {
            log::info("");
        },
        "log-forge" => {
            log::warn("ok\nplugin=\"other\" forged line\u{1b}]0;pwned\u{7}");
            Flow::Continue
        }
        // 20,000 tiny entries: 140 KB of keys, far more in host bookkeeping.
        "scratch-tiny" => {
            for i in 0..20_000 {
                scratchpad::set(&format!("k{i}"), "");
            }
            Flow::Continue
        }
        // 300,000 control characters: 300 KB as written, 1.8 MB as the
        // session store writes them (`\u0001`), past the 1 MiB quota.
        "scratch-control" => {
            scratchpad::set("pad", &"\u{1}".repeat(300_000));
            Flow::Continue
        }
        "scratch-flood" => {
            for i in 0.. {
                scratchpad::set(&format!("k{i}"), &"v".repeat(4096));
            }
            Flow::Continue
        }
        "version" => Flow::Skip(config::get_or("version", "?")),
        "count" => {
            let global = CALLS.fetch_add(1, Ordering::Relaxed) + 1;
            let scratch = scratchpad::increment("count", 1);
            Flow::Skip(format!("global={global} scratch={scratch}"))
        }
        _ => match command.split_once(':') {
            Some(("flow", flow)) => parse_flow(flow),
            // `spin:N`: N million steps of busy work, then continue.
            Some(("spin", millions)) => {
                let steps = millions.parse::<u64>().unwrap_or(0) * 1_000_000;
                for _ in 0..steps {
                    black_box(CALLS.fetch_add(0, Ordering::Relaxed));
                }
                Flow::Continue
            }
            _ => Flow::Terminate(format!("puppet: unknown command `{command}`")),
        },
    }
}

fn parse_flow(spec: &str) -> Flow {
    let (case, payload) = spec.split_once(':').unwrap_or((spec, ""));
    let payload = payload.to_owned();
    match case {
        "continue" => Flow::Continue,
        "terminate" => Flow::Terminate(payload),
        "skip" => Flow::Skip(payload),
        "rewrite-args" => Flow::RewriteArgs(payload),
        "rewrite-result" => Flow::RewriteResult(payload),
        "patch-request" => Flow::PatchRequest(RequestPatch {
            preamble: Some(payload),
            ..Default::default()
        }),
        // A patch a framework may not be able to apply.
        "patch-temperature" => Flow::PatchRequest(RequestPatch {
            temperature: payload.parse().ok(),
            ..Default::default()
        }),
        "fail" => Flow::Fail,
        "retry" => Flow::Retry(payload),
        "repair" => Flow::Repair(payload),
        other => Flow::Terminate(format!("puppet: unknown flow `{other}`")),
    }
}

#[inline(never)]
#[allow(unconditional_recursion, reason = "the point: exhaust the stack")]
fn recurse(depth: u64) -> u64 {
    // No locals in linear memory: the wasm stack, not Rust's shadow stack
    // in linear memory, is what runs out.
    black_box(recurse(black_box(depth + 1))).wrapping_add(depth)
}

fn script(event: &StepEvent) -> &str {
    match event {
        StepEvent::CompletionCall(e) => &e.prompt,
        StepEvent::CompletionResponse(e) => &e.prompt,
        StepEvent::ModelTurnFinished(e) => &e.content,
        StepEvent::InvalidToolCall(e) => &e.tool_name,
        StepEvent::ToolCall(e) => &e.tool_name,
        StepEvent::ToolResult(e) => &e.tool_name,
        StepEvent::TextDelta(e) => &e.delta,
        StepEvent::ToolCallDelta(e) => &e.delta,
        StepEvent::StreamResponseFinish(e) => &e.prompt,
    }
}

hookbox_sdk::hook!(Puppet);
