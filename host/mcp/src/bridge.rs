//! A client on MCP 2026-07-28 in front of a server that may take only the
//! `initialize` handshake.
//!
//! A server from before the revision can exit on a first request that is
//! not `initialize` (rmcp's stdio servers do), so the proxy never sends it
//! one. The first 2026-07-28 request of a session (`server/discover`, or any
//! request naming its revision in `_meta`) finds out which server it is:
//!
//! | the server | what the proxy does |
//! |---|---|
//! | answers the proxy's own `initialize` | it is *bridged*: initialized on the client's behalf (no client capabilities, so it asks the client nothing), `server/discover` answered from its `initialize` result, each request forwarded without the revision's `_meta` keys, each result tagged `resultType: "complete"` (and a list result uncacheable: `ttlMs: 0`, `cacheScope: "private"`) where the server left that out; its `ping` answered by the proxy, its other requests refused (a 2026-07-28 client takes none) |
//! | refuses it with a JSON-RPC error | it is a 2026-07-28 server: `server/discover` and everything else pass through as they came |
//! | was initialized by the client | the handshake era: everything passes through; `server/discover` is answered "method not found" (the client already chose its era) |
//!
//! | is declared to take 2026-07-28 ([`crate::ProxyConfig::server_takes_2026`], `--server-revision 2026-07-28`) | as one that refused: nothing is probed, everything passes through |
//!
//! A handshake-era client's `initialize` to a bridged server is answered
//! from the `initialize` result the proxy holds, and its
//! `notifications/initialized` is not sent again.

use serde_json::{Map, Value, json};

/// The revision a bridged server is offered to the client as.
pub const STATELESS_VERSION: &str = "2026-07-28";

/// The handshake revision the proxy asks a server for.
pub const HANDSHAKE_VERSION: &str = "2025-11-25";

/// The id of the proxy's own `initialize`: a string no client numbering
/// reaches.
const PROBE: &str = "hookbox-initialize";

/// The id of the proxy's own `initialize`, as the proxy keys the requests
/// it waits for ([`crate::message::id_key`]).
pub fn probe_key() -> String {
    Value::from(PROBE).to_string()
}

/// The `_meta` keys of the 2026-07-28 revision's prefix: the protocol
/// version, client info and capabilities each request carries.
const REVISION_META_PREFIX: &str = "io.modelcontextprotocol/";

/// Methods whose 2026-07-28 result is cacheable (`ttlMs`, `cacheScope`).
const CACHEABLE: [&str; 5] = [
    "server/discover",
    "tools/list",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
];

/// What the proxy knows of its server.
#[derive(Clone, Debug, Default)]
pub enum Upstream {
    /// Nothing has been asked of it.
    #[default]
    Fresh,
    /// The client initialized it: the handshake era, passed through.
    Handshake,
    /// The proxy initialized it for a 2026-07-28 client; what it answered.
    Bridged(Value),
    /// It refused `initialize`: a 2026-07-28 server, passed through.
    Stateless,
}

/// The proxy's `initialize`, for a client whose first 2026-07-28 request
/// had `params`: its client info when it gave one, no capabilities.
pub fn initialize(params: Option<&Map<String, Value>>) -> String {
    let client_info = params
        .and_then(|p| p.get("_meta"))
        .and_then(|meta| meta.get("io.modelcontextprotocol/clientInfo"))
        .filter(|info| info.get("name").is_some_and(Value::is_string))
        .cloned()
        .unwrap_or_else(|| json!({"name": "hookbox", "version": env!("CARGO_PKG_VERSION")}));
    json!({
        "jsonrpc": "2.0",
        "id": PROBE,
        "method": "initialize",
        "params": {
            "protocolVersion": HANDSHAKE_VERSION,
            "capabilities": {},
            "clientInfo": client_info,
        },
    })
    .to_string()
}

/// The notification that ends the handshake.
pub fn initialized() -> String {
    json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string()
}

