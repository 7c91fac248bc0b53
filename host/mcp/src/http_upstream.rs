//! A remote MCP server over the streamable HTTP transport, seen by the
//! proxy as the same two line streams a server on stdio gives: what the
//! proxy writes is POSTed, message by message; what comes back (a JSON
//! body, or the events of a `text/event-stream` answer, or of the stream
//! the server opens for messages of its own) is read as lines. So an HTTP
//! server is guarded by the very code that guards a stdio one.
//!
//! The session: the `Mcp-Session-Id` the server gives with its answer to
//! `initialize` goes with every later request, and so does the
//! `MCP-Protocol-Version` it answered; when the client goes, the session is
//! ended with `DELETE`. A request the server refuses (an HTTP error, or no
//! answer at all) is answered to the proxy with a JSON-RPC error for its
//! id: a call is never left waiting.
//!
//! Nothing the server sends is buffered without a bound: a JSON body, one
//! line of an event stream and one event's data are each held to the
//! proxy's line limit. A server that goes past it breaks the protocol: the
//! request is answered with an error, and the session ends, so every call
//! still waiting is answered too ([`crate::proxy`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use futures_util::StreamExt;
use serde_json::Value;
use tokio::io::{
    AsyncBufRead, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf,
};
use tokio::sync::mpsc;

use crate::lines::{LineReader, Read};
use crate::message::{self, Line, code};

/// The session's headers, learnt from the server's answers.
#[derive(Default)]
struct SessionHeaders {
    session_id: Option<String>,
    protocol_version: Option<String>,
}

/// The server at `url`, as the line streams the proxy reads from and writes
/// to (in the order [`crate::proxy`] takes them).
///
/// # Errors
/// When no HTTP client can be made (the system's TLS roots, say).
pub fn connect(
    url: &str,
    max_line_bytes: usize,
) -> Result<(BufReader<ReadHalf<DuplexStream>>, WriteHalf<DuplexStream>), String> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::builder()
        .build()
        .map_err(|e| format!("cannot make an HTTP client: {e}"))?;
    let (proxy_end, adapter_end) = tokio::io::duplex(1 << 20);
    let (proxy_read, proxy_write) = tokio::io::split(proxy_end);
    let (adapter_read, adapter_write) = tokio::io::split(adapter_end);
    let (lines, receive) = mpsc::channel::<String>(256);
    let ended = Arc::new(Ended::default());
    tokio::spawn(write_lines(receive, ended.clone(), adapter_write));
    let upstream = Upstream {
        http,
        url: url.to_owned(),
        headers: Arc::new(Mutex::new(SessionHeaders::default())),
        lines,
        ended,
        max_bytes: max_line_bytes,
    };
    tokio::spawn(upstream.run(LineReader::new(
        BufReader::new(adapter_read),
        max_line_bytes,
    )));
    Ok((BufReader::new(proxy_read), proxy_write))
}

/// Writes each line it is sent, in order; ends (closing the proxy's view of
/// the server) when every sender is gone or the session has [`Ended`],
/// after the lines already sent.
async fn write_lines(
    mut receive: mpsc::Receiver<String>,
    ended: Arc<Ended>,
    mut out: impl AsyncWrite + Unpin,
) {
    loop {
        let line = tokio::select! {
            biased;
            line = receive.recv() => line,
            () = ended.wake.notified() => None,
        };
        let Some(mut line) = line else { break };
        line.push('\n');
        if out.write_all(line.as_bytes()).await.is_err() {
            return;
        }
    }
    let _ = out.shutdown().await;
}

/// The session is over on hookbox's side: the server broke a bound.
#[derive(Default)]
struct Ended {
    yes: AtomicBool,
    wake: tokio::sync::Notify,
}

/// The most of an HTTP error's body quoted in the refusal.
const ERROR_BODY_SHOWN: usize = 200;

