//! Serving MCP clients over the streamable HTTP transport: each client
//! session (from its `initialize` to its `DELETE`, or its going idle) is
//! one [`crate::proxy`] session of its own, with its own upstream and its
//! own run on the stack current when it began.
//!
//! | request | answer |
//! |---|---|
//! | `POST` of `initialize`, no `Mcp-Session-Id` | a new session; the answer (an event stream) carries its id in `Mcp-Session-Id` |
//! | `POST` of a 2026-07-28 request (its `_meta` names the revision, or `server/discover`), no `Mcp-Session-Id` | the client's stateless session: one per client (per token; one on loopback without tokens), begun by its first such request, with its own upstream and run, ended after 30 idle minutes. The revision has no session to narrow it to, so the client is the run's scope: its guards' state (a call budget) spans its requests. No `Mcp-Session-Id` is given |
//! | `POST` of a request | an event stream: the messages the server sends meanwhile (progress, its own requests), then the response, then the end |
//! | `POST` of a notification or a response | 202 |
//! | `GET` (`Accept: text/event-stream`) | the session's stream for the server's messages that no request is waiting on |
//! | `DELETE` | ends the session |
//! | `initialize` (or a client's first stateless request) while [`Limits::sessions`] are open | 502, the request's id answered with an error; the limit is taken before anything starts, so concurrent `initialize`s cannot pass it |
//! | a request the server leaves unanswered for [`Limits::idle`] | answered by hookbox with an error; a session with nothing waiting is ended after as long idle, and a request whose client went away waits for nothing |
//! | an unknown session id | 404 (start a new session) |
//! | an `Origin` other than the server's own or an allowed one, or a `Host` not naming this machine ([`Gate`]) | 403 (a web page reaching a local server, DNS rebinding) |
//! | with tokens ([`Gate::new`]): no `Authorization: Bearer TOKEN` of one of them | 401, with `WWW-Authenticate: Bearer` |
//! | with tokens: a session id begun with another token | 404, as an unknown one (a client cannot reach, or learn of, another's session) |
//! | `Mcp-Method` / `Mcp-Name` that disagree with the body, or missing from a 2026-07-28 request ([`message::Mirrored`]), or sent more than once | 400 with error -32020, never forwarded |

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use futures_util::stream::Stream;
use hookbox::HookStack;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use hookbox_adapter::gate::{Asked, Client, Refused};

use crate::message::{self, Line, id_key};
use crate::proxy::{ProxyConfig, proxy};

/// The largest message a client may POST.
const MAX_BODY: usize = 16 << 20;
/// Server messages kept for a session while no stream is open to take them.
const MAX_HELD: usize = 1024;
/// How many sessions `--listen` keeps, and for how long.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Sessions at once, at most: each has a server of its own.
    pub sessions: usize,
    /// A session with no request for this long, and none waiting, is
    /// ended; a request unanswered for this long is answered with an error.
    pub idle: Duration,
}

impl Default for Limits {
    /// 64 sessions; 30 minutes.
    fn default() -> Limits {
        Limits {
            sessions: 64,
            idle: Duration::from_secs(30 * 60),
        }
    }
}

/// The upstream of one session: its server's output and input.
pub type UpstreamIo = (
    Box<dyn AsyncBufRead + Unpin + Send>,
    Box<dyn AsyncWrite + Unpin + Send>,
);

/// Connects a new session to its server (starting a process, or opening an
/// HTTP session); the stack is asked for at the same moment.
pub type Connect = Arc<
    dyn Fn() -> Pin<Box<dyn Future<Output = Result<(HookStack, UpstreamIo), String>> + Send>>
        + Send
        + Sync,
>;

pub use hookbox_adapter::gate::Gate;

struct App {
    connect: Connect,
    config: ProxyConfig,
    gate: Gate,
    limits: Limits,
    /// Sessions begun and not yet over (their proxies still running),
    /// counted before each starts.
    open: Arc<AtomicUsize>,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    /// Held while a client's stateless session is begun, so two first
    /// requests make one.
    beginning: tokio::sync::Mutex<()>,
}

/// A request's stream, waiting for its response.
struct Waiting {
    stream: mpsc::Sender<String>,
    since: Instant,
}

