//! An OpenAI-compatible chat-completions client: tool calling, and streaming
//! over server-sent events. Works with any server that speaks the format
//! (OpenAI, vLLM, llama.cpp's server, Ollama, LM Studio ...).

use std::collections::VecDeque;
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use serde_json::{Map, Value, json};

use crate::Error;
use crate::model::{
    ChatMessage, ChunkStream, Model, ModelChunk, ModelRequest, ModelTurn, ToolCallAssembler,
};
use crate::text::cut;
use hookbox::{Role, ToolChoice, Usage};

/// A model served over the chat-completions API.
pub struct OpenAiModel {
    client: reqwest::Client,
    /// `{base_url}/chat/completions`.
    url: String,
    model: String,
    api_key: Option<String>,
}

impl OpenAiModel {
    /// `base_url` is the API root, e.g. `https://api.openai.com/v1` or
    /// `http://localhost:11434/v1`; `model` the model's name there.
    ///
    /// # Errors
    /// [`Error::Setup`] when the HTTP client cannot be built.
    pub fn new(base_url: &str, model: &str) -> Result<OpenAiModel, Error> {
        // TLS uses ring; install it once for the process (a no-op if the
        // embedding program already chose a provider).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .read_timeout(Duration::from_secs(300))
            .user_agent(concat!("hookbox/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| Error::Setup(format!("cannot build the HTTP client: {e}")))?;
        Ok(OpenAiModel {
            client,
            url: format!("{}/chat/completions", base_url.trim_end_matches('/')),
            model: model.to_owned(),
            api_key: None,
        })
    }

    /// Sent as `Authorization: Bearer KEY`; local servers need none.
    pub fn api_key(mut self, key: Option<String>) -> OpenAiModel {
        self.api_key = key.filter(|k| !k.is_empty());
        self
    }

    fn error(&self, reason: impl Into<String>) -> Error {
        Error::Model {
            model: self.model.clone(),
            reason: reason.into(),
        }
    }

    async fn send(&self, request: &ModelRequest) -> Result<reqwest::Response, Error> {
        let mut post = self
            .client
            .post(&self.url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(request_body(request).to_string());
        if let Some(key) = &self.api_key {
            post = post.bearer_auth(key);
        }
        let response = post
            .send()
            .await
            .map_err(|e| self.error(format!("cannot reach {}: {e}", self.url)))?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let body = response.text().await.unwrap_or_default();
        let message = serde_json::from_str::<Value>(&body)
            .ok()
            .and_then(|v| v.pointer("/error/message")?.as_str().map(str::to_owned))
            .unwrap_or_else(|| cut(body.trim(), 300));
        Err(self.error(format!("{} answered HTTP {status}: {message}", self.url)))
    }

    async fn complete(&self, request: ModelRequest) -> Result<ModelChunk, Error> {
        let response = self.send(&request).await?;
        let body = response
            .text()
            .await
            .map_err(|e| self.error(format!("reading the answer: {e}")))?;
        let value: Value = serde_json::from_str(&body).map_err(|e| {
            self.error(format!("the answer is not JSON ({e}): {}", cut(&body, 200)))
        })?;
        let choice = value
            .pointer("/choices/0")
            .ok_or_else(|| self.error(format!("the answer has no choices: {}", cut(&body, 200))))?;
        let message = &choice["message"];
        let mut calls = ToolCallAssembler::default();
        for (index, call) in message["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            calls.push(
                index,
                call["id"].as_str(),
                call.pointer("/function/name").and_then(Value::as_str),
                call.pointer("/function/arguments")
                    .and_then(Value::as_str)
                    .unwrap_or(""),
            );
        }
        Ok(ModelChunk::Done(ModelTurn {
            content: message["content"].as_str().unwrap_or_default().to_owned(),
            tool_calls: calls.finish(),
            usage: usage(&value["usage"]),
            finish_reason: choice["finish_reason"].as_str().map(str::to_owned),
        }))
    }
}

impl Model for OpenAiModel {
    fn name(&self) -> &str {
        &self.model
    }

    /// `openai`: the conventions name the client's protocol when the server
    /// behind a compatible API (Ollama, vLLM, ...) cannot be known.
    fn provider(&self) -> &str {
        "openai"
    }

    fn respond(&self, request: ModelRequest) -> ChunkStream {
        if !request.stream {
            let model = self.clone_handle();
            return Box::pin(futures_util::stream::once(async move {
                model.complete(request).await
            }));
        }
        let model = self.clone_handle();
        Box::pin(
            futures_util::stream::once(async move {
                let response = model.send(&request).await?;
                let body = response
                    .bytes_stream()
                    .map(|piece| piece.map(|bytes| bytes.to_vec()));
                Ok::<_, Error>(sse(model, body.boxed()))
            })
            .flat_map(|opened| match opened {
                Ok(chunks) => chunks,
                Err(e) => Box::pin(futures_util::stream::iter([Err(e)])),
            }),
        )
    }
}

impl OpenAiModel {
    /// A handle for a `'static` stream: the client is reference-counted.
    fn clone_handle(&self) -> OpenAiModel {
        OpenAiModel {
            client: self.client.clone(),
            url: self.url.clone(),
            model: self.model.clone(),
            api_key: self.api_key.clone(),
        }
    }
}

/// The longest event-stream line accepted.
const MAX_LINE: usize = 16 << 20;

/// Request fields the runner owns; additional params cannot override them.
const RESERVED: &[&str] = &[
    "model",
    "messages",
    "tools",
    "tool_choice",
    "stream",
    "stream_options",
];

type Bytes = BoxStream<'static, reqwest::Result<Vec<u8>>>;

/// Reads a chat-completions event stream: `data: {chunk}` lines until
/// `data: [DONE]`.
struct Sse {
    model: OpenAiModel,
    body: Bytes,
    buffer: Vec<u8>,
    ready: VecDeque<ModelChunk>,
    content: String,
    calls: ToolCallAssembler,
    usage: Option<Usage>,
    finish_reason: Option<String>,
    done: bool,
}

fn sse(model: OpenAiModel, body: Bytes) -> ChunkStream {
    let state = Sse {
        model,
        body,
        buffer: Vec::new(),
        ready: VecDeque::new(),
        content: String::new(),
        calls: ToolCallAssembler::default(),
        usage: None,
        finish_reason: None,
        done: false,
    };
    Box::pin(futures_util::stream::unfold(
        Some(state),
        |state| async move {
            let mut state = state?;
            loop {
                if let Some(chunk) = state.ready.pop_front() {
                    return Some((Ok(chunk), Some(state)));
                }
                if state.done {
                    return None;
                }
                match state.body.next().await {
                    Some(Ok(bytes)) => {
                        state.buffer.extend_from_slice(&bytes);
                        if let Err(e) = state.lines() {
                            return Some((Err(e), None));
                        }
                        if state.buffer.len() > MAX_LINE {
                            let e = state
                                .model
                                .error(format!("a stream line is longer than {MAX_LINE} bytes"));
                            return Some((Err(e), None));
                        }
                    }
                    Some(Err(e)) => {
                        let e = state.model.error(format!("the stream broke: {e}"));
                        return Some((Err(e), None));
                    }
                    None => {
                        // A last line without its newline.
                        if !state.buffer.is_empty() {
                            state.buffer.push(b'\n');
                            if let Err(e) = state.lines() {
                                return Some((Err(e), None));
                            }
                        }
                        if state.done {
                            continue; // it was `[DONE]`
                        }
                        // Some servers close without `[DONE]`; a stream that
                        // said why it finished is whole.
                        if state.finish_reason.is_some() {
                            state.finish();
                            continue;
                        }
                        let e = state
                            .model
                            .error("the stream ended before the answer was finished");
                        return Some((Err(e), None));
                    }
                }
            }
        },
    ))
}

impl Sse {
    /// Handles every whole line in the buffer.
    fn lines(&mut self) -> Result<(), Error> {
        while let Some(end) = self.buffer.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.buffer.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line);
            let line = line.trim_end_matches(['\r', '\n']);
            let Some(data) = line.strip_prefix("data:") else {
                continue; // blank separators, `event:`, `id:`, `: comments`
            };
            let data = data.trim();
            if data == "[DONE]" {
                self.finish();
                return Ok(());
            }
            let chunk: Value = serde_json::from_str(data).map_err(|e| {
                self.model.error(format!(
                    "a stream event is not JSON ({e}): {}",
                    cut(data, 200)
                ))
            })?;
            self.chunk(&chunk)?;
        }
        Ok(())
    }