/// The answer to `server/discover` for a server that answered `initialize`
/// with `init`: its capabilities, instructions and name, offered at the
/// 2026-07-28 revision, not to be cached.
pub fn discover_result(init: &Value) -> Value {
    let mut result = json!({
        "supportedVersions": [STATELESS_VERSION],
        "capabilities": init.get("capabilities").cloned().unwrap_or_else(|| json!({})),
    });
    if let Some(instructions) = init.get("instructions").filter(|i| i.is_string()) {
        result["instructions"] = instructions.clone();
    }
    if let Some(info) = init.get("serverInfo").filter(|i| i.is_object()) {
        result["_meta"] = json!({"io.modelcontextprotocol/serverInfo": info});
    }
    complete(&mut result, "server/discover");
    result
}

/// `line`, a request of the 2026-07-28 revision, as a bridged server takes
/// it: without the revision's `_meta` keys (`_meta` itself goes when
/// nothing else is in it). `None` when it has none (send it as it came).
pub fn for_handshake_server(line: &str) -> Option<String> {
    let mut message: Value = serde_json::from_str(line).ok()?;
    let params = message.get_mut("params")?.as_object_mut()?;
    strip_revision_meta(params).then(|| message.to_string())
}

/// Takes the revision's `_meta` keys out of `params`; whether there were any.
pub fn strip_revision_meta(params: &mut Map<String, Value>) -> bool {
    let Some(Value::Object(meta)) = params.get_mut("_meta") else {
        return false;
    };
    let before = meta.len();
    meta.retain(|key, _| !key.starts_with(REVISION_META_PREFIX));
    let stripped = meta.len() != before;
    if meta.is_empty() {
        params.remove("_meta");
    }
    stripped
}

/// Makes `result`, the answer to a 2026-07-28 request of `method`, what
/// that revision requires where the server left it out: `resultType`, and
/// for a list, caching that caches nothing.
pub fn complete(result: &mut Value, method: &str) {
    let Some(object) = result.as_object_mut() else {
        return;
    };
    object
        .entry("resultType")
        .or_insert_with(|| Value::from("complete"));
    if CACHEABLE.contains(&method) {
        object.entry("ttlMs").or_insert_with(|| Value::from(0));
        object
            .entry("cacheScope")
            .or_insert_with(|| Value::from("private"));
    }
}

/// `line`, the response to a bridged 2026-07-28 request of `method`, as
/// its client must read it: unchanged (byte for byte) unless it is a
/// result missing what the revision requires.
pub fn completed_line(line: &str, method: &str) -> String {
    let Ok(mut message) = serde_json::from_str::<Value>(line) else {
        return line.to_owned();
    };
    let Some(result) = message.get_mut("result") else {
        return line.to_owned();
    };
    let needs = result.as_object().is_some_and(|r| {
        !r.contains_key("resultType")
            || (CACHEABLE.contains(&method)
                && !(r.contains_key("ttlMs") && r.contains_key("cacheScope")))
    });
    if !needs {
        return line.to_owned();
    }
    complete(result, method);
    message.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_discover_answer_carries_what_initialize_said_and_is_not_cached() {
        let init = json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                          "serverInfo": {"name": "s", "version": "1"}, "instructions": "hi"});
        assert_eq!(
            discover_result(&init),
            json!({"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                   "instructions": "hi", "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}},
                   "resultType": "complete", "ttlMs": 0, "cacheScope": "private"})
        );
    }

    #[test]
    fn the_revisions_meta_keys_are_taken_out_and_others_kept() {
        let line = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":7}}}"#;
        let out: Value = serde_json::from_str(&for_handshake_server(line).unwrap()).unwrap();
        assert_eq!(out["params"], json!({"_meta": {"progressToken": 7}}));
        let only = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
        let out: Value = serde_json::from_str(&for_handshake_server(only).unwrap()).unwrap();
        assert_eq!(out["params"], json!({}));
        assert_eq!(
            for_handshake_server(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
            None
        );
    }

    #[test]
    fn a_result_is_completed_only_where_the_revision_needs_it() {
        let bare = r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#;
        let out: Value = serde_json::from_str(&completed_line(bare, "tools/list")).unwrap();
        assert_eq!(
            out["result"],
            json!({"tools": [], "resultType": "complete", "ttlMs": 0, "cacheScope": "private"})
        );
        let tagged =
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"resultType":"input_required"}}"#;
        assert_eq!(completed_line(tagged, "tools/call"), tagged);
        let error = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"no"}}"#;
        assert_eq!(completed_line(error, "tools/call"), error);
    }
}
