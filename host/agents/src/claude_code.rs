//! Claude Code's hooks (command and HTTP): its hook input mapped to a
//! hookbox event, and a stack's outcome worded as Claude Code's answer.
//!
//! | Claude Code event | hookbox event | continue | what a guard can do, and how it is said |
//! |---|---|---|---|
//! | `PreToolUse` | `tool-call` (`tool_input` as the arguments, `tool_use_id` as the call id) | no opinion: Claude Code's permissions decide | skip → `permissionDecision: "deny"` with the reason (Claude reads it); rewrite-args → `"ask"` with `updatedInput` (the user sees the changed call; `"allow"` only with [`Options::rewrites_grant`]) and `additionalContext` telling Claude its arguments were changed; terminate → deny and `continue: false` |
//! | `PermissionRequest` | `tool-call`, as above | no opinion: the dialog shows | skip → `decision.behavior: "deny"` with the message; rewrite-args → deny (a permission answer cannot change the input without granting the call); terminate → deny with `interrupt: true` and `continue: false` |
//! | `PostToolUse` | `tool-result` (`tool_response` as the result: a string as itself, an object as its JSON text) | no opinion | rewrite-result → `updatedToolOutput` in the tool's own shape (the rewritten JSON must keep the structure; otherwise the output is withheld and the reason given with `decision: "block"`); terminate → output withheld and `continue: false` |
//! | `PostToolUseFailure` | `tool-result` with an `error` outcome (`error` as the result) | no opinion | rewrite-result → `continue: false` (Claude Code cannot replace an error message); terminate → `continue: false` |
//! | `UserPromptSubmit` | `completion-call` | no opinion | a patch of only extra-context → `additionalContext`; any other patch, terminate → `decision: "block"` (the prompt is erased) |
//! | any other | — | no opinion: exit 0, a note on stderr | — |
//!
//! No opinion is no output: Claude Code's own permissions decide.
//! `permissionDecision: "defer"` is never written: it is not a neutral
//! answer but a pause of a headless session (`claude -p` exits with the call
//! for its caller to approve), so a guard's continue cannot mean it.
//!
//! Every failure on a mapped event (a stack that failed closed, an input
//! that cannot be read or is too large, an answer the protocol cannot
//! express, a state that cannot be kept) is that event's own block, as its
//! terminate is, with the diagnostic. Every answer is JSON on stdout with
//! exit 0, so the same answer is an HTTP hook's 2xx body: for HTTP hooks
//! Claude Code treats any other status, and non-JSON, as "carry on".

use hookbox::{Decision, Flow, RequestPatch, StepEvent, ToolError, ToolErrorKind, ToolOutcome};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::common::{args, context_only, prompt, tool_call, tool_result};
use crate::shape::{peek_string_field, reshape, result_text, withhold};
use crate::{Options, Protocol, Reply, Session};

/// A Claude Code hook event name (`hook_event_name`).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(from = "String")]
#[non_exhaustive]
pub enum Event {
    /// Before a tool runs: may deny, ask, allow, or change its input.
    PreToolUse,
    /// A permission dialog is about to show: may allow or deny.
    PermissionRequest,
    /// After a tool ran successfully.
    PostToolUse,
    /// After a tool failed.
    PostToolUseFailure,
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
            "PostToolUseFailure" => Event::PostToolUseFailure,
            "UserPromptSubmit" => Event::UserPromptSubmit,
            _ => Event::Other(name),
        }
    }
}

impl Event {
    /// The name as Claude Code spells it.
    pub fn name(&self) -> &str {
        match self {
            Event::PreToolUse => "PreToolUse",
            Event::PermissionRequest => "PermissionRequest",
            Event::PostToolUse => "PostToolUse",
            Event::PostToolUseFailure => "PostToolUseFailure",
            Event::UserPromptSubmit => "UserPromptSubmit",
            Event::Other(name) => name,
        }
    }
}

