//! Pieces every protocol uses: hookbox events from a tool call's parts,
//! built by the adapter layer ([`hookbox_adapter::ToolUse`]) with its one
//! argument policy and result rule, as every other door's are.

use hookbox::{RequestPatch, StepEvent, ToolOutcome};
use hookbox_adapter::{Args, ToolUse};
use serde_json::Value;

/// A tool's arguments as the agent sent them: an object, a string holding
/// one (as some agents send them), or nothing (`{}`).
pub(crate) fn args(args: Option<&Value>) -> Args {
    Args::Json(args.cloned().unwrap_or(Value::Null))
}

/// A `tool-call` event, the arguments in the one canonical form: whatever
/// escapes the agent used, guards see one spelling, and a rewrite is
/// checked against the same.
///
/// # Errors
/// Why no guard could check the arguments (they are not a JSON object):
/// the event's block.
pub(crate) fn tool_call(
    name: &str,
    id: Option<&str>,
    args: impl Into<Args>,
) -> Result<StepEvent, String> {
    let call = ToolUse::new(name, args, id.map(str::to_owned));
    match call.call_event() {
        Ok((event, _)) => Ok(event),
        Err(refused) => Err(match refused {
            hookbox_adapter::verdict::Call::Refuse { why, .. } => why,
            other => format!("{other:?}"),
        }),
    }
}

/// A `tool-result` event: what the tool `returned` (text, or JSON guards
/// read as its text), after the call of `name` with `args`.
pub(crate) fn tool_result(
    name: &str,
    id: Option<&str>,
    args: impl Into<Args>,
    returned: &Value,
    outcome: ToolOutcome,
) -> StepEvent {
    ToolUse::new(name, args, id.map(str::to_owned)).result_event(returned, outcome)
}

/// A `completion-call` event for a prompt the user is about to send (an
/// agent's prompt hook: no history, no turn count).
pub(crate) fn prompt(prompt: String) -> StepEvent {
    hookbox_adapter::completion_event(prompt, Vec::new(), 0)
}

/// The documents of a patch that only adds extra context, as one text
/// (each in a `<document id="...">` element); `None` for any other patch,
/// which agents' hooks cannot express.
pub(crate) fn context_only(patch: RequestPatch) -> Option<String> {
    let only_context = RequestPatch {
        extra_context: patch.extra_context.clone(),
        ..Default::default()
    } == patch;
    let documents = patch.extra_context.filter(|_| only_context)?;
    Some(hookbox_adapter::verdict::with_context(None, Some(documents)).unwrap_or_default())
}
