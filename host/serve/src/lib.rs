//! `hookbox serve`: a hookbox stack over HTTP/JSON, for agents in any
//! language. The stack comes from a [`StackSource`]: a hot-reloaded plugin
//! directory, or a fixed [`HookStack`] (WASM plugins and native hooks).
//!
//! | method and path | what |
//! |---|---|
//! | `POST /runs` | starts a run on the current stack snapshot: `{"run_id": "..."}` (201) |
//! | `POST /runs/{id}/events` | one event in the JSON form of the README → the net flow, with `plugin` and, when the run failed closed, `fail_closed` |
//! | `DELETE /runs/{id}` | ends a run (204) |
//! | `GET /healthz` | `ok` |
//! | `GET /status` | the live stack: generation, plugins, load errors, live runs |
//! | `GET /metrics` | Prometheus text: events, flows, fail-closed causes, latency, runs, reloads |
//! | `POST /claude-code/hook` | a Claude Code HTTP hook: its input in, its output JSON back; one run per `session_id` |
//!
//! A run pins the snapshot it started with and keeps its guest instances
//! for its events, so run-scoped state works across them; idle runs
//! expire. Errors are JSON `{"error": "..."}` with a 4xx status saying what
//! is wrong; a full server sheds load with 503 instead of queueing.

mod metrics;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::{Path as UrlPath, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use hookbox::StepEvent;
use hookbox::watch::{DirWatcher, Snapshot};
use hookbox::{HookStack, Run, Runtime};
use hookbox_agents::claude_code;

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

/// Where a server's stack comes from.
pub enum StackSource {
    /// A plugin directory, watched and hot-reloaded: new runs take the
    /// newest snapshot, live runs keep theirs.
    Watched(DirWatcher),
    /// One stack for the server's life (generation 1).
    Fixed(Arc<Snapshot>),
}

impl StackSource {
    /// Loads and watches `dir`.
    ///
    /// # Errors
    /// [`hookbox::Error::Directory`] when the directory cannot be loaded or
    /// watched.
    pub fn watch(runtime: &Runtime, dir: &Path, debounce: Duration) -> Result<StackSource, Error> {
        Ok(StackSource::Watched(DirWatcher::start(
            runtime, dir, debounce,
        )?))
    }

    /// A fixed stack.
    pub fn fixed(stack: HookStack) -> StackSource {
        StackSource::Fixed(Arc::new(Snapshot {
            generation: 1,
            stack,
            plugins: Vec::new(),
        }))
    }

