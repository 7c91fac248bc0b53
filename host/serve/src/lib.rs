//! `hookbox serve`: a hookbox stack over HTTP/JSON, for agents in any
//! language. The stack comes from a [`StackSource`]: a hot-reloaded plugin
//! directory, or a fixed [`hookbox::HookStack`] (WASM plugins and native hooks).
//!
//! | method and path | what |
//! |---|---|
//! | `POST /runs` | starts a run on the current stack snapshot: `{"run_id": "..."}` (201) |
//! | `POST /runs/{id}/events` | one event in its JSON form (docs/contract.md#json-forms) → the net flow, with `plugin` and, when the run failed closed, `fail_closed` |
//! | `DELETE /runs/{id}` | ends a run (204) |
//! | `GET /healthz` | `ok` |
//! | `GET /status` | the live stack: generation, plugins (mode, digest, what shadows would have done), load errors, live runs |
//! | `GET /metrics` | Prometheus text: events, flows, fail-closed causes, latency, runs, reloads |
//! | `POST /claude-code/hook` | a Claude Code HTTP hook: its input in, its output JSON back; one run per `session_id` |
//! | `POST /opencode/hook` | hookbox's OpenCode plugin (`HOOKBOX_URL`): its hook in, its answer back; one run per `sessionID` |
//!
//! A run pins the snapshot it started with and keeps its guest instances
//! for its events, so run-scoped state works across them; idle runs
//! expire. Run ids are random (128 bits), and a run or session belongs to
//! the client that made it: with [`ServeConfig::tokens`] set, every route
//! but `/healthz` needs `Authorization: Bearer TOKEN`, and one client's
//! runs and sessions do not exist for another. No browser reaches any
//! route: a request with a foreign `Origin`, or a `Host` that does not
//! name this machine (DNS rebinding), is refused with 403, or on a hook
//! route with the agent's block ([`hookbox_adapter::gate`]). Errors are JSON
//! `{"error": "..."}` with a 4xx status saying what is wrong; a full
//! server sheds load with 503 instead of queueing.
//!
//! Each connection is served on a thread of its own, which decides its
//! events in place: a guest running to its deadline holds up only the
//! client waiting for that answer, and an event costs no trip between
//! threads. Threads are kept for the next connection and end when idle.
//!
//! An agent's hook is different: its agent reads any status but 2xx, and
//! any body but its own JSON, as "carry on". So every request that reaches
//! a hook route is answered 200 with a decision in the agent's terms, and
//! every failure (unauthorized, unreadable, too large, overloaded, a
//! broken run) is the event's own block.

mod auth;
mod hook;
mod listen;
mod metrics;
mod runs;
mod shed;
mod threads;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Path as UrlPath, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Router};
use serde_json::{Value, json};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use hookbox::StepEvent;

use crate::auth::Client;
use crate::runs::{LiveRun, Runs};

pub use hookbox::watch::StackSource;
pub use metrics::Metrics;

/// What can stop a server from starting.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The plugin directory could not be loaded or watched.
    #[error(transparent)]
    Hookbox(#[from] hookbox::Error),
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        /// The address asked for.
        addr: SocketAddr,
        /// Why not.
        source: std::io::Error,
    },
}

