//! An llm-stack tool loop guarded by hookbox's example plugins.
//!
//! `cargo run -p hookbox-llm-stack --example guarded_loop`
//!
//! The loop runs on llm-stack's mock provider, scripted to ask for a
//! dangerous command, a write outside the workspace and a file full of
//! secrets. Four sandboxed WebAssembly guards deny the first, jail the
//! second, redact the third and add the house rules to the first request.

use std::sync::{Arc, Mutex};

use hookbox::{HookStack, Plugin, PluginOptions, Runtime, RuntimeConfig};
use hookbox_tests::guests;
use llm_stack::test_helpers::{mock_for, sample_response, sample_tool_response};
use llm_stack::tool::{ToolError, tool_fn};
use llm_stack::{ChatMessage, ChatParams, ContentBlock, JsonSchema, ToolCall, ToolDefinition};
use llm_stack::{ToolLoopConfig, ToolRegistry};
use serde_json::{Value, json};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runtime = Runtime::new(RuntimeConfig::default())?;
    let load = |path: &str, config: &[(&str, &str)]| {
        let options = PluginOptions {
            config: config
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..Default::default()
        };
        Plugin::from_file(&runtime, path.as_ref(), options).map(Arc::new)
    };
    let mut stack = HookStack::new();
    stack
        .push_plugin(load(
            guests::INJECT_CONTEXT,
            &[("doc.rules", "House rules: never delete files.")],
        )?)
        .push_plugin(load(guests::DENY_TOOLS, &[])?)
        .push_plugin(load(guests::PATH_JAIL, &[("root", "/workspace")])?)
        .push_plugin(load(guests::REDACT_SECRETS, &[])?);
    let guard = hookbox_llm_stack::Guard::new(stack);

    let model = Arc::new(mock_for("mock", "scripted"));
    let call = |id: &str, name: &str, args: Value| {
        sample_tool_response(vec![ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: args,
        }])
    };
    model.queue_response(call("c1", "shell", json!({"cmd": "rm -rf ~"})));
    model.queue_response(call(
        "c2",
        "write_file",
        json!({"path": "../../etc/cron.d/job", "text": "0 3 * * * backup"}),
    ));
    model.queue_response(call("c3", "read_file", json!({"path": ".env"})));
    model.queue_response(sample_response(
        "Done: I cleaned up, saved the job and checked the settings.",
    ));

    let ran = Arc::new(Mutex::new(Vec::new()));
    let mut registry = ToolRegistry::new();
    registry.register(tool("shell", "removed everything", &ran));
    registry.register(tool("write_file", "written", &ran));
    registry.register(tool(
        "read_file",
        "OPENAI_API_KEY=sk-live-0123456789abcdefghijklmnop\nDEBUG=1",
        &ran,
    ));

    // One hookbox run for this loop, plugged in where llm-stack takes hooks.
    let run = guard.start_run("example")?;
    let params = ChatParams {
        system: Some("You are a careful coding agent.".into()),
        messages: vec![ChatMessage::user("Tidy up my machine.")],
        tools: Some(registry.definitions()),
        ..Default::default()
    };
    let done = hookbox_llm_stack::tool_loop(
        &run,
        model.clone(),
        &registry,
        params,
        ToolLoopConfig::default(),
        &(),
    )
    .await?;

    println!("tools that ran, with the arguments they got:");
    for (name, args) in ran.lock().unwrap().iter() {
        println!("  {name} {args}");
    }
    let requests = model.recorded_calls();
    for (n, request) in requests.iter().enumerate() {
        let rules = request
            .system
            .as_deref()
            .unwrap_or_default()
            .contains("House rules");
        println!("request {}: house rules sent: {rules}", n + 1);
    }
    println!("what the model read back from its tool calls:");
    for message in &requests[requests.len() - 1].messages {
        for block in &message.content {
            if let ContentBlock::ToolResult(result) = block {
                println!(
                    "  {}: {}",
                    result.tool_call_id,
                    result.content.replace('\n', " | ")
                );
            }
        }
    }
    println!("answer: {}", done.response.text().unwrap_or_default());
    Ok(())
}

/// A tool that records its calls and answers `output`.
fn tool(
    name: &'static str,
    output: &'static str,
    ran: &Arc<Mutex<Vec<(String, Value)>>>,
) -> impl llm_stack::ToolHandler<()> + use<> {
    let ran = ran.clone();
    let definition = ToolDefinition {
        name: name.into(),
        description: name.into(),
        parameters: JsonSchema::new(json!({"type": "object"})),
        retry: None,
    };
    tool_fn(definition, move |args: Value| {
        ran.lock().unwrap().push((name.to_owned(), args));
        async move { Ok::<_, ToolError>(output.to_owned()) }
    })
}