    fn snapshot(&self) -> Arc<Snapshot> {
        match self {
            StackSource::Watched(watcher) => watcher.snapshot(),
            StackSource::Fixed(snapshot) => snapshot.clone(),
        }
    }
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
    /// The largest request body accepted.
    pub max_body_bytes: usize,
}

impl Default for ServeConfig {
    fn default() -> ServeConfig {
        ServeConfig {
            idle_timeout: Duration::from_secs(300),
            max_runs: 512,
            max_in_flight: 64,
            max_body_bytes: 4 << 20,
        }
    }
}

/// One live run (its instances and its context), and when it was last used.
struct LiveRun {
    run: Mutex<Run>,
    generation: u64,
    last_used: Mutex<Instant>,
}

struct App {
    source: StackSource,
    config: ServeConfig,
    runs: Mutex<HashMap<String, Arc<LiveRun>>>,
    in_flight: Arc<Semaphore>,
    metrics: Metrics,
    next_run: AtomicU64,
}

/// A running server.
pub struct Server {
    /// Where it listens (with the real port when asked for port 0).
    pub addr: SocketAddr,
    app: Arc<App>,
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
        let app = Arc::new(App {
            source,
            in_flight: Arc::new(Semaphore::new(config.max_in_flight)),
            config,
            runs: Mutex::new(HashMap::new()),
            metrics: Metrics::default(),
            next_run: AtomicU64::new(0),
        });
        let router = Router::new()
            .route("/healthz", get(|| async { "ok" }))
            .route("/status", get(status))
            .route("/metrics", get(metrics_text))
            .route("/runs", post(create_run))
            .route("/runs/{id}", axum::routing::delete(end_run))
            .route("/runs/{id}/events", post(post_event))
            .route("/claude-code/hook", post(claude_code_hook))
            .fallback(|| async {
                error(
                    StatusCode::NOT_FOUND,
                    "no such endpoint; see the README's `hookbox serve` section",
                )
            })
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
        let task = tokio::spawn(async move { axum::serve(listener, router).await });
        Ok(Server {
            addr,
            app,
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
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

impl App {
    /// A new run on `snapshot`.
    fn start_run(&self, snapshot: &Snapshot, id: &str) -> Arc<LiveRun> {
        self.metrics.runs_created.fetch_add(1, Ordering::Relaxed);
        Arc::new(LiveRun {
            run: Mutex::new(snapshot.stack.start_run(id)),
            generation: snapshot.generation,
            last_used: Mutex::new(Instant::now()),
        })
    }

    /// A slot to decide an event of `live` in (none when all are taken);
    /// marks the run used.
    fn claim(&self, live: &LiveRun) -> Option<OwnedSemaphorePermit> {
        let permit = self.in_flight.clone().try_acquire_owned().ok()?;
        if let Ok(mut last) = live.last_used.lock() {
            *last = Instant::now();
        }
        Some(permit)
    }

    fn expire_idle(&self) {
        let ttl = self.config.idle_timeout;
        let Ok(mut runs) = self.runs.lock() else {
            return;
        };
        let before = runs.len();
        runs.retain(|_, run| run.last_used.lock().is_ok_and(|t| t.elapsed() < ttl));
        let expired = before - runs.len();
        if expired > 0 {
            self.metrics
                .runs_expired
                .fetch_add(expired as u64, Ordering::Relaxed);
            tracing::info!(expired, "idle runs ended");
        }
    }
}

fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, axum::Json(json!({"error": message.into()}))).into_response()
}

async fn create_run(State(app): State<Arc<App>>) -> Response {
    let snapshot = app.source.snapshot();
    let id = format!(
        "run-{}-{}",
        snapshot.generation,
        app.next_run.fetch_add(1, Ordering::Relaxed) + 1
    );
    let Ok(mut runs) = app.runs.lock() else {
        return error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the run table is poisoned",
        );
    };
    if runs.len() >= app.config.max_runs {
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "{} runs are live, the most this server keeps; end some (DELETE /runs/ID) or retry later",
                runs.len()
            ),
        );
    }
    runs.insert(id.clone(), app.start_run(&snapshot, &id));
    (
        StatusCode::CREATED,
        axum::Json(json!({"run_id": id, "generation": snapshot.generation})),
    )
        .into_response()
}

async fn end_run(State(app): State<Arc<App>>, UrlPath(id): UrlPath<String>) -> Response {
    let removed = app.runs.lock().ok().and_then(|mut runs| runs.remove(&id));
    match removed {
        Some(_) => StatusCode::NO_CONTENT.into_response(),
        None => unknown_run(&id),
    }
}

/// The request body, or a 413 naming `what` when it is past the limit.
async fn read_body(app: &App, body: Body, what: &str) -> Result<axum::body::Bytes, Box<Response>> {
    let limit = app.config.max_body_bytes;
    axum::body::to_bytes(body, limit).await.map_err(|_| {
        Box::new(error(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("{what} is larger than {limit} bytes"),
        ))
    })
}

fn unknown_run(id: &str) -> Response {
    error(
        StatusCode::NOT_FOUND,
        format!("no run `{id}` (never created, ended, or expired); create one with POST /runs"),
    )
}

