//! OTLP export, end to end: the `hookbox` binary exports to a receiver that
//! decodes what arrives with the official OTLP definitions (`otlp`), and the
//! traces are checked as a collector would see them.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use hookbox_tests::guests;
use opentelemetry_proto::tonic::trace::v1::status;

mod otlp;
use otlp::{Receiver, attributes, named};

fn scratch(label: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hookbox-otlp-{label}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("a.txt"), "hello").unwrap();
    dir
}

/// `hookbox run` on a scripted model, exporting to `endpoint`.
fn run(label: &str, script: &str, extra: &[&str], env: &[(&str, &str)]) -> Output {
    let dir = scratch(label);
    std::fs::write(dir.join("script.json"), script).unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_hookbox"));
    command
        .args(["run", "--workspace"])
        .arg(&dir)
        .arg("--model")
        .arg(format!("scripted:{}", dir.join("script.json").display()))
        .args(extra)
        .arg("do the thing")
        .env_remove("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
        .env_remove("OTEL_SERVICE_NAME")
        .env_remove("OTEL_RESOURCE_ATTRIBUTES")
        .env_remove("OTEL_TRACES_EXPORTER")
        .env_remove("OTEL_SDK_DISABLED")
        .env_remove("OTEL_EXPORTER_OTLP_PROTOCOL")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .envs(env.iter().copied())
        .stdin(Stdio::null());
    command.output().unwrap()
}

/// A read the guard lets through, then a shell call it skips.
const READ_THEN_SHELL: &str = r#"{"turns":[
    {"tool_calls":[{"name":"read_file","arguments":{"path":"a.txt"}}]},
    {"tool_calls":[{"name":"shell","arguments":{"cmd":"ls"}}]},
    {"content":"Done."}]}"#;

fn deny_shell() -> Vec<&'static str> {
    vec![
        "--plugin",
        guests::DENY_TOOLS,
        "--config",
        "deny-tools.deny=shell",
        "--enable-shell",
    ]
}