/// How the server behaves.
#[derive(Clone, Debug)]
pub struct ServeConfig {
    /// A run nobody posted to for this long is ended.
    pub idle_timeout: Duration,
    /// Live runs at most; creating one more answers 503.
    pub max_runs: usize,
    /// Events being decided at once at most; one more answers 503.
    pub max_in_flight: usize,
    /// The largest request body accepted (past it: 413, or a hook's block).
    pub max_body_bytes: usize,
    /// Connections open at once at most; one more is answered 503 and
    /// closed.
    pub max_connections: usize,
    /// A connection that has not sent a request's headers this long after
    /// it opened (or after its last answer) is closed.
    pub header_timeout: Duration,
    /// A request body that has not fully arrived this long after its
    /// headers is refused (408, or a hook's block).
    pub body_timeout: Duration,
    /// How agents' hooks are answered where the operator has a choice.
    pub hooks: hookbox_agents::Options,
    /// An agent's session keeps the stack it started with (a Claude Code
    /// session can last hours). On: its next hook after a reload starts a
    /// new run on the new stack (its run state, such as a call budget,
    /// starts afresh), so a tightened policy applies at once.
    pub end_sessions_on_reload: bool,
    /// Where agents' sessions keep their run state (each plugin's
    /// scratchpad) between runs. `None` keeps it only in the live run.
    ///
    /// A store of this machine ([`hookbox_agents::SessionStore`]): a
    /// session keeps a live run here, and one whose run ended idle, or was
    /// ended by a reload or a restart, carries on from the store.
    ///
    /// A shared store ([`hookbox_agents::RedisStore`]), for instances
    /// behind a load balancer: each hook is a run of its own, on a fresh
    /// instance of each plugin, whose scratchpads are read from the store
    /// and written back, so a session's state is the same whichever
    /// instance takes its next hook. A session is pinned to a stack
    /// ([`hookbox_agents::Saved::pinned_to`]): an instance with a newer
    /// stack moves it there, one with an older stack refuses its hooks.
    /// A store that cannot be reached, is slow past its deadline or
    /// answers garbage blocks the hook (the agent's block).
    pub session_store: Option<Arc<dyn hookbox_agents::SessionBackend>>,
    /// Bearer tokens of the clients allowed in; empty lets any client in
    /// (for a loopback listener only: the CLI refuses otherwise). Each
    /// token is one client: runs and sessions are bound to it.
    pub tokens: Vec<String>,
    /// Names besides `localhost` and IP literals that a request's `Host`
    /// may carry (a reverse proxy's, this machine's DNS name); any other
    /// is refused, as DNS rebinding ([`hookbox_adapter::gate`]).
    pub allowed_hosts: Vec<String>,
    /// Web origins whose pages may reach the server; a request with any
    /// other `Origin` is refused. Empty by default: a browser cannot use
    /// the server.
    pub allowed_origins: Vec<String>,
    /// Where every run's decisions are logged (`hookbox::audit`), if
    /// anywhere. Its dropped records are counted in `/metrics`.
    pub decision_log: Option<Arc<hookbox::audit::DecisionLog>>,
}

impl Default for ServeConfig {
    fn default() -> ServeConfig {
        ServeConfig {
            idle_timeout: Duration::from_secs(300),
            max_runs: 512,
            max_in_flight: 64,
            max_body_bytes: 16 << 20,
            max_connections: 512,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            hooks: hookbox_agents::Options::default(),
            end_sessions_on_reload: false,
            session_store: None,
            tokens: Vec::new(),
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            decision_log: None,
        }
    }
}

struct App {
    source: StackSource,
    config: ServeConfig,
    gate: hookbox_adapter::gate::Gate,
    runs: Runs,
    in_flight: Arc<Semaphore>,
    /// Each client's share of `in_flight`, by client number.
    in_flight_shares: Vec<Arc<Semaphore>>,
    /// The most events one client may have decided at once.
    in_flight_share: usize,
    metrics: Arc<Metrics>,
    /// The digest of the last snapshot a shared-store hook ran on: a
    /// session's pin is checked on every hook, the digest made once per
    /// snapshot.
    stack_digest: std::sync::Mutex<Option<(Arc<hookbox::watch::Snapshot>, Arc<str>)>>,
}