async fn post_event(
    State(app): State<Arc<App>>,
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
    let live = app.runs.lock().ok().and_then(|runs| runs.get(&id).cloned());
    let Some(live) = live else {
        return unknown_run(&id);
    };
    let Some(permit) = app.claim(&live) else {
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            "too many events are being decided; retry shortly",
        );
    };
    let kind = event.kind();
    let started = Instant::now();
    let decided = tokio::task::spawn_blocking(move || {
        let _permit = permit;
        let mut run = live.run.lock().ok()?;
        Some(run.step(&event))
    })
    .await;
    let outcome = match decided {
        Ok(Some(outcome)) => outcome,
        _ => {
            return error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "this run can no longer be used (an earlier event broke it); start another",
            );
        }
    };
    app.metrics.record(kind, &outcome, started.elapsed());
    axum::Json(hookbox::outcome_json(&outcome)).into_response()
}

/// Claude Code's HTTP hook: the same mapping as `hookbox claude-code`, with
/// one run per session, so run-scoped state and the pinned snapshot span
/// the session. A block is worded as the event's own refusal (HTTP hooks
/// have no exit code).
async fn claude_code_hook(State(app): State<Arc<App>>, body: Body) -> Response {
    let bytes = match read_body(&app, body, "the hook input").await {
        Ok(bytes) => bytes,
        Err(response) => return *response,
    };
    let input = match claude_code::HookInput::parse(&bytes) {
        Ok(input) => input,
        Err(reason) => return error(StatusCode::BAD_REQUEST, reason),
    };
    let event = match claude_code::to_event(&input) {
        Ok(event) => event,
        Err(reason) => return error(StatusCode::BAD_REQUEST, reason),
    };
    let id = format!(
        "claude-code-{}",
        input.session_id.as_deref().unwrap_or("none")
    );
    let live = {
        let Ok(mut runs) = app.runs.lock() else {
            return error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the run table is poisoned",
            );
        };
        if !runs.contains_key(&id) && runs.len() >= app.config.max_runs {
            return error(
                StatusCode::SERVICE_UNAVAILABLE,
                "too many live runs; retry later",
            );
        }
        runs.entry(id.clone())
            .or_insert_with(|| app.start_run(&app.source.snapshot(), &id))
            .clone()
    };
    let Some(permit) = app.claim(&live) else {
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            "too many events are being decided; retry shortly",
        );
    };
    let answered = tokio::task::spawn_blocking(move || {
        let _permit = permit;
        let mut run = live.run.lock().ok()?;
        let name = input.hook_event_name;
        let answer = claude_code::answer(&name, run.step(&event));
        Some(claude_code::http_reply(&name, answer))
    })
    .await;
    match answered {
        Ok(Some(reply)) => axum::Json(reply).into_response(),
        _ => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "this session's run broke; start a new session",
        ),
    }
}

async fn status(State(app): State<Arc<App>>) -> Response {
    let snapshot = app.source.snapshot();
    let plugins: Vec<Value> = snapshot
        .plugins
        .iter()
        .map(|p| match &p.result {
            Ok(plugin) => json!({
                "name": p.name, "file": p.file, "required": p.required, "loaded": true,
                "subscriptions": plugin.subscriptions().iter().map(|k| k.name()).collect::<Vec<_>>(),
            }),
            Err(reason) => json!({
                "name": p.name, "file": p.file, "required": p.required, "loaded": false, "error": reason.to_string(),
            }),
        })
        .collect();
    let (live, pinned_older) = app.runs.lock().map_or((0, 0), |runs| {
        let older = runs
            .values()
            .filter(|r| r.generation != snapshot.generation)
            .count();
        (runs.len(), older)
    });
    axum::Json(json!({
        "generation": snapshot.generation,
        "plugins": plugins,
        "live_runs": live,
        "runs_on_older_generations": pinned_older,
    }))
    .into_response()
}

async fn metrics_text(State(app): State<Arc<App>>) -> Response {
    let live = app.runs.lock().map_or(0, |runs| runs.len());
    let generation = app.source.snapshot().generation;
    (
        [("content-type", "text/plain; version=0.0.4")],
        app.metrics.render(live, generation),
    )
        .into_response()
}
