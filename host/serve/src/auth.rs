//! Who is asking ([`hookbox_adapter::gate`]): no browser reaches any route
//! (a foreign `Origin` or `Host` is refused, `/healthz` included); with
//! tokens configured, every route but `/healthz` needs `Authorization:
//! Bearer TOKEN`, and the token names the client its runs and sessions
//! belong to. A hook route is let through to answer a refusal with the
//! agent's own block ([`Refusal`]).

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use hookbox_adapter::gate::{Asked, Refused};

pub(crate) use hookbox_adapter::gate::Client;

use crate::App;

/// Routes an agent calls as a hook: refused with a block in the agent's
/// terms (by the route itself), never with a status the agent ignores.
const HOOK_ROUTES: [&str; 2] = ["/claude-code/hook", "/opencode/hook"];

/// Why a hook request may not come in, for its route to answer with the
/// agent's block.
#[derive(Clone)]
pub(crate) struct Refusal(pub Refused);

/// Lets a request through with its [`Client`] when it may come in.
pub(crate) async fn admit(
    State(app): State<Arc<App>>,
    mut request: Request,
    next: Next,
) -> Response {
    let path = request.uri().path();
    let asked = asked(request.headers());
    let admitted = if path == "/healthz" {
        app.gate.browser(&asked).map(|()| Client(0))
    } else {
        app.gate.admit(&asked)
    };
    match admitted {
        Ok(client) => {
            request.extensions_mut().insert(client);
            next.run(request).await
        }
        Err(refused) if HOOK_ROUTES.contains(&path) => {
            request.extensions_mut().insert(Refusal(refused));
            next.run(request).await
        }
        Err(refused) => {
            let status = match refused {
                Refused::Token { .. } => StatusCode::UNAUTHORIZED,
                Refused::Host(_) | Refused::Origin(_) => StatusCode::FORBIDDEN,
            };
            crate::error(status, refused.to_string())
        }
    }
}

fn asked(headers: &HeaderMap) -> Asked<'_> {
    Asked::from_headers(|name| headers.get(name).map(|v| v.to_str().map_err(drop)))
}