    fn chunk(&mut self, chunk: &Value) -> Result<(), Error> {
        if let Some(message) = chunk.pointer("/error/message").and_then(Value::as_str) {
            return Err(self.model.error(format!("the server reported: {message}")));
        }
        if let Some(usage) = usage(&chunk["usage"]) {
            self.usage = Some(usage);
        }
        let Some(choice) = chunk.pointer("/choices/0") else {
            return Ok(());
        };
        let delta = &choice["delta"];
        if let Some(text) = delta["content"].as_str().filter(|t| !t.is_empty()) {
            self.content.push_str(text);
            self.ready.push_back(ModelChunk::Text(text.to_owned()));
        }
        for (position, call) in delta["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            let index = call["index"].as_u64().map_or(position, |i| i as usize);
            let id = call["id"].as_str();
            let name = call.pointer("/function/name").and_then(Value::as_str);
            let arguments = call
                .pointer("/function/arguments")
                .and_then(Value::as_str)
                .unwrap_or("");
            self.calls.push(index, id, name, arguments);
            self.ready.push_back(ModelChunk::ToolCall {
                index,
                id: id.map(str::to_owned),
                name: name.map(str::to_owned),
                arguments: arguments.to_owned(),
            });
        }
        if let Some(reason) = choice["finish_reason"].as_str() {
            self.finish_reason = Some(reason.to_owned());
        }
        Ok(())
    }

