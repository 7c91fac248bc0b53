//! The proxy's protocol edges, line by line, with a scripted client and
//! server on in-memory pipes and a native hook deciding: each attack an
//! adversarial review found (a message hidden behind a bare CR, a result
//! that skips its guard through an id spelled another way, a malformed or
//! unreadable result, a task's result arriving later) and what must happen
//! instead.

use std::time::Duration;

use hookbox::{Flow, HookStack, StepEvent, hook_fn};
use hookbox_mcp::{Ended, Error, ProxyConfig, proxy};
use serde_json::{Value, json};
use tokio::io::{
    AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf,
};

/// One end of a pipe: lines out, lines in.
struct End {
    write: WriteHalf<DuplexStream>,
    read: Lines<BufReader<ReadHalf<DuplexStream>>>,
}

impl End {
    async fn send(&mut self, line: &str) {
        self.write
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
    }

    /// The next line, or `None` when nothing comes within a moment: for
    /// checking that nothing does.
    async fn next(&mut self) -> Option<String> {
        self.within(Duration::from_millis(500)).await
    }

    /// The next line, which must come (a loaded machine may take a while).
    async fn line(&mut self) -> String {
        self.within(Duration::from_secs(30))
            .await
            .expect("a message")
    }

    async fn within(&mut self, wait: Duration) -> Option<String> {
        tokio::time::timeout(wait, self.read.next_line())
            .await
            .ok()
            .and_then(|line| line.ok().flatten())
    }

    async fn json(&mut self) -> Value {
        serde_json::from_str(&self.line().await).unwrap()
    }
}

fn end(stream: DuplexStream) -> End {
    let (read, write) = tokio::io::split(stream);
    End {
        write,
        read: BufReader::new(read).lines(),
    }
}

/// A stack with one native hook: skips `blocked`, terminates `stop`,
/// rewrites the result of `redact`.
fn stack() -> HookStack {
    let mut stack = HookStack::new();
    stack.push_hook(hook_fn("guard", |_, event| match event {
        StepEvent::ToolCall(call) if call.tool_name == "blocked" => Flow::skip("not allowed"),
        StepEvent::ToolCall(call) if call.tool_name == "stop" => Flow::terminate("stopped"),
        StepEvent::ToolResult(result) if result.tool_name == "redact" => {
            Flow::RewriteResult("[redacted]".into())
        }
        // A 2026-07-28 round trip: the question, and the answers.
        StepEvent::ToolResult(result)
            if result.tool_name == "ask-denied" && result.extensions.contains("input_required") =>
        {
            Flow::terminate("no questions")
        }
        StepEvent::ToolResult(result) if result.extensions.contains("inputResponses") => {
            Flow::RewriteResult(result.result.replace("SECRET", "[redacted]"))
        }
        _ => Flow::Continue,
    }));
    stack
}

struct Session {
    client: End,
    server: End,
    done: tokio::task::JoinHandle<Result<Ended, Error>>,
}

fn start(config: ProxyConfig) -> Session {
    let (client, proxy_client) = tokio::io::duplex(1 << 16);
    let (server, proxy_server) = tokio::io::duplex(1 << 16);
    let done = tokio::spawn(async move {
        let (client_read, client_write) = tokio::io::split(proxy_client);
        let (server_read, server_write) = tokio::io::split(proxy_server);
        proxy(
            &stack(),
            &config,
            (BufReader::new(client_read), client_write),
            (BufReader::new(server_read), server_write),
        )
        .await
    });
    Session {
        client: end(client),
        server: end(server),
        done,
    }
}

fn call(id: Value, tool: &str, arguments: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}).to_string()
}

fn result(id: Value, text: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": text}]}})
        .to_string()
}

#[tokio::test]
async fn a_message_behind_a_bare_cr_is_not_a_message_of_its_own() {
    let mut s = start(ProxyConfig::default());
    let hidden = call(json!(2), "blocked", json!({}));
    s.client
        .send(&format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{{\"_\":\r{hidden}\r}}}}"
        ))
        .await;
    let forwarded = s.server.line().await;
    assert!(
        !forwarded.contains('\r'),
        "a reader splitting at CR would find the hidden call: {forwarded:?}"
    );
}

#[tokio::test]
async fn a_response_with_its_id_spelled_otherwise_ends_the_session_unforwarded() {
    let mut s = start(ProxyConfig::default());
    s.client.send(&call(json!(7), "read", json!({}))).await;
    s.server.line().await;
    s.server.send(&result(json!("7"), "unguarded")).await;
    let answer = s.client.json().await;
    assert_eq!(answer["id"], 7);
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("hookbox:"),
        "{answer}"
    );
    assert!(matches!(s.done.await.unwrap(), Err(Error::Upstream(_))));
}