#[derive(Clone)]
struct Upstream {
    http: reqwest::Client,
    url: String,
    headers: Arc<Mutex<SessionHeaders>>,
    lines: mpsc::Sender<String>,
    ended: Arc<Ended>,
    /// The most bytes of one message (a body, an event) held.
    max_bytes: usize,
}

impl Upstream {
    /// POSTs each message the proxy writes; at the end, ends the session.
    async fn run(self, mut from_proxy: LineReader<impl AsyncBufRead + Unpin>) {
        let mut listening = None;
        loop {
            let line = match from_proxy.next().await {
                Read::Line(line) => line,
                Read::End | Read::Failed(_) => break,
                // The proxy writes only what it read in full.
                Read::TooLong(_) | Read::NotUtf8 => continue,
            };
            let (id, mirrored) = match message::read(&line) {
                Line::Message(envelope) => {
                    // Only a request is owed a response (not a
                    // notification, nor the client's own response to a
                    // server request).
                    let id = envelope
                        .method
                        .as_ref()
                        .and(envelope.id)
                        .map(|id| id.get().to_owned());
                    (id, message::Mirrored::of(&envelope))
                }
                _ => (None, message::Mirrored::default()),
            };
            let method = mirrored.method.as_deref();
            if listening.is_none() && method == Some("notifications/initialized") {
                // The session is set up: listen for the server's own messages.
                listening = Some(tokio::spawn(self.clone().listen()));
            }
            // Each request in its own task: a long call must not hold up
            // the ones after it.
            let upstream = self.clone();
            let initialize = method == Some("initialize");
            let post = async move { upstream.post(line, id, mirrored, initialize).await };
            tokio::spawn(post);
        }
        self.end_session().await;
        if let Some(listening) = listening {
            listening.abort();
        }
    }

    /// One message POSTed; its answer (if any) read back as lines.
    async fn post(
        self,
        line: String,
        id: Option<String>,
        mirrored: message::Mirrored,
        initialize: bool,
    ) {
        let mut request = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        // What the body says, mirrored in the headers that 2026-07-28
        // servers require (and older ones ignore). A name that cannot be a
        // header value is left out: a server that needs it refuses the
        // request, and the client gets that refusal.
        for (header, value) in [("mcp-method", mirrored.method), ("mcp-name", mirrored.name)] {
            if let Some(value) = value.and_then(|v| reqwest::header::HeaderValue::from_str(&v).ok())
            {
                request = request.header(header, value);
            }
        }
        let mut request = request.body(line);
        request = self.with_session(request);
        let response = match request.send().await {
            Ok(response) => response,
            Err(e) => {
                return self
                    .refuse(
                        id,
                        &format!("the MCP server at {} cannot be reached: {e}", self.url),
                    )
                    .await;
            }
        };
        if initialize {
            let mut headers = self.headers.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(session) = response
                .headers()
                .get("mcp-session-id")
                .and_then(|v| v.to_str().ok())
            {
                headers.session_id = Some(session.to_owned());
            }
        }
        let status = response.status();
        if !status.is_success() {
            let body = match read_bounded(response, ERROR_BODY_SHOWN * 4).await {
                Ok(body) | Err(Overflow(body)) => body,
            };
            let shown: String = String::from_utf8_lossy(&body)
                .chars()
                .take(ERROR_BODY_SHOWN)
                .collect();
            return self
                .refuse(
                    id,
                    &format!("the MCP server answered HTTP {status}: {shown}"),
                )
                .await;
        }
        match self.read_answer(response, initialize).await {
            Ok(true) => {}
            Ok(false) if id.is_none() => {}
            Ok(false) => {
                self.refuse(id, "the MCP server's HTTP answer held no response")
                    .await;
            }
            Err(Overflow(_)) => {
                self.refuse(
                    id,
                    &format!(
                        "the MCP server's answer went past {} bytes, the most hookbox holds of one message; the session is ended",
                        self.max_bytes
                    ),
                )
                .await;
                self.end();
            }
        }
    }

