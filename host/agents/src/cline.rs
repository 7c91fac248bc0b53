//! Cline's hooks (one executable per event in `.clinerules/hooks/`, named
//! after it): the input on stdin, the answer as JSON on stdout.
//!
//! | Cline hook | hookbox event | continue | what a guard can do, and how it is said |
//! |---|---|---|---|
//! | `PreToolUse` | `tool-call` (`preToolUse.toolName`, `preToolUse.parameters`) | `cancel: false` | skip, terminate → `cancel: true` with `errorMessage`; rewrite-args → cancel, telling the model the arguments to call again with (Cline cannot change a call's input) |
//! | `PostToolUse` | `tool-result` (`postToolUse.result`; `success: false` is an error outcome) | `cancel: false` | rewrite-result, terminate → `cancel: true` with `errorMessage` (Cline cannot replace a result) |
//! | `UserPromptSubmit` | `completion-call` | `cancel: false` | a patch of only extra-context → `contextModification`; any other patch, terminate → `cancel: true` |
//! | any other (`TaskStart`, `TaskComplete`, `PreCompact` ...) | — | `cancel: false` | — |
//!
//! Cline lets the action run when a hook exits non-zero, prints no JSON or
//! times out, so every answer, failures included, is explicit JSON with
//! exit 0; a failure is `cancel: true`.

use hookbox::{Decision, Flow, RequestPatch, StepEvent, ToolError, ToolErrorKind, ToolOutcome};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::common::{args, context_only, prompt, tool_call, tool_result};
use crate::{Options, Protocol, Reply, Session};

/// A hook's input, as Cline sends it. Other fields are ignored.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct HookInput {
    /// The hook (`PreToolUse`, `PostToolUse`, `UserPromptSubmit`, ...).
    #[serde(default)]
    pub hook_name: Option<String>,
    /// The task: run state spans it.
    #[serde(default)]
    pub task_id: Option<String>,
    /// `PreToolUse`'s payload.
    #[serde(default)]
    pub pre_tool_use: Option<ToolPayload>,
    /// `PostToolUse`'s payload.
    #[serde(default)]
    pub post_tool_use: Option<ToolPayload>,
    /// `UserPromptSubmit`'s payload.
    #[serde(default)]
    pub user_prompt_submit: Option<PromptPayload>,
}

/// A tool hook's payload.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolPayload {
    /// The tool (`execute_command`, `read_file`, ...).
    pub tool_name: String,
    /// Its parameters.
    #[serde(default)]
    pub parameters: Option<Value>,
    /// `PostToolUse`: the result.
    #[serde(default)]
    pub result: Option<Value>,
    /// `PostToolUse`: whether the tool succeeded.
    #[serde(default)]
    pub success: Option<bool>,
}

/// `UserPromptSubmit`'s payload.
#[derive(Clone, Debug, Deserialize)]
#[non_exhaustive]
pub struct PromptPayload {
    /// The prompt.
    pub prompt: String,
}

/// Cline's hook protocol.
pub struct Cline;

impl Protocol for Cline {
    const NAME: &'static str = "cline";
    type Input = HookInput;
    const EVENT_FIELD: &'static str = "hookName";

    fn unreadable(_input: &[u8], reason: &str) -> Reply {
        cancel(reason)
    }

    fn session(input: &HookInput) -> Session {
        Session {
            id: input.task_id.clone(),
            subagent: None,
        }
    }

    fn event(input: &HookInput) -> Result<Option<StepEvent>, String> {
        Ok(Some(match input.hook_name.as_deref() {
            Some("PreToolUse") => {
                let call = input
                    .pre_tool_use
                    .as_ref()
                    .ok_or("PreToolUse without preToolUse")?;
                tool_call(&call.tool_name, None, args(call.parameters.as_ref()))?
            }
            Some("PostToolUse") => {
                let call = input
                    .post_tool_use
                    .as_ref()
                    .ok_or("PostToolUse without postToolUse")?;
                let text = call
                    .result
                    .as_ref()
                    .map(crate::shape::result_text)
                    .unwrap_or_default();
                let outcome = if call.success == Some(false) {
                    ToolOutcome::Error(ToolError {
                        kind: ToolErrorKind::Execution,
                        message: text.clone(),
                    })
                } else {
                    ToolOutcome::Success
                };
                tool_result(
                    &call.tool_name,
                    None,
                    args(call.parameters.as_ref()),
                    &Value::String(text),
                    outcome,
                )
            }
            Some("UserPromptSubmit") => {
                let submitted = input
                    .user_prompt_submit
                    .as_ref()
                    .ok_or("UserPromptSubmit without userPromptSubmit")?;
                prompt(submitted.prompt.clone())
            }
            _ => return Ok(None),
        }))
    }

    fn neutral(_input: &HookInput) -> Reply {
        Reply::json(json!({"cancel": false}))
    }

    fn answer(input: &HookInput, decision: Decision, _options: &Options) -> Reply {
        let by = decision.by().to_string();
        match (input.hook_name.as_deref(), decision.flow) {
            (_, Flow::Continue) => Reply::json(json!({"cancel": false})),
            (Some("PreToolUse"), Flow::Skip(reason)) => cancel(&reason),
            (Some("PreToolUse"), Flow::RewriteArgs(args)) => cancel(&format!(
                "Not run: hookbox guard {by} allows this call only with other parameters: {args}. Call it again with those if they still do what you need."
            )),
            (Some("PostToolUse"), Flow::RewriteResult(_)) => cancel(&format!(
                "hookbox: {by} found content in this tool's result that must not reach the model (Cline cannot replace a result); cancelled"
            )),
            (Some("UserPromptSubmit"), Flow::PatchRequest(patch)) => context(patch, &by),
            (hook, flow) => cancel(&format!(
                "hookbox: {by} answered `{}` to {}, which Cline hooks cannot express; cancelled",
                flow.name(),
                hook.unwrap_or("this hook")
            )),
        }
    }

    fn fail(_input: &HookInput, reason: &str) -> Reply {
        cancel(reason)
    }
}

fn cancel(reason: &str) -> Reply {
    Reply::json(json!({"cancel": true, "errorMessage": reason}))
}

fn context(patch: RequestPatch, by: &str) -> Reply {
    match context_only(patch) {
        Some(context) => Reply::json(json!({"cancel": false, "contextModification": context})),
        None => cancel(&format!(
            "hookbox: {by} patched the request in a way Cline hooks cannot express (only extra-context can be added); cancelled"
        )),
    }
}
