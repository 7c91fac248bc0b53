//! One MCP session between a client and a server, each a stream of lines.
//!
//! Two pumps, one per direction, each handling its messages in the order
//! they came; a guarded message is decided before the next one of its
//! direction moves, so nothing overtakes it. The pumps read and write; what
//! a guarded message is asked and answered is the event half's
//! ([`crate::guard`]). The session's run is the stack's state for the
//! whole session ([`crate::session`]).

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use hookbox::HookStack;
use hookbox_adapter::Door;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

use crate::bridge::{self, Toward, Upstream};
use crate::guard::{self, tool_call, tool_result};
use crate::lines::{LineReader, Read};
use crate::message::{self, Envelope, Era, Line, code, id_key};
use crate::session::{Error, Guarded, Outstanding, Pending, Session, remember, send};

/// How a session is guarded.
#[derive(Clone, Debug)]
pub struct ProxyConfig {
    /// Tools not offered to the client: left out of `tools/list`, and a
    /// call to one is answered as a call to a tool that does not exist.
    pub hidden_tools: BTreeSet<String>,
    /// The longest line accepted from either side; a longer one ends the
    /// session (a client's is refused first).
    pub max_line_bytes: usize,
    /// Whether the server is known to take MCP 2026-07-28: then
    /// `server/discover` and the revision's requests pass through, and the
    /// server is never initialized by the proxy ([`bridge`]).
    pub server_takes_2026: bool,
}

impl Default for ProxyConfig {
    fn default() -> ProxyConfig {
        ProxyConfig {
            hidden_tools: BTreeSet::new(),
            max_line_bytes: 16 << 20,
            server_takes_2026: false,
        }
    }
}

/// How the session ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Ended {
    /// The server closed its output (it exited).
    ServerClosed,
    /// The client closed its input, and then the server its output.
    ClientClosed,
}

/// Where a client's request goes, as far as the server's era is concerned.
enum Route {
    /// As it came.
    Plain,
    /// To a server the proxy initialized for a 2026-07-28 client.
    Bridged,
    /// To a 2026-07-28 server a handshake-era client initialized, with
    /// this `_meta` added.
    Reversed(Arc<serde_json::Map<String, Value>>),
    /// The client's first `initialize`.
    FirstInitialize,
}

/// How long the proxy waits for the server to answer its own `initialize`.
const PROBE_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// Requests waiting for the server at once, at most; one more is refused.
const MAX_OUTSTANDING: usize = 4096;