/// A running server.
pub struct Server {
    /// Where it listens (with the real port when asked for port 0).
    pub addr: SocketAddr,
    app: Arc<App>,
    threads: threads::ConnectionThreads,
    task: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

impl Server {
    /// Serves the stacks of `source` on `addr`. Must be called inside a
    /// tokio runtime.
    ///
    /// # Errors
    /// [`Error::Listen`] when the address cannot be bound.
    pub async fn start(
        source: StackSource,
        addr: SocketAddr,
        config: ServeConfig,
    ) -> Result<Server, Error> {
        let listen_error = |source| Error::Listen { addr, source };
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(listen_error)?;
        let addr = listener.local_addr().map_err(listen_error)?;
        let metrics = Arc::new(Metrics::new(config.decision_log.clone()));
        let gate = hookbox_adapter::gate::Gate::new(config.tokens.clone(), "HOOKBOX_SERVE_TOKENS")
            .allow_hosts(config.allowed_hosts.iter().cloned())
            .allow_origins(config.allowed_origins.iter().cloned());
        // Each token is a client with an equal share of runs and of events
        // in flight, so one cannot starve another (without tokens, the one
        // client has all). Client numbers run from 0 (no token) to the
        // number of tokens.
        let clients = config.tokens.len().max(1);
        let in_flight_share = (config.max_in_flight / clients).max(1);
        let app = Arc::new(App {
            source,
            gate,
            in_flight: Arc::new(Semaphore::new(config.max_in_flight)),
            in_flight_shares: (0..=config.tokens.len())
                .map(|_| Arc::new(Semaphore::new(in_flight_share)))
                .collect(),
            in_flight_share,
            stack_digest: std::sync::Mutex::default(),
            runs: Runs::new(
                metrics.clone(),
                config.decision_log.clone(),
                config.max_runs,
                clients,
            ),
            config,
            metrics,
        });
        let router = Router::new()
            .route("/healthz", get(|| async { "ok" }))
            .route("/status", get(status))
            .route("/metrics", get(metrics_text))
            .route("/runs", post(create_run))
            .route("/runs/{id}", axum::routing::delete(end_run))
            .route("/runs/{id}/events", post(post_event))
            .route("/claude-code/hook", post(hook::claude_code))
            .route("/opencode/hook", post(hook::opencode))
            .fallback(|| async {
                error(
                    StatusCode::NOT_FOUND,
                    "no such endpoint; the routes are listed in hookbox's docs/serve.md",
                )
            })
            .layer(axum::middleware::from_fn_with_state(
                app.clone(),
                auth::admit,
            ))
            .with_state(app.clone());
        let reaper = Arc::downgrade(&app);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            loop {
                tick.tick().await;
                let Some(app) = reaper.upgrade() else { return };
                app.expire_idle();
            }
        });
        let threads = threads::ConnectionThreads::new(router, app.config.header_timeout);
        let task = tokio::spawn(listen::serve(
            listener,
            threads.clone(),
            app.config.max_connections.max(1),
        ));
        Ok(Server {
            addr,
            app,
            threads,
            task: Some(task),
        })
    }

    /// The server's counters.
    pub fn metrics(&self) -> &Metrics {
        &self.app.metrics
    }

    /// Serves until the listener fails.
    ///
    /// # Errors
    /// The listener's I/O error.
    pub async fn wait(mut self) -> std::io::Result<()> {
        let Some(task) = self.task.take() else {
            return Ok(());
        };
        match task.await {
            Ok(result) => result,
            Err(e) => Err(std::io::Error::other(e)),
        }
    }
}

impl Drop for Server {
    /// Stops accepting, and ends every connection once it has answered the
    /// request it is in.
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
        self.threads.close();
    }
}

impl App {
    /// A slot to decide an event of `live` in (none when all are taken);
    /// marks the run used.
    fn claim(&self, client: Client, live: Option<&LiveRun>) -> Option<Claim> {
        let own = self
            .in_flight_shares
            .get(client.0)?
            .clone()
            .try_acquire_owned()
            .ok()?;
        let permit = self.in_flight.clone().try_acquire_owned().ok()?;
        if let Some(live) = live {
            live.touch();
        }
        Some(Claim(own, permit))
    }