#[test]
fn a_run_is_one_trace_with_its_model_calls_tools_and_decisions_inside_its_root() {
    let (receiver, endpoint) = Receiver::start();
    let out = run(
        "trace",
        READ_THEN_SHELL,
        &deny_shell(),
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Flushed before the process exited: everything is here already.
    let spans = receiver.spans();

    let [root] = named(&spans, "invoke_agent")[..] else {
        panic!(
            "one root span: {:?}",
            spans.iter().map(|s| &s.name).collect::<Vec<_>>()
        )
    };
    assert!(root.parent_span_id.is_empty(), "the root has no parent");
    assert!(
        spans.iter().all(|s| s.trace_id == root.trace_id),
        "one trace per run"
    );
    let root_attributes = attributes(root);
    assert_eq!(root_attributes["gen_ai.operation.name"], "invoke_agent");
    assert_eq!(root_attributes["gen_ai.provider.name"], "scripted");
    let run_id = &root_attributes["gen_ai.conversation.id"];
    assert!(run_id.starts_with("run-"), "{run_id}");
    assert_eq!(root_attributes["hookbox.status"], "finished");

    let chats = named(&spans, "chat scripted");
    assert_eq!(chats.len(), 3, "a chat span per model call");
    for chat in &chats {
        assert_eq!(chat.parent_span_id, root.span_id);
        let a = attributes(chat);
        assert_eq!(a["gen_ai.operation.name"], "chat");
        assert_eq!(a["gen_ai.provider.name"], "scripted");
        assert_eq!(a["gen_ai.request.model"], "scripted");
        assert_eq!(&a["gen_ai.conversation.id"], run_id);
        assert!(a["gen_ai.usage.input_tokens"].parse::<u64>().unwrap() > 0);
        assert!(
            a["gen_ai.response.finish_reasons"].starts_with('['),
            "an array: {}",
            a["gen_ai.response.finish_reasons"]
        );
    }

    let [tool] = named(&spans, "execute_tool read_file")[..] else {
        panic!("the read ran, the shell did not")
    };
    assert_eq!(tool.parent_span_id, root.span_id);
    let a = attributes(tool);
    assert_eq!(a["gen_ai.tool.name"], "read_file");
    assert!(
        !a.contains_key("gen_ai.tool.call.arguments") && !a.contains_key("gen_ai.tool.call.result"),
        "content is off by default: {a:?}"
    );

    let decisions = named(&spans, "apply_guardrail tool_call");
    assert_eq!(decisions.len(), 2, "one decision per tool call");
    for decision in &decisions {
        assert_eq!(decision.parent_span_id, root.span_id);
        assert_eq!(
            attributes(decision)["gen_ai.operation.name"],
            "apply_guardrail"
        );
    }
    let by_decision: HashMap<String, HashMap<String, String>> = decisions
        .iter()
        .map(|d| {
            let a = attributes(d);
            (a["gen_ai.security.decision.type"].clone(), a)
        })
        .collect();
    let allowed = &by_decision["allow"];
    assert_eq!(allowed["hookbox.flow"], "continue");
    assert!(!allowed.contains_key("gen_ai.guardian.name"));
    let denied = &by_decision["deny"];
    assert_eq!(denied["hookbox.flow"], "skip");
    assert_eq!(denied["hookbox.event"], "tool-call");
    assert_eq!(denied["gen_ai.security.target.type"], "tool_call");
    assert_eq!(denied["gen_ai.guardian.name"], "deny-tools");
    assert_eq!(&denied["gen_ai.conversation.id"], run_id);
    assert!(
        !denied.contains_key("gen_ai.security.decision.reason"),
        "a guard's reason is content: {denied:?}"
    );
    assert!(
        spans.iter().all(|s| s
            .status
            .as_ref()
            .is_none_or(|st| st.code != status::StatusCode::Error as i32)),
        "nothing failed"
    );
}

#[test]
fn content_is_on_the_spans_only_when_the_user_opts_in() {
    let (receiver, endpoint) = Receiver::start();
    let out = run(
        "content",
        READ_THEN_SHELL,
        &deny_shell(),
        &[
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                &format!("{endpoint}/v1/traces"),
            ),
            ("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true"),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let spans = receiver.spans();
    let [tool] = named(&spans, "execute_tool read_file")[..] else {
        panic!("the read ran")
    };
    let a = attributes(tool);
    assert_eq!(a["gen_ai.tool.call.arguments"], r#"{"path":"a.txt"}"#);
    assert_eq!(a["gen_ai.tool.call.result"], "hello");
    let denied = named(&spans, "apply_guardrail tool_call")
        .into_iter()
        .map(attributes)
        .find(|a| a["gen_ai.security.decision.type"] == "deny")
        .unwrap();
    assert!(
        denied["gen_ai.security.decision.reason"].contains("shell"),
        "{denied:?}"
    );
}

#[test]
fn a_run_that_fails_closed_says_so_on_the_decision_and_the_root() {
    let (receiver, endpoint) = Receiver::start();
    let script = r#"{"turns":[{"tool_calls":[{"name":"puppet:panic","arguments":{}}]}]}"#;
    let out = run(
        "failed",
        script,
        &["--plugin", guests::PUPPET],
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)],
    );
    assert_eq!(out.status.code(), Some(4));
    let spans = receiver.spans();
    let failed = named(&spans, "apply_guardrail tool_call");
    let [failed] = failed[..] else {
        panic!("one decision")
    };
    let a = attributes(failed);
    assert_eq!(a["hookbox.flow"], "fail-closed");
    assert_eq!(a["gen_ai.security.decision.type"], "deny");
    assert_eq!(a["error.type"], "trap");
    assert_eq!(a["gen_ai.guardian.name"], "puppet");
    let status = failed.status.as_ref().unwrap();
    assert_eq!(status.code, status::StatusCode::Error as i32);
    assert!(status.message.contains("puppet"), "{}", status.message);
    let [root] = named(&spans, "invoke_agent")[..] else {
        panic!("one root")
    };
    assert_eq!(attributes(root)["error.type"], "failed-closed");
    assert_eq!(
        root.status.as_ref().unwrap().code,
        status::StatusCode::Error as i32
    );
}

#[test]
fn no_endpoint_no_export_and_a_protocol_it_cannot_speak_is_refused() {
    let (receiver, endpoint) = Receiver::start();
    let out = run("off", READ_THEN_SHELL, &deny_shell(), &[]);
    assert!(out.status.success());
    let out = run(
        "grpc",
        READ_THEN_SHELL,
        &deny_shell(),
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("http/protobuf"), "{err}");
    assert!(receiver.spans().is_empty());
}

#[cfg(unix)]
#[test]
fn serve_exports_a_span_per_run_with_its_decisions_and_flushes_on_sigterm() {
    let (receiver, endpoint) = Receiver::start();
    let dir = scratch("serve");
    std::fs::copy(guests::DENY_TOOLS, dir.join("deny-tools.wasm")).unwrap();
    std::fs::write(
        dir.join("hookbox.toml"),
        "[[plugin]]\nfile = \"deny-tools.wasm\"\nconfig = { deny = \"shell\" }\n",
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_hookbox"))
        .args(["serve", "--plugins"])
        .arg(&dir)
        .args(["--listen", "127.0.0.1:0"])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        .env("HOOKBOX_STATE_DIR", dir.join("state"))
        .env_remove("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
        .env_remove("HOOKBOX_SERVE_TOKENS")
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let addr = loop {
        let mut line = String::new();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "serve never started"
        );
        if let Some(at) = line.find("on http://") {
            break line[at + "on http://".len()..]
                .split_whitespace()
                .next()
                .unwrap()
                .to_owned();
        }
    };
    let post = |path: &str, body: &str| -> String {
        let mut stream = std::net::TcpStream::connect(&addr).unwrap();
        write!(
            stream,
            "POST {path} HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        answer
    };
    let created = post("/runs", "{}");
    let id = created
        .split("\"run_id\":\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("{created}"))
        .to_owned();
    let path = format!("/runs/{id}/events");
    for tool in ["read_file", "shell"] {
        let answer = post(
            &path,
            &format!(r#"{{"event":"tool-call","tool_name":"{tool}","args":"{{}}"}}"#),
        );
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    }
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = child.wait().unwrap();
    assert!(status.success(), "serve stops cleanly on SIGTERM: {status}");

    let spans = receiver.spans();
    let [run] = named(&spans, "hookbox.run")[..] else {
        panic!(
            "one run span: {:?}",
            spans.iter().map(|s| &s.name).collect::<Vec<_>>()
        )
    };
    assert_eq!(attributes(run)["gen_ai.conversation.id"], id);
    assert_eq!(attributes(run)["hookbox.surface"], "serve");
    let decisions = named(&spans, "apply_guardrail tool_call");
    assert_eq!(decisions.len(), 2);
    for decision in &decisions {
        assert_eq!(decision.trace_id, run.trace_id);
        assert_eq!(decision.parent_span_id, run.span_id);
    }
    let types: Vec<String> = decisions
        .iter()
        .map(|d| attributes(d)["gen_ai.security.decision.type"].clone())
        .collect();
    assert_eq!(types, ["allow", "deny"]);
}