/// How long the server may keep writing after the client closed its input.
const CLOSE_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// Proxies one session: `client` (its messages in, the answers out) and
/// `server` (the upstream's output, its input), until the server closes its
/// output. The client closing its input closes the server's.
///
/// # Errors
/// [`Error`] when the server breaks the protocol or a stream fails; calls
/// still waiting are answered with an error first.
pub async fn proxy(
    stack: &HookStack,
    config: &ProxyConfig,
    (client_in, client_out): (
        impl AsyncBufRead + Unpin + Send + 'static,
        impl AsyncWrite + Unpin + Send + 'static,
    ),
    (server_in, server_out): (
        impl AsyncBufRead + Unpin + Send + 'static,
        impl AsyncWrite + Unpin + Send + 'static,
    ),
) -> Result<Ended, Error> {
    let run_id = format!("mcp-{}", std::process::id());
    let span = tracing::info_span!(
        parent: None,
        "hookbox.run",
        otel.name = "hookbox.run",
        otel.kind = "server",
        gen_ai.conversation.id = run_id.as_str(),
        hookbox.surface = "mcp",
    );
    let session = Arc::new(Session {
        door: Arc::new(Door::open(stack, run_id)),
        span,
        outstanding: Mutex::default(),
        cancelled: Mutex::default(),
        answered_here: Mutex::default(),
        hidden: config.hidden_tools.clone(),
        calls: AtomicU64::new(0),
        upstream: Mutex::new(if config.server_takes_2026 {
            Upstream::Stateless
        } else {
            Upstream::Fresh
        }),
        probe: Mutex::default(),
    });
    let (to_client, client_writer) = writer(client_out, "writing to the client");
    let (to_server, server_writer) = writer(server_out, "writing to the MCP server");
    let to_server_weak = to_server.downgrade();
    let client_closed = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (done, client_done) = tokio::sync::oneshot::channel::<()>();
    let from_client = tokio::spawn({
        let (session, to_client, closed) =
            (session.clone(), to_client.clone(), client_closed.clone());
        let reader = LineReader::new(client_in, config.max_line_bytes);
        async move {
            let result = client_pump(&session, reader, &to_client, &to_server).await;
            closed.store(true, Ordering::SeqCst);
            // Dropping `to_server` closes the server's input.
            drop(to_server);
            let _ = done.send(());
            result
        }
    });
    let reader = LineReader::new(server_in, config.max_line_bytes);
    // Weak: the client pump's going still closes the server's input.
    let answer_server = to_server_weak;
    let result = tokio::select! {
        result = server_pump(&session, reader, &to_client, &answer_server) => result,
        // The client is gone and the server does not finish: stop waiting.
        () = async {
            if client_done.await.is_ok() {
                tokio::time::sleep(CLOSE_GRACE).await;
            } else {
                std::future::pending::<()>().await;
            }
        } => Ok(()),
    };
    from_client.abort();
    // Whatever the server left unanswered is answered now: never a call
    // left hanging.
    let unanswered: Vec<String> = session
        .outstanding()
        .drain()
        .filter_map(|(_, waiting)| match waiting {
            Outstanding::Call(pending) => Some(pending.call_id),
            _ => None,
        })
        .collect();
    // What the server wrote is not quoted to the client (the error on
    // stderr shows it): no piece of a broken message reaches it.
    let why = match &result {
        Ok(()) => "the MCP server exited before answering",
        Err(Error::Upstream(_)) => {
            "the MCP server broke the protocol (hookbox's log says how); the call was not answered"
        }
        Err(Error::Io { .. }) => {
            "the connection to the MCP server failed; the call was not answered"
        }
    };
    for id in unanswered {
        if let Ok(id) = RawValue::from_string(id) {
            let _ = to_client
                .send(message::error(
                    Some(&id),
                    code::REFUSED,
                    &format!("hookbox: {why}"),
                ))
                .await;
        }
    }
    drop(to_client);
    let _ = client_writer.await;
    server_writer.abort();
    result.map(|()| {
        if client_closed.load(Ordering::SeqCst) {
            Ended::ClientClosed
        } else {
            Ended::ServerClosed
        }
    })
}

/// A channel whose lines a task writes to `out`, one per line, in order.
fn writer(
    mut out: impl AsyncWrite + Unpin + Send + 'static,
    what: &'static str,
) -> (
    mpsc::Sender<String>,
    tokio::task::JoinHandle<Result<(), Error>>,
) {
    let (send, mut receive) = mpsc::channel::<String>(256);
    let task = tokio::spawn(async move {
        let io = |source| Error::Io { what, source };
        while let Some(mut line) = receive.recv().await {
            line.push('\n');
            out.write_all(line.as_bytes()).await.map_err(io)?;
            if receive.is_empty() {
                out.flush().await.map_err(io)?;
            }
        }
        out.flush().await.map_err(io)?;
        out.shutdown().await.map_err(io)
    });
    (send, task)
}

/// Client → server: guards `tools/call`, notes `tools/list`, refuses what is
/// not a message, passes the rest as it came.
async fn client_pump(
    session: &Session,
    mut reader: LineReader<impl AsyncBufRead + Unpin>,
    to_client: &mpsc::Sender<String>,
    to_server: &mpsc::Sender<String>,
) -> Result<(), Error> {
    loop {
        let line = match reader.next().await {
            Read::Line(line) => line,
            Read::End => return Ok(()),
            Read::TooLong(limit) => {
                let refusal = message::error(
                    None,
                    code::INVALID_REQUEST,
                    &format!("hookbox: a message longer than {limit} bytes is not forwarded"),
                );
                send(to_client, refusal).await?;
                continue;
            }
            Read::NotUtf8 => {
                send(
                    to_client,
                    message::error(None, code::PARSE_ERROR, "hookbox: not UTF-8"),
                )
                .await?;
                continue;
            }
            Read::Failed(source) => {
                return Err(Error::Io {
                    what: "reading from the client",
                    source,
                });
            }
        };
        match message::read(&line) {
            Line::Invalid(why) => {
                send(
                    to_client,
                    message::error(None, code::PARSE_ERROR, &format!("hookbox: {why}")),
                )
                .await?;
            }
            Line::Batch(items) => {
                // Each request in it is answered, so none is left waiting.
                const WHY: &str = "hookbox: JSON-RPC batches are not forwarded (MCP has none since 2025-06-18); send each message on its own line";
                let ids: Vec<Option<&RawValue>> = items
                    .iter()
                    .map(|item| match message::read(item.get()) {
                        Line::Message(m) if m.method.is_some() => m.id,
                        _ => None,
                    })
                    .collect();
                if ids.iter().all(Option::is_none) {
                    send(to_client, message::error(None, code::INVALID_REQUEST, WHY)).await?;
                }
                for id in ids.into_iter().flatten() {
                    send(
                        to_client,
                        message::error(Some(id), code::INVALID_REQUEST, WHY),
                    )
                    .await?;
                }
            }
            Line::Message(envelope) => {
                client_message(session, &envelope, &line, to_client, to_server).await?;
            }
        }
    }
}

