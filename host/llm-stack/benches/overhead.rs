//! What the hookbox guard adds per tool call to an llm-stack tool loop.
//!
//! `cargo bench -p hookbox-llm-stack --bench overhead`
//!
//! One tool loop of 16 tool calls on llm-stack's mock provider, three ways
//! in the same process, interleaved round by round: no hook; native
//! llm-stack hooks doing what the four example guards do (an `on_tool_call`
//! deny, an interceptor that jails the path and redacts the result, the
//! context in the system prompt); and the hookbox guard with the four
//! WebAssembly guards. Prints the median per tool call and the ratios.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use llm_stack::intercept::{
    Interceptor, InterceptorStack, Next, ToolExec, ToolRequest, ToolResponse,
};
use llm_stack::test_helpers::{mock_for, sample_response, sample_tool_response};
use llm_stack::tool::{ToolApproval, ToolError, tool_fn, tool_loop};
use llm_stack::{ChatMessage, ChatParams, JsonSchema, ToolCall, ToolDefinition};
use llm_stack::{ToolLoopConfig, ToolRegistry};
use serde_json::{Value, json};

#[path = "../../../tests/adapters/support.rs"]
mod support;

/// Path jail and redaction, as an llm-stack interceptor written in Rust.
struct Native;

impl Interceptor<ToolExec<()>> for Native {
    fn intercept<'a>(
        &'a self,
        input: &'a ToolRequest,
        next: Next<'a, ToolExec<()>>,
    ) -> Pin<Box<dyn Future<Output = ToolResponse> + Send + 'a>> {
        Box::pin(async move {
            let mut request = input.clone();
            if let Some(path) = request.arguments["path"].as_str()
                && !path.starts_with("/workspace/")
            {
                request.arguments["path"] = json!(format!(
                    "/workspace/{}",
                    path.trim_start_matches(['/', '.'])
                ));
            }
            let mut response = next.run(&request).await;
            if response.content.contains("sk-") {
                response.content = response
                    .content
                    .replace("sk-live-0123456789abcdef", "[REDACTED]");
            }
            response
        })
    }
}

#[derive(Clone, Copy)]
enum Hook {
    None,
    Native,
    Guard,
}

fn main() {
    let guard = hookbox_llm_stack::Guard::new(support::example_guards());

    let mut registry = ToolRegistry::new();
    registry.register(tool_fn(
        ToolDefinition {
            name: "read_file".into(),
            description: "read".into(),
            parameters: JsonSchema::new(json!({"type": "object"})),
            retry: None,
        },
        |_: Value| async {
            Ok::<_, ToolError>("fn main() {} // key sk-live-0123456789abcdef".to_owned())
        },
    ));

    let tokio = tokio::runtime::Runtime::new().expect("tokio");
    let time = |hook: Hook| {
        let model = Arc::new(mock_for("mock", "scripted"));
        for i in 0..support::bench_calls() {
            model.queue_response(sample_tool_response(vec![ToolCall {
                id: format!("c{i}"),
                name: "read_file".into(),
                arguments: json!({"path": format!("src/{i}.rs")}),
            }]));
        }
        model.queue_response(sample_response("done"));
        let mut params = ChatParams {
            system: Some("You are careful.".into()),
            messages: vec![ChatMessage::user("go")],
            tools: Some(registry.definitions()),
            ..Default::default()
        };
        let config = ToolLoopConfig {
            max_iterations: support::bench_calls() as u32 + 2,
            ..Default::default()
        };
        let start = Instant::now();
        tokio.block_on(async {
            match hook {
                Hook::None => {
                    tool_loop(&*model, &registry, params, config, &())
                        .await
                        .expect("run");
                }
                Hook::Native => {
                    params.system =
                        Some("You are careful.\n\nHouse rules: never delete files.".into());
                    let config = ToolLoopConfig {
                        on_tool_call: Some(Arc::new(|call: &ToolCall| {
                            if call.arguments.to_string().contains("rm -rf") {
                                ToolApproval::Deny("denied".into())
                            } else {
                                ToolApproval::Approve
                            }
                        })),
                        ..config
                    };
                    let tools = registry
                        .clone()
                        .with_interceptors(InterceptorStack::new().with(Native));
                    tool_loop(&*model, &tools, params, config, &())
                        .await
                        .expect("run");
                }
                Hook::Guard => {
                    let run = guard.start_run("bench").expect("run");
                    let config = run.config(config, &registry);
                    let provider = run.provider(model.clone());
                    tool_loop(&provider, &run.registry(&registry), params, config, &())
                        .await
                        .expect("run");
                }
            }
        });
        start.elapsed()
    };
    support::bench("llm-stack tool loop", "native llm-stack hooks:", || {
        [time(Hook::None), time(Hook::Native), time(Hook::Guard)]
    });
}
