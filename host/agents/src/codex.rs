//! OpenAI Codex CLI's hooks (`hooks.json`, or `[hooks]` in `config.toml`):
//! command hooks with Claude-style names, the input on stdin, the answer as
//! JSON on stdout.
//!
//! | Codex event | hookbox event | continue | what a guard can do, and how it is said |
//! |---|---|---|---|
//! | `PreToolUse` | `tool-call` (`tool_name`, `tool_input`, `tool_use_id`) | no opinion | skip, terminate → `permissionDecision: "deny"` with the reason (the model reads it); rewrite-args → `"allow"` with `updatedInput`, which in Codex is no approval: the changed call still goes through Codex's approval policy and sandbox |
//! | `PermissionRequest` | `tool-call`, as above | no opinion: Codex's approval flow runs | skip, rewrite-args, terminate → `decision.behavior: "deny"` with the message |
//! | `PostToolUse` | `tool-result` (`tool_response`: a shell's output text, or an MCP result) | no opinion | rewrite-result → `decision: "block"` with the rewritten result as the reason, which Codex shows the model in place of the output; terminate → `continue: false`, which also replaces it |
//! | `UserPromptSubmit` | `completion-call` | no opinion | any patch, terminate → `decision: "block"` (Codex hooks cannot add context) |
//! | any other (`Stop`, `SessionStart` ...) | — | no opinion | — |
//!
//! Codex runs the tool when a hook fails: an exit code other than 0 and 2,
//! output that does not parse, or a field it does not know (its output
//! types deny unknown fields, so answers here use only the documented
//! ones). A failure on `PreToolUse` therefore exits 2 with the reason on
//! stderr, which Codex takes as a denial whatever stdout says, and says
//! the denial in the JSON too.

use hookbox::{Decision, Flow, StepEvent, ToolOutcome};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::common::{args, prompt, tool_call, tool_result};
use crate::shape::peek_string_field;
use crate::{Options, Protocol, Reply, Session};
use hookbox_adapter::verdict::rewritten_args;

/// A Codex hook event name (`hook_event_name`).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(from = "String")]
#[non_exhaustive]
pub enum Event {
    /// Before a tool runs.
    PreToolUse,
    /// An approval prompt is about to show.
    PermissionRequest,
    /// After a tool ran.
    PostToolUse,
    /// Before the user's prompt reaches the model.
    UserPromptSubmit,
    /// Any other event, by its name: hookbox has no opinion on it.
    Other(String),
}

impl From<String> for Event {
    fn from(name: String) -> Event {
        match name.as_str() {
            "PreToolUse" => Event::PreToolUse,
            "PermissionRequest" => Event::PermissionRequest,
            "PostToolUse" => Event::PostToolUse,
            "UserPromptSubmit" => Event::UserPromptSubmit,
            _ => Event::Other(name),
        }
    }
}

/// A hook's input, as Codex sends it. Other fields are ignored.
#[derive(Clone, Debug, Deserialize)]
#[non_exhaustive]
pub struct HookInput {
    /// The event.
    pub hook_event_name: Event,
    /// The Codex session (thread).
    #[serde(default)]
    pub session_id: Option<String>,
    /// Inside a subagent: its id.
    #[serde(default)]
    pub agent_id: Option<String>,
    /// Tool events: the tool (`Bash` for shell commands, `mcp__<server>__<tool>`).
    #[serde(default)]
    pub tool_name: Option<String>,
    /// Tool events: the tool's input.
    #[serde(default)]
    pub tool_input: Option<Value>,
    /// Tool events: the call's id.
    #[serde(default)]
    pub tool_use_id: Option<String>,
    /// `PostToolUse`: the output (a string for shell commands).
    #[serde(default)]
    pub tool_response: Option<Value>,
    /// `UserPromptSubmit`: the prompt.
    #[serde(default)]
    pub prompt: Option<String>,
}

/// Codex's hook protocol.
pub struct Codex;

impl Protocol for Codex {
    const NAME: &'static str = "codex";
    type Input = HookInput;

    fn unreadable(input: &[u8], reason: &str) -> Reply {
        let event = peek_string_field(input, "hook_event_name")
            .map_or(Event::Other(String::new()), Event::from);
        block(&event, reason)
    }

