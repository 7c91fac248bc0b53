//! Cursor's agent hooks (`.cursor/hooks.json`, version 1): command hooks,
//! the input on stdin, the answer as JSON on stdout.
//!
//! | Cursor event | hookbox event | continue | what a guard can do, and how it is said |
//! |---|---|---|---|
//! | `preToolUse` | `tool-call` (`tool_name`, `tool_input`, `tool_use_id`) | no opinion | skip, terminate → `permission: "deny"` with `user_message` and `agent_message`; rewrite-args → deny, telling the agent the arguments to call again with (Cursor does not enforce `"ask"`, so `updated_input` would grant the call), or `"allow"` with `updated_input` when rewrites may grant |
//! | `beforeShellExecution` | `tool-call` of `Shell` (`{"command", "working_directory"}`) | no opinion | skip, terminate, rewrite-args → deny, as above |
//! | `beforeMCPExecution` | `tool-call` of `MCP:<tool>` (`tool_input`) | no opinion | as above |
//! | `beforeReadFile` | `tool-result` of `Read`: the file's `content` as the result | no opinion | rewrite-result (a redaction), terminate → deny: Cursor cannot send the file changed, so it is not sent |
//! | `postToolUse` | `tool-result` (`tool_output` as the result) | no opinion | rewrite-result of an MCP tool → `updated_mcp_tool_output` in the output's shape; Cursor cannot replace a built-in tool's output after it ran (guard file reads with `beforeReadFile`), so there the rewrite, a terminate or a failure becomes `additional_context` telling the agent the output must not be used |
//! | `beforeSubmitPrompt` | `completion-call` | no opinion | any patch, terminate → `continue: false` with `user_message` |
//! | any other (`stop`, `afterFileEdit`, ...) | — | no opinion | — |
//!
//! Failures (a stack that failed closed, an unreadable input) are the
//! event's own block: `permission: "deny"`, or `continue: false` for a
//! prompt. Cursor lets an action through when a hook crashes, times out or
//! prints something that is not JSON (unless `failClosed` is set), so the
//! answer is always JSON, with exit 0.

use hookbox::{Decision, Flow, StepEvent, ToolOutcome};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::common::{args, prompt, tool_call, tool_result};
use crate::shape::{peek_string_field, reshape};
use crate::{Options, Protocol, Reply, Session};
use hookbox_adapter::verdict::rewritten_args;

/// A Cursor hook event name (`hook_event_name`).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(from = "String")]
#[non_exhaustive]
pub enum Event {
    /// Before any tool runs.
    PreToolUse,
    /// Before a shell command runs.
    BeforeShellExecution,
    /// Before an MCP tool runs.
    BeforeMcpExecution,
    /// Before a file's content is sent to the model.
    BeforeReadFile,
    /// After a tool ran.
    PostToolUse,
    /// Before the user's prompt is sent.
    BeforeSubmitPrompt,
    /// Any other event, by its name: hookbox has no opinion on it.
    Other(String),
}

impl From<String> for Event {
    fn from(name: String) -> Event {
        match name.as_str() {
            "preToolUse" => Event::PreToolUse,
            "beforeShellExecution" => Event::BeforeShellExecution,
            "beforeMCPExecution" => Event::BeforeMcpExecution,
            "beforeReadFile" => Event::BeforeReadFile,
            "postToolUse" => Event::PostToolUse,
            "beforeSubmitPrompt" => Event::BeforeSubmitPrompt,
            _ => Event::Other(name),
        }
    }
}

/// A hook's input, as Cursor sends it. Other fields are ignored.
#[derive(Clone, Debug, Deserialize)]
#[non_exhaustive]
pub struct HookInput {
    /// The event.
    pub hook_event_name: Event,
    /// The conversation: run state spans it.
    #[serde(default)]
    pub conversation_id: Option<String>,
    /// `beforeShellExecution`: the command line.
    #[serde(default)]
    pub command: Option<String>,
    /// The working directory.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Tool events: the tool.
    #[serde(default)]
    pub tool_name: Option<String>,
    /// Tool events: the tool's input (an object, or JSON text).
    #[serde(default)]
    pub tool_input: Option<Value>,
    /// Tool events: the call's id.
    #[serde(default)]
    pub tool_use_id: Option<String>,
    /// `postToolUse`: the tool's output.
    #[serde(default)]
    pub tool_output: Option<Value>,
    /// `beforeReadFile`: the file.
    #[serde(default)]
    pub file_path: Option<String>,
    /// `beforeReadFile`: its content.
    #[serde(default)]
    pub content: Option<String>,
    /// `beforeSubmitPrompt`: the prompt.
    #[serde(default)]
    pub prompt: Option<String>,
}

/// Cursor's hook protocol.
pub struct Cursor;

impl Protocol for Cursor {
    const NAME: &'static str = "cursor";
    type Input = HookInput;

    fn unreadable(input: &[u8], reason: &str) -> Reply {
        let event = peek_string_field(input, "hook_event_name")
            .map_or(Event::Other(String::new()), Event::from);
        block(&event, reason)
    }