#[tokio::test]
async fn a_malformed_or_unreadable_result_is_never_forwarded() {
    for bad in [
        json!({"jsonrpc": "2.0", "id": 7}).to_string(),
        json!({"jsonrpc": "2.0", "id": 7, "result": null}).to_string(),
        r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"SECRET"}],"_":1e400}}"#.to_owned(),
        json!({"jsonrpc": "2.0", "id": 7, "result": {"content": []}, "error": {"code": 1, "message": "injected"}}).to_string(),
    ] {
        let mut s = start(ProxyConfig::default());
        s.client.send(&call(json!(7), "read", json!({}))).await;
        s.server.line().await;
        s.server.send(&bad).await;
        s.server.send(&result(json!(7), "unguarded")).await;
        let answer = s.client.json().await;
        assert!(answer["error"].is_object(), "{bad}: {answer}");
        assert!(!answer.to_string().contains("SECRET") && !answer.to_string().contains("injected"));
        assert_eq!(s.client.next().await, None, "{bad}: nothing more reaches the client");
    }
}

#[tokio::test]
async fn each_flow_is_answered_as_the_rules_say() {
    let mut s = start(ProxyConfig::default());
    // skip: answered here, never forwarded.
    s.client.send(&call(json!(1), "blocked", json!({}))).await;
    let skipped = s.client.json().await;
    assert_eq!(skipped["result"]["isError"], true);
    assert_eq!(skipped["result"]["content"][0]["text"], "not allowed");
    // continue, with the arguments in their canonical form and the task
    // augmentation taken off.
    s.client
        .send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read","arguments":{"p":"\u002d"},"task":{"ttl":60000}}}"#)
        .await;
    let forwarded: Value = serde_json::from_str(&s.server.line().await).unwrap();
    assert_eq!(forwarded["params"]["arguments"], json!({"p": "-"}));
    assert!(forwarded["params"].get("task").is_none(), "{forwarded}");
    // rewrite-result.
    s.client.send(&call(json!(3), "redact", json!({}))).await;
    s.server.line().await;
    s.server.send(&result(json!(2), "fine")).await;
    s.server.send(&result(json!(3), "SECRET")).await;
    assert_eq!(
        s.client.json().await["result"]["content"][0]["text"],
        "fine"
    );
    let redacted = s.client.json().await;
    assert_eq!(
        redacted["result"]["content"][0]["text"], "[redacted]",
        "{redacted}"
    );
    // terminate: an error now and for every later call.
    s.client.send(&call(json!(4), "stop", json!({}))).await;
    assert!(
        s.client.json().await["error"]["message"]
            .as_str()
            .unwrap()
            .contains("stopped")
    );
    s.client.send(&call(json!(5), "read", json!({}))).await;
    assert!(
        s.client.json().await["error"]["message"]
            .as_str()
            .unwrap()
            .contains("stopped")
    );
    assert_eq!(
        s.server.next().await,
        None,
        "nothing reached the server after the terminate"
    );
}

#[tokio::test]
async fn ids_batches_and_cancellations_leave_nothing_waiting_or_misrouted() {
    let mut s = start(ProxyConfig::default());
    // An id still waiting is refused, not overwritten.
    s.client.send(&call(json!(1), "read", json!({}))).await;
    s.server.line().await;
    s.client
        .send(&call(json!(1), "read", json!({"again": true})))
        .await;
    let refused = s.client.json().await;
    assert_eq!(
        (refused["id"].clone(), refused["error"].is_object()),
        (json!(1), true)
    );
    // A batch: each request in it answered with an error, nothing forwarded.
    s.client
        .send(r#"[{"jsonrpc":"2.0","id":8,"method":"ping"},{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"x"}}]"#)
        .await;
    let (a, b) = (s.client.json().await, s.client.json().await);
    assert_eq!((a["id"].clone(), b["id"].clone()), (json!(8), json!(9)));
    // A cancelled call: the cancellation goes on; a late result is dropped,
    // and the session goes on.
    s.client
        .send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#)
        .await;
    assert!(s.server.line().await.contains("cancelled"));
    s.server.send(&result(json!(1), "late")).await;
    s.client.send(&call(json!(2), "read", json!({}))).await;
    s.server.line().await;
    s.server.send(&result(json!(2), "on time")).await;
    assert_eq!(
        s.client.json().await["result"]["content"][0]["text"],
        "on time"
    );
}

#[tokio::test]
async fn a_server_batch_with_a_bad_element_sends_nothing_of_it() {
    let mut s = start(ProxyConfig::default());
    s.server
        .send(r#"[{"jsonrpc":"2.0","method":"notifications/message","params":{}},42]"#)
        .await;
    assert_eq!(s.client.next().await, None);
    assert!(matches!(s.done.await.unwrap(), Err(Error::Upstream(_))));
}

#[tokio::test]
async fn hidden_tools_are_not_listed_and_not_callable() {
    let mut s = start(ProxyConfig {
        hidden_tools: ["secret_tool".to_string()].into(),
        ..Default::default()
    });
    s.client
        .send(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#)
        .await;
    s.server.line().await;
    s.server
        .send(r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"read"},{"name":"secret\u005ftool"}]}}"#)
        .await;
    assert_eq!(
        s.client.json().await["result"]["tools"],
        json!([{"name": "read"}])
    );
    s.client
        .send(&call(json!(2), "secret_tool", json!({})))
        .await;
    assert!(
        s.client.json().await["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not found")
    );
}

