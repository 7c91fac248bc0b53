//! Reading JSON-RPC messages without changing them: what the proxy needs of
//! a message (its id, method, params or result), borrowed from the line it
//! came on. A message the proxy does not guard is written out as the very
//! bytes it read.
//!
//! Strings are decoded as any JSON reader decodes them: a method spelled
//! `"tools\/call"` is `tools/call`, as it is to the server behind the
//! proxy. A message with a key twice is refused, not read one way here and
//! another way there.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

/// What the proxy reads of one message.
#[derive(Debug, Deserialize)]
pub struct Envelope<'a> {
    /// The request or response id, as sent.
    #[serde(borrow, default)]
    pub id: Option<&'a RawValue>,
    /// The method of a request or notification.
    #[serde(borrow, default)]
    pub method: Option<Cow<'a, str>>,
    /// Its params, as sent.
    #[serde(borrow, default)]
    pub params: Option<&'a RawValue>,
    /// A response's result, as sent.
    #[serde(borrow, default)]
    pub result: Option<&'a RawValue>,
    /// A response's error, as sent.
    #[serde(borrow, default)]
    pub error: Option<&'a RawValue>,
}

/// One line of the transport, read.
#[derive(Debug)]
pub enum Line<'a> {
    /// A single message.
    Message(Envelope<'a>),
    /// A JSON-RPC batch (an array): its elements, as sent.
    Batch(Vec<&'a RawValue>),
    /// Not a message: why.
    Invalid(String),
}

/// Reads one line of the transport.
pub fn read(line: &str) -> Line<'_> {
    if line.trim_start().starts_with('[') {
        return match serde_json::from_str::<Vec<&RawValue>>(line) {
            Ok(items) => Line::Batch(items),
            Err(e) => Line::Invalid(format!("not JSON: {e}")),
        };
    }
    match serde_json::from_str::<Envelope<'_>>(line) {
        Ok(envelope) => Line::Message(envelope),
        Err(e) => Line::Invalid(format!("not a JSON-RPC message: {e}")),
    }
}

impl Envelope<'_> {
    /// Whether it is a response (an id, no method).
    pub fn is_response(&self) -> bool {
        self.method.is_none() && self.id.is_some()
    }

    /// The id in one spelling, for matching a response to its request
    /// (`1` and `1.0` are one id to a JSON reader).
    pub fn id_key(&self) -> Option<String> {
        self.id.map(id_key)
    }
}

/// `id` in one spelling: a number as JavaScript writes it back (`1.0` is
/// `1`), a string decoded and written again.
pub fn id_key(id: &RawValue) -> String {
    match serde_json::from_str::<Value>(id.get()) {
        Ok(Value::Number(n)) => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => format!("{}", f as i64),
            _ => n.to_string(),
        },
        Ok(value) => value.to_string(),
        Err(_) => id.get().to_owned(),
    }
}

/// A JSON-RPC error response to `id` (`null` when the request's id is not
/// known).
pub fn error(id: Option<&RawValue>, code: i64, message: &str) -> String {
    let id = id.map_or(Value::Null, |id| {
        serde_json::from_str(id.get()).unwrap_or(Value::Null)
    });
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string()
}

/// An error response to `id` carrying `error` (an error object as read).
pub fn error_object(id: &RawValue, error: Value) -> String {
    let id: Value = serde_json::from_str(id.get()).unwrap_or(Value::Null);
    json!({"jsonrpc": "2.0", "id": id, "error": error}).to_string()
}

/// A successful response to `id` carrying `result`.
pub fn response(id: &RawValue, result: &Value) -> String {
    let id: Value = serde_json::from_str(id.get()).unwrap_or(Value::Null);
    json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string()
}

/// A tool result the model reads as the tool's error (`isError`), saying
/// `text`, in the era of the request it answers: `resultType: "complete"`
/// for a 2026-07-28 request (that revision requires the tag on every
/// result), none for a handshake-era one.
pub fn tool_error(text: &str, era: Era) -> Value {
    let mut result = json!({"content": [{"type": "text", "text": text}], "isError": true});
    era.tag(&mut result);
    result
}

/// The `_meta` key under which a 2026-07-28 request names its revision.
pub const PROTOCOL_VERSION_META: &str = "io.modelcontextprotocol/protocolVersion";

