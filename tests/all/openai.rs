//! The OpenAI-compatible client against a local server that speaks the
//! chat-completions wire format: plain answers, tool calls, server-sent
//! event streams with tool calls split across chunks (and SSE lines split
//! across network writes), errors.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::post;
use hookbox::{EventKind, HookStack, StepEvent, hook_fn};
use hookbox_runner::{Agent, LoopConfig, OpenAiModel, RunReport, RunStatus, ToolSet, Workspace};
use serde_json::{Value, json};

/// What the server answers, in order.
enum Reply {
    /// A chat completion: text, and tool calls as (id, name, arguments).
    Turn(
        &'static str,
        Vec<(&'static str, &'static str, &'static str)>,
    ),
    /// An HTTP error with an OpenAI-style error body.
    Error(u16, &'static str),
    /// A raw event-stream body, sent as is.
    Raw(&'static str),
}

#[derive(Default)]
struct Server {
    replies: Mutex<VecDeque<Reply>>,
    /// Every request: its Authorization header and JSON body.
    requests: Mutex<Vec<(Option<String>, Value)>>,
}

async fn completions(
    State(server): State<Arc<Server>>,
    headers: HeaderMap,
    body: String,
) -> Response {
    let body: Value = serde_json::from_str(&body).expect("the client sends JSON");
    let auth = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    server.requests.lock().unwrap().push((auth, body.clone()));
    let reply = server.replies.lock().unwrap().pop_front();
    let stream = body["stream"] == json!(true);
    match reply {
        None => error(500, "the test server has no reply left"),
        Some(Reply::Error(status, message)) => error(status, message),
        Some(Reply::Raw(text)) => sse(text.to_owned()),
        Some(Reply::Turn(content, calls)) if stream => sse(stream_events(content, &calls)),
        Some(Reply::Turn(content, calls)) => {
            let tool_calls: Vec<Value> = calls
                .iter()
                .map(|(id, name, args)| json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}}))
                .collect();
            let message = if tool_calls.is_empty() {
                json!({"role": "assistant", "content": content})
            } else {
                json!({"role": "assistant", "content": null, "tool_calls": tool_calls})
            };
            let answer = json!({
                "id": "chatcmpl-1", "object": "chat.completion", "model": body["model"],
                "choices": [{"index": 0, "message": message,
                    "finish_reason": if calls.is_empty() { "stop" } else { "tool_calls" }}],
                "usage": {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16},
            });
            Response::builder()
                .header("content-type", "application/json")
                .body(Body::from(answer.to_string()))
                .unwrap()
        }
    }
}

fn error(status: u16, message: &str) -> Response {
    Response::builder()
        .status(StatusCode::from_u16(status).unwrap())
        .header("content-type", "application/json")
        .body(Body::from(
            json!({"error": {"message": message, "type": "invalid_request_error"}}).to_string(),
        ))
        .unwrap()
}

/// The event stream of a turn the way OpenAI sends it: a role chunk, text
/// a few bytes at a time, each tool call's id and name first and its
/// arguments in three pieces (the calls interleaved), a finish chunk, a
/// usage chunk, `[DONE]`.
fn stream_events(content: &str, calls: &[(&str, &str, &str)]) -> String {
    let mut events = vec![
        json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": null}]}),
    ];
    for piece in content.as_bytes().chunks(4) {
        let text = String::from_utf8_lossy(piece);
        events.push(
            json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]}),
        );
    }
    for (index, (id, name, _)) in calls.iter().enumerate() {
        events.push(json!({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": index, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}
        ]}, "finish_reason": null}]}));
    }
    for third in 0..3 {
        for (index, (_, _, args)) in calls.iter().enumerate() {
            let size = args.len().div_ceil(3);
            let piece = &args[(third * size).min(args.len())..((third + 1) * size).min(args.len())];
            events.push(json!({"choices": [{"index": 0, "delta": {"tool_calls": [
                {"index": index, "function": {"arguments": piece}}
            ]}, "finish_reason": null}]}));
        }
    }
    let reason = if calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    events.push(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}));
    events.push(json!({"choices": [], "usage": {"prompt_tokens": 20, "completion_tokens": 7}}));
    let mut text: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
    text.push_str("data: [DONE]\n\n");
    text
}

