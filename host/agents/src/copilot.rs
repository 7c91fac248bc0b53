//! GitHub Copilot's hooks (Copilot CLI and the cloud agent,
//! `.github/hooks/*.json`, version 1): command hooks, camelCase events and
//! fields, the input on stdin, the answer as JSON on stdout.
//!
//! | Copilot event | hookbox event | continue | what a guard can do, and how it is said |
//! |---|---|---|---|
//! | `preToolUse` | `tool-call` (`toolName`; `toolArgs`, JSON text, as the arguments) | no opinion | skip, terminate → `permissionDecision: "deny"` with the reason; rewrite-args → `"ask"` with `modifiedArgs` (the user decides on the changed call; the cloud agent treats ask as deny), `"allow"` only when rewrites may grant |
//! | `permissionRequest` (CLI) | `tool-call`, as above | no opinion | skip, rewrite-args, terminate → `behavior: "deny"` with the message (`interrupt` on terminate) |
//! | `postToolUse` | `tool-result` (`toolResult.textResultForLlm` as the result; `resultType` other than `success` is an error outcome) | no opinion | rewrite-result → `modifiedResult` with the rewritten text; terminate → `modifiedResult` withheld |
//! | any other (`userPromptSubmitted`, whose output Copilot drops; `agentStop`, `errorOccurred` ...) | — | no opinion | — |
//!
//! Failures are the event's own block. On `preToolUse` and
//! `permissionRequest` Copilot denies on exit code 2 whatever the JSON says,
//! so a failure there exits 2 with the denial also in the JSON.

use hookbox::{Decision, Flow, StepEvent, ToolError, ToolErrorKind, ToolOutcome};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::common::{args, tool_call, tool_result};
use crate::shape::peek_string_field;
use crate::{Options, Protocol, Reply, Session};
use hookbox_adapter::verdict::rewritten_args;

/// Which Copilot hook is running. Copilot's input does not say: the
/// command configured for each event names it (`hookbox hook copilot
/// --event preToolUse`), or hookbox tells it from the input's fields.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event {
    /// Before a tool runs.
    PreToolUse,
    /// A permission prompt is about to show (CLI).
    PermissionRequest,
    /// After a tool ran.
    PostToolUse,
    /// Any other event: hookbox has no opinion on it.
    Other,
}

/// A hook's input, as Copilot sends it. Other fields are ignored.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct HookInput {
    /// The event, when the input names it (`hookEventName`).
    #[serde(default)]
    pub hook_event_name: Option<String>,
    /// The session.
    #[serde(default)]
    pub session_id: Option<String>,
    /// The working directory.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Tool events: the tool (`bash`, `view`, `edit`, ...).
    #[serde(default)]
    pub tool_name: Option<String>,
    /// Tool events: the arguments, as JSON text (or an object).
    #[serde(default)]
    pub tool_args: Option<Value>,
    /// `postToolUse`: the result.
    #[serde(default)]
    pub tool_result: Option<ToolResultInput>,
    /// `userPromptSubmitted`: the prompt.
    #[serde(default)]
    pub prompt: Option<String>,
}

/// `postToolUse`'s `toolResult`.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolResultInput {
    /// `success`, `failure`, `denied` ...
    #[serde(default)]
    pub result_type: Option<String>,
    /// What the model reads.
    #[serde(default)]
    pub text_result_for_llm: Option<String>,
}

impl HookInput {
    /// The event: as named, else told from the fields (a result means
    /// `postToolUse`, tool arguments `preToolUse`).
    pub fn event(&self) -> Event {
        match self.hook_event_name.as_deref() {
            Some("preToolUse" | "PreToolUse") => Event::PreToolUse,
            Some("permissionRequest" | "PermissionRequest") => Event::PermissionRequest,
            Some("postToolUse" | "PostToolUse") => Event::PostToolUse,
            Some(_) => Event::Other,
            None if self.tool_result.is_some() => Event::PostToolUse,
            None if self.tool_name.is_some() => Event::PreToolUse,
            None => Event::Other,
        }
    }
}

/// Copilot's hook protocol.
pub struct Copilot;

impl Protocol for Copilot {
    const NAME: &'static str = "copilot";
    type Input = HookInput;
    const EVENT_FIELD: &'static str = "hookEventName";

    fn unreadable(input: &[u8], reason: &str) -> Reply {
        let named = peek_string_field(input, "hookEventName");
        let event = match named.as_deref() {
            Some("postToolUse" | "PostToolUse") => Event::PostToolUse,
            Some("permissionRequest" | "PermissionRequest") => Event::PermissionRequest,
            _ => Event::PreToolUse,
        };
        let empty = HookInput {
            hook_event_name: named,
            session_id: None,
            cwd: None,
            tool_name: None,
            tool_args: None,
            tool_result: None,
            prompt: None,
        };
        block(&event, &empty, reason)
    }