/// One client session.
struct Session {
    /// The client that began it ([`Gate::admit`]).
    client: usize,
    /// Lines to the proxy, as the client's.
    to_proxy: mpsc::Sender<String>,
    /// Streams waiting for the response to a request, by id.
    waiting: Mutex<HashMap<String, Waiting>>,
    /// Open streams for the server's other messages (the GET stream first).
    streams: Mutex<Vec<mpsc::Sender<String>>>,
    /// Messages no stream was open for.
    held: Mutex<VecDeque<String>>,
    /// When the client last sent something.
    last_used: Mutex<std::time::Instant>,
}

impl Session {
    /// Routes a message of the proxy's to the client: a response to the
    /// stream waiting for it, anything else to the newest open stream (a
    /// waiting request's before the GET stream), or held for the next one.
    async fn deliver(&self, line: String) {
        if let Line::Message(envelope) = message::read(&line)
            && envelope.is_response()
            && let Some(key) = envelope.id_key()
        {
            let waiting = self
                .waiting
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&key);
            if let Some(waiting) = waiting {
                let _ = waiting.stream.send(line).await;
                return;
            }
        }
        let open: Vec<mpsc::Sender<String>> = {
            let mut streams = self.streams.lock().unwrap_or_else(|p| p.into_inner());
            streams.retain(|s| !s.is_closed());
            streams.clone()
        };
        // The newest request's stream first, the GET stream last: progress
        // and the server's own requests during a call travel with its
        // response, in order, so none arrives after it.
        for stream in open.iter().rev() {
            if stream.send(line.clone()).await.is_ok() {
                return;
            }
        }
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        if held.len() == MAX_HELD {
            held.pop_front();
        }
        held.push_back(line);
    }

    /// Whether the session is to be kept, after answering what waited past
    /// `idle` and forgetting what nobody waits for any more.
    fn keep(&self, idle: Duration) -> bool {
        let mut waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
        waiting.retain(|key, waiting| {
            if waiting.stream.is_closed() {
                return false;
            }
            if waiting.since.elapsed() < idle {
                return true;
            }
            if let Ok(id) = serde_json::value::RawValue::from_string(key.clone()) {
                let _ = waiting.stream.try_send(message::error(
                    Some(&id),
                    message::code::REFUSED,
                    &format!("hookbox: the MCP server left this request unanswered for {idle:?}"),
                ));
            }
            false
        });
        let idle_now = self.last_used.lock().is_ok_and(|t| t.elapsed() > idle);
        !idle_now || !waiting.is_empty()
    }

    /// Opens a stream for the server's messages: what was held goes first.
    fn open_stream(&self, first: bool) -> (mpsc::Sender<String>, mpsc::Receiver<String>) {
        let (send, receive) = mpsc::channel(MAX_HELD + 64);
        for line in self
            .held
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain(..)
        {
            let _ = send.try_send(line);
        }
        let mut streams = self.streams.lock().unwrap_or_else(|p| p.into_inner());
        if first {
            streams.insert(0, send.clone());
        } else {
            streams.push(send.clone());
        }
        (send, receive)
    }
}

/// Serves MCP clients on `listener` until it fails.
///
/// # Errors
/// The listener's I/O error.
pub async fn serve(
    listener: tokio::net::TcpListener,
    connect: Connect,
    config: ProxyConfig,
    (gate, limits): (Gate, Limits),
) -> std::io::Result<()> {
    let app = Arc::new(App {
        connect,
        config,
        gate,
        limits,
        open: Arc::default(),
        sessions: Mutex::default(),
        beginning: tokio::sync::Mutex::new(()),
    });
    let reaper = Arc::downgrade(&app);
    let every = (limits.idle / 4).clamp(Duration::from_millis(100), Duration::from_secs(30));
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        loop {
            tick.tick().await;
            let Some(app) = reaper.upgrade() else { return };
            // Dropping a session closes its proxy's client side: its server
            // is closed in turn.
            app.sessions_lock()
                .retain(|_, session| session.keep(app.limits.idle));
        }
    });
    let router = Router::new()
        .route(
            "/mcp",
            post(post_message).get(get_stream).delete(end_session),
        )
        .route_layer(axum::middleware::from_fn_with_state(app.clone(), admit))
        .with_state(app);
    axum::serve(listener, router).await
}

