//! Gemini CLI's hooks (`settings.json`): command hooks, the input on stdin,
//! the answer as JSON on stdout.
//!
//! | Gemini event | hookbox event | continue | what a guard can do, and how it is said |
//! |---|---|---|---|
//! | `BeforeTool` | `tool-call` (`tool_name`, `tool_input`; MCP tools are `mcp_<server>_<tool>`) | no opinion | skip → `decision: "deny"` with the reason (the model reads it); rewrite-args → `decision: "ask"` with `hookSpecificOutput.tool_input` (the user confirms the changed call; `"allow"`, which still leaves Gemini's policy in charge, when rewrites may grant); terminate → deny and `continue: false` |
//! | `AfterTool` | `tool-result` (`tool_response.llmContent` as the result; an `error` is an error outcome) | no opinion | rewrite-result → `decision: "deny"` with the rewritten result as the reason, which Gemini gives the model in place of the result ("Tool result blocked: ..."); terminate → the same, withheld, and `continue: false` |
//! | `BeforeAgent` | `completion-call` | no opinion | a patch of only extra-context → `hookSpecificOutput.additionalContext`; any other patch, terminate → `decision: "deny"` (the prompt is dropped) |
//! | any other (`AfterAgent`, `BeforeModel`, `SessionStart` ...) | — | no opinion | — |
//!
//! Gemini lets the call through when a hook times out, crashes without
//! output or prints text that is not JSON with exit 0 or 1; JSON on stdout
//! decides whatever the exit code. So every answer, failures included, is
//! JSON with exit 0.

use hookbox::{Decision, Flow, StepEvent, ToolError, ToolErrorKind, ToolOutcome};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::common::{args, context_only, prompt, tool_call, tool_result};
use crate::shape::{peek_string_field, result_text};
use crate::{Options, Protocol, Reply, Session};
use hookbox_adapter::verdict::rewritten_args;

/// A Gemini CLI hook event name (`hook_event_name`).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(from = "String")]
#[non_exhaustive]
pub enum Event {
    /// Before a tool runs.
    BeforeTool,
    /// After a tool ran.
    AfterTool,
    /// Before the user's prompt starts the agent's turn.
    BeforeAgent,
    /// Any other event, by its name: hookbox has no opinion on it.
    Other(String),
}

impl From<String> for Event {
    fn from(name: String) -> Event {
        match name.as_str() {
            "BeforeTool" => Event::BeforeTool,
            "AfterTool" => Event::AfterTool,
            "BeforeAgent" => Event::BeforeAgent,
            _ => Event::Other(name),
        }
    }
}

/// A hook's input, as Gemini CLI sends it. Other fields are ignored.
#[derive(Clone, Debug, Deserialize)]
#[non_exhaustive]
pub struct HookInput {
    /// The event.
    pub hook_event_name: Event,
    /// The session.
    #[serde(default)]
    pub session_id: Option<String>,
    /// Tool events: the tool.
    #[serde(default)]
    pub tool_name: Option<String>,
    /// Tool events: the tool's input.
    #[serde(default)]
    pub tool_input: Option<Value>,
    /// `AfterTool`: the result.
    #[serde(default)]
    pub tool_response: Option<ToolResponse>,
    /// `BeforeAgent`: the prompt.
    #[serde(default)]
    pub prompt: Option<String>,
}

/// `AfterTool`'s `tool_response`.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolResponse {
    /// What the model reads.
    #[serde(default)]
    pub llm_content: Option<Value>,
    /// The error, when the tool failed.
    #[serde(default)]
    pub error: Option<Value>,
}

/// Gemini CLI's hook protocol.
pub struct Gemini;

impl Protocol for Gemini {
    const NAME: &'static str = "gemini";
    type Input = HookInput;

    fn unreadable(input: &[u8], reason: &str) -> Reply {
        let event = peek_string_field(input, "hook_event_name")
            .map_or(Event::Other(String::new()), Event::from);
        block(&event, reason)
    }