#[tokio::test]
async fn a_server_that_outlives_its_client_is_not_waited_for_forever() {
    let s = start(ProxyConfig::default());
    drop(s.client);
    let ended = tokio::time::timeout(Duration::from_secs(20), s.done).await;
    assert!(
        ended.is_ok(),
        "the proxy still waits for a server that never closes"
    );
    drop(s.server);
}

/// A 2026-07-28 call: the request names its revision in `_meta`.
fn stateless_call(id: Value, tool: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": tool, "arguments": {},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}})
    .to_string()
}

/// The server's part when the session's first 2026-07-28 request comes:
/// the proxy's `initialize` (it never sends such a server anything else
/// first), refused as a server of the revision only refuses it.
async fn refuse_initialize_as_a_2026_server(s: &mut Session) {
    let probe: Value = serde_json::from_str(&s.server.line().await).unwrap();
    assert_eq!(probe["method"], "initialize", "{probe}");
    assert_eq!(probe["params"]["capabilities"], json!({}), "{probe}");
    s.server
        .send(
            &json!({"jsonrpc": "2.0", "id": probe["id"], "error": {"code": -32022,
            "message": "unsupported protocol version", "data": {"supported": ["2026-07-28"]}}})
            .to_string(),
        )
        .await;
}

#[tokio::test]
async fn a_result_the_proxy_writes_is_tagged_final_in_the_revision_that_requires_it() {
    let mut s = start(ProxyConfig::default());
    // 2026-07-28: every result carries `resultType`, the proxy's own too.
    s.client.send(&stateless_call(json!(1), "blocked")).await;
    refuse_initialize_as_a_2026_server(&mut s).await;
    let skipped = s.client.json().await;
    assert_eq!(skipped["result"]["resultType"], "complete", "{skipped}");
    assert_eq!(skipped["result"]["isError"], true, "{skipped}");
    s.client.send(&stateless_call(json!(2), "redact")).await;
    s.server.line().await;
    s.server.send(&result(json!(2), "SECRET")).await;
    let redacted = s.client.json().await;
    assert_eq!(redacted["result"]["resultType"], "complete", "{redacted}");
    assert_eq!(redacted["result"]["content"][0]["text"], "[redacted]");
    // A server that tags its results gets its rewritten ones tagged too.
    s.client.send(&call(json!(3), "redact", json!({}))).await;
    s.server.line().await;
    s.server
        .send(
            &json!({"jsonrpc": "2.0", "id": 3, "result": {"resultType": "complete",
            "content": [{"type": "text", "text": "SECRET"}]}})
            .to_string(),
        )
        .await;
    assert_eq!(s.client.json().await["result"]["resultType"], "complete");
    // Handshake era: no tag, as clients of that era expect.
    s.client.send(&call(json!(4), "blocked", json!({}))).await;
    let skipped = s.client.json().await;
    assert!(skipped["result"].get("resultType").is_none(), "{skipped}");
    s.client.send(&call(json!(5), "redact", json!({}))).await;
    s.server.line().await;
    s.server.send(&result(json!(5), "SECRET")).await;
    let redacted = s.client.json().await;
    assert!(redacted["result"].get("resultType").is_none(), "{redacted}");
}