/// Lets in a request from no web page, to a `Host` naming this machine,
/// that shows a token when tokens are needed, with its [`Client`].
async fn admit(
    State(app): State<Arc<App>>,
    mut request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let headers = request.headers();
    let asked = Asked::from_headers(|name| headers.get(name).map(|v| v.to_str().map_err(drop)));
    let client = match app.gate.admit(&asked) {
        Ok(client) => client,
        Err(refused @ Refused::Token { .. }) => {
            let mut refused = refuse(
                StatusCode::UNAUTHORIZED,
                None,
                &format!("hookbox: {refused}"),
            );
            refused.headers_mut().insert(
                axum::http::header::WWW_AUTHENTICATE,
                axum::http::HeaderValue::from_static("Bearer"),
            );
            return refused;
        }
        Err(refused) => {
            return refuse(StatusCode::FORBIDDEN, None, &format!("hookbox: {refused}"));
        }
    };
    request.extensions_mut().insert(client);
    next.run(request).await
}

fn refuse(status: StatusCode, id: Option<&serde_json::value::RawValue>, why: &str) -> Response {
    refuse_with(status, id, message::code::INVALID_REQUEST, why)
}

fn refuse_with(
    status: StatusCode,
    id: Option<&serde_json::value::RawValue>,
    code: i64,
    why: &str,
) -> Response {
    (
        status,
        [("content-type", "application/json")],
        message::error(id, code, why),
    )
        .into_response()
}

/// The body's `Mcp-Method` / `Mcp-Name` headers, checked against it: a
/// gateway in front may route on the headers while the server runs the
/// body, so the two must say the same before anything is forwarded.
/// The request's era when they do.
fn headers_match(
    headers: &HeaderMap,
    envelope: &message::Envelope<'_>,
) -> Result<message::Era, String> {
    // Sent more than once, a header is what a gateway routes on in one
    // copy and the server never reads in another (HAProxy matches any
    // occurrence): refused, whatever each says.
    for name in ["mcp-method", "mcp-name"] {
        if headers.get_all(name).iter().nth(1).is_some() {
            return Err(format!(
                "the request has more than one {name} header; send it once"
            ));
        }
    }
    // A value that is not visible ASCII cannot match any body.
    let header = |name: &str| {
        headers
            .get(name)
            .map(|value| value.to_str().unwrap_or("\u{fffd}"))
    };
    // Read once, for the era and for the name.
    let params = envelope.params.and_then(|p| {
        serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(p.get()).ok()
    });
    let stateless = params
        .as_ref()
        .is_some_and(|p| message::Era::of_request(p) == message::Era::Stateless);
    message::Mirrored::of_params(envelope.method.as_deref(), params.as_ref()).check(
        header("mcp-method"),
        header("mcp-name"),
        stateless,
    )?;
    Ok(if stateless {
        message::Era::Stateless
    } else {
        message::Era::Handshake
    })
}

fn session_of(
    app: &App,
    client: Client,
    headers: &HeaderMap,
) -> Result<Arc<Session>, Box<Response>> {
    let Some(id) = headers.get("mcp-session-id").and_then(|v| v.to_str().ok()) else {
        return Err(Box::new(refuse(
            StatusCode::BAD_REQUEST,
            None,
            "hookbox: no Mcp-Session-Id; start with initialize",
        )));
    };
    let sessions = app.sessions.lock().unwrap_or_else(|p| p.into_inner());
    let own = sessions
        .get(id)
        .filter(|session| session.client == client.0)
        .cloned();
    own.ok_or_else(|| {
        Box::new(refuse(
            StatusCode::NOT_FOUND,
            None,
            "hookbox: no such session (ended, or never begun); start a new one",
        ))
    })
}

