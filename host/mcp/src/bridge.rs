//! Clients and servers of the two eras of MCP: a client on 2026-07-28 in
//! front of a server that may take only the `initialize` handshake, and a
//! handshake-era client in front of a server on 2026-07-28 alone.
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
//!
//! A handshake-era client's `initialize` otherwise goes to the server; when
//! the server refuses it, the proxy asks `server/discover` (with the
//! client's info and capabilities, as the revision's `_meta`):
//!
//! | the server | what the proxy does |
//! |---|---|
//! | answers `initialize` | the handshake era: everything passes through |
//! | refuses it, and answers `server/discover` offering 2026-07-28 | it is *reversed*: the client's `initialize` answered from the discover result (the version the client asked for, the server's capabilities, name and instructions), its `notifications/initialized` and `ping` answered by the proxy, each of its requests forwarded with the revision's `_meta` (protocol version, client info, capabilities) added; a tool's `input_required` result (the server asks for input) is answered to the client with an error, since it has no way to take one |
//! | refuses both | the client gets the server's refusal of `initialize` |

use std::sync::Arc;

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

/// The id of the proxy's own `server/discover`, for a handshake-era client
/// whose `initialize` the server refused.
const DISCOVER: &str = "hookbox-discover";

/// The id of the proxy's own `server/discover`, as the proxy keys the
/// requests it waits for.
pub fn discover_key() -> String {
    Value::from(DISCOVER).to_string()
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
    /// A 2026-07-28 server a handshake-era client initialized: the `_meta`
    /// each of the client's requests gets ([`revision_meta`]).
    Reversed(Arc<Map<String, Value>>),
}

/// The client info the proxy gives when a client gave none.
fn hookbox_info() -> Value {
    json!({"name": "hookbox", "version": env!("CARGO_PKG_VERSION")})
}