/// Which revision of MCP a request speaks, as far as what the proxy writes
/// in answer is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Era {
    /// Before 2026-07-28: a session opened by `initialize`; results carry no
    /// `resultType`.
    Handshake,
    /// 2026-07-28 and later: every request names its revision in
    /// `_meta`, every result carries `resultType`.
    Stateless,
}

impl Era {
    /// The era of a request whose params are `params`: stateless when its
    /// `_meta` names a protocol version.
    pub fn of_request(params: &serde_json::Map<String, Value>) -> Era {
        let named = params
            .get("_meta")
            .and_then(|meta| meta.get(PROTOCOL_VERSION_META))
            .is_some_and(Value::is_string);
        if named {
            Era::Stateless
        } else {
            Era::Handshake
        }
    }

    /// Tags `result` as a final result where the era requires it.
    pub fn tag(self, result: &mut Value) {
        if self == Era::Stateless
            && let Some(object) = result.as_object_mut()
        {
            object.insert("resultType".into(), Value::from("complete"));
        }
    }
}

/// `line` with its `params.arguments` (or `result`, ...) replaced: the
/// message as a map in its own key order, one member set, written back.
pub fn with_member(line: &str, path: &[&str], value: Value) -> Option<String> {
    let mut message: Value = serde_json::from_str(line).ok()?;
    let (last, parents) = path.split_last()?;
    let mut at = &mut message;
    for key in parents {
        at = at.get_mut(*key)?;
    }
    at.as_object_mut()?.insert((*last).to_owned(), value);
    Some(message.to_string())
}

/// JSON-RPC error codes the proxy answers with.
pub mod code {
    /// The line is not JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// Not a valid request (a batch, which hookbox does not forward).
    pub const INVALID_REQUEST: i64 = -32600;
    /// A method the other side does not have.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Params that cannot be read, or a tool that is not offered.
    pub const INVALID_PARAMS: i64 = -32602;
    /// The proxy's own refusal: a guard terminated the call, the stack
    /// failed closed, or the server went away.
    pub const REFUSED: i64 = -32001;
    /// A 2026-07-28 POST whose `Mcp-Method` / `Mcp-Name` headers are
    /// missing or disagree with its body.
    pub const HEADER_MISMATCH: i64 = -32020;
}

/// What a streamable-HTTP POST mirrors of its body in headers (MCP
/// 2026-07-28), so that load balancers and gateways can route on it
/// without reading the body:
///
/// | body | `Mcp-Method` | `Mcp-Name` |
/// |---|---|---|
/// | a request or notification | its method | — |
/// | `tools/call`, `prompts/get` | its method | `params.name` |
/// | `resources/read` | its method | `params.uri` |
/// | a response | — | — |
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Mirrored {
    /// The method, for `Mcp-Method`.
    pub method: Option<String>,
    /// The target's name, for `Mcp-Name`.
    pub name: Option<String>,
}

impl Mirrored {
    /// What `envelope`'s headers must say. Its params are read only for
    /// a method that names a target.
    pub fn of(envelope: &Envelope<'_>) -> Mirrored {
        let method = envelope.method.as_deref();
        let params =
            || serde_json::from_str::<serde_json::Map<String, Value>>(envelope.params?.get()).ok();
        let params = Mirrored::target_field(method).and_then(|_| params());
        Mirrored::of_params(method, params.as_ref())
    }

    /// What the headers of a message with `method` and `params`, already
    /// read, must say.
    pub fn of_params(
        method: Option<&str>,
        params: Option<&serde_json::Map<String, Value>>,
    ) -> Mirrored {
        let name = Mirrored::target_field(method)
            .and_then(|field| params?.get(field)?.as_str())
            .map(str::to_owned);
        Mirrored {
            method: method.map(str::to_owned),
            name,
        }
    }

