//! Pieces every protocol uses: hookbox events from a tool call's parts, and
//! arguments in one canonical form.

use hookbox::{RequestPatch, StepEvent, ToolCall, ToolOutcome, ToolResult};
use serde_json::Value;

/// A tool's arguments as canonical JSON text: an object as its compact
/// text; a string holding JSON (as some agents send them) parsed first;
/// nothing as `{}`. Whatever escapes the agent used, guards see one
/// spelling, and a rewrite is checked against the same.
pub(crate) fn args_text(args: Option<&Value>) -> String {
    match args {
        None | Some(Value::Null) => "{}".to_owned(),
        Some(Value::String(text)) => match serde_json::from_str::<Value>(text) {
            Ok(parsed) => parsed.to_string(),
            Err(_) => Value::String(text.clone()).to_string(),
        },
        Some(other) => other.to_string(),
    }
}

/// A `tool-call` event.
pub(crate) fn tool_call(name: &str, id: Option<&str>, args: String) -> StepEvent {
    StepEvent::ToolCall(ToolCall {
        tool_name: name.to_owned(),
        tool_call_id: id.map(str::to_owned),
        internal_call_id: id.unwrap_or_default().to_owned(),
        args,
    })
}

/// A `tool-result` event.
pub(crate) fn tool_result(
    name: &str,
    id: Option<&str>,
    args: String,
    result: String,
    outcome: ToolOutcome,
) -> StepEvent {
    StepEvent::ToolResult(ToolResult {
        tool_name: name.to_owned(),
        tool_call_id: id.map(str::to_owned),
        internal_call_id: id.unwrap_or_default().to_owned(),
        args,
        result,
        outcome,
        extensions: "{}".into(),
    })
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
