//! Agents' HTTP hooks: one run per agent session (per client), the answer
//! always a 200 with a decision in the agent's terms. A request that is
//! unauthorized, unreadable, too large, shed under load, or whose run broke
//! gets the event's own block, because the agent reads any other status
//! as "carry on".

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::Extension;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use hookbox_adapter::Door;
use hookbox_agents::claude_code::ClaudeCode;
use hookbox_agents::opencode::OpenCode;
use hookbox_agents::{
    Protocol, Reply, Session, SessionBackend, SessionRun, StepRefused, StoreError, Unasked, handle,
};

use crate::App;
use crate::auth::{Client, Refusal};

/// `POST /claude-code/hook`.
pub(crate) async fn claude_code(
    State(app): State<Arc<App>>,
    client: Option<Extension<Client>>,
    refused: Option<Extension<Refusal>>,
    body: Body,
) -> Response {
    agent_hook::<ClaudeCode>(app, admitted(client, refused), body).await
}

/// `POST /opencode/hook`: hookbox's OpenCode plugin with `HOOKBOX_URL`.
pub(crate) async fn opencode(
    State(app): State<Arc<App>>,
    client: Option<Extension<Client>>,
    refused: Option<Extension<Refusal>>,
    body: Body,
) -> Response {
    agent_hook::<OpenCode>(app, admitted(client, refused), body).await
}

/// The client a hook request is, or why it was refused.
fn admitted(
    client: Option<Extension<Client>>,
    refused: Option<Extension<Refusal>>,
) -> Result<Client, String> {
    match (client, refused) {
        (Some(Extension(client)), _) => Ok(client),
        (None, Some(Extension(Refusal(why)))) => Err(why.to_string()),
        (None, None) => {
            Err("this hook was not admitted (a bug in hookbox: please report it)".into())
        }
    }
}

async fn agent_hook<P: Protocol>(
    app: Arc<App>,
    client: Result<Client, String>,
    body: Body,
) -> Response
where
    P::Input: Send,
{
    let limit = app.config.max_body_bytes;
    let wait = app.config.body_timeout;
    let bytes = match tokio::time::timeout(wait, read_bounded(body, limit)).await {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(prefix)) => return answer(&P::too_large(&prefix, limit)),
        // Nothing to read the event from: the protocol's answer to input it
        // cannot read, a block wherever the agent lets a hook block.
        Err(_) => {
            return answer(&P::unreadable(
                b"",
                &format!("hookbox: blocked: the hook input did not arrive within {wait:?}"),
            ));
        }
    };
    let client = match client {
        Ok(client) => client,
        Err(why) => return answer(&reject::<P>(&bytes, &format!("hookbox: blocked: {why}"))),
    };
    let answered = crate::decide_here(|| {
        handle::<P>(&bytes, &app.config.hooks, |session, event| {
            decide::<P>(&app, client, session, event)
        })
    });
    let reply = answered.unwrap_or_else(|| {
        let why = "hookbox: blocked: deciding this hook failed (a panic in hookbox, which is a bug); start a new session";
        // The input is read again for the agent's own block; if reading it
        // is what panicked, the block for input that cannot be read.
        crate::decide_here(|| reject::<P>(&bytes, why)).unwrap_or_else(|| P::unreadable(b"", why))
    });
    answer(&reply)
}

/// Asks the session's run about `event`: with a shared store, a run of
/// this hook's own on state read from the store; otherwise the session's
/// live run.
fn decide<P: Protocol>(
    app: &App,
    client: Client,
    session: &Session,
    event: &hookbox::StepEvent,
) -> Result<hookbox::Outcome, Unasked> {
    match &app.config.session_store {
        Some(store) if store.shared() => decide_shared::<P>(app, client, &**store, session, event),
        store => decide_live::<P>(app, client, store.as_deref(), session, event),
    }
}

/// The store's name for the sessions of `client`: one client's sessions do
/// not exist for another. A client is named by a hash of its token, not
/// its place in the list, so instances sharing a store may list their
/// tokens in any order.
fn store_agent<P: Protocol>(app: &App, client: Client) -> String {
    use sha2::{Digest, Sha256};
    let token = client
        .0
        .checked_sub(1)
        .and_then(|i| app.config.tokens.get(i));
    let who: String = match token {
        Some(token) => Sha256::digest(token.as_bytes())[..8]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect(),
        None => "open".to_owned(),
    };
    format!("{}/client-{who}", P::NAME)
}

