//! What the hookbox guard adds per tool call to a rig run.
//!
//! `cargo bench -p hookbox-rig --bench overhead`
//!
//! One rig run of 16 tool calls on rig's scripted mock model, three ways in
//! the same process, interleaved round by round: no hook; a native rig hook
//! doing what the four example guards do (deny a pattern, jail a path,
//! redact a secret, inject context); and the hookbox guard with the four
//! WebAssembly guards. Prints the median per tool call and the ratios.

use std::time::Instant;

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

#[path = "../../../tests/adapters/support.rs"]
mod support;

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
    let mut turns: Vec<MockTurn> = (0..support::bench_calls())
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
        .default_max_turns(support::bench_calls() + 2);
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

fn main() {
    let guard = hookbox_rig::Guard::new(support::example_guards());
    let tokio = tokio::runtime::Runtime::new().expect("tokio");
    let time = |hook: Option<Hook>| {
        let agent = agent(hook);
        let start = Instant::now();
        tokio.block_on(async { agent.prompt("go").await.expect("run") });
        start.elapsed()
    };
    support::bench("rig run", "native rig hook:", || {
        [
            time(None),
            time(Some(Hook::Native)),
            time(Some(Hook::Guard(guard.clone()))),
        ]
    });
}