    fn session(input: &HookInput) -> Session {
        Session {
            id: input.session_id.clone(),
            subagent: input.agent_id.clone(),
        }
    }

    fn event(input: &HookInput) -> Result<Option<StepEvent>, String> {
        let name = || {
            input
                .tool_name
                .as_deref()
                .ok_or_else(|| format!("{:?} input without a tool_name", input.hook_event_name))
        };
        let id = input.tool_use_id.as_deref();
        let args = args(input.tool_input.as_ref());
        Ok(Some(match &input.hook_event_name {
            Event::PreToolUse | Event::PermissionRequest => tool_call(name()?, id, args)?,
            Event::PostToolUse => {
                let output = input.tool_response.as_ref().unwrap_or(&Value::Null);
                tool_result(name()?, id, args, output, ToolOutcome::Success)
            }
            Event::UserPromptSubmit => prompt(
                input
                    .prompt
                    .clone()
                    .ok_or("UserPromptSubmit input without a prompt")?,
            ),
            Event::Other(_) => return Ok(None),
        }))
    }

    fn answer(input: &HookInput, decision: Decision, _options: &Options) -> Reply {
        let by = decision.by().to_string();
        match (&input.hook_event_name, decision.flow) {
            (_, Flow::Continue) => Reply::no_opinion(),
            (Event::PreToolUse, Flow::Skip(reason)) => Reply::json(pre_deny(&reason)),
            (Event::PreToolUse, Flow::RewriteArgs(args)) => match rewritten_args(&args, &by) {
                // Not an approval in Codex: the changed call still meets
                // its approval policy and sandbox.
                Ok(updated) => Reply::json(json!({
                    "hookSpecificOutput": {
                        "hookEventName": "PreToolUse",
                        "permissionDecision": "allow",
                        "updatedInput": updated,
                    }
                })),
                Err(why) => Codex::fail(input, &why),
            },
            (Event::PermissionRequest, Flow::Skip(reason)) => Reply::json(permission_deny(&reason)),
            (Event::PermissionRequest, Flow::RewriteArgs(args)) => {
                Reply::json(permission_deny(&format!(
                    "hookbox: {by} allows this call only with other arguments: {args}; an approval answer cannot change them, so it is denied"
                )))
            }
            (Event::PostToolUse, Flow::RewriteResult(result)) => {
                // Codex ignores a block with an empty reason (the output
                // would pass): an empty rewrite is said as such.
                let shown = if result.trim().is_empty() {
                    "(empty output)".to_owned()
                } else {
                    result
                };
                Reply::json(json!({"decision": "block", "reason": shown}))
            }
            (event, flow) => Codex::fail(
                input,
                &format!(
                    "hookbox: {by} answered `{}` to {event:?}, which Codex hooks cannot express; blocked",
                    flow.name()
                ),
            ),
        }
    }

    fn fail(input: &HookInput, reason: &str) -> Reply {
        block(&input.hook_event_name, reason)
    }
}

fn block(event: &Event, reason: &str) -> Reply {
    match event {
        Event::PermissionRequest => Reply::json(permission_deny(reason)),
        Event::PostToolUse => Reply::json(json!({"continue": false, "stopReason": reason})),
        Event::UserPromptSubmit => Reply::json(json!({"decision": "block", "reason": reason})),
        // Exit 2 with a reason on stderr denies whatever stdout says.
        Event::PreToolUse | Event::Other(_) => Reply {
            exit_code: 2,
            stdout: Some(pre_deny(reason)),
            stderr: Some(reason.to_owned()),
        },
    }
}

fn pre_deny(reason: &str) -> Value {
    // Codex runs the tool when a denial's reason is empty.
    let reason = if reason.trim().is_empty() {
        "hookbox: blocked"
    } else {
        reason
    };
    json!({
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
    })
}

fn permission_deny(message: &str) -> Value {
    let message = if message.trim().is_empty() {
        "hookbox: denied"
    } else {
        message
    };
    json!({
        "hookSpecificOutput": {
            "hookEventName": "PermissionRequest",
            "decision": {"behavior": "deny", "message": message},
        }
    })
}