async fn post_message(
    State(app): State<Arc<App>>,
    axum::Extension(client): axum::Extension<Client>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let Ok(bytes) = axum::body::to_bytes(body, MAX_BODY).await else {
        return refuse(
            StatusCode::PAYLOAD_TOO_LARGE,
            None,
            "hookbox: the message is too large",
        );
    };
    let Ok(text) = std::str::from_utf8(&bytes) else {
        return refuse(StatusCode::BAD_REQUEST, None, "hookbox: not UTF-8");
    };
    // One line for the proxy: raw newlines in JSON are whitespace.
    let line: String = text
        .trim()
        .chars()
        .map(|c| if c == '\n' || c == '\r' { ' ' } else { c })
        .collect();
    let Line::Message(envelope) = message::read(&line) else {
        return refuse(
            StatusCode::BAD_REQUEST,
            None,
            "hookbox: one JSON-RPC message per request",
        );
    };
    let era = match headers_match(&headers, &envelope) {
        Ok(era) => era,
        Err(why) => {
            return refuse_with(
                StatusCode::BAD_REQUEST,
                envelope.id,
                message::code::HEADER_MISMATCH,
                &format!("hookbox: {why}; the request is refused"),
            );
        }
    };
    let initialize = envelope.method.as_deref() == Some("initialize");
    let no_session = headers.get("mcp-session-id").is_none();
    let stateless = no_session
        && !initialize
        && (era == message::Era::Stateless
            || envelope.method.as_deref() == Some("server/discover")
            || ((envelope.is_response() || envelope.id.is_none())
                && app.sessions_lock().contains_key(&stateless_key(client))));
    let (session, new_id) = if stateless {
        match stateless_session(&app, client).await {
            Ok(session) => (session, None),
            Err(why) => {
                return refuse(
                    StatusCode::BAD_GATEWAY,
                    envelope.id,
                    &format!("hookbox: {why}"),
                );
            }
        }
    } else if initialize && no_session {
        match start_session(&app, client, None).await {
            Ok(started) => started,
            Err(why) => {
                return refuse(
                    StatusCode::BAD_GATEWAY,
                    envelope.id,
                    &format!("hookbox: {why}"),
                );
            }
        }
    } else {
        match session_of(&app, client, &headers) {
            Ok(session) => (session, None),
            Err(response) => return *response,
        }
    };
    if let Ok(mut last) = session.last_used.lock() {
        *last = std::time::Instant::now();
    }
    let request_key = match (&envelope.method, envelope.id) {
        (Some(_), Some(id)) => Some(id_key(id)),
        _ => None,
    };
    let Some(key) = request_key else {
        let _ = session.to_proxy.send(line).await;
        return StatusCode::ACCEPTED.into_response();
    };
    // A request: its stream gets what the server sends meanwhile, then the
    // response, and ends.
    let (send, receive) = session.open_stream(false);
    session
        .waiting
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(
            key.clone(),
            Waiting {
                stream: send.clone(),
                since: Instant::now(),
            },
        );
    drop(send);
    if session.to_proxy.send(line).await.is_err() {
        return refuse(
            StatusCode::NOT_FOUND,
            None,
            "hookbox: the session has ended",
        );
    }
    let mut response = Sse::new(events(receive, Some(key))).into_response();
    if let Some(id) = new_id
        && let Ok(value) = id.parse()
    {
        response.headers_mut().insert("mcp-session-id", value);
    }
    response
}

async fn get_stream(
    State(app): State<Arc<App>>,
    axum::Extension(client): axum::Extension<Client>,
    headers: HeaderMap,
) -> Response {
    let session = match session_of(&app, client, &headers) {
        Ok(session) => session,
        Err(response) => return *response,
    };
    let (send, receive) = session.open_stream(true);
    drop(send);
    Sse::new(events(receive, None)).into_response()
}