    fn finish(&mut self) {
        self.done = true;
        self.ready.push_back(ModelChunk::Done(ModelTurn {
            content: std::mem::take(&mut self.content),
            tool_calls: std::mem::take(&mut self.calls).finish(),
            usage: self.usage,
            finish_reason: self.finish_reason.take(),
        }));
    }
}

fn usage(value: &Value) -> Option<Usage> {
    Some(Usage {
        input_tokens: value.get("prompt_tokens")?.as_u64()?,
        output_tokens: value.get("completion_tokens")?.as_u64()?,
    })
}

/// The chat-completions request body.
pub fn request_body(request: &ModelRequest) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(request.model));
    body.insert(
        "messages".into(),
        request.messages.iter().map(message).collect(),
    );
    let mut tools = request.tools.iter().collect::<Vec<_>>();
    let choice = match &request.tool_choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::None => json!("none"),
        ToolChoice::Required => json!("required"),
        ToolChoice::Specific(names) if names.len() == 1 => {
            json!({"type": "function", "function": {"name": names[0]}})
        }
        // The format forces one tool at most: require a call, and
        // advertise only the ones allowed.
        ToolChoice::Specific(names) => {
            tools.retain(|t| names.contains(&t.name));
            json!("required")
        }
    };
    if !tools.is_empty() {
        body.insert(
            "tools".into(),
            tools
                .iter()
                .map(|t| {
                    json!({"type": "function", "function": {
                        "name": t.name, "description": t.description, "parameters": t.parameters,
                    }})
                })
                .collect(),
        );
        body.insert("tool_choice".into(), choice);
    }
    if let Some(t) = request.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(n) = request.max_tokens {
        body.insert("max_tokens".into(), json!(n));
    }
    if request.stream {
        body.insert("stream".into(), json!(true));
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    for (key, value) in &request.additional_params {
        if RESERVED.contains(&key.as_str()) {
            tracing::warn!(key, "additional param ignored: the runner sets it");
            continue;
        }
        body.insert(key.clone(), value.clone());
    }
    Value::Object(body)
}

fn message(message: &ChatMessage) -> Value {
    let role = match message.role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    };
    let mut out = json!({"role": role, "content": message.content});
    if !message.tool_calls.is_empty() {
        if message.content.is_empty() {
            out["content"] = Value::Null;
        }
        out["tool_calls"] = message
            .tool_calls
            .iter()
            .map(|c| {
                json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}})
            })
            .collect();
    }
    if let Some(id) = &message.tool_call_id {
        out["tool_call_id"] = json!(id);
    }
    out
}
