//! A model that plays a recorded conversation: one scripted turn per model
//! call, in order, whatever the request. For tests and the demo.
//!
//! The script is JSON:
//!
//! ```json
//! {"turns": [
//!   {"content": "Let me look.", "tool_calls": [{"name": "list_files", "arguments": {}}]},
//!   {"content": "Done."}
//! ]}
//! ```
//!
//! `arguments` is a JSON value, or a string taken as the raw text the model
//! emitted (which need not be JSON). A call's `id` defaults to
//! `call_<turn>_<index>`. Without `usage`, tokens are estimated at four bytes
//! each. Asked to stream, it sends the text word by word and each call's
//! arguments in pieces of eight bytes.

use std::path::Path;
use std::sync::Mutex;

use serde::Deserialize;
use serde_json::Value;

use crate::Error;
use crate::model::{ChunkStream, Model, ModelChunk, ModelRequest, ModelTurn, ToolCallRequest};
use hookbox::Usage;

/// A scripted model.
pub struct ScriptedModel {
    name: String,
    turns: Vec<ModelTurn>,
    requests: Mutex<Vec<ModelRequest>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Script {
    #[serde(default)]
    model: Option<String>,
    turns: Vec<ScriptTurn>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptTurn {
    #[serde(default)]
    content: String,
    #[serde(default)]
    tool_calls: Vec<ScriptCall>,
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptCall {
    #[serde(default)]
    id: Option<String>,
    name: String,
    #[serde(default)]
    arguments: Option<Value>,
}

impl ScriptedModel {
    /// A model playing `turns`.
    pub fn new(turns: Vec<ModelTurn>) -> ScriptedModel {
        ScriptedModel {
            name: "scripted".into(),
            turns,
            requests: Mutex::new(Vec::new()),
        }
    }

    /// Reads a script.
    ///
    /// # Errors
    /// [`Error::Setup`] naming the file and what is wrong in it.
    pub fn from_file(path: &Path) -> Result<ScriptedModel, Error> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::Setup(format!("cannot read the script {}: {e}", path.display())))?;
        ScriptedModel::from_json(&text).map_err(|e| match e {
            Error::Setup(what) => Error::Setup(format!("the script {}: {what}", path.display())),
            other => other,
        })
    }

    /// Parses a script (the JSON form above).
    ///
    /// # Errors
    /// [`Error::Setup`] saying what is wrong and where.
    pub fn from_json(text: &str) -> Result<ScriptedModel, Error> {
        let script: Script = serde_json::from_str(text).map_err(|e| Error::Setup(e.to_string()))?;
        let turns = script
            .turns
            .into_iter()
            .enumerate()
            .map(|(t, turn)| ModelTurn {
                finish_reason: Some(
                    if turn.tool_calls.is_empty() {
                        "stop"
                    } else {
                        "tool_calls"
                    }
                    .into(),
                ),
                content: turn.content,
                usage: turn.usage,
                tool_calls: turn
                    .tool_calls
                    .into_iter()
                    .enumerate()
                    .map(|(i, call)| ToolCallRequest {
                        id: call.id.unwrap_or_else(|| format!("call_{}_{i}", t + 1)),
                        name: call.name,
                        arguments: match call.arguments {
                            None => "{}".into(),
                            Some(Value::String(raw)) => raw,
                            Some(value) => value.to_string(),
                        },
                    })
                    .collect(),
            })
            .collect();
        let mut model = ScriptedModel::new(turns);
        if let Some(name) = script.model {
            model.name = name;
        }
        Ok(model)
    }

    /// Every request it was sent, in order.
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }

    fn answer(&self, request: &ModelRequest) -> Result<ModelTurn, Error> {
        let mut requests = self
            .requests
            .lock()
            .map_err(|_| Error::Setup("the scripted model's log is poisoned".into()))?;
        let index = requests.len();
        requests.push(request.clone());
        let mut turn = self.turns.get(index).cloned().ok_or_else(|| Error::Model {
            model: self.name.clone(),
            reason: format!(
                "the script has {} turns and was asked for turn {}",
                self.turns.len(),
                index + 1
            ),
        })?;
        if turn.usage.is_none() {
            let sent: usize = request.messages.iter().map(|m| m.content.len()).sum();
            let said = turn.content.len()
                + turn
                    .tool_calls
                    .iter()
                    .map(|c| c.name.len() + c.arguments.len())
                    .sum::<usize>();
            turn.usage = Some(Usage {
                input_tokens: sent.div_ceil(4) as u64,
                output_tokens: said.div_ceil(4) as u64,
            });
        }
        Ok(turn)
    }
}

impl Model for ScriptedModel {
    fn name(&self) -> &str {
        &self.name
    }

    fn provider(&self) -> &str {
        "scripted"
    }

    fn respond(&self, request: ModelRequest) -> ChunkStream {
        let turn = match self.answer(&request) {
            Ok(turn) => turn,
            Err(e) => return Box::pin(futures_util::stream::iter([Err(e)])),
        };
        let mut chunks = Vec::new();
        if request.stream {
            chunks.extend(words(&turn.content).map(|w| ModelChunk::Text(w.to_owned())));
            for (index, call) in turn.tool_calls.iter().enumerate() {
                chunks.push(ModelChunk::ToolCall {
                    index,
                    id: Some(call.id.clone()),
                    name: Some(call.name.clone()),
                    arguments: String::new(),
                });
                chunks.extend(
                    pieces(&call.arguments, 8).map(|piece| ModelChunk::ToolCall {
                        index,
                        id: None,
                        name: None,
                        arguments: piece.to_owned(),
                    }),
                );
            }
        }
        chunks.push(ModelChunk::Done(turn));
        Box::pin(futures_util::stream::iter(chunks.into_iter().map(Ok)))
    }
}

/// `text` as words, each with the spaces after it.
fn words(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let word_end = rest.find(' ').unwrap_or(rest.len());
        let end =
            word_end + rest[word_end..].len() - rest[word_end..].trim_start_matches(' ').len();
        let (word, tail) = rest.split_at(end);
        rest = tail;
        Some(word)
    })
}

/// `text` in pieces of at most `size` bytes, cut on character boundaries.
fn pieces(text: &str, size: usize) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut end = size.min(rest.len());
        while !rest.is_char_boundary(end) {
            end += 1;
        }
        let (piece, tail) = rest.split_at(end);
        rest = tail;
        Some(piece)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_splits_into_words_and_pieces_losslessly() {
        let text = "Hello  wörld, again ";
        assert_eq!(
            words(text).collect::<Vec<_>>(),
            ["Hello  ", "wörld, ", "again "]
        );
        assert_eq!(pieces("abcdéfghij", 4).collect::<String>(), "abcdéfghij");
    }

    #[test]
    fn scripts_are_checked() {
        let err = ScriptedModel::from_json(r#"{"turns":[{"contnet":"x"}]}"#)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("contnet"), "{err}");
        let model = ScriptedModel::from_json(
            r#"{"turns":[{"tool_calls":[{"name":"a","arguments":{"x":1}},{"name":"b","arguments":"{oops"}]}]}"#,
        )
        .unwrap();
        let calls = &model.turns[0].tool_calls;
        assert_eq!(calls[0].id, "call_1_0");
        assert_eq!(calls[0].arguments, r#"{"x":1}"#);
        assert_eq!(calls[1].arguments, "{oops");
    }
}
