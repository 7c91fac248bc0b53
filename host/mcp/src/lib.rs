//! `hookbox mcp`: a hookbox stack between an MCP client and an MCP server.
//!
//! | message | what the proxy does |
//! |---|---|
//! | `tools/call` (client → server) | a `tool-call` event: continue forwards it with the arguments the guards saw (one canonical JSON form); rewrite-args forwards the rewritten arguments; skip answers the client with a tool result marked `isError` carrying the reason, and the server never sees the call; terminate, or a stack that fails closed, answers with a JSON-RPC error, and every later call of the session gets the same |
//! | its result (server → client) | a `tool-result` event (the result as JSON; `isError`, or a JSON-RPC error, is an error outcome): rewrite-result replaces what the client sees (a whole result when the guard wrote one, else its text as the only content); terminate answers with an error |
//! | a 2026-07-28 `input_required` result | a `tool-result` event marked `{"mcp": {"resultType": "input_required"}}`, guarded as any result |
//! | the client's retry (`inputResponses`) | the call's `tool-call` event, then a `tool-result` event of the answers (marked `{"mcp": {"inputResponses": true}}`): its rewrite (an object) is what the server gets, terminate refuses the retry |
//! | a call to a hidden tool | answered as a call to a tool that does not exist; hidden tools are left out of `tools/list` |
//! | `notifications/cancelled` | forwarded, unless it names a call the proxy answered itself |
//! | the session's first 2026-07-28 request | settles which revision the server takes, never by sending it `server/discover` ([`bridge`]'s table) |
//! | everything else, both ways | passed through byte for byte, in order (completed for a bridged 2026-07-28 client) |
//! | a JSON-RPC batch from the client, a line that is not JSON | refused with a JSON-RPC error (never forwarded: the server might read it another way) |
//! | a line from the server that is not a message | ends the session: nothing of it reaches the client, calls still waiting are answered with an error |
//!
//! What each decision sends, row by row, is the pure mapping of
//! `src/answer.rs` (its table, one test per row), on the verdicts every door
//! shares (`hookbox_adapter::verdict`).
//!
//! The server is a line stream pair: a process's stdio, or a remote server
//! over the streamable HTTP transport seen as one ([`http_upstream`]). The
//! client is stdio, or a session of [`listen`]'s HTTP server.
//!
//! Built on a line-level pass-through rather than the Rust MCP SDK (`rmcp`):
//! the SDK's typed messages drop fields they do not know and reorder the
//! rest, so a newer protocol revision would break through the proxy. Here a
//! message the proxy does not guard is never parsed into anything but its
//! envelope, and is written out as the bytes it read.

mod answer;
pub mod bridge;
mod guard;
pub mod http_upstream;
mod lines;
pub mod listen;
pub mod message;
mod proxy;
mod session;

pub use proxy::{Ended, ProxyConfig, proxy};
pub use session::Error;