async fn client_message(
    session: &Session,
    envelope: &Envelope<'_>,
    line: &str,
    to_client: &mpsc::Sender<String>,
    to_server: &mpsc::Sender<String>,
) -> Result<(), Error> {
    let method = envelope.method.as_deref();
    if method == Some("notifications/cancelled") {
        return cancelled(session, envelope, line, to_server).await;
    }
    let (Some(method), Some(id)) = (method, envelope.id) else {
        if method == Some("tools/call") {
            tracing::warn!("a tools/call without an id (a notification) is not forwarded");
            return Ok(());
        }
        if method == Some("notifications/initialized")
            && matches!(
                *session.upstream(),
                Upstream::Bridged(_) | Upstream::Reversed(_)
            )
        {
            // The proxy ended the handshake itself.
            return Ok(());
        }
        // A notification, or the client's response to a server request.
        return send(to_server, line.to_owned()).await;
    };
    // A request. Its id must not be one still waiting: the response would
    // be matched to the wrong request.
    let key = id_key(id);
    let refused = {
        let outstanding = session.outstanding();
        if outstanding.contains_key(&key) {
            Some(
                "hookbox: a request with this id is still waiting for its response; use another id",
            )
        } else if outstanding.len() >= MAX_OUTSTANDING {
            Some(
                "hookbox: too many requests are waiting for the server; retry when some are answered",
            )
        } else {
            None
        }
    };
    if let Some(why) = refused {
        return send(
            to_client,
            message::error(Some(id), code::INVALID_REQUEST, why),
        )
        .await;
    }
    let route = match era_of_server(session, method, envelope, to_server).await? {
        Ok(route) => route,
        Err(why) => {
            return send(to_client, message::error(Some(id), code::REFUSED, &why)).await;
        }
    };
    if let Some(answer) = answered_for_the_server(session, method, id) {
        session.answered_here(key);
        return send(to_client, answer).await;
    }
    // Read once: a call needs its params, a bridged request its era. A
    // bridged server gets 2026-07-28 requests without the revision's
    // `_meta` (a call's is taken off as it is rebuilt), and its results are
    // completed for the client; a reversed one gets each request with it.
    let first_initialize = matches!(route, Route::FirstInitialize);
    let guarded_read = guard::READS.contains(&method);
    let params = (!matches!(route, Route::Plain) || method == "tools/call" || guarded_read)
        .then(|| params_of(envelope))
        .flatten();
    let toward = match route {
        Route::Bridged
            if params
                .as_ref()
                .is_some_and(|p| Era::of_request(p) == Era::Stateless) =>
        {
            Toward::HandshakeServer
        }
        Route::Reversed(meta) => Toward::StatelessServer(meta),
        _ => Toward::AsIs,
    };
    let complete = matches!(toward, Toward::HandshakeServer);
    if method == "tools/call" {
        return tool_call(session, params, id, line, &toward, to_client, to_server).await;
    }
    if guarded_read {
        let asked = guard::Asked {
            method,
            params,
            id,
            line,
        };
        return guard::read(session, asked, &toward, to_client, to_server).await;
    }
    let line = toward.line(line);
    match method {
        "initialize" if first_initialize => {
            session.outstanding().insert(
                key,
                Outstanding::Initialize {
                    call_id: id.get().to_owned(),
                    params,
                },
            );
            send(to_server, line).await
        }
        "tools/list" => {
            session
                .outstanding()
                .insert(key, Outstanding::List { complete });
            send(to_server, line).await
        }
        _ => {
            let complete = complete.then(|| method.to_owned());
            session
                .outstanding()
                .insert(key, Outstanding::Other { complete });
            send(to_server, line).await
        }
    }
}

