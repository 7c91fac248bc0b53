//! Pure mappings between rig's types and hookbox's: no I/O, no runs.

use std::collections::HashMap;
use std::sync::Arc;

use hookbox::{Cause, Document, FailClosed, Message, Role, ToolChoice, ToolOutcome, Usage};
use hookbox::{RequestPatch, ToolError, ToolErrorKind};
use rig_core::completion::message::{
    AssistantContent, Message as RigMessage, ToolChoice as RigToolChoice, ToolName,
    ToolResultContent, UserContent,
};
use rig_core::completion::{Document as RigDocument, Usage as RigUsage};
use rig_core::tool::{ToolErrorKind as RigToolErrorKind, ToolOutput, ToolResult};

/// A rig message as hookbox guards read it: its role and its text.
///
/// A user message made only of tool results is a `tool` message. Tool calls
/// read as `[tool call NAME ARGS]`, and what has no text (an image, a
/// document) as a bracketed placeholder, so a guard sees that it is there.
pub fn message(message: &RigMessage) -> Message {
    match message {
        RigMessage::System { content } => Message {
            role: Role::System,
            content: content.clone(),
        },
        RigMessage::User { content } => {
            let only_results = !content.is_empty()
                && content
                    .iter()
                    .all(|c| matches!(c, UserContent::ToolResult(_)));
            let parts: Vec<String> = content.iter().map(user_part).collect();
            Message {
                role: if only_results { Role::Tool } else { Role::User },
                content: parts.join("\n"),
            }
        }
        RigMessage::Assistant(turn) => Message {
            role: Role::Assistant,
            content: turn
                .content
                .iter()
                .filter_map(assistant_part)
                .collect::<Vec<_>>()
                .join("\n"),
        },
    }
}