    /// Ends the session from hookbox's side: nothing more of the server's
    /// is forwarded, and the proxy reads the server as gone.
    fn end(&self) {
        self.ended.yes.store(true, Ordering::SeqCst);
        self.ended.wake.notify_one();
    }

    /// Reads a JSON or event-stream answer into lines; whether it held a
    /// message.
    async fn read_answer(
        &self,
        response: reqwest::Response,
        initialize: bool,
    ) -> Result<bool, Overflow> {
        let event_stream = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| t.starts_with("text/event-stream"));
        if !event_stream {
            let body = read_bounded(response, self.max_bytes).await?;
            let body = String::from_utf8_lossy(&body);
            if body.trim().is_empty() {
                return Ok(false);
            }
            self.learn(&body, initialize);
            return Ok(self.forward(&body).await);
        }
        let mut any = false;
        let mut events = EventStream::new(self.max_bytes);
        let mut body = response.bytes_stream();
        while let Some(Ok(chunk)) = body.next().await {
            for data in events.feed(&chunk)? {
                self.learn(&data, initialize);
                any |= self.forward(&data).await;
            }
        }
        Ok(any)
    }

    /// Notes the protocol version the server answered `initialize` with.
    fn learn(&self, message: &str, initialize: bool) {
        if !initialize {
            return;
        }
        let version = serde_json::from_str::<Value>(message).ok().and_then(|m| {
            m.pointer("/result/protocolVersion")?
                .as_str()
                .map(str::to_owned)
        });
        if let Some(version) = version {
            self.headers
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .protocol_version = Some(version);
        }
    }

    /// The server's own messages, on the stream it may open for them.
    async fn listen(self) {
        let request = self.with_session(
            self.http
                .get(&self.url)
                .header("accept", "text/event-stream"),
        );
        let Ok(response) = request.send().await else {
            return;
        };
        if !response.status().is_success() {
            return; // 405: the server has no such stream
        }
        let mut events = EventStream::new(self.max_bytes);
        let mut body = response.bytes_stream();
        while let Some(Ok(chunk)) = body.next().await {
            let Ok(complete) = events.feed(&chunk) else {
                tracing::warn!(
                    "the MCP server's stream sent a message past {} bytes, the most hookbox holds of one; the session is ended",
                    self.max_bytes
                );
                return self.end();
            };
            for data in complete {
                self.forward(&data).await;
            }
        }
    }

    async fn end_session(&self) {
        if self
            .headers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .session_id
            .is_some()
        {
            let _ = self.with_session(self.http.delete(&self.url)).send().await;
        }
    }

    fn with_session(&self, mut request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let headers = self.headers.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(session) = &headers.session_id {
            request = request.header("mcp-session-id", session);
        }
        if let Some(version) = &headers.protocol_version {
            request = request.header("mcp-protocol-version", version);
        }
        request
    }

    /// A message (or a batch) from the server, as one line for the proxy:
    /// raw newlines in JSON are whitespace (in a string they are escaped),
    /// so a space reads the same.
    async fn forward(&self, message: &str) -> bool {
        if self.ended.yes.load(Ordering::SeqCst) {
            return false;
        }
        let line: String = message
            .trim()
            .chars()
            .map(|c| if c == '\n' || c == '\r' { ' ' } else { c })
            .collect();
        if line.is_empty() {
            return false;
        }
        self.lines.send(line).await.is_ok()
    }

    /// Answers request `id` with an error: the proxy then answers its
    /// client (for a call: after its guards saw the error).
    async fn refuse(&self, id: Option<String>, why: &str) {
        tracing::warn!("{why}");
        let Some(id) = id.and_then(|id| serde_json::value::RawValue::from_string(id).ok()) else {
            return;
        };
        let _ = self
            .lines
            .send(message::error(
                Some(&id),
                code::REFUSED,
                &format!("hookbox: {why}"),
            ))
            .await;
    }
}

