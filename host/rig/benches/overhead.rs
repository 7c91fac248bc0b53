//! What the hookbox guard adds per tool call to a rig run.
//!
//! `cargo bench -p hookbox-rig --bench overhead`
//!
//! One rig run of 16 tool calls on rig's scripted mock model, three ways in
//! the same process, interleaved round by round: no hook; a native rig hook
//! doing what the four example guards do (deny a pattern, jail a path,
//! redact a secret, inject context); and the hookbox guard with the four
//! WebAssembly guards. Prints the median per tool call and the ratios.

use std::sync::Arc;
use std::time::{Duration, Instant};

use hookbox::{HookStack, Plugin, PluginOptions, Runtime, RuntimeConfig};
use hookbox_tests::guests;
use rig_agent::AgentBuilder;
use rig_agent::agent::{
    AgentHook, CompletionCallAction, CompletionCallEvent, DispatchAction, DispatchEvent,
    HookContext, OutcomeAction, OutcomeEvent, RequestPatch,
};
use rig_agent::test_utils::{MockCompletionModel, MockTurn};
use rig_core::completion::Document;
use rig_core::completion::message::ToolName;
use rig_core::tool::{DynamicTool, ToolOutput};
use serde_json::json;

/// Tool calls per run: `HOOKBOX_BENCH_CALLS`, 16 by default. The run's
/// guest instances are made once per run, so more calls spread that cost.
fn calls() -> usize {
    std::env::var("HOOKBOX_BENCH_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(16)
}
const ROUNDS: usize = 60;

/// The four example guards' jobs, as a rig hook written in Rust.
#[derive(Clone)]
struct Native;

impl AgentHook for Native {
    async fn on_completion_call(
        &self,
        _: &HookContext,
        event: CompletionCallEvent<'_>,
    ) -> CompletionCallAction {
        if event.turn > 1 {
            return CompletionCallAction::Continue;
        }
        CompletionCallAction::Patch(RequestPatch::new().context(Document {
            id: "rules".into(),
            text: "House rules: never delete files.".into(),
            additional_props: Default::default(),
        }))
    }

    async fn on_dispatch(&self, _: &HookContext, event: DispatchEvent<'_>) -> DispatchAction {
        let Some(args) = event.tool_args() else {
            return DispatchAction::Proceed;
        };
        if args.contains("rm -rf") {
            return DispatchAction::skip("denied");
        }
        let Ok(mut value) = serde_json::from_str::<serde_json::Value>(args) else {
            return DispatchAction::Proceed;
        };
        match value["path"].as_str() {
            Some(path) if !path.starts_with("/workspace/") => {
                value["path"] = json!(format!(
                    "/workspace/{}",
                    path.trim_start_matches(['/', '.'])
                ));
                DispatchAction::rewrite_tool_args(event.kind, value)
            }
            _ => DispatchAction::Proceed,
        }
    }

    async fn on_outcome(&self, _: &HookContext, event: OutcomeEvent<'_>) -> OutcomeAction {
        match event.tool_result().and_then(|r| r.output().as_text()) {
            Some(text) if text.contains("sk-") => OutcomeAction::rewrite_tool_result(
                &event,
                text.replace("sk-live-0123456789abcdef", "[REDACTED]"),
            ),
            _ => OutcomeAction::Proceed,
        }
    }
}

fn agent(hook: Option<Hook>) -> rig_agent::Agent {
    let mut turns: Vec<MockTurn> = (0..calls())
        .map(|i| {
            MockTurn::tool_call(
                format!("c{i}"),
                "read_file",
                json!({"path": format!("src/{i}.rs")}),
            )
        })
        .collect();
    turns.push(MockTurn::text("done"));
    let read = DynamicTool::new(
        ToolName::new("read_file").unwrap(),
        "read",
        json!({"type": "object"}),
        |_| {
            Box::pin(async {
                Ok(ToolOutput::text(
                    "fn main() {} // key sk-live-0123456789abcdef",
                ))
            })
        },
    );
    let builder = AgentBuilder::new(MockCompletionModel::from_turns(turns))
        .dynamic_tool(read)
        .default_max_turns(calls() + 2);
    match hook {
        None => builder.build(),
        Some(Hook::Native) => builder.add_hook(Native).build(),
        Some(Hook::Guard(guard)) => builder.add_hook(guard).build(),
    }
}

enum Hook {
    Native,
    Guard(hookbox_rig::Guard),
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn main() {
    let runtime = Runtime::new(RuntimeConfig::default()).expect("runtime");
    let load = |path: &str, config: &[(&str, &str)]| {
        let options = PluginOptions {
            config: config
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..Default::default()
        };
        Arc::new(Plugin::from_file(&runtime, path.as_ref(), options).expect("plugin"))
    };
    let mut stack = HookStack::new();
    stack
        .push_plugin(load(
            guests::INJECT_CONTEXT,
            &[("doc.rules", "House rules: never delete files.")],
        ))
        .push_plugin(load(guests::DENY_TOOLS, &[]))
        .push_plugin(load(guests::PATH_JAIL, &[("root", "/workspace")]))
        .push_plugin(load(guests::REDACT_SECRETS, &[]));
    let guard = hookbox_rig::Guard::new(stack);

    let tokio = tokio::runtime::Runtime::new().expect("tokio");
    let time = |hook: fn(&hookbox_rig::Guard) -> Option<Hook>| {
        let agent = agent(hook(&guard));
        let start = Instant::now();
        tokio.block_on(async { agent.prompt("go").await.expect("run") });
        start.elapsed()
    };
    let (mut bare, mut native, mut guarded) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..ROUNDS + 5 {
        let b = time(|_| None);
        let n = time(|_| Some(Hook::Native));
        let g = time(|g| Some(Hook::Guard(g.clone())));
        if round >= 5 {
            bare.push(b);
            native.push(n);
            guarded.push(g);
        }
    }
    let per_call = |d: Duration| d / calls() as u32;
    let (b, n, g) = (median(bare), median(native), median(guarded));
    println!(
        "rig run of {} tool calls, median of {ROUNDS} rounds (per tool call):",
        calls()
    );
    println!("  no hook:                    {:>9.1?}", per_call(b));
    println!("  native rig hook:            {:>9.1?}", per_call(n));
    println!("  hookbox guard, 4 plugins:   {:>9.1?}", per_call(g));
    println!(
        "  guard adds {:.1?} per call over no hook ({:.2}x the run), {:.1?} over the native hook ({:.2}x)",
        per_call(g.saturating_sub(b)),
        g.as_secs_f64() / b.as_secs_f64(),
        per_call(g.saturating_sub(n)),
        g.as_secs_f64() / n.as_secs_f64(),
    );
}