fn user_part(part: &UserContent) -> String {
    match part {
        UserContent::Text(text) => text.text.clone(),
        UserContent::ToolResult(result) => result
            .content
            .iter()
            .map(|c| match c {
                ToolResultContent::Text(text) => text.text.clone(),
                ToolResultContent::Json { value } => value.to_string(),
                _ => "[image]".to_owned(),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        UserContent::Image(_) => "[image]".to_owned(),
        UserContent::Audio(_) => "[audio]".to_owned(),
        UserContent::Video(_) => "[video]".to_owned(),
        UserContent::Document(_) => "[document]".to_owned(),
    }
}

fn assistant_part(part: &AssistantContent) -> Option<String> {
    match part {
        AssistantContent::Text(text) => Some(text.text.clone()),
        AssistantContent::ToolCall(call) => Some(format!(
            "[tool call {} {}]",
            call.function.name.as_str(),
            call.function.arguments_json()
        )),
        AssistantContent::Image(_) => Some("[image]".to_owned()),
        _ => None,
    }
}

/// The answer text of an assistant turn.
pub fn answer_text(content: &[AssistantContent]) -> String {
    content
        .iter()
        .filter_map(|c| match c {
            AssistantContent::Text(text) => Some(text.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("")
}

/// rig's token counts, as far as it reported them.
pub fn usage(usage: &RigUsage) -> Option<Usage> {
    match (usage.input_tokens, usage.output_tokens) {
        (None, None) => None,
        (input, output) => Some(Usage {
            input_tokens: input.unwrap_or(0),
            output_tokens: output.unwrap_or(0),
        }),
    }
}

/// rig's tool choice in hookbox's terms.
pub fn tool_choice(choice: &RigToolChoice) -> ToolChoice {
    match choice {
        RigToolChoice::Auto => ToolChoice::Auto,
        RigToolChoice::None => ToolChoice::None,
        RigToolChoice::Required => ToolChoice::Required,
        RigToolChoice::Specific { function_names } => ToolChoice::Specific(
            function_names
                .iter()
                .map(|n| n.as_str().to_owned())
                .collect(),
        ),
    }
}

/// What really happened to a tool call, and the text the model will see.
pub fn tool_outcome(result: &ToolResult) -> (ToolOutcome, String) {
    let visible = result.output().render();
    let outcome = if let Some(error) = result.error() {
        ToolOutcome::Error(ToolError {
            kind: tool_error_kind(error.kind()),
            message: error.to_string(),
        })
    } else if let Some(refusal) = result.refusal() {
        ToolOutcome::Denied(refusal.to_string())
    } else if result.is_skipped() {
        ToolOutcome::Skipped(visible.clone())
    } else {
        ToolOutcome::Success
    };
    (outcome, visible)
}

fn tool_error_kind(kind: RigToolErrorKind) -> ToolErrorKind {
    match kind {
        RigToolErrorKind::Timeout => ToolErrorKind::Timeout,
        RigToolErrorKind::NotFound => ToolErrorKind::NotFound,
        RigToolErrorKind::InvalidArgs => ToolErrorKind::InvalidArgs,
        // What a tool's own `Err` is.
        RigToolErrorKind::Other => ToolErrorKind::Execution,
        _ => ToolErrorKind::Other,
    }
}

/// A guard's rewrite, already in the shape of the output it replaces
/// (`hookbox_adapter::shape`: JSON stays the same structure, text stays
/// text), as rig's output. `Err` (what ends the run, naming the guard) for
/// an output of several parts (or an image), which one rewrite cannot
/// stand for.
pub fn rewritten_output(
    before: &ToolOutput,
    with: serde_json::Value,
) -> Result<ToolOutput, String> {
    if before.as_json().is_some() {
        return Ok(ToolOutput::json(with));
    }
    if before.as_text().is_some() {
        return Ok(ToolOutput::text(hookbox_adapter::shape::result_text(&with)));
    }
    Err(
        "rewrote a tool output of several parts (or an image) into text, which would drop the parts rig passes on; such an output can be kept or the run stopped"
            .to_owned(),
    )
}

/// A hookbox request patch as rig's, for this turn.
///
/// `history` and `prompt` are the turn's messages as rig holds them (guards
/// saw the prompt as the history's last message): a patched history
/// reuses each message a guard left unchanged (same role and text), so tool
/// calls and results keep their ids; a changed or new message becomes a
/// text message. It must end with the prompt as it was (rig sends the
/// turn's prompt itself). A changed or new `tool` message cannot be sent
/// (rig needs the call it answers), and a tool choice or additional params
/// rig cannot take are refused too: each `Err` fails the run closed naming
/// `plugin`.
pub fn request_patch(
    patch: RequestPatch,
    history: &[Arc<RigMessage>],
    prompt: &RigMessage,
    plugin: &Arc<str>,
) -> Result<rig_agent::agent::RequestPatch, FailClosed> {
    let refuse = |cause, detail: String| Err(FailClosed::new(plugin, cause, detail));
    let mut out = rig_agent::agent::RequestPatch::new();
    out.preamble = patch.preamble;
    out.temperature = patch.temperature;
    out.max_tokens = patch.max_tokens.map(u64::from);
    out.tool_choice = match patch.tool_choice {
        None => None,
        Some(ToolChoice::Auto) => Some(RigToolChoice::Auto),
        Some(ToolChoice::None) => Some(RigToolChoice::None),
        Some(ToolChoice::Required) => Some(RigToolChoice::Required),
        Some(ToolChoice::Specific(names)) => {
            let mut function_names = Vec::with_capacity(names.len());
            for name in names {
                match ToolName::new(name) {
                    Ok(name) => function_names.push(name),
                    Err(_) => {
                        return refuse(
                            Cause::UnsupportedFlow,
                            "patched the tool choice with an empty tool name, which rig cannot send"
                                .to_owned(),
                        );
                    }
                }
            }
            Some(RigToolChoice::Specific { function_names })
        }
    };
    out.active_tools = patch.active_tools;
    if let Some(text) = patch.additional_params {
        match serde_json::from_str::<serde_json::Value>(&text) {
            Ok(value @ serde_json::Value::Object(_)) => out.additional_params = Some(value),
            _ => {
                return refuse(
                    Cause::InvalidJson,
                    "patched additional-params with something that is not a JSON object".to_owned(),
                );
            }
        }
    }
    out.extra_context = patch
        .extra_context
        .unwrap_or_default()
        .into_iter()
        .map(|Document { id, text }| RigDocument {
            id,
            text,
            additional_props: HashMap::new(),
        })
        .collect();
    if let Some(mut patched) = patch.history {
        if patched.last() != Some(&message(prompt)) {
            return refuse(
                Cause::UnsupportedFlow,
                "patched the history without the turn's prompt as its last message; rig sends the turn's prompt as it is, so a patch must keep it last and unchanged"
                    .to_owned(),
            );
        }
        patched.pop();
        out.history = Some(patched_history(patched, history, plugin)?);
    }
    Ok(out)
}

fn patched_history(
    patched: Vec<Message>,
    history: &[Arc<RigMessage>],
    plugin: &Arc<str>,
) -> Result<Vec<Arc<RigMessage>>, FailClosed> {
    hookbox::history::apply(&Rig, patched, history)
        .map_err(|detail| FailClosed::new(plugin, Cause::UnsupportedFlow, detail))
}

/// rig's messages, as [`hookbox::history`] sees them.
struct Rig;

impl hookbox::history::Messages for Rig {
    type Message = Arc<RigMessage>;

    fn read(&self, m: &Arc<RigMessage>) -> Message {
        message(m)
    }

    fn text(&self, role: Role, content: String) -> Arc<RigMessage> {
        Arc::new(match role {
            Role::System => RigMessage::system(content),
            Role::Assistant => RigMessage::assistant(content),
            Role::User | Role::Tool => RigMessage::user(content),
        })
    }

    fn tool_ids(&self, m: &Arc<RigMessage>) -> (Vec<String>, Vec<String>) {
        match &**m {
            RigMessage::Assistant(turn) => (
                turn.tool_calls()
                    .map(|c| c.id.wire().into_owned())
                    .collect(),
                Vec::new(),
            ),
            RigMessage::User { content } => (
                Vec::new(),
                content
                    .iter()
                    .filter_map(|part| match part {
                        UserContent::ToolResult(result) => Some(result.call.wire().into_owned()),
                        _ => None,
                    })
                    .collect(),
            ),
            RigMessage::System { .. } => (Vec::new(), Vec::new()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plugin() -> Arc<str> {
        Arc::from("p")
    }

    #[test]
    fn a_history_patch_keeps_what_it_did_not_change() {
        let call =
            RigMessage::Assistant(rig_core::completion::message::AssistantMessage::new(vec![
                AssistantContent::tool_call(
                    "c1",
                    ToolName::new("read").unwrap(),
                    serde_json::json!({"path": "a"}),
                ),
            ]));
        let history: Vec<Arc<RigMessage>> = vec![
            Arc::new(RigMessage::user("hello")),
            Arc::new(call),
            Arc::new(RigMessage::user("secret sk-123")),
        ];
        let mut patched: Vec<Message> = history.iter().map(|m| message(m)).collect();
        patched[2].content = "secret [redacted]".into();
        let out = patched_history(patched, &history, &plugin()).unwrap();
        assert!(Arc::ptr_eq(&out[0], &history[0]));
        assert!(
            Arc::ptr_eq(&out[1], &history[1]),
            "the tool call keeps its structure"
        );
        assert_eq!(*out[2], RigMessage::user("secret [redacted]"));
    }

    #[test]
    fn a_patch_that_separates_a_call_from_its_result_is_refused() {
        let call =
            RigMessage::Assistant(rig_core::completion::message::AssistantMessage::new(vec![
                AssistantContent::tool_call(
                    "c1",
                    ToolName::new("read").unwrap(),
                    serde_json::json!({}),
                ),
            ]));
        let call_id = match &call {
            RigMessage::Assistant(turn) => turn.tool_calls().next().unwrap().id.clone(),
            _ => unreachable!(),
        };
        let result = RigMessage::tool_result(call_id, ToolName::new("read").unwrap(), "text");
        let history: Vec<Arc<RigMessage>> = vec![Arc::new(call), Arc::new(result)];
        // The call rewritten as text, its result kept as it was.
        let mut patched: Vec<Message> = history.iter().map(|m| message(m)).collect();
        patched[0].content = "I looked at a file.".into();
        let err = patched_history(patched, &history, &plugin()).unwrap_err();
        assert!(err.detail.contains("`c1`"), "{}", err.detail);
        // Both dropped, or both kept: fine.
        let both: Vec<Message> = history.iter().map(|m| message(m)).collect();
        assert!(patched_history(both, &history, &plugin()).is_ok());
        assert!(patched_history(vec![], &history, &plugin()).is_ok());
    }

    #[test]
    fn a_changed_tool_message_is_refused() {
        let patched = vec![Message {
            role: Role::Tool,
            content: "made up".into(),
        }];
        let err = patched_history(patched, &[], &plugin()).unwrap_err();
        assert_eq!(err.cause, Cause::UnsupportedFlow);
    }

    #[test]
    fn a_rewrite_is_rig_s_output_in_the_shape_it_replaces() {
        let before = ToolOutput::json(serde_json::json!({"a": 1}));
        let json = rewritten_output(&before, serde_json::json!({"a": 2})).unwrap();
        assert_eq!(json.as_json(), Some(&serde_json::json!({"a": 2})));
        let text = ToolOutput::text("x");
        assert_eq!(
            rewritten_output(&text, serde_json::json!("{}"))
                .unwrap()
                .as_text(),
            Some("{}")
        );
    }
}
