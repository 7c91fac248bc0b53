//! A rig agent guarded by hookbox's example plugins.
//!
//! `cargo run -p hookbox-rig --example guarded_agent`
//!
//! The agent runs on rig's scripted mock model, which asks for a dangerous
//! command, a write outside the workspace and a file full of secrets. Four
//! sandboxed WebAssembly guards, loaded as a plugin directory would load
//! them, deny the first, jail the second, redact the third and add the
//! house rules to the first request.

use std::sync::{Arc, Mutex};

use hookbox::{HookStack, Plugin, PluginOptions, Runtime, RuntimeConfig};
use hookbox_tests::guests;
use rig_agent::AgentBuilder;
use rig_agent::test_utils::{MockCompletionModel, MockTurn};
use rig_core::completion::message::{Message, ToolName, ToolResultContent, UserContent};
use rig_core::tool::{DynamicTool, ToolOutput};
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

    let model = MockCompletionModel::from_turns([
        MockTurn::tool_call("c1", "shell", json!({"cmd": "rm -rf ~"})),
        MockTurn::tool_call(
            "c2",
            "write_file",
            json!({"path": "../../etc/cron.d/job", "text": "0 3 * * * backup"}),
        ),
        MockTurn::tool_call("c3", "read_file", json!({"path": ".env"})),
        MockTurn::text("Done: I cleaned up, saved the job and checked the settings."),
    ]);
    let ran = Arc::new(Mutex::new(Vec::new()));
    let agent = AgentBuilder::new(model.clone())
        .preamble("You are a careful coding agent.")
        .dynamic_tool(tool("shell", "removed everything", &ran))
        .dynamic_tool(tool("write_file", "written", &ran))
        .dynamic_tool(tool(
            "read_file",
            "OPENAI_API_KEY=sk-live-0123456789abcdefghijklmnop\nDEBUG=1",
            &ran,
        ))
        .add_hook(hookbox_rig::Guard::new(stack))
        .build();

    let answer = agent.prompt("Tidy up my machine.").max_turns(5).await?;

    println!("tools that ran, with the arguments they got:");
    for (name, args) in ran.lock().unwrap().iter() {
        println!("  {name} {args}");
    }
    let requests = model.requests();
    for (n, request) in requests.iter().enumerate() {
        let sent = serde_json::to_string(request)?;
        println!(
            "request {}: house rules sent: {}",
            n + 1,
            sent.contains("House rules")
        );
    }
    println!("what the model read back from its tool calls:");
    for message in &requests[requests.len() - 1].chat_history {
        if let Message::User { content } = &**message {
            for part in content {
                if let UserContent::ToolResult(result) = part {
                    for c in &result.content {
                        if let ToolResultContent::Text(text) = c {
                            println!(
                                "  {}: {}",
                                result.name.as_str(),
                                text.text.replace('\n', " | ")
                            );
                        }
                    }
                }
            }
        }
    }
    println!("answer: {}", answer.output());
    Ok(())
}

/// A tool that records its calls and answers `output`.
fn tool(
    name: &'static str,
    output: &'static str,
    ran: &Arc<Mutex<Vec<(String, Value)>>>,
) -> DynamicTool {
    let ran = ran.clone();
    DynamicTool::new(
        ToolName::new(name).expect("a name"),
        name,
        json!({"type": "object"}),
        move |args| {
            ran.lock().unwrap().push((name.to_owned(), args));
            Box::pin(async move { Ok(ToolOutput::text(output)) })
        },
    )
}
