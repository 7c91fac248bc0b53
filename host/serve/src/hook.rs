//! Agents' HTTP hooks: one run per agent session (per client), the answer
//! always a 200 with a decision in the agent's terms. A request that is
//! unauthorized, unreadable, too large, shed under load, or whose run broke
//! gets the event's own block, because the agent reads any other status
//! as "carry on".

use std::sync::Arc;

use axum::Extension;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use hookbox_agents::claude_code::ClaudeCode;
use hookbox_agents::opencode::OpenCode;
use hookbox_agents::{Protocol, Reply, Session, handle};

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

/// Asks the session's run about `event`.
fn decide<P: Protocol>(
    app: &App,
    client: Client,
    session: &Session,
    event: &hookbox::StepEvent,
) -> Result<hookbox::Outcome, String> {
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
        app.metrics
            .runs_created
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    let _permit = app
        .claim(client, &live)
        .ok_or("the server is deciding as many events as it may; retry shortly")?;
    // With a session store, run state outlives an idle run and a restart:
    // a new run of the session starts from what the last one kept.
    let mut state = match &app.config.session_store {
        Some(store) => Some(
            store
                .lock(&format!("{}/client-{}", P::NAME, client.0), session)
                .map_err(|e| e.to_string())?,
        ),
        None => None,
    };
    let broken = |failure: hookbox::FailClosed| failure.to_string();
    if new && let Some(state) = &mut state {
        let kept = state.load();
        live.door
            .with_run(|run| run.restore_scratchpads(kept))
            .map_err(broken)?;
    }
    let started = std::time::Instant::now();
    let outcome = live.span.in_scope(|| live.door.decide(None, event));
    app.metrics
        .record(event.kind(), &outcome, started.elapsed());
    if let Some(state) = &mut state {
        let pads = live
            .door
            .with_run(|run| run.scratchpads())
            .map_err(broken)?;
        state.save(&pads).map_err(|e| e.to_string())?;
    }
    Ok(outcome)
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
