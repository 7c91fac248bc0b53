//! Claude Code's hooks: its hook input mapped to a hookbox event, and a
//! stack's outcome worded as Claude Code's answer.
//!
//! | Claude Code event | hookbox event | answers |
//! |---|---|---|
//! | `PreToolUse` | `tool-call` (`tool_input` as the arguments, `tool_use_id` as the call id) | continue → exit 0, no output; skip → `permissionDecision: deny` with the reason; rewrite-args → `allow` with `updatedInput`; terminate → `continue: false` with the reason, and deny |
//! | `PostToolUse` | `tool-result` (`tool_response` as the result) | continue → exit 0; rewrite-result → exit 2, the rewritten result on stderr (Claude Code cannot replace a tool's output); terminate → `continue: false` |
//! | `UserPromptSubmit` | `completion-call` | continue → exit 0; a patch of only extra-context → `additionalContext`; any other patch → exit 2 (not expressible); terminate → `decision: block` |
//!
//! Whatever cannot be expressed, a fail-closed stack, a malformed input or
//! an event it does not handle blocks: exit 2, the diagnostic on stderr.
//! Never allow by default. Over HTTP (no exit code), [`http_reply`] words a
//! block as the event's own refusal.

use std::fmt;

use hookbox::{CompletionCall, Flow, Outcome, RequestPatch, StepEvent, ToolCall, ToolResult};
use serde::Deserialize;
use serde_json::{Value, json};

/// A Claude Code hook event name (`hook_event_name`).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(from = "String")]
#[non_exhaustive]
pub enum Event {
    /// Before a tool runs: may deny, ask, allow, or change its input.
    PreToolUse,
    /// After a tool ran successfully.
    PostToolUse,
    /// Before the user's prompt reaches the model.
    UserPromptSubmit,
    /// Any other event, by its name.
    Other(String),
}

impl From<String> for Event {
    fn from(name: String) -> Event {
        match name.as_str() {
            "PreToolUse" => Event::PreToolUse,
            "PostToolUse" => Event::PostToolUse,
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
            Event::PostToolUse => "PostToolUse",
            Event::UserPromptSubmit => "UserPromptSubmit",
            Event::Other(name) => name,
        }
    }
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
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
    /// Tool events: the tool (`mcp__<server>__<tool>` for MCP tools).
    #[serde(default)]
    pub tool_name: Option<String>,
    /// Tool events: the tool's input object.
    #[serde(default)]
    pub tool_input: Option<Value>,
    /// Tool events: the call's id.
    #[serde(default)]
    pub tool_use_id: Option<String>,
    /// `PostToolUse`: the tool's output.
    #[serde(default)]
    pub tool_response: Option<Value>,
    /// `UserPromptSubmit`: the prompt.
    #[serde(default)]
    pub prompt: Option<String>,
}

impl HookInput {
    /// Parses a hook input.
    ///
    /// # Errors
    /// A message for Claude Code when the input is not JSON or has no
    /// `hook_event_name`.
    pub fn parse(input: &[u8]) -> Result<HookInput, String> {
        let value: Value = serde_json::from_slice(input)
            .map_err(|e| format!("hookbox: the hook input is not JSON: {e}"))?;
        if !value.get("hook_event_name").is_some_and(Value::is_string) {
            return Err("hookbox: the input has no hook_event_name".into());
        }
        serde_json::from_value(value)
            .map_err(|e| format!("hookbox: the hook input is not a Claude Code hook input: {e}"))
    }
}

/// What to tell Claude Code.
#[derive(Clone, Debug, PartialEq)]
pub enum Answer {
    /// Exit 0, and this JSON on stdout when there is one.
    Reply(Option<Value>),
    /// Exit 2: Claude Code blocks and shows this to Claude.
    Block(String),
}

/// The hookbox event for a hook input.
///
/// # Errors
/// A message for Claude Code when the event is not one hookbox maps, or
/// lacks a field its mapping needs.
pub fn to_event(input: &HookInput) -> Result<StepEvent, String> {
    let name = &input.hook_event_name;
    let tool_name = || {
        input
            .tool_name
            .clone()
            .ok_or_else(|| format!("hookbox: {name} input without a tool_name"))
    };
    let id = input.tool_use_id.clone();
    let args = match &input.tool_input {
        None | Some(Value::Null) => "{}".to_owned(),
        Some(input) => input.to_string(),
    };
    Ok(match name {
        Event::PreToolUse => StepEvent::ToolCall(ToolCall {
            tool_name: tool_name()?,
            internal_call_id: id.clone().unwrap_or_default(),
            tool_call_id: id,
            args,
        }),
        Event::PostToolUse => StepEvent::ToolResult(ToolResult {
            tool_name: tool_name()?,
            internal_call_id: id.clone().unwrap_or_default(),
            tool_call_id: id,
            args,
            result: match &input.tool_response {
                Some(Value::String(text)) => text.clone(),
                Some(other) => other.to_string(),
                None => "null".into(),
            },
            extensions: "{}".into(),
            ..Default::default()
        }),
        Event::UserPromptSubmit => StepEvent::CompletionCall(CompletionCall {
            prompt: input
                .prompt
                .clone()
                .ok_or("hookbox: UserPromptSubmit input without a prompt")?,
            history: Vec::new(),
            turn: 1,
        }),
        Event::Other(other) => {
            return Err(format!(
                "hookbox: `{other}` is not handled (PreToolUse, PostToolUse, UserPromptSubmit are); remove this hook from that event"
            ));
        }
    })
}