    fn session(input: &HookInput) -> Session {
        Session {
            id: input.conversation_id.clone(),
            subagent: None,
        }
    }

    fn event(input: &HookInput) -> Result<Option<StepEvent>, String> {
        let name = || {
            input
                .tool_name
                .as_deref()
                .ok_or("tool event without a tool_name")
        };
        let id = input.tool_use_id.as_deref();
        Ok(Some(match &input.hook_event_name {
            Event::PreToolUse => tool_call(name()?, id, args(input.tool_input.as_ref()))?,
            Event::BeforeShellExecution => {
                let command = input
                    .command
                    .as_deref()
                    .ok_or("beforeShellExecution without a command")?;
                let args = json!({"command": command, "working_directory": input.cwd});
                tool_call("Shell", id, args)?
            }
            Event::BeforeMcpExecution => tool_call(
                &format!("MCP:{}", name()?),
                id,
                args(input.tool_input.as_ref()),
            )?,
            Event::BeforeReadFile => {
                let path = input
                    .file_path
                    .as_deref()
                    .ok_or("beforeReadFile without a file_path")?;
                let content = input.content.clone().unwrap_or_default();
                let args = json!({"file_path": path});
                tool_result("Read", id, args, &content.into(), ToolOutcome::Success)
            }
            Event::PostToolUse => {
                let output = input.tool_output.as_ref().unwrap_or(&Value::Null);
                let args = args(input.tool_input.as_ref());
                tool_result(name()?, id, args, output, ToolOutcome::Success)
            }
            Event::BeforeSubmitPrompt => prompt(
                input
                    .prompt
                    .clone()
                    .ok_or("beforeSubmitPrompt without a prompt")?,
            ),
            Event::Other(_) => return Ok(None),
        }))
    }

    fn answer(input: &HookInput, decision: Decision, options: &Options) -> Reply {
        let by = decision.by().to_string();
        match (&input.hook_event_name, decision.flow) {
            (_, Flow::Continue) => Reply::no_opinion(),
            (Event::PreToolUse, Flow::RewriteArgs(args)) if options.rewrites_grant => {
                match rewritten_args(&args, &by) {
                    Ok(updated) => Reply::json(json!({
                        "permission": "allow",
                        "updated_input": updated,
                        "agent_message": format!("hookbox: {by} changed this call's arguments; the tool was given {args}"),
                    })),
                    Err(why) => Cursor::fail(input, &why),
                }
            }
            (
                Event::PreToolUse | Event::BeforeShellExecution | Event::BeforeMcpExecution,
                Flow::RewriteArgs(args),
            ) => Reply::json(deny(&format!(
                "Not run: hookbox guard {by} allows this call only with other arguments: {args}. Call it again with those if they still do what you need."
            ))),
            (
                Event::PreToolUse | Event::BeforeShellExecution | Event::BeforeMcpExecution,
                Flow::Skip(reason),
            ) => Reply::json(deny(&reason)),
            (Event::BeforeReadFile, Flow::RewriteResult(_)) => Reply::json(deny(&format!(
                "Not read: hookbox guard {by} found content in this file that must not reach the model (Cursor cannot send it redacted)."
            ))),
            (Event::PostToolUse, Flow::RewriteResult(result)) => {
                let output = input.tool_output.as_ref().unwrap_or(&Value::Null);
                let mcp = input
                    .tool_name
                    .as_deref()
                    .is_some_and(|t| t.starts_with("MCP:") || t.starts_with("mcp"));
                match reshape(output, &result) {
                    Ok(updated) if mcp => Reply::json(json!({"updated_mcp_tool_output": updated})),
                    _ => Cursor::fail(
                        input,
                        &format!(
                            "hookbox: {by} rewrote this tool's output, which Cursor cannot replace"
                        ),
                    ),
                }
            }
            (event, flow) => Cursor::fail(
                input,
                &format!(
                    "hookbox: {by} answered `{}` to {event:?}, which Cursor hooks cannot express; blocked",
                    flow.name()
                ),
            ),
        }
    }

    fn fail(input: &HookInput, reason: &str) -> Reply {
        block(&input.hook_event_name, reason)
    }
}

/// The block of `event`.
fn block(event: &Event, reason: &str) -> Reply {
    match event {
        Event::BeforeSubmitPrompt => Reply::json(json!({"continue": false, "user_message": reason})),
        Event::PostToolUse => Reply::json(json!({
            "additional_context": format!(
                "{reason}. The output of this tool call must not be used or repeated; stop and tell the user."
            )
        }))
        .with_note(reason.to_owned()),
        Event::Other(_) => Reply::json(json!({
            "permission": "deny",
            "continue": false,
            "user_message": reason,
            "agent_message": reason,
        })),
        _ => Reply::json(deny(reason)),
    }
}

fn deny(reason: &str) -> Value {
    json!({"permission": "deny", "user_message": reason, "agent_message": reason})
}