    fn session(input: &HookInput) -> Session {
        Session {
            id: input.session_id.clone(),
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
        let args = args(input.tool_input.as_ref());
        Ok(Some(match &input.hook_event_name {
            Event::BeforeTool => tool_call(name()?, None, args)?,
            Event::AfterTool => {
                let response = input.tool_response.as_ref();
                let text = response
                    .and_then(|r| r.llm_content.as_ref())
                    .map(result_text)
                    .unwrap_or_default();
                let outcome = match response.and_then(|r| r.error.as_ref()) {
                    None | Some(Value::Null) => ToolOutcome::Success,
                    Some(error) => ToolOutcome::Error(ToolError {
                        kind: ToolErrorKind::Execution,
                        message: result_text(error),
                    }),
                };
                tool_result(name()?, None, args, &Value::String(text), outcome)
            }
            Event::BeforeAgent => prompt(
                input
                    .prompt
                    .clone()
                    .ok_or("BeforeAgent input without a prompt")?,
            ),
            Event::Other(_) => return Ok(None),
        }))
    }

    fn answer(input: &HookInput, decision: Decision, options: &Options) -> Reply {
        let by = decision.by().to_string();
        match (&input.hook_event_name, decision.flow) {
            (_, Flow::Continue) => Reply::no_opinion(),
            (Event::BeforeTool, Flow::Skip(reason)) => {
                Reply::json(json!({"decision": "deny", "reason": reason}))
            }
            (Event::BeforeTool, Flow::RewriteArgs(args)) => match rewritten_args(&args, &by) {
                // Gemini may merge the new arguments into the old: a key the
                // guard removed would survive, so such a rewrite is denied.
                Ok(updated) if dropped_key(input.tool_input.as_ref(), &updated).is_some() => {
                    let key = dropped_key(input.tool_input.as_ref(), &updated).unwrap_or_default();
                    Gemini::fail(
                        input,
                        &format!(
                            "hookbox: {by} removed the argument `{key}`, which a Gemini CLI hook cannot remove; blocked"
                        ),
                    )
                }
                Ok(updated) => Reply::json(json!({
                    "decision": if options.rewrites_grant { "allow" } else { "ask" },
                    "reason": format!("hookbox: {by} changed this call's arguments"),
                    "hookSpecificOutput": {"hookEventName": "BeforeTool", "tool_input": updated},
                })),
                Err(why) => Gemini::fail(input, &why),
            },
            (Event::AfterTool, Flow::RewriteResult(result)) => {
                Reply::json(json!({"decision": "deny", "reason": result}))
            }
            (Event::BeforeAgent, Flow::PatchRequest(patch)) => match context_only(patch) {
                Some(context) => Reply::json(json!({
                    "hookSpecificOutput": {"hookEventName": "BeforeAgent", "additionalContext": context}
                })),
                None => Gemini::fail(
                    input,
                    &format!(
                        "hookbox: {by} patched the request in a way Gemini CLI hooks cannot express (only extra-context can be added); blocked"
                    ),
                ),
            },
            (event, flow) => Gemini::fail(
                input,
                &format!(
                    "hookbox: {by} answered `{}` to {event:?}, which Gemini CLI hooks cannot express; blocked",
                    flow.name()
                ),
            ),
        }
    }

    fn fail(input: &HookInput, reason: &str) -> Reply {
        block(&input.hook_event_name, reason)
    }
}

/// A top-level argument of `original` that `updated` no longer has.
fn dropped_key(original: Option<&Value>, updated: &Value) -> Option<String> {
    let original = match original? {
        Value::String(text) => serde_json::from_str::<Value>(text).ok()?,
        other => other.clone(),
    };
    let (Value::Object(before), Value::Object(after)) = (&original, updated) else {
        return None;
    };
    before.keys().find(|k| !after.contains_key(*k)).cloned()
}

fn block(event: &Event, reason: &str) -> Reply {
    match event {
        Event::BeforeAgent => Reply::json(json!({"decision": "deny", "reason": reason})),
        Event::AfterTool => Reply::json(json!({
            "decision": "deny",
            "reason": format!("[output withheld] {reason}"),
            "continue": false,
            "stopReason": reason,
        })),
        Event::BeforeTool | Event::Other(_) => Reply::json(json!({
            "decision": "deny",
            "reason": reason,
            "continue": false,
            "stopReason": reason,
        })),
    }
}