    fn name_event(input: &[u8], event: &str) -> Vec<u8> {
        match serde_json::from_slice::<Value>(input) {
            Ok(Value::Object(mut fields)) => {
                fields.insert("hookEventName".into(), event.into());
                Value::Object(fields).to_string().into_bytes()
            }
            // Unreadable (or cut short): keep the event, so the block is
            // that event's own.
            _ => json!({"hookEventName": event, "unreadable": String::from_utf8_lossy(input)})
                .to_string()
                .into_bytes(),
        }
    }

    fn session(input: &HookInput) -> Session {
        Session {
            // No stand-in when the input names none: every session in a
            // directory would share one state. `hookbox hook --session`
            // names the session explicitly.
            id: input.session_id.clone(),
            subagent: None,
        }
    }

    fn event(input: &HookInput) -> Result<Option<StepEvent>, String> {
        let name = || {
            input
                .tool_name
                .as_deref()
                .ok_or("tool event without a toolName")
        };
        let args = args(input.tool_args.as_ref());
        Ok(Some(match input.event() {
            Event::PreToolUse | Event::PermissionRequest => tool_call(name()?, None, args)?,
            Event::PostToolUse => {
                let result = input.tool_result.as_ref();
                let text = result
                    .and_then(|r| r.text_result_for_llm.clone())
                    .unwrap_or_default();
                let outcome = match result.and_then(|r| r.result_type.as_deref()) {
                    None | Some("success") => ToolOutcome::Success,
                    Some(other) => ToolOutcome::Error(ToolError {
                        kind: ToolErrorKind::Other,
                        message: other.to_owned(),
                    }),
                };
                tool_result(name()?, None, args, &Value::String(text), outcome)
            }
            Event::Other => return Ok(None),
        }))
    }

    fn answer(input: &HookInput, decision: Decision, options: &Options) -> Reply {
        let by = decision.by().to_string();
        match (input.event(), decision.flow) {
            (_, Flow::Continue) => Reply::no_opinion(),
            (Event::PreToolUse, Flow::Skip(reason)) => Reply::json(pre_deny(&reason)),
            (Event::PreToolUse, Flow::RewriteArgs(args)) => match rewritten_args(&args, &by) {
                Ok(updated) => Reply::json(json!({
                    "permissionDecision": if options.rewrites_grant { "allow" } else { "ask" },
                    "permissionDecisionReason": format!("hookbox: {by} changed this call's arguments to {args}"),
                    "modifiedArgs": updated,
                })),
                Err(why) => Copilot::fail(input, &why),
            },
            (Event::PermissionRequest, Flow::Skip(reason)) => {
                Reply::json(json!({"behavior": "deny", "message": reason, "interrupt": false}))
            }
            (Event::PermissionRequest, Flow::RewriteArgs(args)) => Reply::json(json!({
                "behavior": "deny",
                "message": format!("hookbox: {by} allows this call only with other arguments: {args}; a permission answer cannot change them, so it is denied"),
                "interrupt": false,
            })),
            (Event::PostToolUse, Flow::RewriteResult(result)) => {
                Reply::json(modified_result(input, &result))
            }
            (event, flow) => Copilot::fail(
                input,
                &format!(
                    "hookbox: {by} answered `{}` to {event:?}, which Copilot hooks cannot express; blocked",
                    flow.name()
                ),
            ),
        }
    }

    fn fail(input: &HookInput, reason: &str) -> Reply {
        block(&input.event(), input, reason)
    }
}

fn block(event: &Event, input: &HookInput, reason: &str) -> Reply {
    let denied = |json: Value| Reply {
        exit_code: 2,
        stdout: Some(json),
        stderr: Some(reason.to_owned()),
    };
    match event {
        Event::PostToolUse => Reply::json(modified_result(
            input,
            &format!("[output withheld by hookbox: {reason}]"),
        )),
        Event::PermissionRequest => {
            denied(json!({"behavior": "deny", "message": reason, "interrupt": true}))
        }
        Event::PreToolUse | Event::Other => denied(pre_deny(reason)),
    }
}

fn pre_deny(reason: &str) -> Value {
    json!({"permissionDecision": "deny", "permissionDecisionReason": reason})
}

/// `postToolUse`'s replacement of what the model reads, keeping the
/// result's type.
fn modified_result(input: &HookInput, text: &str) -> Value {
    let result_type = input
        .tool_result
        .as_ref()
        .and_then(|r| r.result_type.clone())
        .unwrap_or_else(|| "success".into());
    json!({"modifiedResult": {"resultType": result_type, "textResultForLlm": text}})
}
