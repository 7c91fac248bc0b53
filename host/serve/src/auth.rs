//! Who is asking: with tokens configured, every route but `/healthz` needs
//! `Authorization: Bearer TOKEN`, and the token names the client its runs
//! and sessions belong to.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::Response;

use crate::App;

/// The client a request came from: which token it showed (0 when the
/// server needs none).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Client(pub usize);

/// Routes an agent calls as a hook: refused with a block in the agent's
/// terms (by the route itself), never with a status the agent ignores.
const HOOK_ROUTES: [&str; 2] = ["/claude-code/hook", "/opencode/hook"];

/// Lets a request through with its [`Client`] when it may come in.
pub(crate) async fn require_token(
    State(app): State<Arc<App>>,
    mut request: Request,
    next: Next,
) -> Response {
    let path = request.uri().path();
    if path == "/healthz" {
        return next.run(request).await;
    }
    let client = client(&app.config.tokens, request.headers());
    match client {
        Some(client) => {
            request.extensions_mut().insert(client);
            next.run(request).await
        }
        None if HOOK_ROUTES.contains(&path) => next.run(request).await,
        None => crate::error(
            StatusCode::UNAUTHORIZED,
            "this server needs `Authorization: Bearer TOKEN` (a token of HOOKBOX_SERVE_TOKENS)",
        ),
    }
}

fn client(tokens: &[String], headers: &axum::http::HeaderMap) -> Option<Client> {
    if tokens.is_empty() {
        return Some(Client(0));
    }
    let shown = headers
        .get(axum::http::header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")?
        .trim();
    // Every token compared in full, so timing tells nothing of which or how
    // much matched.
    let mut found = None;
    for (i, token) in tokens.iter().enumerate() {
        if constant_time_eq(token.as_bytes(), shown.as_bytes()) {
            found = Some(Client(i + 1));
        }
    }
    found
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