/// The proxy's `initialize`, for a client whose first 2026-07-28 request
/// had `params`: its client info when it gave one, no capabilities.
pub fn initialize(params: Option<&Map<String, Value>>) -> String {
    let client_info = params
        .and_then(|p| p.get("_meta"))
        .and_then(|meta| meta.get("io.modelcontextprotocol/clientInfo"))
        .filter(|info| info.get("name").is_some_and(Value::is_string))
        .cloned()
        .unwrap_or_else(hookbox_info);
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

/// The revision's `_meta` for the requests of a handshake-era client that
/// initialized with `params`: the revision, its client info and its
/// capabilities.
pub fn revision_meta(params: Option<&Map<String, Value>>) -> Map<String, Value> {
    let field = |name: &str| params.and_then(|p| p.get(name)).filter(|v| v.is_object());
    let mut meta = Map::new();
    meta.insert(
        crate::message::PROTOCOL_VERSION_META.into(),
        Value::from(STATELESS_VERSION),
    );
    let client_info = field("clientInfo").cloned().unwrap_or_else(hookbox_info);
    meta.insert(format!("{REVISION_META_PREFIX}clientInfo"), client_info);
    let capabilities = field("capabilities").cloned().unwrap_or_else(|| json!({}));
    meta.insert(
        format!("{REVISION_META_PREFIX}clientCapabilities"),
        capabilities,
    );
    meta
}

/// The proxy's `server/discover`, carrying `meta`.
pub fn discover(meta: &Map<String, Value>) -> String {
    json!({"jsonrpc": "2.0", "id": DISCOVER, "method": "server/discover", "params": {"_meta": meta}})
        .to_string()
}

/// Whether `discovered`, a `server/discover` result, offers the revision.
pub fn offers_revision(discovered: &Value) -> bool {
    discovered
        .get("supportedVersions")
        .and_then(Value::as_array)
        .is_some_and(|versions| versions.iter().any(|v| v == STATELESS_VERSION))
}

/// The answer to a handshake-era client's `initialize` (which asked for
/// `version`) from what a 2026-07-28 server's `server/discover` said.
pub fn initialize_result(discovered: &Value, version: &str) -> Value {
    let server_info = discovered
        .get("_meta")
        .and_then(|meta| meta.get(format!("{REVISION_META_PREFIX}serverInfo")))
        .filter(|info| info.get("name").is_some_and(Value::is_string))
        .cloned()
        .unwrap_or_else(|| json!({"name": "unknown", "version": "0"}));
    let mut result = json!({
        "protocolVersion": version,
        "capabilities": discovered.get("capabilities").cloned().unwrap_or_else(|| json!({})),
        "serverInfo": server_info,
    });
    if let Some(instructions) = discovered.get("instructions").filter(|i| i.is_string()) {
        result["instructions"] = instructions.clone();
    }
    result
}

/// Adds `meta` to `params`' `_meta` (made when there is none), the
/// client's own keys kept.
pub fn add_revision_meta(params: &mut Map<String, Value>, meta: &Map<String, Value>) {
    let entry = params
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    if let Value::Object(own) = entry {
        for (key, value) in meta {
            own.insert(key.clone(), value.clone());
        }
    }
}

/// How a client's request changes on its way to the server.
#[derive(Clone, Debug)]
pub enum Toward {
    /// As it came.
    AsIs,
    /// A 2026-07-28 request to a bridged server: the revision's `_meta`
    /// taken out, its result completed for the client.
    HandshakeServer,
    /// A handshake-era request to a reversed server: the revision's
    /// `_meta` added.
    StatelessServer(Arc<Map<String, Value>>),
}

impl Toward {
    /// Changes `params` so; whether anything changed.
    pub fn params(&self, params: &mut Map<String, Value>) -> bool {
        match self {
            Toward::AsIs => false,
            Toward::HandshakeServer => strip_revision_meta(params),
            Toward::StatelessServer(meta) => {
                add_revision_meta(params, meta);
                true
            }
        }
    }

    /// `line`, a request, changed so (as it came when nothing changes).
    pub fn line(&self, line: &str) -> String {
        if matches!(self, Toward::AsIs) {
            return line.to_owned();
        }
        let changed = serde_json::from_str::<Value>(line)
            .ok()
            .and_then(|mut message| {
                let object = message.as_object_mut()?;
                let params = object
                    .entry("params")
                    .or_insert_with(|| Value::Object(Map::new()))
                    .as_object_mut()?;
                self.params(params).then(|| message.to_string())
            });
        changed.unwrap_or_else(|| line.to_owned())
    }
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
        let out: Value = serde_json::from_str(&Toward::HandshakeServer.line(line)).unwrap();
        assert_eq!(out["params"], json!({"_meta": {"progressToken": 7}}));
        let only = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
        let out: Value = serde_json::from_str(&Toward::HandshakeServer.line(only)).unwrap();
        assert_eq!(out["params"], json!({}));
        let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        assert_eq!(Toward::HandshakeServer.line(ping), ping);
    }

    #[test]
    fn a_handshake_clients_request_gets_the_revisions_meta_and_keeps_its_own() {
        let init = json!({"protocolVersion": "2025-11-25", "capabilities": {"roots": {}},
                          "clientInfo": {"name": "c", "version": "1"}});
        let meta = revision_meta(init.as_object());
        let line = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","_meta":{"progressToken":7}}}"#;
        let out: Value =
            serde_json::from_str(&Toward::StatelessServer(Arc::new(meta.clone())).line(line))
                .unwrap();
        assert_eq!(
            out["params"]["_meta"],
            json!({"progressToken": 7, "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                   "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"},
                   "io.modelcontextprotocol/clientCapabilities": {"roots": {}}})
        );
        let bare = r#"{"jsonrpc":"2.0","id":4,"method":"tools/list"}"#;
        let out: Value =
            serde_json::from_str(&Toward::StatelessServer(Arc::new(meta)).line(bare)).unwrap();
        assert_eq!(
            out["params"]["_meta"][crate::message::PROTOCOL_VERSION_META],
            "2026-07-28"
        );
    }

    #[test]
    fn an_initialize_answer_carries_what_discover_said() {
        let discovered = json!({"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                                "instructions": "hi", "resultType": "complete",
                                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "2"}}});
        assert!(offers_revision(&discovered));
        assert!(!offers_revision(
            &json!({"supportedVersions": ["2027-01-01"]})
        ));
        assert_eq!(
            initialize_result(&discovered, "2025-06-18"),
            json!({"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                   "serverInfo": {"name": "s", "version": "2"}, "instructions": "hi"})
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