/// An event-stream response written in 7-byte pieces, so lines arrive cut
/// across network reads.
fn sse(text: String) -> Response {
    let pieces: Vec<Result<Vec<u8>, Infallible>> = text
        .into_bytes()
        .chunks(7)
        .map(|c| Ok(c.to_vec()))
        .collect();
    let body = futures_util::stream::iter(pieces).then(|piece| async move {
        tokio::task::yield_now().await;
        piece
    });
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(body))
        .unwrap()
}

use futures_util::StreamExt;

struct Fixture {
    server: Arc<Server>,
    addr: SocketAddr,
    runtime: tokio::runtime::Runtime,
    workspace: std::path::PathBuf,
}

impl Fixture {
    fn new(replies: Vec<Reply>) -> Fixture {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let server = Arc::new(Server {
            replies: Mutex::new(replies.into()),
            ..Server::default()
        });
        let app = Router::new()
            .route("/v1/chat/completions", post(completions))
            .with_state(server.clone());
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let addr = listener.local_addr().unwrap();
        runtime.spawn(async move { axum::serve(listener, app).await });
        let workspace = std::env::temp_dir().join(format!(
            "hookbox-openai-{}-{}",
            std::process::id(),
            addr.port()
        ));
        std::fs::create_dir_all(&workspace).unwrap();
        std::fs::write(workspace.join("notes.txt"), "token=hunter2").unwrap();
        Fixture {
            server,
            addr,
            runtime,
            workspace,
        }
    }

    fn run(&self, stack: HookStack, stream: bool) -> RunReport {
        let model = OpenAiModel::new(&format!("http://{}/v1", self.addr), "test-model")
            .unwrap()
            .api_key(Some("sk-test".into()));
        let mut tools = ToolSet::new();
        for tool in Workspace::new(&self.workspace).unwrap().file_tools() {
            tools.add(tool).unwrap();
        }
        let agent = Agent::new(Arc::new(model))
            .tools(tools)
            .stack(stack)
            .preamble("Be brief.")
            .config(LoopConfig {
                stream,
                ..LoopConfig::default()
            });
        self.runtime.block_on(agent.run("read my notes"))
    }

    fn requests(&self) -> Vec<(Option<String>, Value)> {
        self.server.requests.lock().unwrap().clone()
    }
}

fn redacting_stack(seen: Arc<Mutex<Vec<StepEvent>>>) -> HookStack {
    let mut stack = HookStack::new();
    stack.push_plugin(crate::support::plugin(
        hookbox_tests::guests::DIRECTOR,
        &[("tool-result", "rewrite-result:[redacted]")],
    ));
    stack.push_hook(hook_fn("recorder", move |_, event| {
        seen.lock().unwrap().push(event.clone());
        hookbox::Flow::Continue
    }));
    stack
}

#[test]
fn tool_calls_round_trip_in_the_wire_format() {
    let fixture = Fixture::new(vec![
        Reply::Turn("", vec![("call_a", "read_file", r#"{"path":"notes.txt"}"#)]),
        Reply::Turn("Your notes hold a token.", vec![]),
    ]);
    let report = fixture.run(redacting_stack(Arc::default()), false);
    assert_eq!(report.status, RunStatus::Finished, "{}", report.status);
    assert_eq!(report.text, "Your notes hold a token.");
    assert_eq!(
        (report.usage.input_tokens, report.usage.output_tokens),
        (22, 10)
    );

    let requests = fixture.requests();
    let (auth, first) = &requests[0];
    assert_eq!(auth.as_deref(), Some("Bearer sk-test"));
    assert_eq!(first["model"], "test-model");
    assert_eq!(
        first["messages"],
        json!([
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "read my notes"},
        ])
    );
    assert_eq!(first["tool_choice"], "auto");
    let read = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "read_file")
        .unwrap();
    assert_eq!(read["type"], "function");
    assert_eq!(read["function"]["parameters"]["required"], json!(["path"]));
    assert!(first.get("stream").is_none());

    let (_, second) = &requests[1];
    assert_eq!(
        second["messages"][2],
        json!({
            "role": "assistant", "content": null,
            "tool_calls": [{"id": "call_a", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"notes.txt\"}"}}],
        })
    );
    assert_eq!(
        second["messages"][3],
        json!({"role": "tool", "content": "[redacted]", "tool_call_id": "call_a"}),
        "the model sees the rewritten result"
    );
}

