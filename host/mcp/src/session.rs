//! What one MCP session keeps while it lasts: its run, the requests the
//! server has not answered, the revision the server takes; what both pumps
//! ([`crate::proxy`]) and the event half ([`crate::guard`]) share.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use hookbox_adapter::{Asking, Door};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::bridge::Upstream;
use crate::message::Era;

/// Why a session ended other than by its client or server closing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The server wrote something that is not a JSON-RPC message, or a line
    /// past the limit. Nothing of it reached the client.
    #[error("the MCP server broke the protocol: {0}")]
    Upstream(String),
    /// Reading or writing a stream failed.
    #[error("{what}: {source}")]
    Io {
        /// Which stream.
        what: &'static str,
        /// The failure.
        source: std::io::Error,
    },
}

/// A request forwarded to the server, waiting for its response.
pub(crate) enum Outstanding {
    /// A `tools/call`: its result is guarded.
    Call(Pending),
    /// A `tools/list`: hidden tools are taken out of its result, which is
    /// completed for a bridged 2026-07-28 request ([`bridge`]).
    List { complete: bool },
    /// Anything else: its response passes, completed for a bridged
    /// 2026-07-28 request of this method.
    Other { complete: Option<String> },
    /// The proxy's own `initialize` ([`bridge`]): its answer goes to the
    /// client pump waiting for it, not to the client.
    Probe,
    /// A handshake-era client's first `initialize` (raw id, params): a
    /// refusal may mean a server of 2026-07-28 alone ([`bridge`]).
    Initialize {
        call_id: String,
        params: Option<serde_json::Map<String, Value>>,
    },
    /// The proxy's `server/discover` after the server refused the client's
    /// `initialize` (raw id, the version it asked for, the `_meta` its
    /// requests would get, the refusal to pass on if this fails too).
    Discover {
        call_id: String,
        version: String,
        meta: serde_json::Map<String, Value>,
        refusal: String,
    },
}

/// A `tools/call` (or a read guarded as one) forwarded to the server,
/// waiting for its result.
pub(crate) struct Pending {
    /// The tool; for a read, its method.
    pub(crate) tool_name: String,
    pub(crate) call_id: String,
    pub(crate) internal_id: String,
    pub(crate) args: String,
    /// The call's revision: what a result the proxy writes must carry.
    pub(crate) era: Era,
    /// A tool's call, or a read guarded as one.
    pub(crate) kind: Guarded,
}

/// What a forwarded request guarded as a tool call is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Guarded {
    /// A `tools/call`.
    Tool,
    /// A read ([`crate::guard::READS`]): its result keeps its own
    /// structure, completed for a bridged 2026-07-28 client when
    /// `complete`.
    Read {
        /// Whether the result is completed for a bridged client.
        complete: bool,
    },
}

/// Ids of calls the proxy answered itself, so their cancellations are not
/// forwarded to a server that never saw them. The newest few are enough.
const ANSWERED_KEPT: usize = 1024;

pub(crate) struct Session {
    /// The session's run.
    pub(crate) door: Arc<Door>,
    /// Client requests the server has not answered, by id.
    pub(crate) outstanding: Mutex<HashMap<String, Outstanding>>,
    /// Requests the client cancelled: a late response to one is dropped.
    pub(crate) cancelled: Mutex<VecDeque<String>>,
    pub(crate) answered_here: Mutex<VecDeque<String>>,
    pub(crate) hidden: BTreeSet<String>,
    pub(crate) calls: AtomicU64,
    /// Which revision the server takes ([`bridge`]).
    pub(crate) upstream: Mutex<Upstream>,
    /// The client pump waiting for the answer to the proxy's `initialize`.
    pub(crate) probe: Mutex<Option<tokio::sync::oneshot::Sender<Result<Value, Value>>>>,
    /// The session's span, open while it lasts: each decision's span is a
    /// child of it.
    pub(crate) span: tracing::Span,
}

impl Session {
    /// How the session asks its run: off the async threads (a guest may
    /// run up to its deadline), inside the session's span.
    pub(crate) fn asking(&self) -> Asking {
        Asking::OnPool(self.span.clone())
    }

    pub(crate) fn answered_here(&self, key: String) {
        remember(&self.answered_here, key);
    }

    pub(crate) fn outstanding(&self) -> std::sync::MutexGuard<'_, HashMap<String, Outstanding>> {
        self.outstanding.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn upstream(&self) -> std::sync::MutexGuard<'_, Upstream> {
        self.upstream.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Keeps `key` among the newest [`ANSWERED_KEPT`] of `list`.
pub(crate) fn remember(list: &Mutex<VecDeque<String>>, key: String) {
    let mut list = list.lock().unwrap_or_else(|p| p.into_inner());
    if list.len() == ANSWERED_KEPT {
        list.pop_front();
    }
    list.push_back(key);
}

/// Writes `line` to a stream's writer.
///
/// # Errors
/// [`Error::Io`] when the writer is gone.
pub(crate) async fn send(to: &mpsc::Sender<String>, line: String) -> Result<(), Error> {
    to.send(line).await.map_err(|_| Error::Io {
        what: "writing",
        source: std::io::Error::from(std::io::ErrorKind::BrokenPipe),
    })
}