fn params_of(envelope: &Envelope<'_>) -> Option<serde_json::Map<String, Value>> {
    envelope
        .params
        .and_then(|p| serde_json::from_str::<serde_json::Map<String, Value>>(p.get()).ok())
}

/// Settles which revision the server takes before a request of `method`
/// moves ([`bridge`]): where the request goes, or why it cannot be sent.
async fn era_of_server(
    session: &Session,
    method: &str,
    envelope: &Envelope<'_>,
    to_server: &mpsc::Sender<String>,
) -> Result<Result<Route, String>, Error> {
    {
        let mut upstream = session.upstream();
        match &*upstream {
            Upstream::Bridged(_) => return Ok(Ok(Route::Bridged)),
            Upstream::Reversed(meta) => return Ok(Ok(Route::Reversed(meta.clone()))),
            Upstream::Handshake => return Ok(Ok(Route::Plain)),
            // A server of 2026-07-28 may still take a handshake-era client's
            // `initialize`; if it refuses, the proxy reverses the bridge.
            Upstream::Fresh | Upstream::Stateless if method == "initialize" => {
                *upstream = Upstream::Handshake;
                return Ok(Ok(Route::FirstInitialize));
            }
            Upstream::Stateless => return Ok(Ok(Route::Plain)),
            Upstream::Fresh => {}
        }
    }
    let params = params_of(envelope);
    let names_revision = params
        .as_ref()
        .is_some_and(|p| Era::of_request(p) == Era::Stateless);
    if method != "server/discover" && !names_revision {
        return Ok(Ok(Route::Plain));
    }
    // The first 2026-07-28 request: the server is asked to initialize,
    // which a server of either era can answer.
    let (answer, answered) = tokio::sync::oneshot::channel();
    *session.probe.lock().unwrap_or_else(|p| p.into_inner()) = Some(answer);
    session
        .outstanding()
        .insert(bridge::probe_key(), Outstanding::Probe);
    send(to_server, bridge::initialize(params.as_ref())).await?;
    match tokio::time::timeout(PROBE_WAIT, answered).await {
        Ok(Ok(Ok(init))) => {
            send(to_server, bridge::initialized()).await?;
            *session.upstream() = Upstream::Bridged(init);
            Ok(Ok(Route::Bridged))
        }
        Ok(Ok(Err(_refused))) => {
            *session.upstream() = Upstream::Stateless;
            Ok(Ok(Route::Plain))
        }
        Ok(Err(_)) => Ok(Err(
            "hookbox: the MCP server exited before answering initialize".into(),
        )),
        Err(_) => {
            tracing::warn!(
                "the MCP server did not answer initialize within {} s",
                PROBE_WAIT.as_secs()
            );
            Err(Error::Upstream(format!(
                "no answer to initialize within {} s",
                PROBE_WAIT.as_secs()
            )))
        }
    }
}

/// The proxy's own answer to a request of `method` the server cannot take
/// in the session's era ([`bridge`]), if it is one.
fn answered_for_the_server(session: &Session, method: &str, id: &RawValue) -> Option<String> {
    match (&*session.upstream(), method) {
        (Upstream::Bridged(init), "server/discover") => {
            Some(message::response(id, &bridge::discover_result(init)))
        }
        (Upstream::Bridged(init), "initialize") => Some(message::response(id, init)),
        // MCP 2026-07-28 has no `ping`: the proxy is what answers.
        (Upstream::Reversed(_), "ping") => Some(message::response(id, &json!({}))),
        (Upstream::Handshake, "server/discover") => Some(message::error(
            Some(id),
            code::METHOD_NOT_FOUND,
            "hookbox: this session began with initialize; server/discover is not part of it",
        )),
        _ => None,
    }
}

