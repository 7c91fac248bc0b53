//! `hookbox serve` over real HTTP on a loopback port: the run lifecycle,
//! every error path, fail-closed answers, metrics, and hot reload under
//! traffic.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use hookbox_serve::{ServeConfig, Server, StackSource};
use serde_json::{Value, json};

use super::directory::{put, scratch_dir};
use super::support::runtime;
use hookbox_tests::guests;

/// A server on a plugin directory holding one puppet named `guard` with
/// `version`, on its own tokio runtime.
struct Fixture {
    _tokio: tokio::runtime::Runtime,
    server: Server,
    dir: std::path::PathBuf,
}

fn manifest(dir: &Path, version: &str) {
    let text = format!(
        "[[plugin]]\nfile = \"guard.wasm\"\n[plugin.config]\nname = \"guard\"\nversion = \"{version}\"\n"
    );
    std::fs::write(dir.join("hookbox.toml"), text).unwrap();
}

/// A server of `source` on a loopback port, on its own tokio runtime.
fn serving(source: StackSource, config: ServeConfig) -> (tokio::runtime::Runtime, Server) {
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let server = tokio
        .block_on(Server::start(source, addr, config))
        .expect("server starts");
    (tokio, server)
}

/// `dir`, loaded and watched.
fn watched(dir: &std::path::Path) -> StackSource {
    StackSource::watch(runtime(), dir, std::time::Duration::from_millis(100))
        .expect("the directory loads")
}

impl Fixture {
    fn new(label: &str, config: ServeConfig) -> Fixture {
        let dir = scratch_dir(label);
        put(&dir, "guard.wasm", guests::PUPPET);
        manifest(&dir, "v1");
        let (tokio, server) = serving(watched(&dir), config);
        Fixture {
            _tokio: tokio,
            server,
            dir,
        }
    }

    fn request(&self, method: &str, path: &str, body: &str) -> (u16, String) {
        request(self.server.addr, method, path, body)
    }

    fn json(&self, method: &str, path: &str, body: &str) -> (u16, Value) {
        let (status, text) = self.request(method, path, body);
        let value = serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}"));
        (status, value)
    }

    fn new_run(&self) -> String {
        let (status, body) = self.json("POST", "/runs", "");
        assert_eq!(status, 201, "{body}");
        body["run_id"].as_str().unwrap().to_owned()
    }

    fn event(&self, run: &str, event: &Value) -> (u16, Value) {
        self.json("POST", &format!("/runs/{run}/events"), &event.to_string())
    }
}

/// A plain HTTP/1.1 exchange: what an agent in any language does.
fn request(addr: SocketAddr, method: &str, path: &str, body: &str) -> (u16, String) {
    request_with(addr, method, path, None, body)
}

fn request_with(
    addr: SocketAddr,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: &str,
) -> (u16, String) {
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    exchange(
        addr,
        &format!("{method} {path}"),
        &format!("{auth}Content-Type: application/json\r\n"),
        body,
    )
}

/// `request` (`METHOD PATH`) with `headers` (each line ending in CRLF; a
/// `Host` of their own instead of the server's address).
fn exchange(addr: SocketAddr, request: &str, headers: &str, body: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let host = if headers.to_ascii_lowercase().contains("host:") {
        String::new()
    } else {
        format!("Host: {addr}\r\n")
    };
    write!(
        stream,
        "{request} HTTP/1.1\r\n{host}{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response[9..12].parse().unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_owned()
    };
    (status, body)
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        out.push_str(&rest[..size]);
        body = &rest[size + 2..];
    }
    out
}

fn tool_call(name: &str) -> Value {
    json!({"event": "tool-call", "tool_name": name, "args": {}})
}

#[test]
fn a_run_lives_from_post_to_delete_and_keeps_its_state_between_events() {
    let f = Fixture::new("serve-lifecycle", ServeConfig::default());
    assert_eq!(f.request("GET", "/healthz", ""), (200, "ok".into()));
    let run = f.new_run();
    for expected in ["global=1 scratch=1", "global=2 scratch=2"] {
        let (status, flow) = f.event(&run, &tool_call("guard:count"));
        assert_eq!(status, 200);
        assert_eq!(
            flow,
            json!({"flow": "skip", "reason": expected, "plugin": "guard"})
        );
    }
    // Another run starts from nothing.
    let other = f.new_run();
    let (_, flow) = f.event(&other, &tool_call("guard:count"));
    assert_eq!(flow["reason"], "global=1 scratch=1");

    let (status, _) = f.request("DELETE", &format!("/runs/{run}"), "");
    assert_eq!(status, 204);
    let (status, body) = f.event(&run, &tool_call("guard:count"));
    assert_eq!(status, 404);
    assert!(
        body["error"].as_str().unwrap().contains("POST /runs"),
        "{body}"
    );
}

