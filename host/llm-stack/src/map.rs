//! Pure mappings between llm-stack's types and hookbox's: no I/O, no runs.

use std::collections::HashSet;
use std::sync::Arc;

use hookbox::{Cause, FailClosed, Message, RequestPatch, Role, ToolChoice};
use llm_stack::chat::ChatRole;
use llm_stack::{ChatMessage, ChatParams, ContentBlock, ToolChoice as LlmToolChoice};

/// An llm-stack message as hookbox guards read it: its role and its text.
/// Tool calls read as `[tool call NAME ARGS]`, images as `[image]`.
pub fn message(message: &ChatMessage) -> Message {
    let role = match message.role {
        ChatRole::System => Role::System,
        ChatRole::Assistant => Role::Assistant,
        ChatRole::Tool => Role::Tool,
        _ => Role::User,
    };
    let content = message
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text(text) => Some(text.clone()),
            ContentBlock::ToolCall(call) => {
                Some(format!("[tool call {} {}]", call.name, call.arguments))
            }
            ContentBlock::ToolResult(result) => Some(result.content.clone()),
            ContentBlock::Image { .. } => Some("[image]".to_owned()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n");
    Message { role, content }
}

/// The text of the last user message: the turn's prompt.
pub fn prompt(messages: &[ChatMessage]) -> String {
    messages
        .iter()
        .rev()
        .find(|m| m.role == ChatRole::User)
        .map(|m| message(m).content)
        .unwrap_or_default()
}

/// The tools `params` lets the model call, when it narrows them: the tools
/// it advertises, none under a tool choice of none, the one of a specific
/// choice. `None` when it advertises no list (llm-stack then runs any tool
/// of the registry).
pub fn allowed_tools(params: &ChatParams) -> Option<HashSet<String>> {
    match &params.tool_choice {
        Some(LlmToolChoice::None) => return Some(HashSet::new()),
        Some(LlmToolChoice::Specific(name)) => return Some(HashSet::from([name.clone()])),
        _ => {}
    }
    params
        .tools
        .as_ref()
        .map(|tools| tools.iter().map(|t| t.name.clone()).collect())
}

/// `params` with a hookbox request patch applied, for one model call.
///
/// - `preamble` replaces the system prompt; `extra-context` documents are
///   appended to it as `<document id="...">` blocks (llm-stack has no
///   documents of its own).
/// - `tool-choice` `specific` with one tool is llm-stack's `Specific`; with
///   several, the advertised tools narrow to them and the choice is
///   `Required` (the model must call one of them).
/// - `active-tools` narrows the advertised tools.
/// - `additional-params` is shallow-merged onto `metadata`, which llm-stack
///   forwards to the provider.
/// - `history` replaces the messages; a message a guard left as it was
///   keeps its structure (tool calls and results with their ids), a changed
///   or new one becomes a text message. A changed or new `tool` message
///   cannot be sent without the call it answers.
///
/// `Err` (the run fails closed naming `plugin`) for what cannot be
/// expressed: a changed tool message, a `specific` choice of no tools,
/// additional-params that are not a JSON object.
pub fn apply_patch(
    patch: RequestPatch,
    params: &ChatParams,
    plugin: &Arc<str>,
) -> Result<ChatParams, FailClosed> {
    let refuse = |cause, detail: &str| Err(FailClosed::new(plugin, cause, detail));
    let mut out = params.clone();
    out.system =
        hookbox_adapter::verdict::with_context(patch.preamble.or(out.system), patch.extra_context);
    if let Some(t) = patch.temperature {
        out.temperature = Some(t as f32);
    }
    if let Some(max) = patch.max_tokens {
        out.max_tokens = Some(max);
    }
    let mut narrow = patch.active_tools;
    match patch.tool_choice {
        None => {}
        Some(ToolChoice::Auto) => out.tool_choice = Some(LlmToolChoice::Auto),
        Some(ToolChoice::None) => out.tool_choice = Some(LlmToolChoice::None),
        Some(ToolChoice::Required) => out.tool_choice = Some(LlmToolChoice::Required),
        Some(ToolChoice::Specific(names)) => match names.as_slice() {
            [] => {
                return refuse(
                    Cause::UnsupportedFlow,
                    "patched the tool choice to a specific list of no tools",
                );
            }
            [one] => out.tool_choice = Some(LlmToolChoice::Specific(one.clone())),
            _ => {
                out.tool_choice = Some(LlmToolChoice::Required);
                narrow = Some(match narrow {
                    Some(active) => active.into_iter().filter(|t| names.contains(t)).collect(),
                    None => names,
                });
            }
        },
    }
    if let (Some(active), Some(tools)) = (narrow, out.tools.as_mut()) {
        tools.retain(|t| active.contains(&t.name));
    }
    if let Some(text) = patch.additional_params {
        match serde_json::from_str::<serde_json::Value>(&text) {
            Ok(serde_json::Value::Object(extra)) => out.metadata.extend(extra),
            _ => {
                return refuse(
                    Cause::InvalidJson,
                    "patched additional-params with something that is not a JSON object",
                );
            }
        }
    }
    if let Some(history) = patch.history {
        out.messages = patched_history(history, &params.messages, plugin)?;
    }
    Ok(out)
}

fn patched_history(
    patched: Vec<Message>,
    messages: &[ChatMessage],
    plugin: &Arc<str>,
) -> Result<Vec<ChatMessage>, FailClosed> {
    hookbox::history::apply(&LlmStack, patched, messages)
        .map_err(|detail| FailClosed::new(plugin, Cause::UnsupportedFlow, detail))
}

/// llm-stack's messages, as [`hookbox::history`] sees them.
struct LlmStack;

impl hookbox::history::Messages for LlmStack {
    type Message = ChatMessage;

    fn read(&self, m: &ChatMessage) -> Message {
        message(m)
    }

    fn text(&self, role: Role, content: String) -> ChatMessage {
        match role {
            Role::System => ChatMessage::system(content),
            Role::Assistant => ChatMessage::assistant(content),
            Role::User | Role::Tool => ChatMessage::user(content),
        }
    }

    fn tool_ids(&self, m: &ChatMessage) -> (Vec<String>, Vec<String>) {
        let (mut calls, mut results) = (Vec::new(), Vec::new());
        for block in &m.content {
            match block {
                ContentBlock::ToolCall(call) => calls.push(call.id.clone()),
                ContentBlock::ToolResult(result) => results.push(result.tool_call_id.clone()),
                _ => {}
            }
        }
        (calls, results)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hookbox::Document;
    use llm_stack::{JsonSchema, ToolDefinition};

    fn tools(names: &[&str]) -> Option<Vec<ToolDefinition>> {
        Some(
            names
                .iter()
                .map(|n| ToolDefinition {
                    name: (*n).into(),
                    description: String::new(),
                    parameters: JsonSchema::new(serde_json::json!({"type": "object"})),
                    retry: None,
                })
                .collect(),
        )
    }

    #[test]
    fn every_patch_field_lands_in_the_params() {
        let params = ChatParams {
            system: Some("base".into()),
            tools: tools(&["a", "b", "c"]),
            ..Default::default()
        };
        let patch = RequestPatch {
            preamble: Some("new".into()),
            temperature: Some(0.5),
            max_tokens: Some(7),
            tool_choice: Some(ToolChoice::Specific(vec!["a".into(), "b".into()])),
            active_tools: Some(vec!["b".into(), "c".into()]),
            additional_params: Some(r#"{"seed":1}"#.into()),
            extra_context: Some(vec![Document {
                id: "d".into(),
                text: "rules".into(),
            }]),
            history: Some(vec![Message {
                role: Role::User,
                content: "hi".into(),
            }]),
        };
        let out = apply_patch(patch, &params, &Arc::from("p")).unwrap();
        assert_eq!(
            out.system.as_deref(),
            Some("new\n\n<document id=\"d\">\nrules\n</document>")
        );
        assert_eq!(out.temperature, Some(0.5));
        assert_eq!(out.max_tokens, Some(7));
        assert_eq!(out.tool_choice, Some(LlmToolChoice::Required));
        let names: Vec<_> = out.tools.unwrap().iter().map(|t| t.name.clone()).collect();
        assert_eq!(names, ["b"], "active tools ∩ the specific choice");
        assert_eq!(out.metadata["seed"], 1);
        assert_eq!(out.messages, vec![ChatMessage::user("hi")]);
    }

    #[test]
    fn what_llm_stack_cannot_take_fails_closed() {
        let params = ChatParams::default();
        let cases = [
            RequestPatch {
                tool_choice: Some(ToolChoice::Specific(vec![])),
                ..Default::default()
            },
            RequestPatch {
                additional_params: Some("[1]".into()),
                ..Default::default()
            },
            RequestPatch {
                history: Some(vec![Message {
                    role: Role::Tool,
                    content: "forged".into(),
                }]),
                ..Default::default()
            },
        ];
        for patch in cases {
            let err = apply_patch(patch, &params, &Arc::from("p")).unwrap_err();
            assert_eq!(&*err.plugin, "p");
        }
    }

    #[test]
    fn an_unchanged_tool_result_keeps_its_call_id() {
        let messages = vec![
            ChatMessage::user("q"),
            ChatMessage::tool_result("call-7", "secret"),
        ];
        let mut patched: Vec<Message> = messages.iter().map(message).collect();
        patched.insert(
            0,
            Message {
                role: Role::System,
                content: "be brief".into(),
            },
        );
        let out = patched_history(patched, &messages, &Arc::from("p")).unwrap();
        assert_eq!(out[2], messages[1]);
        assert_eq!(out[0], ChatMessage::system("be brief"));
    }
}