/// `notifications/cancelled`: forwarded unless it names a call the proxy
/// answered itself; a late response to what it names is then dropped.
async fn cancelled(
    session: &Session,
    envelope: &Envelope<'_>,
    line: &str,
    to_server: &mpsc::Sender<String>,
) -> Result<(), Error> {
    let target = envelope
        .params
        .and_then(|p| serde_json::from_str::<Value>(p.get()).ok())
        .and_then(|p| {
            p.get("requestId")
                .and_then(|v| RawValue::from_string(v.to_string()).ok())
        })
        .map(|raw| id_key(&raw));
    if let Some(key) = target {
        let answered = session
            .answered_here
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(&key);
        if answered {
            // The server never saw that call: nothing to cancel there.
            return Ok(());
        }
        if session.outstanding().remove(&key).is_some() {
            remember(&session.cancelled, key);
        }
    }
    send(to_server, line.to_owned()).await
}

/// Server → client: guards the results of forwarded calls, filters
/// `tools/list`, passes the rest as it came. Anything that is not a
/// message ends the session.
async fn server_pump(
    session: &Session,
    mut reader: LineReader<impl AsyncBufRead + Unpin>,
    to_client: &mpsc::Sender<String>,
    to_server: &mpsc::WeakSender<String>,
) -> Result<(), Error> {
    loop {
        let line = match reader.next().await {
            Read::Line(line) => line,
            Read::End => return Ok(()),
            Read::TooLong(limit) => {
                return Err(Error::Upstream(format!("a line longer than {limit} bytes")));
            }
            Read::NotUtf8 => return Err(Error::Upstream("a line that is not UTF-8".into())),
            Read::Failed(source) => {
                return Err(Error::Io {
                    what: "reading from the MCP server",
                    source,
                });
            }
        };
        match message::read(&line) {
            Line::Invalid(why) => {
                let shown: String = line.chars().take(80).collect();
                return Err(Error::Upstream(format!("{why} (it wrote {shown:?})")));
            }
            // Each element is a message of its own to the client.
            // Each element is a message of its own to the client; all are
            // read before any is sent, so a bad one sends nothing.
            Line::Batch(items) => {
                let mut messages = Vec::with_capacity(items.len());
                for item in &items {
                    match message::read(item.get()) {
                        Line::Message(envelope) => messages.push((envelope, item.get())),
                        _ => {
                            return Err(Error::Upstream(
                                "a batch holding something that is not a message".into(),
                            ));
                        }
                    }
                }
                for (envelope, text) in messages {
                    server_message(session, &envelope, text, to_client, to_server).await?;
                }
            }
            Line::Message(envelope) => {
                server_message(session, &envelope, &line, to_client, to_server).await?;
            }
        }
    }
}