#[test]
fn bad_requests_get_a_4xx_that_says_what_is_wrong() {
    let config = ServeConfig {
        max_body_bytes: 1024,
        max_runs: 2,
        ..ServeConfig::default()
    };
    let f = Fixture::new("serve-errors", config);
    let run = f.new_run();
    let path = format!("/runs/{run}/events");
    let cases: [(&str, u16, &str); 4] = [
        ("{not json", 400, "not an event"),
        (r#"{"event":"tool-cal","tool_name":"x"}"#, 400, "tool-cal"),
        (r#"{"event":"tool-call"}"#, 400, "tool_name"),
        (
            &format!(r#"{{"event":"text-delta","delta":"{}"}}"#, "x".repeat(2000)),
            413,
            "larger than 1024 bytes",
        ),
    ];
    for (body, status, says) in cases {
        let (got, reply) = f.json("POST", &path, body);
        assert_eq!(got, status, "{reply}");
        assert!(reply["error"].as_str().unwrap().contains(says), "{reply}");
    }
    let (status, reply) = f.event("run-nope", &tool_call("x"));
    assert_eq!(status, 404, "{reply}");
    let (status, reply) = f.json("GET", "/nowhere", "");
    assert_eq!(status, 404, "{reply}");
    // A full server sheds load instead of growing.
    f.new_run();
    let (status, reply) = f.json("POST", "/runs", "");
    assert_eq!(status, 503, "{reply}");
    assert!(reply["error"].as_str().unwrap().contains("2 runs are live"));
    // Nothing above broke the run that was there.
    let (status, _) = f.event(&run, &tool_call("guard:flow:continue"));
    assert_eq!(status, 200);
}

#[test]
fn a_misbehaving_guest_answers_fail_closed_and_is_counted() {
    let f = Fixture::new("serve-fail-closed", ServeConfig::default());
    let run = f.new_run();
    let (status, flow) = f.event(&run, &tool_call("guard:panic"));
    assert_eq!(status, 200);
    assert_eq!(flow["flow"], "terminate");
    assert_eq!(flow["fail_closed"]["plugin"], "guard");
    assert_eq!(flow["fail_closed"]["cause"], "trap");
    // The run stays over.
    let (_, again) = f.event(&run, &tool_call("guard:flow:continue"));
    assert_eq!(again["fail_closed"]["cause"], "trap");

    let (_, metrics) = f.request("GET", "/metrics", "");
    for line in [
        "hookbox_events_total{kind=\"tool-call\"} 2",
        "hookbox_fail_closed_total{cause=\"trap\"} 2",
        "hookbox_runs_created_total 1",
        "hookbox_event_seconds_count 2",
    ] {
        assert!(metrics.contains(line), "{line} missing from\n{metrics}");
    }
}

#[test]
fn a_shadow_plugins_decisions_and_failures_are_shown_apart_and_never_block() {
    let dir = scratch_dir("serve-shadow");
    put(&dir, "trial.wasm", guests::PUPPET);
    put(&dir, "guard.wasm", guests::PUPPET);
    std::fs::write(
        dir.join("hookbox.toml"),
        "[[plugin]]\nfile = \"trial.wasm\"\nmode = \"shadow\"\n[plugin.config]\nname = \"trial\"\n\n\
         [[plugin]]\nfile = \"guard.wasm\"\n[plugin.config]\nname = \"guard\"\n",
    )
    .unwrap();
    let (_tokio, server) = serving(watched(&dir), ServeConfig::default());
    let f = Fixture {
        _tokio,
        server,
        dir,
    };
    let run = f.new_run();
    let (status, flow) = f.event(&run, &tool_call("trial:flow:skip:would block"));
    assert_eq!((status, &flow["flow"]), (200, &json!("continue")), "{flow}");
    assert_eq!(
        flow["shadow"][0],
        json!({"plugin": "trial", "flow": {"flow": "skip", "reason": "would block"}})
    );
    // A shadow that traps: the run goes on.
    let (_, flow) = f.event(&run, &tool_call("trial:panic"));
    assert_eq!(flow["flow"], "continue", "{flow}");
    assert_eq!(flow["shadow"][0]["fail_closed"]["cause"], "trap");
    let (_, flow) = f.event(&run, &tool_call("guard:flow:skip:enforced"));
    assert_eq!(flow["flow"], "skip", "{flow}");

    let (_, status) = f.json("GET", "/status", "");
    let trial = &status["plugins"][0];
    assert_eq!(
        (&trial["name"], &trial["mode"]),
        (&json!("trial"), &json!("shadow"))
    );
    assert_eq!(
        trial["shadow_decisions"],
        json!({"fail-closed:trap": 1, "skip": 1})
    );
    assert_eq!(status["plugins"][1]["mode"], "enforce");
    assert_eq!(
        status["plugins"][1]["sha256"],
        json!(hookbox::cache::sha256_hex(
            &std::fs::read(guests::PUPPET).unwrap()
        ))
    );
    let (_, metrics) = f.request("GET", "/metrics", "");
    for line in [
        "hookbox_shadow_decisions_total{plugin=\"trial\",flow=\"skip\"} 1",
        "hookbox_shadow_fail_closed_total{plugin=\"trial\",cause=\"trap\"} 1",
        "hookbox_flows_total{flow=\"skip\"} 1",
        "hookbox_fail_closed_total{cause=\"trap\"} 0",
    ] {
        assert!(metrics.contains(line), "{line} missing from\n{metrics}");
    }
}

#[test]
fn metrics_are_kept_per_plugin_and_every_decision_that_matters_is_logged() {
    let dir = scratch_dir("serve-audit");
    let log_path = dir.join("decisions.jsonl");
    let config = ServeConfig {
        decision_log: Some(std::sync::Arc::new(
            hookbox::audit::DecisionLog::to_file(&log_path).unwrap(),
        )),
        ..ServeConfig::default()
    };
    put(&dir, "guard.wasm", guests::PUPPET);
    manifest(&dir, "v1");
    let (_tokio, server) = serving(watched(&dir), config);
    let f = Fixture {
        _tokio,
        server,
        dir,
    };
    let run = f.new_run();
    for name in [
        "guard:flow:continue",
        "guard:flow:skip:no",
        "guard:flow:continue",
    ] {
        assert_eq!(f.event(&run, &tool_call(name)).0, 200);
    }
    let other = f.new_run();
    let (_, flow) = f.event(&other, &tool_call("guard:panic"));
    assert_eq!(flow["fail_closed"]["cause"], "trap");

    let (_, metrics) = f.request("GET", "/metrics", "");
    for line in [
        "hookbox_plugin_decision_seconds_count{plugin=\"guard\"} 4",
        "hookbox_plugin_flows_total{plugin=\"guard\",flow=\"continue\"} 2",
        "hookbox_plugin_flows_total{plugin=\"guard\",flow=\"skip\"} 1",
        "hookbox_plugin_fail_closed_total{plugin=\"guard\",cause=\"trap\"} 1",
        "hookbox_decision_log_dropped_total 0",
        "hookbox_reloads_total{result=\"ok\"} 0",
    ] {
        assert!(metrics.contains(line), "{line} missing from\n{metrics}");
    }
    // The log is written off the request path: wait for its lines.
    let deadline = Instant::now() + Duration::from_secs(10);
    let records: Vec<Value> = loop {
        let text = std::fs::read_to_string(&log_path).unwrap_or_default();
        if text.lines().count() >= 2 || Instant::now() > deadline {
            break text
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let digest = hookbox::cache::sha256_hex(&std::fs::read(guests::PUPPET).unwrap());
    let seen: Vec<(&str, &str, &str)> = records
        .iter()
        .map(|r| {
            (
                r["run_id"].as_str().unwrap(),
                r["flow"].as_str().unwrap(),
                r["sha256"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [(&*run, "skip", &*digest), (&*other, "terminate", &*digest)],
        "{records:?}"
    );
    assert_eq!(
        (&records[1]["cause"], &records[1]["generation"]),
        (&json!("trap"), &json!(1))
    );
}

#[test]
fn metrics_count_compile_cache_hits_and_misses() {
    let dir = scratch_dir("serve-cache");
    put(&dir, "guard.wasm", guests::PUPPET);
    manifest(&dir, "v1");
    let cache = scratch_dir("serve-cache-dir");
    let runtime = hookbox::Runtime::new(hookbox::RuntimeConfig {
        cache_dir: Some(cache),
        ..hookbox::RuntimeConfig::default()
    })
    .unwrap();
    let source = StackSource::watch(&runtime, &dir, Duration::from_millis(100)).unwrap();
    let (_tokio, server) = serving(source, ServeConfig::default());
    let (_, metrics) = request(server.addr, "GET", "/metrics", "");
    for line in [
        "hookbox_compile_cache_total{result=\"hit\"} 0",
        "hookbox_compile_cache_total{result=\"miss\"} 1",
    ] {
        assert!(metrics.contains(line), "{line} missing from\n{metrics}");
    }
}

#[test]
fn runs_keep_their_snapshot_while_the_directory_reloads_under_them() {
    let f = Fixture::new("serve-reload", ServeConfig::default());
    let old = f.new_run();
    let (_, flow) = f.event(&old, &tool_call("guard:version"));
    assert_eq!(flow["reason"], "v1");

    manifest(&f.dir, "v2");
    let deadline = Instant::now() + Duration::from_secs(30);
    let new = loop {
        let (_, status) = f.json("GET", "/status", "");
        if status["generation"].as_u64() > Some(1) {
            break f.new_run();
        }
        assert!(Instant::now() < deadline, "no reload: {status}");
        std::thread::sleep(Duration::from_millis(20));
    };
    let (_, flow) = f.event(&new, &tool_call("guard:version"));
    assert_eq!(flow["reason"], "v2");
    let (_, flow) = f.event(&old, &tool_call("guard:version"));
    assert_eq!(
        flow["reason"], "v1",
        "a run keeps the stack it started with"
    );
    let (_, status) = f.json("GET", "/status", "");
    assert_eq!(status["live_runs"], 2);
    assert_eq!(status["runs_on_older_generations"], 1);
    assert_eq!(status["plugins"][0]["name"], "guard");
}

#[test]
fn idle_runs_expire() {
    let config = ServeConfig {
        idle_timeout: Duration::from_millis(200),
        ..ServeConfig::default()
    };
    let f = Fixture::new("serve-idle", config);
    let run = f.new_run();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (status, _) = f.event(&run, &tool_call("guard:flow:continue"));
        if status == 404 {
            break;
        }
        assert!(Instant::now() < deadline, "the run never expired");
        std::thread::sleep(Duration::from_millis(500));
    }
    let (_, metrics) = f.request("GET", "/metrics", "");
    assert!(
        metrics.contains("hookbox_runs_expired_total 1"),
        "{metrics}"
    );
}

#[test]
fn the_python_client_example_guards_a_tool_call() {
    let f = Fixture::new("serve-python", ServeConfig::default());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/serve/guard_tool_call.py");
    let run = |tool: &str| {
        std::process::Command::new("python3")
            .arg(&script)
            .arg(tool)
            .arg(r#"{"command": "ls"}"#)
            .env("HOOKBOX_URL", format!("http://{}", f.server.addr))
            .output()
            .expect("python3 runs")
    };
    let allowed = run("shell");
    assert_eq!(allowed.status.code(), Some(0), "{allowed:?}");
    assert_eq!(
        String::from_utf8_lossy(&allowed.stdout).trim(),
        r#"{"flow": "continue"}"#
    );
    let skipped = run("guard:flow:skip:no shell here");
    assert_eq!(skipped.status.code(), Some(1), "{skipped:?}");
    assert!(String::from_utf8_lossy(&skipped.stdout).contains("no shell here"));
    let (_, status) = f.json("GET", "/status", "");
    assert_eq!(status["live_runs"], 0, "the client ends its runs");
}

#[test]
fn claude_code_http_hooks_share_one_run_per_session() {
    let f = Fixture::new("serve-claude-code", ServeConfig::default());
    let hook = |session: &str, tool: &str| {
        let input = json!({
            "session_id": session, "transcript_path": "/tmp/t.jsonl", "cwd": "/w",
            "hook_event_name": "PreToolUse", "tool_name": tool,
            "tool_input": {"command": "ls"}, "tool_use_id": "toolu_1",
        });
        f.json("POST", "/claude-code/hook", &input.to_string())
    };
    let reason = |reply: &Value| {
        reply["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    let (status, first) = hook("s1", "guard:count");
    assert_eq!(status, 200);
    assert_eq!(first["hookSpecificOutput"]["permissionDecision"], "deny");
    assert_eq!(reason(&first), "global=1 scratch=1");
    let (_, second) = hook("s1", "guard:count");
    assert_eq!(
        reason(&second),
        "global=2 scratch=2",
        "state spans the session"
    );
    let (_, other) = hook("s2", "guard:count");
    assert_eq!(reason(&other), "global=1 scratch=1");
    let (_, allowed) = hook("s2", "Bash");
    assert_eq!(
        allowed,
        json!({}),
        "no opinion: Claude Code's own permissions apply"
    );
    // HTTP hooks cannot exit 2: a failed-closed stack denies.
    let (_, blocked) = hook("s3", "guard:panic");
    assert_eq!(blocked["hookSpecificOutput"]["permissionDecision"], "deny");
    assert!(reason(&blocked).contains("failed closed"), "{blocked}");
    // Whatever reaches the hook is answered 200 with a block: Claude Code
    // reads any other status as "carry on".
    let (status, broken) = f.json("POST", "/claude-code/hook", "{oops");
    assert_eq!(status, 200);
    assert_eq!(broken["continue"], false, "{broken}");
}

#[test]
fn claude_code_http_hook_failures_are_blocks_in_a_200() {
    let config = ServeConfig {
        max_body_bytes: 64 << 10,
        ..ServeConfig::default()
    };
    let f = Fixture::new("serve-claude-code-failures", config);
    let call = |command: &str| {
        json!({
            "session_id": "s", "hook_event_name": "PreToolUse", "tool_name": "Bash",
            "tool_input": {"command": command}, "tool_use_id": "t",
        })
        .to_string()
    };
    let denied = |reply: &Value| reply["hookSpecificOutput"]["permissionDecision"] == "deny";
    let (status, big) = f.json("POST", "/claude-code/hook", &call(&"x".repeat(100 << 10)));
    assert_eq!(status, 200);
    assert!(denied(&big) && big["continue"] == false, "too large: {big}");
    let (status, cut) = f.json(
        "POST",
        "/claude-code/hook",
        r#"{"hook_event_name":"PreToolUse","tool_input":{"#,
    );
    assert_eq!(status, 200);
    assert!(denied(&cut), "cut short: {cut}");
    let (status, post) = f.json(
        "POST",
        "/claude-code/hook",
        &json!({"session_id": "s", "hook_event_name": "PostToolUse", "tool_name": "guard:panic",
                "tool_input": {}, "tool_use_id": "t",
                "tool_response": {"stdout": "DB_PASSWORD=hunter2", "stderr": "", "interrupted": false, "isImage": false}})
        .to_string(),
    );
    assert_eq!(status, 200);
    assert!(!post.to_string().contains("hunter2"), "withheld: {post}");
    assert_eq!(post["continue"], false);
}

/// Each token has an equal share of the server's runs: one client that
/// takes all of its own cannot keep another from starting one, and
/// `/status` shows each client's use.
#[test]
fn one_client_cannot_take_another_clients_share_of_runs() {
    let (alice, bob) = ("alice-0123456789abcdef", "bob-0123456789abcdef");
    let config = ServeConfig {
        tokens: vec![alice.into(), bob.into()],
        max_runs: 4,
        ..ServeConfig::default()
    };
    let f = Fixture::new("serve-shares", config);
    let addr = f.server.addr;
    let create = |token: &str| request_with(addr, "POST", "/runs", Some(token), "{}");
    assert_eq!(create(alice).0, 201);
    assert_eq!(create(alice).0, 201);
    let (status, body) = create(alice);
    assert_eq!(status, 503, "alice is past her share: {body}");
    assert!(body.contains("share"), "{body}");
    assert_eq!(create(bob).0, 201, "bob's share is his");
    let (status, body) = request_with(addr, "GET", "/status", Some(bob), "");
    assert_eq!(status, 200);
    let status: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(status["client_shares"]["runs"], 2, "{status}");
    assert_eq!(
        status["clients"],
        json!([
            {"client": 1, "live_runs": 2, "instance_slots": 2, "in_flight": 0},
            {"client": 2, "live_runs": 1, "instance_slots": 1, "in_flight": 0},
        ]),
        "{status}"
    );
}

/// Each token has an equal share of the runtime's instance slots too:
/// one client whose runs are few but large cannot take the slots another
/// client's run needs.
#[test]
fn one_client_cannot_take_another_clients_share_of_instance_slots() {
    let runtime = hookbox::Runtime::new(hookbox::RuntimeConfig {
        max_instances: 4,
        ..Default::default()
    })
    .unwrap();
    let mut stack = hookbox::HookStack::new();
    for name in ["first", "second"] {
        let guard = hookbox::Plugin::from_file(
            &runtime,
            guests::PUPPET.as_ref(),
            hookbox::PluginOptions {
                config: [("name".to_string(), name.to_string())].into(),
                ..Default::default()
            },
        )
        .unwrap();
        stack.push_plugin(std::sync::Arc::new(guard));
    }
    let (alice, bob) = ("alice-0123456789abcdef", "bob-0123456789abcdef");
    let config = ServeConfig {
        tokens: vec![alice.into(), bob.into()],
        ..ServeConfig::default()
    };
    let (_tokio, server) = serving(StackSource::fixed(stack), config);
    let create = |token: &str| request_with(server.addr, "POST", "/runs", Some(token), "{}");
    // A run holds one slot per plugin: two of the four; alice's share is two.
    assert_eq!(create(alice).0, 201);
    let (status, body) = create(alice);
    assert_eq!(status, 503, "alice is past her share of slots: {body}");
    assert!(body.contains("share of 2 instance slots"), "{body}");
    let (status, body) = create(bob);
    assert_eq!(status, 201, "bob's slots are his: {body}");
    let (_, body) = request_with(server.addr, "GET", "/status", Some(bob), "");
    let status: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(status["client_shares"]["instance_slots"], 2, "{status}");
    assert_eq!(status["instance_slots"], json!({"used": 4, "total": 4}));
    assert_eq!(status["clients"][0]["instance_slots"], 2, "{status}");
}

#[test]
fn with_tokens_every_route_but_the_health_check_needs_one() {
    let config = ServeConfig {
        tokens: vec![
            "alice-0123456789abcdef".into(),
            "bob-0123456789abcdef".into(),
        ],
        ..ServeConfig::default()
    };
    let f = Fixture::new("serve-tokens", config);
    let addr = f.server.addr;
    let send = |method: &str, path: &str, token: Option<&str>, body: &str| {
        request_with(addr, method, path, token, body)
    };
    assert_eq!(send("GET", "/healthz", None, "").0, 200);
    for (method, path) in [
        ("GET", "/status"),
        ("GET", "/metrics"),
        ("POST", "/runs"),
        ("POST", "/runs/x/events"),
        ("DELETE", "/runs/x"),
    ] {
        assert_eq!(send(method, path, None, "{}").0, 401, "{method} {path}");
        assert_eq!(
            send(method, path, Some("wrong-0123456789abcdef"), "{}").0,
            401,
            "{method} {path}"
        );
    }
    // The hook route answers a block, never a status Claude Code ignores.
    let hook = json!({"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": "Bash",
                      "tool_input": {"command": "ls"}, "tool_use_id": "t"})
    .to_string();
    let (status, body) = send("POST", "/claude-code/hook", None, &hook);
    assert_eq!(status, 200);
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        body["hookSpecificOutput"]["permissionDecision"], "deny",
        "{body}"
    );

    // Alice's run exists for Alice only; ids are not guessable.
    let (status, created) = send("POST", "/runs", Some("alice-0123456789abcdef"), "");
    assert_eq!(status, 201);
    let id = serde_json::from_str::<Value>(&created).unwrap()["run_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(id.len(), "run-".len() + 32, "{id}: 128 random bits");
    let event = json!({"event": "tool-call", "tool_name": "x", "args": {}}).to_string();
    let path = format!("/runs/{id}/events");
    assert_eq!(
        send("POST", &path, Some("alice-0123456789abcdef"), &event).0,
        200
    );
    assert_eq!(
        send("POST", &path, Some("bob-0123456789abcdef"), &event).0,
        404
    );
    assert_eq!(
        send(
            "DELETE",
            &format!("/runs/{id}"),
            Some("bob-0123456789abcdef"),
            ""
        )
        .0,
        404
    );
    assert_eq!(
        send(
            "POST",
            "/runs/run-1-1/events",
            Some("alice-0123456789abcdef"),
            &event
        )
        .0,
        404
    );
}

/// A loopback load test: concurrent runs, each a realistic session through
/// an 8-plugin stack; every answer is checked (a per-run counter in a guest
/// proves no run sees another's instances), and the figures are printed.
/// `HOOKBOX_LOAD_RUNS` and `HOOKBOX_LOAD_TURNS` scale it.
#[test]
fn load_test_many_concurrent_sessions_lose_and_mix_nothing() {
    let dir = scratch_dir("serve-load");
    let mut manifest = String::new();
    for (name, path) in guests::ALL
        .iter()
        .filter(|(n, _)| guests::EXAMPLES.contains(n) && *n != "call-budget")
    {
        put(&dir, &format!("{name}.wasm"), path);
        manifest.push_str(&format!("[[plugin]]\nfile = \"{name}.wasm\"\n"));
        if *name == "inject-context" {
            manifest.push_str("config = { \"doc.rules\" = \"be brief\", turns = \"every\" }\n");
        }
    }
    for guard in ["a", "b", "c"] {
        put(&dir, &format!("{guard}.wasm"), guests::PUPPET);
        manifest.push_str(&format!(
            "[[plugin]]\nfile = \"{guard}.wasm\"\nconfig = {{ name = \"{guard}\" }}\n"
        ));
    }
    std::fs::write(dir.join("hookbox.toml"), manifest).unwrap();
    let (_tokio, server) = serving(watched(&dir), ServeConfig::default());
    let addr = server.addr;
    let scale = |var: &str, default: usize| {
        std::env::var(var)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let (runs, turns) = (
        scale("HOOKBOX_LOAD_RUNS", 16),
        scale("HOOKBOX_LOAD_TURNS", 10),
    );
    let started = Instant::now();
    let threads: Vec<_> = (0..runs)
        .map(|_| {
            std::thread::spawn(move || {
                let (status, body) = request(addr, "POST", "/runs", "");
                assert_eq!(status, 201, "{body}");
                let run: Value = serde_json::from_str(&body).unwrap();
                let path = format!("/runs/{}/events", run["run_id"].as_str().unwrap());
                let mut latencies = Vec::new();
                let mut post = |event: Value| {
                    let sent = Instant::now();
                    let (status, body) = request(addr, "POST", &path, &event.to_string());
                    latencies.push(sent.elapsed());
                    assert_eq!(status, 200, "{body}");
                    serde_json::from_str::<Value>(&body).unwrap()
                };
                for turn in 1..=turns {
                    let patch = post(json!({"event": "completion-call", "prompt": "tidy up", "turn": turn}));
                    assert_eq!(patch["flow"], "patch-request", "inject-context: {patch}");
                    let jail = post(json!({"event": "tool-call", "tool_name": "read_file", "args": {"path": "../../etc/passwd"}}));
                    assert_eq!(jail["plugin"], "path-jail", "{jail}");
                    let redacted = post(json!({"event": "tool-result", "tool_name": "read_file", "args": {"path": "/workspace/.env"}, "result": "OPENAI_API_KEY=sk-live-4f9a8b7c6d5e4f3a2b1c\n"}));
                    assert_eq!(redacted["plugin"], "redact-secrets", "{redacted}");
                    let counted = post(json!({"event": "tool-call", "tool_name": "b:count", "args": {}}));
                    assert_eq!(
                        counted["reason"],
                        format!("global={turn} scratch={turn}"),
                        "this run's own count"
                    );
                    let done = post(json!({"event": "model-turn-finished", "turn": turn, "content": "ok"}));
                    assert_eq!(done["flow"], "continue");
                }
                latencies
            })
        })
        .collect();
    let mut latencies: Vec<Duration> = threads
        .into_iter()
        .flat_map(|t| t.join().expect("a session failed"))
        .collect();
    let took = started.elapsed();
    latencies.sort();
    let events = latencies.len();
    assert_eq!(events, runs * turns * 5, "nothing lost");
    let at = |q: f64| latencies[((events as f64 * q) as usize).min(events - 1)];
    eprintln!(
        "serve load test: {runs} concurrent runs × {turns} turns × 5 events = {events} events through 8 plugins in {took:?}: {:.0} events/s, p50 {:?}, p99 {:?}",
        events as f64 / took.as_secs_f64(),
        at(0.50),
        at(0.99)
    );
    assert_eq!(server.metrics().events(), events as u64);
}

#[test]
fn a_full_server_sheds_events_with_503_instead_of_queueing() {
    let config = ServeConfig {
        max_in_flight: 1,
        ..ServeConfig::default()
    };
    let f = Fixture::new("serve-shed", config);
    let (slow, other) = (f.new_run(), f.new_run());
    let addr = f.server.addr;
    // A guest that runs to its 100 ms deadline holds the only slot.
    let busy = std::thread::spawn(move || {
        let event = tool_call("guard:loop").to_string();
        // The poller below may hold the slot for a moment first.
        loop {
            let answer = request(addr, "POST", &format!("/runs/{slow}/events"), &event);
            if answer.0 != 503 {
                return answer;
            }
        }
    });
    let mut shed = 0;
    while !busy.is_finished() {
        let (status, reply) = f.event(&other, &tool_call("guard:flow:continue"));
        if status == 503 {
            assert!(
                reply["error"].as_str().unwrap().contains("retry"),
                "{reply}"
            );
            shed += 1;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let (status, body) = busy.join().unwrap();
    assert_eq!(status, 200);
    assert!(body.contains("deadline"), "{body}");
    assert!(shed > 0, "no event was shed while the slot was taken");
    let (status, _) = f.event(&other, &tool_call("guard:flow:continue"));
    assert_eq!(status, 200, "the slot is free again");
}

/// Each token has an equal share of the events decided at once: while one
/// client's share is busy its next event is shed, and another client's
/// events are not.
#[test]
fn one_client_cannot_take_another_clients_share_of_events_in_flight() {
    let (alice, bob) = ("alice-0123456789abcdef", "bob-0123456789abcdef");
    let config = ServeConfig {
        tokens: vec![alice.into(), bob.into()],
        max_in_flight: 2,
        ..ServeConfig::default()
    };
    let f = Fixture::new("serve-flight-shares", config);
    let addr = f.server.addr;
    let run_of = |token: &str| {
        let (status, body) = request_with(addr, "POST", "/runs", Some(token), "");
        assert_eq!(status, 201, "{body}");
        serde_json::from_str::<Value>(&body).unwrap()["run_id"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let (slow, alices, bobs) = (run_of(alice), run_of(alice), run_of(bob));
    let post = move |token: &str, run: &str, event: &str| {
        request_with(
            addr,
            "POST",
            &format!("/runs/{run}/events"),
            Some(token),
            event,
        )
        .0
    };
    // A guest that runs to its deadline holds alice's one place.
    let busy = std::thread::spawn(move || {
        let event = tool_call("guard:loop").to_string();
        loop {
            let status = post(alice, &slow, &event);
            if status != 503 {
                return status;
            }
        }
    });
    let quick = tool_call("guard:flow:continue").to_string();
    let (mut alice_shed, mut bob_shed) = (0, 0);
    while !busy.is_finished() {
        alice_shed += usize::from(post(alice, &alices, &quick) == 503);
        bob_shed += usize::from(post(bob, &bobs, &quick) == 503);
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(busy.join().unwrap(), 200);
    assert!(alice_shed > 0, "alice's second event was never shed");
    assert_eq!(bob_shed, 0, "bob's events were shed for alice's");
}

#[test]
fn a_guest_running_to_its_deadline_holds_up_no_other_connection() {
    let f = Fixture::new("serve-no-head-of-line", ServeConfig::default());
    let other = f.new_run();
    let addr = f.server.addr;
    // Four connections at once, more than this machine has cores (or a
    // runtime has workers), each posting three events in a row that run to
    // the 100 ms deadline.
    let slow: Vec<_> = (0..4)
        .map(|_| {
            let run = f.new_run();
            std::thread::spawn(move || {
                let event = tool_call("guard:loop").to_string();
                (0..3)
                    .map(|_| request(addr, "POST", &format!("/runs/{run}/events"), &event))
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut answered = 0;
    while !slow.iter().all(|busy| busy.is_finished()) {
        let (status, reply) = f.event(&other, &tool_call("guard:flow:continue"));
        assert_eq!(
            (status, &reply["flow"]),
            (200, &json!("continue")),
            "{reply}"
        );
        answered += 1;
    }
    for busy in slow {
        for (status, body) in busy.join().unwrap() {
            assert_eq!(status, 200);
            assert!(body.contains("deadline"), "{body}");
        }
    }
    // A third of a second of deadlines on every core: a client served
    // behind them would get an answer per 100 ms at best.
    assert!(
        answered > 10,
        "only {answered} events of another connection were answered meanwhile"
    );
}

#[test]
fn a_stopped_server_closes_its_kept_alive_connections() {
    let (tokio, server) = serving(
        StackSource::fixed(hookbox::HookStack::new()),
        ServeConfig::default(),
    );
    let mut stream = TcpStream::connect(server.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    write!(stream, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
    let mut answer = [0u8; 256];
    let n = stream.read(&mut answer).unwrap();
    assert!(
        answer[..n].starts_with(b"HTTP/1.1 200"),
        "{:?}",
        String::from_utf8_lossy(&answer[..n])
    );
    // The connection is kept alive (its next request would be served)
    // until the server stops, well before the 10 s header deadline.
    let stopped = Instant::now();
    drop(server);
    let mut rest = Vec::new();
    stream
        .read_to_end(&mut rest)
        .expect("the connection is closed, not left open");
    assert!(
        stopped.elapsed() < Duration::from_secs(2),
        "{:?}",
        stopped.elapsed()
    );
    drop(tokio);
}

#[test]
fn a_stopped_server_lets_go_of_its_stack_and_runs_before_the_process_goes_on() {
    // A native hook holding a token: the stack, and every run on it, hold
    // the hook.
    let token = std::sync::Arc::new(());
    let held = token.clone();
    let mut stack = hookbox::HookStack::new();
    stack.push_hook(hookbox::hook_fn("holder", move |_, _| {
        let _ = &held;
        hookbox::Flow::Continue
    }));
    let (tokio, server) = serving(StackSource::fixed(stack), ServeConfig::default());
    let (status, created) = request(server.addr, "POST", "/runs", "");
    assert_eq!(status, 201, "{created}");
    // A kept-alive connection, its thread idle in it.
    let mut stream = TcpStream::connect(server.addr).unwrap();
    write!(stream, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
    let mut answer = [0u8; 256];
    assert!(stream.read(&mut answer).unwrap() > 0);
    drop(server);
    drop(tokio);
    // What a CLI does next (flush the trace export) sees the runs ended.
    assert_eq!(
        std::sync::Arc::strong_count(&token),
        1,
        "a connection thread still holds the server"
    );
}

#[test]
fn a_fixed_stack_with_a_native_hook_is_served_like_a_directory() {
    let mut stack = hookbox::HookStack::new();
    stack.push_hook(hookbox::hook_fn("no-shell", |_, event| match event {
        hookbox::StepEvent::ToolCall(call) if call.tool_name == "shell" => {
            hookbox::Flow::skip("no shell here")
        }
        _ => hookbox::Flow::Continue,
    }));
    let (_tokio, server) = serving(StackSource::fixed(stack), ServeConfig::default());
    let (status, created) = request(server.addr, "POST", "/runs", "");
    assert_eq!(status, 201, "{created}");
    let run: Value = serde_json::from_str(&created).unwrap();
    let path = format!("/runs/{}/events", run["run_id"].as_str().unwrap());
    let call = json!({"event": "tool-call", "tool_name": "shell", "args": {}}).to_string();
    let (status, answer) = request(server.addr, "POST", &path, &call);
    assert_eq!(status, 200);
    let answer: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(
        (&answer["flow"], &answer["reason"], &answer["plugin"]),
        (&json!("skip"), &json!("no shell here"), &json!("no-shell"))
    );
    let (_, status_body) = request(server.addr, "GET", "/status", "");
    assert_eq!(
        serde_json::from_str::<Value>(&status_body).unwrap()["generation"],
        1
    );
}

#[test]
fn a_secret_in_a_claude_code_tool_response_never_reaches_the_http_answer() {
    let dir = scratch_dir("serve-secrets");
    put(&dir, "redact-secrets.wasm", guests::REDACT_SECRETS);
    std::fs::write(
        dir.join("hookbox.toml"),
        "[[plugin]]\nfile = \"redact-secrets.wasm\"\n",
    )
    .unwrap();
    let (_tokio, server) = serving(watched(&dir), ServeConfig::default());
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/agent-hooks/claude-code");
    for name in [
        "post-tool-use-read-secret",
        "post-tool-use-bash-secret",
        "post-tool-use-write-secret",
    ] {
        let case: Value = serde_json::from_str(
            &std::fs::read_to_string(data.join(format!("{name}.json"))).unwrap(),
        )
        .unwrap();
        let (status, body) = request(
            server.addr,
            "POST",
            "/claude-code/hook",
            &case["input"].to_string(),
        );
        assert_eq!(status, 200, "{name}: {body}");
        for secret in [
            "hunter2",
            "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
            "sk-live-4f9a8b7c6d5e4f3a2b1c",
        ] {
            assert!(!body.contains(secret), "{name}: {secret} in {body}");
        }
        let body: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            body, case["stdout"],
            "{name}: the same answer as the command hook"
        );
    }
}

#[test]
fn sessions_keep_their_stack_unless_told_to_end_on_reload() {
    for end_on_reload in [false, true] {
        let config = ServeConfig {
            end_sessions_on_reload: end_on_reload,
            ..ServeConfig::default()
        };
        let f = Fixture::new(&format!("serve-session-reload-{end_on_reload}"), config);
        let hook = || {
            let input = json!({"session_id": "s", "hook_event_name": "PreToolUse",
                               "tool_name": "guard:version", "tool_input": {}, "tool_use_id": "t"});
            let (_, reply) = f.json("POST", "/claude-code/hook", &input.to_string());
            reply["hookSpecificOutput"]["permissionDecisionReason"].clone()
        };
        assert_eq!(hook(), "v1");
        manifest(&f.dir, "v2");
        let deadline = Instant::now() + Duration::from_secs(30);
        while f.json("GET", "/status", "").1["generation"].as_u64() < Some(2) {
            assert!(Instant::now() < deadline, "no reload");
            std::thread::sleep(Duration::from_millis(20));
        }
        let expected = if end_on_reload { "v2" } else { "v1" };
        assert_eq!(hook(), expected, "end_sessions_on_reload = {end_on_reload}");
    }
}

#[test]
fn a_sessions_run_state_outlives_its_idle_run_through_the_session_store() {
    let state = scratch_dir("serve-session-state");
    for with_store in [false, true] {
        let config = ServeConfig {
            idle_timeout: Duration::from_millis(100),
            session_store: with_store.then(|| {
                let store = hookbox_agents::SessionStore::open(&state.join("sessions")).unwrap();
                std::sync::Arc::new(store) as std::sync::Arc<dyn hookbox_agents::SessionBackend>
            }),
            ..ServeConfig::default()
        };
        let f = Fixture::new(&format!("serve-session-store-{with_store}"), config);
        let count = || {
            let input = json!({"session_id": "s", "hook_event_name": "PreToolUse",
                               "tool_name": "guard:count", "tool_input": {}, "tool_use_id": "t"});
            let (_, reply) = f.json("POST", "/claude-code/hook", &input.to_string());
            reply["hookSpecificOutput"]["permissionDecisionReason"].clone()
        };
        assert_eq!(count(), "global=1 scratch=1");
        // The idle run ends (the reaper ticks every second).
        let deadline = Instant::now() + Duration::from_secs(30);
        while f.json("GET", "/status", "").1["live_runs"] != 0 {
            assert!(Instant::now() < deadline, "the idle run never ended");
            std::thread::sleep(Duration::from_millis(50));
        }
        let expected = if with_store {
            "global=1 scratch=2"
        } else {
            "global=1 scratch=1"
        };
        assert_eq!(count(), expected, "with a session store: {with_store}");
    }
}

#[test]
fn a_run_that_does_not_fit_the_instance_slots_is_shed_with_503_and_the_reason() {
    let runtime = hookbox::Runtime::new(hookbox::RuntimeConfig {
        max_instances: 1,
        ..Default::default()
    })
    .unwrap();
    let guard = hookbox::Plugin::from_file(
        &runtime,
        guests::PUPPET.as_ref(),
        hookbox::PluginOptions {
            config: [("name".to_string(), "guard".to_string())].into(),
            ..Default::default()
        },
    )
    .unwrap();
    let mut stack = hookbox::HookStack::new();
    stack.push_plugin(std::sync::Arc::new(guard));
    let (_tokio, server) = serving(StackSource::fixed(stack), ServeConfig::default());

    let (status, first) = request(server.addr, "POST", "/runs", "");
    assert_eq!(status, 201, "{first}");
    let (status, second) = request(server.addr, "POST", "/runs", "");
    assert_eq!(status, 503, "{second}");
    assert!(second.contains("instance slots"), "{second}");

    // An agent's hook gets its block instead (any other answer is "carry on").
    let hook = json!({"session_id": "s", "hook_event_name": "PreToolUse",
        "tool_name": "Bash", "tool_input": {"command": "ls"}, "cwd": "/", "transcript_path": "/t"});
    let (status, answer) = request(server.addr, "POST", "/claude-code/hook", &hook.to_string());
    assert_eq!(status, 200);
    assert!(
        answer.contains("\"deny\"") && answer.contains("instance slots"),
        "{answer}"
    );

    let (_, status_body) = request(server.addr, "GET", "/status", "");
    let status: Value = serde_json::from_str(&status_body).unwrap();
    assert_eq!(status["instance_slots"], json!({"used": 1, "total": 1}));
    let (_, metrics) = request(server.addr, "GET", "/metrics", "");
    assert!(metrics.contains("hookbox_runs_shed_total 1"), "{metrics}");
    assert!(
        metrics.contains("hookbox_instance_slots_used 1"),
        "{metrics}"
    );
}

/// Reads what the server sends until it closes the connection (or `wait`
/// passes: then `None`).
fn read_until_closed(stream: &mut TcpStream, wait: Duration) -> Option<String> {
    stream.set_read_timeout(Some(wait)).unwrap();
    let mut got = Vec::new();
    match stream.read_to_end(&mut got) {
        Ok(_) => Some(String::from_utf8_lossy(&got).into_owned()),
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
            Some(String::from_utf8_lossy(&got).into_owned())
        }
        Err(_) => None,
    }
}

#[test]
fn slow_clients_are_cut_off_and_a_flood_of_connections_is_shed_not_queued() {
    let config = ServeConfig {
        max_connections: 2,
        header_timeout: Duration::from_millis(300),
        body_timeout: Duration::from_millis(300),
        ..Default::default()
    };
    let f = Fixture::new("serve-slow", config);
    let addr = f.server.addr;

    // Headers that trickle in and never end: the connection is closed.
    let mut trickle = TcpStream::connect(addr).unwrap();
    trickle
        .write_all(b"POST /runs HTTP/1.1\r\nHost: localhost\r\n")
        .unwrap();
    let closed = read_until_closed(&mut trickle, Duration::from_secs(20));
    assert!(
        closed.is_some(),
        "a connection that never finished its headers stayed open"
    );

    // A body that never arrives: 408. (The run is made first: the header
    // deadline runs from the connection's start, and making a run on a
    // loaded machine can take longer than it.)
    let run = f.new_run();
    let mut stalled = TcpStream::connect(addr).unwrap();
    write!(
        stalled,
        "POST /runs/{run}/events HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\n\r\n{{\"event\""
    )
    .unwrap();
    let answer = read_until_closed(&mut stalled, Duration::from_secs(20)).unwrap_or_default();
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    drop(stalled);

    // Two idle connections hold both places: a third is answered 503 at
    // once, and closed. (Its own server, whose header deadline cannot pass
    // while a loaded machine gets to the third connection: a held place cut
    // off early would let the third in.)
    let flood = ServeConfig {
        max_connections: 2,
        header_timeout: Duration::from_secs(120),
        ..Default::default()
    };
    let f = Fixture::new("serve-flood", flood);
    let addr = f.server.addr;
    let held: Vec<TcpStream> = (0..2).map(|_| TcpStream::connect(addr).unwrap()).collect();
    std::thread::sleep(Duration::from_millis(50));
    let mut third = TcpStream::connect(addr).unwrap();
    let answer = read_until_closed(&mut third, Duration::from_secs(20)).unwrap_or_default();
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(answer.contains("retry shortly"), "{answer}");

    // Once they are gone, the server answers again.
    drop(held);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (status, _) = f.request("GET", "/healthz", "");
        if status == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "the server never recovered");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_hook_turned_away_at_the_connection_limit_is_answered_with_a_block() {
    let config = ServeConfig {
        max_connections: 1,
        ..ServeConfig::default()
    };
    let (_tokio, server) = serving(StackSource::fixed(hookbox::HookStack::new()), config);
    // The only connection, open and silent.
    let _held = TcpStream::connect(server.addr).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let input = json!({
        "session_id": "s", "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": "ls"}, "tool_use_id": "t",
    })
    .to_string();
    // Claude Code reads a 503 as "carry on": its hook gets its own block.
    let (status, body) = request(server.addr, "POST", "/claude-code/hook", &input);
    assert_eq!(status, 200, "{body}");
    let reply: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(reply["continue"], false, "{reply}");
    // Any other route is told to come back.
    let (status, body) = request(server.addr, "GET", "/status", "");
    assert_eq!(status, 503, "{body}");
}

/// What a web page can send: a cross-origin `text/plain` POST (no CORS
/// preflight) and, after DNS rebinding, requests to its own name on this
/// machine. serve answers neither on any route; a hook route answers with
/// the agent's block and starts no run. An operator's name and origin are
/// let in.
#[test]
fn no_web_page_reaches_any_route() {
    let config = ServeConfig {
        allowed_hosts: vec!["hooks.internal".into()],
        allowed_origins: vec!["http://localhost:6274".into()],
        ..ServeConfig::default()
    };
    let f = Fixture::new("serve-browsers", config);
    let addr = f.server.addr;
    let hook = json!({"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": "Bash",
                      "tool_input": {"command": "ls"}, "tool_use_id": "t"})
    .to_string();
    let page = "Origin: http://evil.example\r\nContent-Type: text/plain;charset=UTF-8\r\n";
    let rebound = "Host: evil.example:8787\r\nContent-Type: text/plain\r\n";
    for headers in [page, rebound, "Origin: null\r\n"] {
        let (status, body) = exchange(addr, "POST /claude-code/hook", headers, &hook);
        assert_eq!(status, 200, "{headers:?}: {body}");
        let body: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            body["hookSpecificOutput"]["permissionDecision"], "deny",
            "{headers:?}: {body}"
        );
        for (request, body) in [
            ("GET /status", ""),
            ("GET /metrics", ""),
            ("GET /healthz", ""),
            ("POST /runs", ""),
            ("POST /runs/x/events", "{}"),
            ("POST /opencode/hook", "{}"),
        ] {
            let (status, text) = exchange(addr, request, headers, body);
            let expected = if request == "POST /opencode/hook" {
                200
            } else {
                403
            };
            assert_eq!(status, expected, "{request} {headers:?}: {text}");
            assert!(
                !text.contains("guard.wasm"),
                "{request} {headers:?}: {text}"
            );
        }
    }
    // Not one run was made for a page.
    let (_, status) = f.json("GET", "/status", "");
    assert_eq!(status["live_runs"], 0, "{status}");
    // What the refusals say lets the operator in.
    let (_, text) = exchange(addr, "GET /status", rebound, "");
    assert!(text.contains("--allow-host"), "{text}");
    let (_, text) = exchange(addr, "GET /status", page, "");
    assert!(text.contains("--allow-origin"), "{text}");

    // An agent (no Origin), the server's own origin, the operator's name
    // and origin.
    for headers in [
        String::new(),
        format!("Origin: http://{addr}\r\n"),
        "Host: Hooks.Internal\r\n".to_owned(),
        "Origin: http://localhost:6274\r\n".to_owned(),
    ] {
        let (status, text) = exchange(addr, "GET /status", &headers, "");
        assert_eq!(status, 200, "{headers:?}: {text}");
    }
    let (status, body) = exchange(addr, "POST /claude-code/hook", "", &hook);
    assert_eq!(status, 200);
    assert!(!body.contains("deny"), "{body}");
}

/// The same, from a real browser: a page in headless Chromium, on a
/// loopback origin of its own, posts a Claude Code hook to serve the way any
/// web page can (`fetch` with a string body: `text/plain`, no preflight)
/// and tries to read `/status`. It starts no run and reads nothing; the same
/// page from an origin the operator allows does start one, so the browser
/// did send what serve refused.
#[test]
fn a_page_in_a_real_browser_starts_no_run_and_reads_nothing() {
    let Some(chromium) = super::browser::chromium() else {
        return;
    };
    let hook = json!({"session_id": "from-a-page", "hook_event_name": "PreToolUse",
        "tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "t"});
    // One page, on one origin; the server it posts to is in its query.
    let page = format!(
        r#"<!doctype html><title>a page</title><body><script>
const serve = "http://" + new URLSearchParams(location.search).get("serve");
const done = (what) => {{ const p = document.createElement("p"); p.className = "outcome"; p.textContent = what; document.body.append(p); }};
const read = (what, r) => r.text().then((t) => done(what + " read " + r.status + " " + t));
fetch(serve + "/claude-code/hook", {{ method: "POST", body: JSON.stringify({hook}) }})
  .then((r) => read("hook", r), (e) => done("hook unread " + e))
  .then(() => fetch(serve + "/status"))
  .then((r) => read("status", r), (e) => done("status unread " + e));
</script></body>"#
    );
    let url = super::browser::serve_page(page);
    let visit = |f: &Fixture| {
        let dom = super::browser::dump_dom(&chromium, &format!("{url}?serve={}", f.server.addr));
        assert_eq!(
            dom.matches("class=\"outcome\"").count(),
            2,
            "the page ran: {dom}"
        );
        dom
    };
    let live_runs = |f: &Fixture| f.json("GET", "/status", "").1["live_runs"].clone();

    let f = Fixture::new("serve-chromium", ServeConfig::default());
    let dom = visit(&f);
    assert!(
        dom.contains("hook unread") && dom.contains("status unread"),
        "{dom}"
    );
    assert!(!dom.contains("guard.wasm"), "{dom}");
    assert_eq!(live_runs(&f), 0, "a page started a run");

    // The control: the page's own origin let in by the operator.
    let config = ServeConfig {
        allowed_origins: vec![url.trim_end_matches('/').to_owned()],
        ..ServeConfig::default()
    };
    let allowed = Fixture::new("serve-chromium-allowed", config);
    let dom = visit(&allowed);
    assert_eq!(
        live_runs(&allowed),
        1,
        "the allowed page's hook started a run: {dom}"
    );
}

/// A session's run is found by its agent, session id and subagent id, each
/// whole: ids that would read the same joined with `/` are two sessions.
#[test]
fn sessions_whose_ids_join_alike_keep_runs_of_their_own() {
    let f = Fixture::new("serve-session-keys", ServeConfig::default());
    let count = |session: &str, agent: Option<&str>| {
        let mut input = json!({"session_id": session, "hook_event_name": "PreToolUse",
                               "tool_name": "guard:count", "tool_input": {}, "tool_use_id": "t"});
        if let Some(agent) = agent {
            input["agent_id"] = json!(agent);
        }
        let (status, body) = f.json("POST", "/claude-code/hook", &input.to_string());
        assert_eq!(status, 200, "{body}");
        body["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap_or_else(|| panic!("{body}"))
            .to_owned()
    };
    assert!(count("a/b", Some("c")).contains("scratch=1"));
    assert!(
        count("a", Some("b/c")).contains("scratch=1"),
        "two sessions shared a run"
    );
    assert!(
        count("a/b", Some("c")).contains("scratch=2"),
        "a session lost its run"
    );
}

/// A secret a model streams split across two deltas is never in what
/// `serve` says to show: each text-delta's answer carries `show`, the text
/// no later delta can change, and stream-response-finish the rest.
#[test]
fn a_secret_split_across_streamed_deltas_is_never_shown() {
    let dir = scratch_dir("serve-stream");
    put(&dir, "redact-secrets.wasm", guests::REDACT_SECRETS);
    put(&dir, "pii.wasm", guests::PII);
    let (_tokio, server) = serving(watched(&dir), ServeConfig::default());
    let addr = server.addr;
    let (_, created) = request(addr, "POST", "/runs", "");
    let run: Value = serde_json::from_str(&created).unwrap();
    let path = format!("/runs/{}/events", run["run_id"].as_str().unwrap());
    let mut shown = String::new();
    let deltas = [
        "Here is the key: sk-live-4f9a8b",
        "7c6d5e4f3a2b1c9d, and mail ada.love",
        "lace@example.com or call +44 20 7946 ",
        "0958 for the rest.",
    ];
    for delta in deltas {
        let event = json!({"event": "text-delta", "delta": delta});
        let (status, body) = request(addr, "POST", &path, &event.to_string());
        assert_eq!(status, 200, "{body}");
        let answer: Value = serde_json::from_str(&body).unwrap();
        shown.push_str(
            answer["show"]
                .as_str()
                .expect("a text-delta says what to show"),
        );
    }
    let finish = json!({"event": "stream-response-finish", "prompt": "hi", "response": {"content": deltas.concat()}});
    let (_, body) = request(addr, "POST", &path, &finish.to_string());
    let answer: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answer["flow"], "continue", "{answer}");
    shown.push_str(answer["show"].as_str().unwrap());
    for leaked in ["sk-live", "4f9a8b7c", "ada.love", "example.com", "7946"] {
        assert!(!shown.contains(leaked), "{leaked} shown: {shown}");
    }
    assert!(
        shown.starts_with("Here is the key: ") && shown.ends_with(" for the rest."),
        "{shown}"
    );
    assert!(shown.contains("[REDACTED"), "{shown}");
}