/// More of one message than may be held (with what was read of it).
#[derive(Debug)]
struct Overflow(Vec<u8>);

/// The response's body, or [`Overflow`] past `limit` bytes.
async fn read_bounded(response: reqwest::Response, limit: usize) -> Result<Vec<u8>, Overflow> {
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    while let Some(Ok(chunk)) = chunks.next().await {
        if body.len() + chunk.len() > limit {
            let room = limit - body.len();
            body.extend_from_slice(&chunk[..room]);
            return Err(Overflow(body));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// Server-sent events, fed in chunks: the `data` of each complete event,
/// none of which (nor any line) may pass `limit` bytes.
struct EventStream {
    buffer: Vec<u8>,
    /// How much of `buffer` is known to hold no line end.
    scanned: usize,
    data: Vec<String>,
    data_bytes: usize,
    limit: usize,
}

impl EventStream {
    fn new(limit: usize) -> EventStream {
        EventStream {
            buffer: Vec::new(),
            scanned: 0,
            data: Vec::new(),
            data_bytes: 0,
            limit,
        }
    }

    fn feed(&mut self, chunk: &[u8]) -> Result<Vec<String>, Overflow> {
        self.buffer.extend_from_slice(chunk);
        let mut complete = Vec::new();
        loop {
            let Some(at) = self.buffer[self.scanned..].iter().position(|&b| b == b'\n') else {
                self.scanned = self.buffer.len();
                // A line, or an event, past the limit: the line's prefix
                // already counts towards its event's data.
                if self.buffer.len() > self.limit
                    || self.data_bytes + self.buffer.len() > self.limit
                {
                    return Err(Overflow(Vec::new()));
                }
                return Ok(complete);
            };
            let end = self.scanned + at;
            self.scanned = 0;
            let bytes: Vec<u8> = self.buffer.drain(..=end).collect();
            let line = String::from_utf8_lossy(&bytes);
            let line = line.trim_end_matches(['\n', '\r']);
            if line.is_empty() {
                if !self.data.is_empty() {
                    complete.push(self.data.join("\n"));
                    self.data.clear();
                    self.data_bytes = 0;
                }
            } else if let Some(data) = line.strip_prefix("data:") {
                let data = data.strip_prefix(' ').unwrap_or(data);
                self.data_bytes += data.len() + 1;
                if self.data_bytes > self.limit {
                    return Err(Overflow(Vec::new()));
                }
                self.data.push(data.to_owned());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::EventStream;

    #[test]
    fn events_are_read_across_chunks_and_only_their_data_kept() {
        let mut events = EventStream::new(1 << 10);
        assert!(
            events
                .feed(b"event: message\nid: 1\ndata: {\"a\":")
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            events
                .feed(b"1}\n\n: comment\n\ndata:{\"b\":2}\r\n\r\n")
                .unwrap(),
            ["{\"a\":1}", "{\"b\":2}"]
        );
        assert_eq!(events.feed(b"id: 3\ndata:\n\n").unwrap(), [""]);
    }

    #[test]
    fn a_line_past_the_limit_overflows_however_it_is_chunked() {
        let mut events = EventStream::new(16);
        assert!(events.feed(b"data: 0123456").unwrap().is_empty());
        assert!(events.feed(b"789abcdef").is_err());
    }

    #[test]
    fn an_event_of_many_short_lines_past_the_limit_overflows() {
        let mut events = EventStream::new(16);
        for _ in 0..5 {
            assert!(events.feed(b"data: ab\n").unwrap().is_empty());
        }
        assert!(events.feed(b"data: ab\n").is_err());
        let mut events = EventStream::new(16);
        for _ in 0..10 {
            assert_eq!(events.feed(b"data: ab\n\n").unwrap(), ["ab"]);
        }
    }

    #[test]
    fn comments_past_the_limit_overflow_too() {
        let mut events = EventStream::new(16);
        assert!(events.feed(&[b':'; 17]).is_err());
    }
}