async fn server_message(
    session: &Session,
    envelope: &Envelope<'_>,
    line: &str,
    to_client: &mpsc::Sender<String>,
    to_server: &mpsc::WeakSender<String>,
) -> Result<(), Error> {
    let key = match envelope.id_key() {
        Some(key) if envelope.is_response() => key,
        // A request or notification of the server's own.
        _ => {
            if let (Some(method), Some(id)) = (envelope.method.as_deref(), envelope.id)
                && matches!(*session.upstream(), Upstream::Bridged(_))
            {
                // A 2026-07-28 client takes no request from the server.
                let answer = if method == "ping" {
                    message::response(id, &json!({}))
                } else {
                    message::error(
                        Some(id),
                        code::METHOD_NOT_FOUND,
                        &format!(
                            "hookbox: the client is on MCP 2026-07-28, which has no {method} from the server"
                        ),
                    )
                };
                if let Some(to_server) = to_server.upgrade() {
                    send(&to_server, answer).await?;
                }
                return Ok(());
            }
            return send(to_client, line.to_owned()).await;
        }
    };
    // Every response answers a request the client made and is still
    // waiting for, matched exactly; anything else could be a result that
    // skips its guard.
    let waiting = session.outstanding().remove(&key);
    match waiting {
        Some(Outstanding::Call(pending)) => {
            let (call_id, era) = (pending.call_id.clone(), pending.era);
            let guarded = tool_result(session, envelope, pending, to_client).await;
            if guarded.is_err() {
                // Put back, so the session's end answers it with an error.
                let waiting = Pending {
                    tool_name: String::new(),
                    call_id,
                    internal_id: String::new(),
                    args: String::new(),
                    era,
                    kind: Guarded::Tool,
                };
                session
                    .outstanding()
                    .insert(key, Outstanding::Call(waiting));
            }
            guarded
        }
        Some(Outstanding::List { complete }) => {
            let listed = without_hidden(&session.hidden, envelope.result, line)?;
            let listed = if complete {
                bridge::completed_line(&listed, "tools/list")
            } else {
                listed
            };
            send(to_client, listed).await
        }
        Some(Outstanding::Other { complete: None }) => send(to_client, line.to_owned()).await,
        Some(Outstanding::Other {
            complete: Some(method),
        }) => {
            let completed = bridge::completed_line(line, &method);
            send(to_client, completed).await
        }
        Some(Outstanding::Probe) => {
            let answer = match (envelope.result, envelope.error) {
                (Some(result), None) => serde_json::from_str::<Value>(result.get())
                    .ok()
                    .filter(Value::is_object)
                    .ok_or(Value::Null),
                _ => Err(envelope
                    .error
                    .and_then(|e| serde_json::from_str(e.get()).ok())
                    .unwrap_or(Value::Null)),
            };
            if let Some(waiting) = session
                .probe
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take()
            {
                let _ = waiting.send(answer);
            }
            Ok(())
        }
        Some(Outstanding::Initialize { call_id, params }) => {
            let Some(to_server) = to_server.upgrade().filter(|_| envelope.error.is_some()) else {
                return send(to_client, line.to_owned()).await;
            };
            // Refused: perhaps a server of 2026-07-28 alone. It is asked
            // what it is, as a client of the revision would ask.
            let version = params
                .as_ref()
                .and_then(|p| p.get("protocolVersion"))
                .and_then(Value::as_str)
                .unwrap_or(bridge::HANDSHAKE_VERSION)
                .to_owned();
            let meta = bridge::revision_meta(params.as_ref());
            let discover = bridge::discover(&meta);
            session.outstanding().insert(
                bridge::discover_key(),
                Outstanding::Discover {
                    call_id,
                    version,
                    meta,
                    refusal: line.to_owned(),
                },
            );
            send(&to_server, discover).await
        }
        Some(Outstanding::Discover {
            call_id,
            version,
            meta,
            refusal,
        }) => {
            let discovered = envelope
                .result
                .and_then(|r| serde_json::from_str::<Value>(r.get()).ok())
                .filter(bridge::offers_revision);
            let (Some(discovered), Ok(id)) = (discovered, RawValue::from_string(call_id)) else {
                return send(to_client, refusal).await;
            };
            *session.upstream() = Upstream::Reversed(Arc::new(meta));
            let answer = message::response(&id, &bridge::initialize_result(&discovered, &version));
            send(to_client, answer).await
        }
        None if session
            .cancelled
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(&key) =>
        {
            // The client cancelled it and no longer waits for it.
            Ok(())
        }
        None => Err(Error::Upstream(format!(
            "a response to id {key}, which no request of the client is waiting for"
        ))),
    }
}

/// A `tools/list` response without the hidden tools (as it came when it
/// has none of them, or nothing is hidden).
fn without_hidden(
    hidden: &BTreeSet<String>,
    result: Option<&RawValue>,
    line: &str,
) -> Result<String, Error> {
    let Some(result) = result else {
        return Ok(line.to_owned()); // an error response
    };
    if hidden.is_empty() {
        return Ok(line.to_owned());
    }
    let broken =
        || Error::Upstream("a tools/list result that is not an object with a `tools` list".into());
    let Ok(Value::Object(result)) = serde_json::from_str::<Value>(result.get()) else {
        return Err(broken());
    };
    let Some(Value::Array(tools)) = result.get("tools") else {
        return Err(broken());
    };
    let offered: Vec<Value> = tools
        .iter()
        .filter(|tool| {
            !tool
                .get("name")
                .and_then(Value::as_str)
                .is_some_and(|n| hidden.contains(n))
        })
        .cloned()
        .collect();
    if offered.len() == tools.len() {
        return Ok(line.to_owned());
    }
    message::with_member(line, &["result", "tools"], Value::Array(offered)).ok_or_else(broken)
}
