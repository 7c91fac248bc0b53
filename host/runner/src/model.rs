//! Models behind one trait: what the runner sends, what comes back.
//!
//! A model answers a [`ModelRequest`] with a stream of [`ModelChunk`]s: text
//! and tool-call deltas while it streams, then one [`ModelChunk::Done`] with
//! the whole turn. A model that does not stream sends only `Done`.

use futures_util::stream::BoxStream;
use serde::{Deserialize, Serialize};

use crate::Error;
use hookbox::{Message, Role, ToolChoice, Usage};

/// A message of the conversation as the runner keeps it: richer than the
/// hooks' [`Message`], because the wire formats tie tool results to the
/// calls that asked for them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    /// Who speaks: system, user, assistant or tool.
    pub role: Role,
    /// The text (for a tool message, the result the model sees).
    pub content: String,
    /// Assistant messages: the tool calls the model made.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCallRequest>,
    /// Tool messages: the call this is the result of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl ChatMessage {
    /// A message with `role` and `content`, and no tool calls.
    pub fn new(role: Role, content: impl Into<String>) -> ChatMessage {
        ChatMessage {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }

    /// A system message.
    pub fn system(content: impl Into<String>) -> ChatMessage {
        ChatMessage::new(Role::System, content)
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> ChatMessage {
        ChatMessage::new(Role::User, content)
    }

    /// A tool message: the result of the call `call_id`.
    pub fn tool(call_id: impl Into<String>, content: impl Into<String>) -> ChatMessage {
        ChatMessage {
            tool_call_id: Some(call_id.into()),
            ..ChatMessage::new(Role::Tool, content)
        }
    }

    /// The hooks' view: role and text.
    pub fn to_hook_message(&self) -> Message {
        Message {
            role: self.role,
            content: self.content.clone(),
        }
    }
}

impl From<&Message> for ChatMessage {
    fn from(message: &Message) -> ChatMessage {
        ChatMessage::new(message.role, message.content.clone())
    }
}

/// A tool call the model asked for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCallRequest {
    /// The model's id for the call (the wire format's `tool_call_id`).
    pub id: String,
    /// The tool the model named.
    pub name: String,
    /// JSON text, as the model emitted it (it may not be valid JSON).
    pub arguments: String,
}

/// A tool as advertised to the model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The name the model calls it by.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: serde_json::Value,
}

/// One model call, after this turn's request patch was applied.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelRequest {
    /// The model name, e.g. `gpt-4o-mini` (`scripted` for a scripted model).
    pub model: String,
    /// System preamble first, when there is one.
    pub messages: Vec<ChatMessage>,
    /// The tools advertised this turn.
    pub tools: Vec<ToolSpec>,
    /// Whether and which tools the model must call.
    pub tool_choice: ToolChoice,
    /// The sampling temperature; `None` leaves it to the model.
    pub temperature: Option<f64>,
    /// Most tokens in the answer; `None` leaves it to the model.
    pub max_tokens: Option<u32>,
    /// Extra top-level request fields (a JSON object), e.g. `{"seed": 7}`.
    pub additional_params: serde_json::Map<String, serde_json::Value>,
    /// Whether to stream the answer.
    pub stream: bool,
}

/// A whole model turn.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelTurn {
    /// The answer's text (may be empty when it calls tools).
    #[serde(default)]
    pub content: String,
    /// The tool calls the model made, in order.
    #[serde(default)]
    pub tool_calls: Vec<ToolCallRequest>,
    /// Tokens used, when the model reports them.
    #[serde(default)]
    pub usage: Option<Usage>,
    /// Why the model stopped (`stop`, `tool_calls`, `length` ...).
    #[serde(default)]
    pub finish_reason: Option<String>,
}

/// A piece of a model's answer.
#[derive(Clone, Debug, PartialEq)]
pub enum ModelChunk {
    /// Streamed text.
    Text(String),
    /// A streamed piece of a tool call: `index` tells the calls apart; the id
    /// and name come with the first piece, the arguments in any number.
    ToolCall {
        /// Which call of the turn this piece belongs to.
        index: usize,
        /// The call's id, when this piece carries it.
        id: Option<String>,
        /// The tool's name, when this piece carries it.
        name: Option<String>,
        /// A piece of the arguments' JSON text.
        arguments: String,
    },
    /// The whole turn; always the last chunk.
    Done(ModelTurn),
}

/// The chunks of one answer.
pub type ChunkStream = BoxStream<'static, Result<ModelChunk, Error>>;

/// A chat model with tool calling.
pub trait Model: Send + Sync {
    /// What telemetry reports as `gen_ai.request.model`.
    fn name(&self) -> &str;

    /// What telemetry reports as `gen_ai.provider.name`: a value the GenAI
    /// conventions list (`openai`, `anthropic`, `aws.bedrock`, ...) or the
    /// provider's own name.
    fn provider(&self) -> &str {
        "unknown"
    }

    /// Answers one request. Dropping the stream abandons the answer (and,
    /// for a remote model, its connection).
    fn respond(&self, request: ModelRequest) -> ChunkStream;
}

/// Gathers streamed tool-call pieces into whole calls, by index.
#[derive(Debug, Default)]
pub struct ToolCallAssembler {
    calls: Vec<(usize, ToolCallRequest)>,
}

impl ToolCallAssembler {
    /// Adds one piece; returns the call's id (known once the first piece
    /// carrying it arrived) and its name so far.
    pub fn push(
        &mut self,
        index: usize,
        id: Option<&str>,
        name: Option<&str>,
        arguments: &str,
    ) -> &ToolCallRequest {
        let at = match self.calls.iter().position(|(i, _)| *i == index) {
            Some(at) => at,
            None => {
                self.calls.push((
                    index,
                    ToolCallRequest {
                        id: String::new(),
                        name: String::new(),
                        arguments: String::new(),
                    },
                ));
                self.calls.len() - 1
            }
        };
        let call = &mut self.calls[at].1;
        if let Some(id) = id.filter(|id| !id.is_empty()) {
            call.id = id.to_owned();
        }
        // The name comes whole with the first piece; servers that repeat it
        // later are not concatenated.
        if let Some(name) = name.filter(|n| !n.is_empty())
            && call.name.is_empty()
        {
            call.name = name.to_owned();
        }
        call.arguments.push_str(arguments);
        call
    }

    /// Where the call with this stream index is in [`Self::finish`]'s list.
    pub fn position(&self, index: usize) -> Option<usize> {
        self.calls.iter().position(|(i, _)| *i == index)
    }

    /// The whole calls, in the order they started; calls the model sent
    /// without an id get `call_<index>`.
    pub fn finish(self) -> Vec<ToolCallRequest> {
        self.calls
            .into_iter()
            .map(|(index, mut call)| {
                if call.id.is_empty() {
                    call.id = format!("call_{index}");
                }
                call
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_call_pieces_assemble_by_index() {
        let mut calls = ToolCallAssembler::default();
        calls.push(0, Some("a"), Some("read_file"), "{\"pa");
        calls.push(1, Some("b"), Some("list_files"), "");
        calls.push(0, None, Some("read_file"), "th\":");
        calls.push(1, None, None, "{}");
        calls.push(0, None, None, "\"x\"}");
        let calls = calls.finish();
        assert_eq!(calls[0].id, "a");
        assert_eq!(calls[0].name, "read_file");
        assert_eq!(calls[0].arguments, r#"{"path":"x"}"#);
        assert_eq!(calls[1].name, "list_files");
        assert_eq!(calls[1].arguments, "{}");
    }
}