#[test]
fn streamed_tool_calls_split_across_chunks_are_reassembled() {
    let fixture = Fixture::new(vec![
        Reply::Turn(
            "Reading both.",
            vec![
                ("call_a", "read_file", r#"{"path":"notes.txt"}"#),
                ("call_b", "list_files", r#"{"path":"."}"#),
            ],
        ),
        Reply::Turn("Done: one file.", vec![]),
    ]);
    let seen: Arc<Mutex<Vec<StepEvent>>> = Arc::default();
    let report = fixture.run(redacting_stack(seen.clone()), true);
    assert_eq!(report.status, RunStatus::Finished, "{}", report.status);
    assert_eq!(report.text, "Done: one file.");
    assert_eq!(
        (report.usage.input_tokens, report.usage.output_tokens),
        (40, 14)
    );
    let calls: Vec<_> = report
        .tool_calls
        .iter()
        .map(|c| {
            (
                c.call_id.as_str(),
                c.tool_name.as_str(),
                c.args.as_str(),
                c.executed,
            )
        })
        .collect();
    assert_eq!(
        calls,
        [
            ("call_a", "read_file", r#"{"path":"notes.txt"}"#, true),
            ("call_b", "list_files", r#"{"path":"."}"#, true),
        ]
    );

    let seen = seen.lock().unwrap();
    let deltas: Vec<_> = seen
        .iter()
        .filter_map(|e| match e {
            StepEvent::ToolCallDelta(d) => Some(d.clone()),
            _ => None,
        })
        .collect();
    let for_a: String = deltas
        .iter()
        .filter(|d| d.tool_call_id == "call_a")
        .map(|d| d.delta.as_str())
        .collect();
    assert_eq!(for_a, r#"{"path":"notes.txt"}"#);
    assert!(deltas.iter().all(|d| d.tool_name.is_some()));
    let text: Vec<_> = seen
        .iter()
        .filter_map(|e| match e {
            StepEvent::TextDelta(d) => Some(d.aggregated.clone()),
            _ => None,
        })
        .collect();
    assert!(text.contains(&"Reading both.".to_owned()), "{text:?}");
    assert!(
        seen.iter()
            .any(|e| e.kind() == EventKind::StreamResponseFinish)
    );

    let (_, first) = &fixture.requests()[0];
    assert_eq!(first["stream"], true);
    assert_eq!(first["stream_options"], json!({"include_usage": true}));
}

#[test]
fn http_errors_end_the_run_with_the_servers_message() {
    let fixture = Fixture::new(vec![Reply::Error(401, "Incorrect API key provided")]);
    let report = fixture.run(HookStack::new(), false);
    let RunStatus::Error(message) = &report.status else {
        panic!("{}", report.status)
    };
    assert!(message.contains("HTTP 401"), "{message}");
    assert!(message.contains("Incorrect API key provided"), "{message}");
}

#[test]
fn a_broken_event_stream_is_an_error_not_a_truncated_answer() {
    let fixture = Fixture::new(vec![Reply::Raw(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\ndata: {oops\n\n",
    )]);
    let RunStatus::Error(message) = fixture.run(HookStack::new(), true).status else {
        panic!()
    };
    assert!(message.contains("not JSON"), "{message}");

    let fixture = Fixture::new(vec![Reply::Raw(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n",
    )]);
    let RunStatus::Error(message) = fixture.run(HookStack::new(), true).status else {
        panic!()
    };
    assert!(
        message.contains("before the answer was finished"),
        "{message}"
    );
}

#[test]
fn an_unreachable_server_is_named_in_the_error() {
    let fixture = Fixture::new(vec![]);
    let model = OpenAiModel::new("http://127.0.0.1:9/v1", "m").unwrap();
    let agent = Agent::new(Arc::new(model));
    let report = fixture.runtime.block_on(agent.run("x"));
    let RunStatus::Error(message) = report.status else {
        panic!()
    };
    assert!(
        message.contains("cannot reach http://127.0.0.1:9/v1/chat/completions"),
        "{message}"
    );
}

#[test]
fn a_stream_that_ends_without_done_or_a_final_newline_is_whole() {
    let fixture = Fixture::new(vec![Reply::Raw(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello\"}}]}\r\n\r\ndata: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1}}",
    )]);
    let report = fixture.run(HookStack::new(), true);
    assert_eq!(report.status, RunStatus::Finished, "{}", report.status);
    assert_eq!(report.text, "Hello");
    assert_eq!(
        report.usage.output_tokens, 1,
        "the last, unterminated line counted"
    );
}