async fn end_session(
    State(app): State<Arc<App>>,
    axum::Extension(client): axum::Extension<Client>,
    headers: HeaderMap,
) -> Response {
    let Some(id) = headers.get("mcp-session-id").and_then(|v| v.to_str().ok()) else {
        return refuse(StatusCode::BAD_REQUEST, None, "hookbox: no Mcp-Session-Id");
    };
    let mut sessions = app.sessions.lock().unwrap_or_else(|p| p.into_inner());
    let own = sessions.get(id).is_some_and(|s| s.client == client.0);
    match own.then(|| sessions.remove(id)).flatten() {
        // Dropping the session closes the proxy's client side: its server
        // is closed in turn.
        Some(_) => StatusCode::NO_CONTENT.into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

impl App {
    fn sessions_lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Session>>> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Where a client's stateless session is kept: no 128-bit hex id looks so.
fn stateless_key(client: Client) -> String {
    format!("stateless/{}", client.0)
}

/// The client's stateless session, begun if it has none.
async fn stateless_session(app: &Arc<App>, client: Client) -> Result<Arc<Session>, String> {
    let key = stateless_key(client);
    let _one_at_a_time = app.beginning.lock().await;
    if let Some(session) = app.sessions_lock().get(&key) {
        return Ok(session.clone());
    }
    start_session(app, client, Some(key))
        .await
        .map(|(session, _)| session)
}

/// A new session: its server connected, its proxy running, its id (a new
/// random one, or `key`, which is not given to the client).
async fn start_session(
    app: &Arc<App>,
    client: Client,
    key: Option<String>,
) -> Result<(Arc<Session>, Option<String>), String> {
    let most = app.limits.sessions;
    let slot = Slot::take(&app.open, most).ok_or_else(|| {
        format!(
            "{most} sessions are open, the most this proxy keeps; end one (DELETE) or retry later"
        )
    })?;
    let (stack, (server_in, server_out)) = (app.connect)().await?;
    let given = key.is_none();
    let id = match key {
        Some(key) => key,
        None => session_id().ok_or("the system has no randomness for a session id")?,
    };
    let (client_end, proxy_end) = tokio::io::duplex(1 << 20);
    let (proxy_read, proxy_write) = tokio::io::split(proxy_end);
    let (from_proxy, mut to_proxy_pipe) = tokio::io::split(client_end);
    let (to_proxy, mut lines) = mpsc::channel::<String>(256);
    let session = Arc::new(Session {
        client: client.0,
        to_proxy,
        waiting: Mutex::default(),
        streams: Mutex::default(),
        held: Mutex::default(),
        last_used: Mutex::new(std::time::Instant::now()),
    });
    tokio::spawn(async move {
        while let Some(mut line) = lines.recv().await {
            line.push('\n');
            if to_proxy_pipe.write_all(line.as_bytes()).await.is_err() {
                return;
            }
        }
        let _ = to_proxy_pipe.shutdown().await;
    });
    let weak = Arc::downgrade(&session);
    tokio::spawn(async move {
        let mut out = BufReader::new(from_proxy).lines();
        while let Ok(Some(line)) = out.next_line().await {
            let Some(session) = weak.upgrade() else {
                return;
            };
            session.deliver(line).await;
        }
    });
    let config = app.config.clone();
    let (sessions, key, this) = (Arc::downgrade(app), id.clone(), Arc::downgrade(&session));
    tokio::spawn(async move {
        // The session's place is held while its proxy runs.
        let _slot = slot;
        let ended = proxy(
            &stack,
            &config,
            (BufReader::new(proxy_read), proxy_write),
            (server_in, server_out),
        )
        .await;
        if let Err(e) = ended {
            tracing::warn!(session = key, "MCP session ended: {e}");
        }
        if let Some(app) = sessions.upgrade() {
            // Only this session: a stateless one begun again since keeps
            // the key.
            let mut sessions = app.sessions_lock();
            if sessions
                .get(&key)
                .is_some_and(|s| std::ptr::eq(Arc::as_ptr(s), this.as_ptr()))
            {
                sessions.remove(&key);
            }
        }
    });
    app.sessions
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(id.clone(), session.clone());
    Ok((session, given.then_some(id)))
}

/// One of [`Limits::sessions`], taken before a session starts and given
/// back when it is over (or never began).
struct Slot(Arc<AtomicUsize>);

impl Slot {
    fn take(open: &Arc<AtomicUsize>, most: usize) -> Option<Slot> {
        open.try_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
            (n < most).then_some(n + 1)
        })
        .ok()?;
        Some(Slot(open.clone()))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// 128 random bits in hex: nobody guesses another client's session.
fn session_id() -> Option<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).ok()?;
    Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The lines `receive` gets as SSE events, until it ends, or (with `until`)
/// after the response to that request id.
fn events(
    receive: mpsc::Receiver<String>,
    until: Option<String>,
) -> impl Stream<Item = Result<Event, Infallible>> {
    futures_util::stream::unfold(
        (receive, until, false),
        |(mut receive, until, done)| async move {
            if done {
                return None;
            }
            let line = receive.recv().await?;
            let done = until.as_deref().is_some_and(|key| {
            matches!(message::read(&line), Line::Message(m) if m.is_response() && m.id_key().as_deref() == Some(key))
        });
            Some((
                Ok(Event::default().event("message").data(line)),
                (receive, until, done),
            ))
        },
    )
}