    /// The digest of `snapshot`'s stack, made once per snapshot.
    fn stack_digest(&self, snapshot: &Arc<hookbox::watch::Snapshot>) -> Arc<str> {
        let mut cached = self.stack_digest.lock().unwrap_or_else(|p| p.into_inner());
        match &*cached {
            Some((of, digest)) if Arc::ptr_eq(of, snapshot) => digest.clone(),
            _ => {
                let digest: Arc<str> = snapshot.stack_digest().into();
                *cached = Some((snapshot.clone(), digest.clone()));
                digest
            }
        }
    }

    fn expire_idle(&self) {
        let expired = self.runs.expire(self.config.idle_timeout);
        if expired > 0 {
            self.metrics
                .runs_expired
                .fetch_add(expired as u64, Ordering::Relaxed);
            tracing::info!(expired, "idle runs ended");
        }
    }
}

/// An event's place among those decided at once: the client's share and
/// the server's, held until it is decided.
struct Claim(
    #[allow(dead_code, reason = "held, not read")] OwnedSemaphorePermit,
    #[allow(dead_code, reason = "held, not read")] OwnedSemaphorePermit,
);

/// Runs `decide` right here: handlers run on their connection's own thread
/// ([`threads`]), where blocking holds up no other client. A panic is
/// caught and is `None`, for the handler to answer as a failure rather than
/// drop the connection (which an agent would read as "carry on").
fn decide_here<T>(decide: impl FnOnce() -> T) -> Option<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(decide)).ok()
}

fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, axum::Json(json!({"error": message.into()}))).into_response()
}

async fn create_run(State(app): State<Arc<App>>, Extension(client): Extension<Client>) -> Response {
    let snapshot = app.source.snapshot();
    match app.runs.create(&client, &snapshot, app.config.max_runs) {
        Ok(id) => {
            app.metrics.runs_created.fetch_add(1, Ordering::Relaxed);
            (
                StatusCode::CREATED,
                axum::Json(json!({"run_id": id, "generation": snapshot.generation})),
            )
                .into_response()
        }
        Err(why) => {
            app.metrics.runs_shed.fetch_add(1, Ordering::Relaxed);
            let mut response = error(StatusCode::SERVICE_UNAVAILABLE, why);
            response
                .headers_mut()
                .insert("retry-after", axum::http::HeaderValue::from_static("1"));
            response
        }
    }
}

async fn end_run(
    State(app): State<Arc<App>>,
    Extension(client): Extension<Client>,
    UrlPath(id): UrlPath<String>,
) -> Response {
    match app.runs.remove(&client, &id) {
        Some(_) => StatusCode::NO_CONTENT.into_response(),
        None => unknown_run(&id),
    }
}

/// The request body, or a 413 naming `what` when it is past the limit (a
/// 408 when it does not arrive in time).
async fn read_body(app: &App, body: Body, what: &str) -> Result<axum::body::Bytes, Box<Response>> {
    let limit = app.config.max_body_bytes;
    let wait = app.config.body_timeout;
    match tokio::time::timeout(wait, axum::body::to_bytes(body, limit)).await {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(_)) => Err(Box::new(error(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("{what} is larger than {limit} bytes"),
        ))),
        Err(_) => Err(Box::new(error(
            StatusCode::REQUEST_TIMEOUT,
            format!("{what} did not arrive within {wait:?}"),
        ))),
    }
}

fn unknown_run(id: &str) -> Response {
    error(
        StatusCode::NOT_FOUND,
        format!("no run `{id}` (never created, ended, or expired); create one with POST /runs"),
    )
}