    /// The field of params that `Mcp-Name` mirrors, for `method`.
    fn target_field(method: Option<&str>) -> Option<&'static str> {
        match method? {
            "tools/call" | "prompts/get" => Some("name"),
            "resources/read" => Some("uri"),
            _ => None,
        }
    }

    /// Whether headers saying `method` and `name` (absent: `None`) may
    /// carry this body, and if not, why. A header that is there must say
    /// what the body says; on a request of the 2026-07-28 revision
    /// (`stateless`), a header the body calls for must be there.
    ///
    /// # Errors
    /// What is missing or disagrees, for a `-32020` refusal.
    pub fn check(
        &self,
        method: Option<&str>,
        name: Option<&str>,
        stateless: bool,
    ) -> Result<(), String> {
        for (header, sent, body) in [
            ("Mcp-Method", method, self.method.as_deref()),
            ("Mcp-Name", name, self.name.as_deref()),
        ] {
            match (sent, body) {
                (Some(sent), Some(body)) if sent == body => {}
                (Some(sent), Some(body)) => {
                    return Err(format!(
                        "the {header} header says `{sent}` and the body `{body}`"
                    ));
                }
                (Some(sent), None) => {
                    return Err(format!(
                        "the {header} header says `{sent}`, and the body names nothing for it"
                    ));
                }
                (None, Some(body)) if stateless => {
                    return Err(format!(
                        "a 2026-07-28 request needs the {header} header (`{body}`)"
                    ));
                }
                (None, _) => {}
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mirrored(line: &str) -> Mirrored {
        let Line::Message(envelope) = read(line) else {
            panic!("a message: {line}")
        };
        Mirrored::of(&envelope)
    }

    /// One test per row of [`Mirrored`]'s table.
    #[test]
    fn each_kind_of_message_mirrors_what_its_row_says() {
        let call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read","arguments":{}}}"#;
        let prompt = r#"{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"greet"}}"#;
        let resource =
            r#"{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///a"}}"#;
        let list = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
        let note =
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#;
        let response = r#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
        let row = |method: Option<&str>, name: Option<&str>| Mirrored {
            method: method.map(str::to_owned),
            name: name.map(str::to_owned),
        };
        assert_eq!(mirrored(call), row(Some("tools/call"), Some("read")));
        assert_eq!(mirrored(prompt), row(Some("prompts/get"), Some("greet")));
        assert_eq!(
            mirrored(resource),
            row(Some("resources/read"), Some("file:///a"))
        );
        assert_eq!(mirrored(list), row(Some("tools/list"), None));
        assert_eq!(mirrored(note), row(Some("notifications/cancelled"), None));
        assert_eq!(mirrored(response), row(None, None));
    }

    #[test]
    fn headers_that_disagree_with_the_body_are_refused_in_either_era() {
        let call =
            mirrored(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read"}}"#);
        for stateless in [false, true] {
            assert!(
                call.check(Some("tools/call"), Some("read"), stateless)
                    .is_ok()
            );
            assert!(
                call.check(Some("tools/list"), Some("read"), stateless)
                    .is_err()
            );
            assert!(
                call.check(Some("tools/call"), Some("write"), stateless)
                    .is_err()
            );
        }
        let list = mirrored(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
        assert!(
            list.check(Some("tools/list"), Some("read"), false).is_err(),
            "a name where the body names none"
        );
    }

    #[test]
    fn missing_headers_are_refused_only_on_a_2026_07_28_request() {
        let call =
            mirrored(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read"}}"#);
        assert!(
            call.check(None, None, false).is_ok(),
            "a handshake-era client sends none"
        );
        let why = call.check(None, None, true).unwrap_err();
        assert!(why.contains("Mcp-Method"), "{why}");
        let why = call.check(Some("tools/call"), None, true).unwrap_err();
        assert!(why.contains("Mcp-Name"), "{why}");
    }

    #[test]
    fn an_escaped_method_reads_as_the_server_reads_it() {
        let Line::Message(message) = read(r#"{"jsonrpc":"2.0","id":1,"method":"tools\/call"}"#)
        else {
            panic!("a message")
        };
        assert_eq!(message.method.as_deref(), Some("tools/call"));
    }

    #[test]
    fn a_key_given_twice_is_refused() {
        let line = r#"{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/call"}"#;
        assert!(matches!(read(line), Line::Invalid(_)));
    }

    #[test]
    fn ids_match_in_any_spelling() {
        let Line::Message(a) = read(r#"{"id":1.0,"result":{}}"#) else {
            panic!()
        };
        let Line::Message(b) = read(r#"{"id":1,"result":{}}"#) else {
            panic!()
        };
        assert_eq!(a.id_key(), b.id_key());
        assert!(a.is_response());
    }

    #[test]
    fn a_member_is_replaced_in_place_and_the_rest_kept_in_order() {
        let line = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","arguments":{"a":1},"_meta":{"progressToken":3}}}"#;
        let out = with_member(line, &["params", "arguments"], json!({"b": 2})).unwrap();
        assert_eq!(
            out,
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","arguments":{"b":2},"_meta":{"progressToken":3}}}"#
        );
    }
}