impl std::fmt::Display for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A hook's input, as Claude Code sends it on stdin or as an HTTP body.
/// Fields other events carry, and fields Claude Code adds later, are
/// ignored.
#[derive(Clone, Debug, Deserialize)]
#[non_exhaustive]
pub struct HookInput {
    /// The event.
    pub hook_event_name: Event,
    /// The Claude Code session.
    #[serde(default)]
    pub session_id: Option<String>,
    /// Inside a subagent: its id.
    #[serde(default)]
    pub agent_id: Option<String>,
    /// Tool events: the tool (`mcp__<server>__<tool>` for MCP tools).
    #[serde(default)]
    pub tool_name: Option<String>,
    /// Tool events: the tool's input object.
    #[serde(default)]
    pub tool_input: Option<Value>,
    /// Tool events: the call's id.
    #[serde(default)]
    pub tool_use_id: Option<String>,
    /// `PostToolUse`: the tool's output, in its own shape.
    #[serde(default)]
    pub tool_response: Option<Value>,
    /// `PostToolUseFailure`: what went wrong.
    #[serde(default)]
    pub error: Option<Value>,
    /// `PostToolUseFailure`: whether the user interrupted the tool.
    #[serde(default)]
    pub is_interrupt: Option<bool>,
    /// `UserPromptSubmit`: the prompt.
    #[serde(default)]
    pub prompt: Option<String>,
}

/// Claude Code's hook protocol.
pub struct ClaudeCode;

impl Protocol for ClaudeCode {
    const NAME: &'static str = "claude-code";
    type Input = HookInput;

    fn unreadable(input: &[u8], reason: &str) -> Reply {
        let event = peek_string_field(input, "hook_event_name").map(Event::from);
        let input = HookInput {
            hook_event_name: event.unwrap_or(Event::Other(String::new())),
            session_id: None,
            agent_id: None,
            tool_name: None,
            tool_input: None,
            tool_use_id: None,
            tool_response: None,
            error: None,
            is_interrupt: None,
            prompt: None,
        };
        stop(&input, reason)
    }

    fn session(input: &HookInput) -> Session {
        Session {
            id: input.session_id.clone(),
            subagent: input.agent_id.clone(),
        }
    }