/// The session's live run, its state restored from `store` when the run
/// is new (a session whose run ended idle, or was ended by a reload or a
/// restart, carries on) and saved back after each event.
fn decide_live<P: Protocol>(
    app: &App,
    client: Client,
    store: Option<&dyn SessionBackend>,
    session: &Session,
    event: &hookbox::StepEvent,
) -> Result<hookbox::Outcome, Unasked> {
    // Each part whole, as JSON: no two sessions share a key (`a/b` with
    // subagent `c` is not `a` with subagent `b/c`, nor is no id an empty one).
    let key = serde_json::json!([P::NAME, session.id, session.subagent]).to_string();
    let (live, new) = app.runs.session(
        &client,
        &key,
        app.source.snapshot(),
        app.config.end_sessions_on_reload,
        app.config.max_runs,
    )?;
    if new {
        app.metrics.runs_created.fetch_add(1, Ordering::Relaxed);
    }
    let _permit = app
        .claim(client, Some(&live))
        .ok_or("the server is deciding as many events as it may; retry shortly")?;
    let Some(store) = store else {
        let started = std::time::Instant::now();
        let outcome = live.span.in_scope(|| live.door.decide(None, event));
        app.metrics
            .record(event.kind(), &outcome, started.elapsed());
        return Ok(outcome);
    };
    let run = SessionRun::Live {
        door: &live.door,
        new,
    };
    let agent = store_agent::<P>(app, client);
    step_session(app, store, (&agent, session), None, &run, event, &live.span)
}

/// A hook on a shared store: the session taken in the store (calls of it on
/// every instance take turns), its pin checked against this instance's
/// stack, a run of this hook's own on that stack with the session's
/// scratchpads, and what they hold after it written back.
fn decide_shared<P: Protocol>(
    app: &App,
    client: Client,
    store: &dyn SessionBackend,
    session: &Session,
    event: &hookbox::StepEvent,
) -> Result<hookbox::Outcome, Unasked> {
    let _permit = app
        .claim(client, None)
        .ok_or("the server is deciding as many events as it may; retry shortly")?;
    let snapshot = app.source.snapshot();
    let live = app.runs.one_off(&snapshot)?;
    app.metrics.runs_created.fetch_add(1, Ordering::Relaxed);
    let digest = app.stack_digest(&snapshot);
    let pin = Some((&*digest, snapshot.loaded_at));
    let agent = store_agent::<P>(app, client);
    let run = SessionRun::Fresh(&live.door);
    step_session(app, store, (&agent, session), pin, &run, event, &live.span)
}

/// The session-state step ([`hookbox_agents::session_step`]) with this
/// server's span, metrics and logs around it.
fn step_session(
    app: &App,
    store: &dyn SessionBackend,
    (agent, session): (&str, &Session),
    pin: Option<(&str, std::time::SystemTime)>,
    run: &SessionRun<'_>,
    event: &hookbox::StepEvent,
    span: &tracing::Span,
) -> Result<hookbox::Outcome, Unasked> {
    let decide = |door: &Door, event: &hookbox::StepEvent| {
        let started = std::time::Instant::now();
        let outcome = span.in_scope(|| door.decide(None, event));
        app.metrics
            .record(event.kind(), &outcome, started.elapsed());
        outcome
    };
    match hookbox_agents::session_step(store, (agent, session), pin, run, event, decide) {
        Ok(stepped) => {
            if let Some(from) = stepped.moved {
                app.metrics.store.moved.fetch_add(1, Ordering::Relaxed);
                tracing::info!(
                    from = %from.digest,
                    "a session moved to this instance's newer stack, keeping its state"
                );
            }
            app.metrics.store.reached(stepped.in_store);
            Ok(stepped.outcome)
        }
        Err(StepRefused::Store(e)) => Err(store_failed(app, e)),
        Err(StepRefused::Unpinned(why)) => {
            app.metrics.store.refused.fetch_add(1, Ordering::Relaxed);
            tracing::warn!("a session's hook refused: {why}");
            Err(Unasked::Blocked(why))
        }
        Err(StepRefused::Ended(stop)) => Err(Unasked::Blocked(stop)),
        Err(StepRefused::Broken(failure)) => Err(Unasked::Blocked(failure.to_string())),
    }
}

/// Counts and logs a session store's failure; the hook is the agent's
/// block (or, where the step cannot be blocked, its neutral answer).
fn store_failed(app: &App, e: StoreError) -> Unasked {
    let why = e.to_string();
    tracing::warn!("session state unavailable, hook blocked: {why}");
    app.metrics.store.failed(&why);
    Unasked::NoState(why)
}

/// The event's own block for a request turned away before deciding.
fn reject<P: Protocol>(bytes: &[u8], reason: &str) -> Reply {
    match P::parse(bytes) {
        Ok(input) => P::fail(&input, reason),
        Err(unreadable) => unreadable,
    }
}

fn answer(reply: &Reply) -> Response {
    axum::Json(reply.http_body()).into_response()
}

/// The body, or its first `limit` bytes when it is longer.
async fn read_bounded(body: Body, limit: usize) -> Result<Bytes, Vec<u8>> {
    let mut stream = body.into_data_stream();
    let mut buffer = Vec::new();
    while let Some(chunk) = stream.next().await {
        let Ok(chunk) = chunk else {
            return Err(buffer);
        };
        if buffer.len() + chunk.len() > limit {
            let room = limit - buffer.len();
            buffer.extend_from_slice(&chunk[..room]);
            return Err(buffer);
        }
        buffer.extend_from_slice(&chunk);
    }
    Ok(Bytes::from(buffer))
}
