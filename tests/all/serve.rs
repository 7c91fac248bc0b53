//! `hookbox serve` over real HTTP on a loopback port: the run lifecycle,
//! every error path, fail-closed answers, metrics, and hot reload under
//! traffic.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use hookbox::serve::{ServeConfig, Server};
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

impl Fixture {
    fn new(label: &str, config: ServeConfig) -> Fixture {
        let dir = scratch_dir(label);
        put(&dir, "guard.wasm", guests::PUPPET);
        manifest(&dir, "v1");
        let tokio = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let server = tokio
            .block_on(Server::start(runtime(), &dir, addr, config))
            .expect("server starts");
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
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
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