/// Words a stack's outcome for `event` as Claude Code's answer.
pub fn answer(event: &Event, outcome: Outcome) -> Answer {
    match outcome {
        Err(failure) => Answer::Block(format!(
            "hookbox: blocked, the guard failed closed: {failure}"
        )),
        Ok(decision) => reply(event, decision.flow, decision.plugin.as_deref()),
    }
}

/// The answer for an HTTP hook, which cannot exit 2: a block becomes the
/// event's own way of refusing.
pub fn http_reply(event: &Event, answer: Answer) -> Value {
    match answer {
        Answer::Reply(Some(json)) => json,
        Answer::Reply(None) => json!({}),
        Answer::Block(reason) => match event {
            Event::PreToolUse => deny(&reason),
            Event::PostToolUse | Event::UserPromptSubmit => {
                json!({"decision": "block", "reason": reason})
            }
            Event::Other(_) => json!({"continue": false, "stopReason": reason}),
        },
    }
}

/// `PreToolUse`'s refusal.
fn deny(reason: &str) -> Value {
    json!({
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
    })
}

fn reply(event: &Event, flow: Flow, plugin: Option<&str>) -> Answer {
    let by = plugin.unwrap_or("hookbox");
    match (event, flow) {
        (_, Flow::Continue) => Answer::Reply(None),
        (Event::PreToolUse, Flow::Skip(reason)) => Answer::Reply(Some(deny(&reason))),
        (Event::PreToolUse, Flow::RewriteArgs(args)) => {
            match serde_json::from_str::<Value>(&args) {
                Ok(input) => Answer::Reply(Some(json!({
                    "hookSpecificOutput": {
                        "hookEventName": "PreToolUse",
                        "permissionDecision": "allow",
                        "permissionDecisionReason": format!("arguments rewritten by {by}"),
                        "updatedInput": input,
                    }
                }))),
                Err(e) => Answer::Block(format!(
                    "hookbox: {by} rewrote the arguments into non-JSON: {e}"
                )),
            }
        }
        (Event::PreToolUse, Flow::Terminate(reason)) => {
            let mut answer = deny(&reason);
            answer["continue"] = false.into();
            answer["stopReason"] = reason.into();
            Answer::Reply(Some(answer))
        }
        (Event::PostToolUse, Flow::RewriteResult(result)) => Answer::Block(format!(
            "hookbox: {by} withheld this tool's output (Claude Code cannot replace it). Use this instead:\n{result}"
        )),
        (Event::PostToolUse, Flow::Terminate(reason)) => Answer::Reply(Some(json!({
            "continue": false,
            "stopReason": reason,
        }))),
        (Event::UserPromptSubmit, Flow::Terminate(reason)) => Answer::Reply(Some(json!({
            "decision": "block",
            "reason": reason,
        }))),
        (Event::UserPromptSubmit, Flow::PatchRequest(patch)) => context_only(patch, by),
        (_, flow) => Answer::Block(format!(
            "hookbox: {by} answered `{}` to {event}, which Claude Code hooks cannot express; blocked",
            flow.name()
        )),
    }
}

/// A patch Claude Code can express: extra context only, as
/// `additionalContext`.
fn context_only(patch: RequestPatch, by: &str) -> Answer {
    let only_context = RequestPatch {
        extra_context: patch.extra_context.clone(),
        ..Default::default()
    } == patch;
    match patch.extra_context.filter(|_| only_context) {
        Some(documents) => {
            let context: Vec<String> = documents
                .iter()
                .map(|d| format!("<document id=\"{}\">\n{}\n</document>", d.id, d.text))
                .collect();
            Answer::Reply(Some(json!({
                "hookSpecificOutput": {
                    "hookEventName": "UserPromptSubmit",
                    "additionalContext": context.join("\n\n"),
                }
            })))
        }
        None => Answer::Block(format!(
            "hookbox: {by} patched the request in a way Claude Code hooks cannot express (only extra-context can be added); blocked"
        )),
    }
}