/// A 2026-07-28 list result's caching directives reach the client as the
/// server wrote them, on the list with the hidden tool taken out: what the
/// client caches is the list it was meant to see.
#[tokio::test]
async fn a_cacheable_list_keeps_its_directives_and_its_hidden_tool_hidden() {
    let mut s = start(ProxyConfig {
        hidden_tools: ["secret_tool".to_string()].into(),
        ..Default::default()
    });
    s.client
        .send(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#)
        .await;
    refuse_initialize_as_a_2026_server(&mut s).await;
    let forwarded: Value = serde_json::from_str(&s.server.line().await).unwrap();
    assert_eq!(
        forwarded["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"], "2026-07-28",
        "a 2026-07-28 server gets the request as it came: {forwarded}"
    );
    s.server
        .send(r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","ttlMs":60000,"cacheScope":"public","tools":[{"name":"read"},{"name":"secret_tool"}]}}"#)
        .await;
    let listed = s.client.json().await;
    assert_eq!(
        listed["result"]["tools"],
        json!([{"name": "read"}]),
        "{listed}"
    );
    assert_eq!(listed["result"]["ttlMs"], 60000, "{listed}");
    assert_eq!(listed["result"]["cacheScope"], "public", "{listed}");
    assert_eq!(listed["result"]["resultType"], "complete", "{listed}");
}

const META: &str = "io.modelcontextprotocol/protocolVersion";

/// A 2026-07-28 client in front of a server that takes only the handshake
/// (crate `bridge`'s table): the server is initialized on the client's
/// behalf and never sees `server/discover`; `server/discover` is answered
/// from its `initialize` result; requests reach it without the revision's
/// `_meta`; its results reach the client complete; its `ping` is answered
/// for the client, its other requests refused.
#[tokio::test]
async fn a_server_that_takes_only_the_handshake_is_bridged_for_a_2026_client() {
    let mut s = start(ProxyConfig::default());
    s.client
        .send(&json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": {
            META: "2026-07-28", "io.modelcontextprotocol/clientInfo": {"name": "app", "version": "9"}}}}).to_string())
        .await;
    let probe: Value = serde_json::from_str(&s.server.line().await).unwrap();
    assert_eq!(probe["method"], "initialize", "{probe}");
    assert_eq!(probe["params"]["protocolVersion"], "2025-11-25");
    assert_eq!(probe["params"]["clientInfo"]["name"], "app", "{probe}");
    s.server
        .send(&json!({"jsonrpc": "2.0", "id": probe["id"], "result": {"protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}}, "serverInfo": {"name": "old", "version": "1"}}}).to_string())
        .await;
    let initialized: Value = serde_json::from_str(&s.server.line().await).unwrap();
    assert_eq!(initialized["method"], "notifications/initialized");
    let discovered = s.client.json().await;
    assert_eq!(discovered["id"], 1);
    assert_eq!(
        discovered["result"]["supportedVersions"],
        json!(["2026-07-28"])
    );
    assert_eq!(discovered["result"]["capabilities"], json!({"tools": {}}));
    assert_eq!(discovered["result"]["resultType"], "complete");

    // A request: to the server without the revision's keys; its result
    // back complete, a list's uncacheable.
    s.client
        .send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": {META: "2026-07-28", "progressToken": 5}}}).to_string())
        .await;
    let forwarded: Value = serde_json::from_str(&s.server.line().await).unwrap();
    assert_eq!(
        forwarded["params"],
        json!({"_meta": {"progressToken": 5}}),
        "{forwarded}"
    );
    s.server
        .send(r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"read"}]}}"#)
        .await;
    let listed = s.client.json().await;
    assert_eq!(
        listed["result"],
        json!({"tools": [{"name": "read"}], "resultType": "complete", "ttlMs": 0, "cacheScope": "private"})
    );
    // A guarded call, forwarded and answered: the same.
    s.client.send(&stateless_call(json!(3), "read")).await;
    let forwarded: Value = serde_json::from_str(&s.server.line().await).unwrap();
    assert!(forwarded["params"].get("_meta").is_none(), "{forwarded}");
    s.server.send(&result(json!(3), "text")).await;
    let answered = s.client.json().await;
    assert_eq!(answered["result"]["resultType"], "complete", "{answered}");
    assert_eq!(answered["result"]["content"][0]["text"], "text");

    // The server's own requests: a ping is answered for the client, a
    // sampling request refused; neither reaches the client.
    s.server
        .send(r#"{"jsonrpc":"2.0","id":"p","method":"ping"}"#)
        .await;
    let pong: Value = serde_json::from_str(&s.server.line().await).unwrap();
    assert_eq!(pong, json!({"jsonrpc": "2.0", "id": "p", "result": {}}));
    s.server
        .send(r#"{"jsonrpc":"2.0","id":"q","method":"sampling/createMessage","params":{}}"#)
        .await;
    let refused: Value = serde_json::from_str(&s.server.line().await).unwrap();
    assert_eq!(refused["id"], "q");
    assert_eq!(refused["error"]["code"], -32601, "{refused}");
    assert_eq!(
        s.client.next().await,
        None,
        "nothing of those reaches the client"
    );

    // A handshake-era initialize is answered from what the server said,
    // and the server does not get a second handshake.
    s.client
        .send(r#"{"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}"#)
        .await;
    assert_eq!(s.client.json().await["result"]["serverInfo"]["name"], "old");
    s.client
        .send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
        .await;
    assert_eq!(
        s.server.next().await,
        None,
        "the handshake is not sent twice"
    );
    drop(s.client);
    assert!(s.done.await.unwrap().is_ok());
}

/// A session begun with `initialize` is in the handshake era: no probe, and
/// a `server/discover` after it is answered "method not found" rather than
/// sent to a server that may exit on it.
#[tokio::test]
async fn a_handshake_session_never_sends_the_server_a_discover() {
    let mut s = start(ProxyConfig::default());
    s.client
        .send(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}"#)
        .await;
    let forwarded: Value = serde_json::from_str(&s.server.line().await).unwrap();
    assert_eq!(
        forwarded["id"], 1,
        "the client's own initialize: {forwarded}"
    );
    s.server
        .send(r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}"#)
        .await;
    assert_eq!(s.client.json().await["result"]["serverInfo"]["name"], "s");
    s.client
        .send(&json!({"jsonrpc": "2.0", "id": 2, "method": "server/discover", "params": {"_meta": {META: "2026-07-28"}}}).to_string())
        .await;
    assert_eq!(s.client.json().await["error"]["code"], -32601);
    assert_eq!(s.server.next().await, None);
}

/// A 2026-07-28 multi-round-trip call: the `input_required` result is a
/// `tool-result` event marked `{"mcp": {"resultType": "input_required"}}`
/// (here passed, and for `ask-denied` refused); the client's retry is the
/// call's `tool-call` event and a `tool-result` event of its
/// `inputResponses` (marked `{"mcp": {"inputResponses": true}}`), whose
/// rewrite is what the server gets, `requestState` untouched.
#[tokio::test]
async fn an_input_required_round_trip_is_guarded_on_both_legs() {
    let mut s = start(ProxyConfig {
        server_takes_2026: true,
        ..Default::default()
    });
    let meta = json!({META: "2026-07-28"});
    s.client
        .send(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "ask", "arguments": {"target": "prod"}, "_meta": meta}})
            .to_string(),
        )
        .await;
    s.server.line().await;
    let question = json!({"resultType": "input_required", "requestState": "opaque-1",
        "inputRequests": {"q": {"method": "elicitation/create", "params": {"message": "code?"}}}});
    s.server
        .send(&json!({"jsonrpc": "2.0", "id": 1, "result": question}).to_string())
        .await;
    let asked = s.client.json().await;
    assert_eq!(
        asked["result"], question,
        "the question reaches the client as asked"
    );

    s.client
        .send(
            &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "ask", "arguments": {"target": "prod"}, "_meta": meta,
            "inputResponses": {"q": {"action": "accept", "content": {"code": "SECRET"}}},
            "requestState": "opaque-1"}})
            .to_string(),
        )
        .await;
    let retry: Value = serde_json::from_str(&s.server.line().await).unwrap();
    assert_eq!(
        retry["params"]["inputResponses"],
        json!({"q": {"action": "accept", "content": {"code": "[redacted]"}}}),
        "{retry}"
    );
    assert_eq!(retry["params"]["requestState"], "opaque-1");
    assert_eq!(retry["params"]["arguments"], json!({"target": "prod"}));
    s.server.send(&result(json!(2), "deployed")).await;
    assert_eq!(
        s.client.json().await["result"]["content"][0]["text"],
        "deployed"
    );

    // Answers that are not an object of answers are refused, not forwarded.
    s.client
        .send(
            &json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
            "name": "other", "arguments": {}, "_meta": meta, "inputResponses": ["x"]}})
            .to_string(),
        )
        .await;
    let refused = s.client.json().await;
    assert!(
        refused["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("inputResponses")),
        "{refused}"
    );
    assert_eq!(
        s.server.next().await,
        None,
        "nothing of it reaches the server"
    );

    // A question a guard will not let reach the client.
    s.client
        .send(
            &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "ask-denied", "arguments": {}, "_meta": meta}})
            .to_string(),
        )
        .await;
    s.server.line().await;
    s.server
        .send(&json!({"jsonrpc": "2.0", "id": 3, "result": question}).to_string())
        .await;
    let refused = s.client.json().await;
    assert!(
        refused["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("no questions")),
        "{refused}"
    );
    assert_eq!(s.server.next().await, None);
}