    fn event(input: &HookInput) -> Result<Option<StepEvent>, String> {
        let tool_name = || {
            input
                .tool_name
                .clone()
                .ok_or_else(|| format!("{} input without a tool_name", input.hook_event_name))
        };
        let id = input.tool_use_id.as_deref();
        let call_args = || args(input.tool_input.as_ref());
        let result = |returned: &Value, outcome: ToolOutcome| -> Result<StepEvent, String> {
            Ok(tool_result(
                &tool_name()?,
                id,
                call_args(),
                returned,
                outcome,
            ))
        };
        Ok(Some(match &input.hook_event_name {
            Event::PreToolUse | Event::PermissionRequest => {
                tool_call(&tool_name()?, id, call_args())?
            }
            Event::PostToolUse => {
                let output = input.tool_response.as_ref().unwrap_or(&Value::Null);
                result(output, ToolOutcome::Success)?
            }
            Event::PostToolUseFailure => {
                let message = input.error.as_ref().map(result_text).unwrap_or_default();
                let kind = if input.is_interrupt == Some(true) {
                    ToolErrorKind::Other
                } else {
                    ToolErrorKind::Execution
                };
                let outcome = ToolOutcome::Error(ToolError {
                    kind,
                    message: message.clone(),
                });
                result(&Value::String(message), outcome)?
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

    fn neutral(input: &HookInput) -> Reply {
        Reply::no_opinion().with_note(format!(
            "hookbox: `{}` is not an event hookbox guards; no opinion",
            input.hook_event_name
        ))
    }

    fn answer(input: &HookInput, decision: Decision, options: &Options) -> Reply {
        let by = decision.by();
        let by = &*by;
        let event = &input.hook_event_name;
        match (event, decision.flow) {
            (_, Flow::Continue) => Reply::no_opinion(),
            (Event::PreToolUse, Flow::Skip(reason)) => Reply::json(deny(&reason)),
            (Event::PreToolUse, Flow::RewriteArgs(args)) => rewritten_call(&args, by, options),
            (Event::PermissionRequest, Flow::Skip(reason)) => {
                Reply::json(permission_deny(&reason, false))
            }
            (Event::PermissionRequest, Flow::RewriteArgs(args)) => Reply::json(permission_deny(
                &format!(
                    "hookbox: {by} would change this call's arguments to {args}; a permission answer cannot change them without granting the call, so it is denied. Call the tool again with those arguments."
                ),
                false,
            )),
            (Event::PostToolUse, Flow::RewriteResult(result)) => {
                let output = input.tool_response.as_ref().unwrap_or(&Value::Null);
                match reshape(output, &result) {
                    Ok(updated) => Reply::json(updated_output(updated)),
                    Err(why) => {
                        let reason = format!(
                            "hookbox: {by} rewrote this tool's output in a way that does not fit its shape ({why}); the output is withheld"
                        );
                        let mut reply = updated_output(withhold(output, &reason));
                        reply["decision"] = "block".into();
                        reply["reason"] = reason.into();
                        Reply::json(reply)
                    }
                }
            }
            (Event::PostToolUseFailure, Flow::RewriteResult(_)) => stop(
                input,
                &format!(
                    "hookbox: {by} rewrote this tool's error message, which Claude Code hooks cannot replace; stopped so the original is not acted on"
                ),
            ),
            (Event::UserPromptSubmit, Flow::PatchRequest(patch)) => context(patch, by),
            (_, flow) => ClaudeCode::fail(
                input,
                &format!(
                    "hookbox: {by} answered `{}` to {event}, which Claude Code hooks cannot express; blocked",
                    flow.name()
                ),
            ),
        }
    }

    fn fail(input: &HookInput, reason: &str) -> Reply {
        stop(input, reason)
    }
}

/// The block of `input`'s event, which also ends Claude's run: the event's
/// own refusal, plus `continue: false` where the event cannot refuse.
fn stop(input: &HookInput, reason: &str) -> Reply {
    let mut answer = match &input.hook_event_name {
        Event::PreToolUse => deny(reason),
        Event::PermissionRequest => permission_deny(reason, true),
        Event::PostToolUse => {
            let output = input.tool_response.as_ref().unwrap_or(&Value::Null);
            updated_output(withhold(output, reason))
        }
        Event::UserPromptSubmit => json!({"decision": "block", "reason": reason}),
        Event::PostToolUseFailure | Event::Other(_) => json!({}),
    };
    if input.hook_event_name != Event::UserPromptSubmit {
        answer["continue"] = false.into();
        answer["stopReason"] = reason.into();
    }
    Reply::json(answer)
}

/// `PreToolUse`'s refusal: the call does not run, Claude reads the reason.
fn deny(reason: &str) -> Value {
    json!({
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
    })
}

/// `PermissionRequest`'s refusal.
fn permission_deny(message: &str, interrupt: bool) -> Value {
    json!({
        "hookSpecificOutput": {
            "hookEventName": "PermissionRequest",
            "decision": {"behavior": "deny", "message": message, "interrupt": interrupt},
        }
    })
}

/// `PostToolUse`'s replacement of what Claude sees.
fn updated_output(output: Value) -> Value {
    json!({
        "hookSpecificOutput": {
            "hookEventName": "PostToolUse",
            "updatedToolOutput": output,
        }
    })
}

/// A call whose arguments a guard changed: the user is asked about the
/// changed call (unless rewrites are trusted to grant), Claude is told.
fn rewritten_call(args: &str, by: &str, options: &Options) -> Reply {
    let input = match hookbox_adapter::verdict::rewritten_args(args, by) {
        Ok(input) => input,
        Err(why) => return Reply::json(deny(&why)),
    };
    let decision = if options.rewrites_grant {
        "allow"
    } else {
        "ask"
    };
    Reply::json(json!({
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": decision,
            "permissionDecisionReason": format!("hookbox: {by} changed this call's arguments"),
            "updatedInput": input,
            "additionalContext": format!(
                "hookbox: {by} changed the arguments of this tool call before it ran; the tool was given {args}"
            ),
        }
    }))
}

/// A patch Claude Code can express: extra context only, as
/// `additionalContext`; any other patch blocks the prompt.
fn context(patch: RequestPatch, by: &str) -> Reply {
    match context_only(patch) {
        Some(context) => Reply::json(json!({
            "hookSpecificOutput": {
                "hookEventName": "UserPromptSubmit",
                "additionalContext": context,
            }
        })),
        None => Reply::json(json!({
            "decision": "block",
            "reason": format!("hookbox: {by} patched the request in a way Claude Code hooks cannot express (only extra-context can be added); blocked"),
        })),
    }
}