async fn post_event(
    State(app): State<Arc<App>>,
    Extension(client): Extension<Client>,
    UrlPath(id): UrlPath<String>,
    body: Body,
) -> Response {
    let bytes = match read_body(&app, body, "the event").await {
        Ok(bytes) => bytes,
        Err(response) => return *response,
    };
    let event: StepEvent = match serde_json::from_slice(&bytes) {
        Ok(event) => event,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                format!("not an event in hookbox's JSON form: {e}"),
            );
        }
    };
    let Some(live) = app.runs.get(&client, &id) else {
        return unknown_run(&id);
    };
    let Some(permit) = app.claim(client, Some(&live)) else {
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            "too many events are being decided (by the server, or by this client, within its share); retry shortly",
        );
    };
    let kind = event.kind();
    let started = Instant::now();
    let decided = decide_here(|| {
        let _permit = permit;
        live.span.in_scope(|| live.door.answer_json(&event))
    });
    let Some((outcome, answer)) = decided else {
        return error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "deciding this event panicked inside hookbox (a bug: please report it); the run is over, start another",
        );
    };
    app.metrics.record(kind, &outcome, started.elapsed());
    axum::Json(answer).into_response()
}

async fn status(State(app): State<Arc<App>>) -> Response {
    let snapshot = app.source.snapshot();
    let mut shadow = app.metrics.shadow_counts();
    let plugins: Vec<Value> = snapshot
        .plugins
        .iter()
        .map(|p| {
            let mut entry = match &p.result {
                Ok(plugin) => {
                    let mut entry = json!({
                        "name": p.name, "file": p.file, "required": p.required, "loaded": true,
                        "subscriptions": plugin.subscriptions().iter().map(|k| k.name()).collect::<Vec<_>>(),
                    });
                    if let Some(failed) = &p.newer_version_failed {
                        // The live version is an older one: say so until it loads.
                        entry["newer_version_failed"] = json!(failed.to_string());
                    }
                    entry
                }
                Err(reason) => json!({
                    "name": p.name, "file": p.file, "required": p.required, "loaded": false, "error": reason.to_string(),
                }),
            };
            entry["mode"] = json!(p.mode.name());
            entry["sha256"] = json!(p.sha256);
            if p.mode == hookbox::manifest::Mode::Shadow {
                // What it would have done had it enforced, since the server started.
                entry["shadow_decisions"] = json!(shadow.remove(&p.name).unwrap_or_default());
            }
            entry
        })
        .collect();
    let (live, pinned_older) = app.runs.counts(snapshot.generation);
    let (slots_used, slots) = snapshot.stack.instance_slots();
    let runs = app.runs.per_client();
    let clients: Vec<Value> = app
        .in_flight_shares
        .iter()
        .enumerate()
        .filter(|(client, _)| *client > 0 || app.config.tokens.is_empty())
        .map(|(client, share)| {
            let (live_runs, instances) = runs.get(&client).copied().unwrap_or_default();
            json!({
                "client": client,
                "live_runs": live_runs,
                "instance_slots": instances,
                "in_flight": app.in_flight_share - share.available_permits(),
            })
        })
        .collect();
    axum::Json(json!({
        "clients": clients,
        "client_shares": {
            "runs": app.runs.share(),
            "instance_slots": app.runs.instance_share(&snapshot),
            "in_flight": app.in_flight_share,
        },
        "generation": snapshot.generation,
        "directory_error": snapshot.directory_error,
        "plugins": plugins,
        "live_runs": live,
        "instance_slots": {"used": slots_used, "total": slots},
        "runs_on_older_generations": pinned_older,
        "session_store": app.config.session_store.as_deref().map(|store| app.metrics.store.status(store)),
    }))
    .into_response()
}

async fn metrics_text(State(app): State<Arc<App>>) -> Response {
    let (live, _) = app.runs.counts(0);
    let snapshot = app.source.snapshot();
    (
        [("content-type", "text/plain; version=0.0.4")],
        app.metrics.render(
            live,
            snapshot.generation,
            snapshot.stack.instance_slots(),
            &app.source,
            app.config.session_store.is_some(),
        ),
    )
        .into_response()
}
