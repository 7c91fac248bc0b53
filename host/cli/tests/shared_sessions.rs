//! Session state shared by `hookbox serve` instances (and `hookbox hook`
//! processes) in Redis, instances behind a load balancer: against Debian's
//! `redis-server` and `haproxy`, started here on free loopback ports, with
//! Claude Code's HTTP hook inputs as its reference documents them.
//!
//! Without them (tests/sessions/setup.sh fails) these tests say so and
//! pass, unless `HOOKBOX_SESSIONS=required` (as CI sets it).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use hookbox_tests::guests;
use serde_json::{Value, json};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Whether redis-server and haproxy are here (installed if need be).
fn available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        let setup = Command::new(repo().join("tests/sessions/setup.sh")).status();
        if setup.is_ok_and(|s| s.success()) {
            return true;
        }
        let required = std::env::var("HOOKBOX_SESSIONS").is_ok_and(|v| v == "required");
        assert!(
            !required,
            "HOOKBOX_SESSIONS=required, and tests/sessions/setup.sh failed"
        );
        eprintln!("skipping the shared-session tests: no redis-server or haproxy");
        false
    })
}

fn fresh(label: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hookbox-shared-{label}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn wait_for(what: &str, mut ready: impl FnMut() -> bool) {
    let started = Instant::now();
    while !ready() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{what} did not happen within a minute"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A child process, killed on drop.
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Process {
    fn signal(&self, signal: &str) {
        let sent = Command::new("kill")
            .args([signal, &self.0.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
    }
}

/// A redis-server on a free loopback port, keeping its dump in its own
/// folder (so a restart finds what it held).
struct Redis {
    process: Option<Process>,
    port: u16,
    dir: PathBuf,
    extra: Vec<String>,
}

impl Redis {
    /// A new Redis, made hookbox's session store (`hookbox state init`).
    fn start(label: &str) -> Redis {
        let redis = Redis::start_with(label, free_port(), &[]);
        state_init(&redis.url(), &[]);
        redis
    }

    fn start_with(label: &str, port: u16, extra: &[&str]) -> Redis {
        let mut redis = Redis {
            process: None,
            port,
            dir: fresh(&format!("{label}-redis")),
            extra: extra.iter().map(|s| (*s).to_owned()).collect(),
        };
        redis.run();
        redis
    }

    fn run(&mut self) {
        let child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(&self.dir)
            .args(["--port", &self.port.to_string()])
            .args(&self.extra)
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server starts");
        self.process = Some(Process(child));
        if self.extra.is_empty() {
            wait_for("redis-server answering", || self.ping());
        } else {
            let port = self.tls_port();
            wait_for("redis-server listening", || {
                TcpStream::connect(("127.0.0.1", port)).is_ok()
            });
        }
    }

    fn tls_port(&self) -> u16 {
        self.extra
            .iter()
            .position(|a| a == "--tls-port")
            .map(|i| self.extra[i + 1].parse().unwrap())
            .unwrap_or(self.port)
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    fn connection(&self) -> redis::Connection {
        redis::Client::open(self.url())
            .unwrap()
            .get_connection_with_timeout(Duration::from_secs(2))
            .unwrap()
    }

    fn ping(&self) -> bool {
        redis::Client::open(self.url())
            .unwrap()
            .get_connection_with_timeout(Duration::from_millis(200))
            .and_then(|mut c| redis::cmd("PING").query::<String>(&mut c))
            .is_ok()
    }

    /// Saves its data and exits, as an operator's `SHUTDOWN SAVE`.
    fn shut_down(&mut self) {
        let _ = redis::cmd("SHUTDOWN")
            .arg("SAVE")
            .query::<()>(&mut self.connection());
        if let Some(mut process) = self.process.take() {
            let _ = process.0.wait();
        }
    }

    /// The sessions' state keys it holds, with their time to live (ms).
    fn sessions(&self) -> Vec<(String, i64)> {
        let mut con = self.connection();
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg("hookbox:session:*")
            .query(&mut con)
            .unwrap();
        keys.into_iter()
            .map(|key| {
                let ttl: i64 = redis::cmd("PTTL").arg(&key).query(&mut con).unwrap();
                (key, ttl)
            })
            .collect()
    }
}

/// A plugin directory running call-budget with `max_calls`.
fn budget_dir(label: &str, max_calls: u32) -> PathBuf {
    let dir = fresh(label);
    std::fs::copy(guests::CALL_BUDGET, dir.join("call-budget.wasm")).unwrap();
    set_budget(&dir, max_calls);
    dir
}

fn set_budget(dir: &Path, max_calls: u32) {
    std::fs::write(
        dir.join("hookbox.toml"),
        format!(
            "[[plugin]]\nfile = \"call-budget.wasm\"\n[plugin.config]\nmax_calls = \"{max_calls}\"\n"
        ),
    )
    .unwrap();
}

/// `hookbox serve` on a free loopback port with its sessions in `state`.
struct Serve {
    _process: Process,
    port: u16,
    log: PathBuf,
}

impl Serve {
    fn start(label: &str, plugins: &Path, state: &str) -> Serve {
        Serve::start_with_tokens(label, plugins, state, "")
    }

    /// With `HOOKBOX_SERVE_TOKENS=tokens` (none when empty).
    fn start_with_tokens(label: &str, plugins: &Path, state: &str, tokens: &str) -> Serve {
        let port = free_port();
        let log = fresh(&format!("{label}-serve")).join("stderr.log");
        let child = Command::new(env!("CARGO_BIN_EXE_hookbox"))
            .args([
                "serve",
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--plugins",
            ])
            .arg(plugins)
            .args(["--state", state])
            .args(["--state-timeout-ms", "500", "--state-lease-ms", "2000"])
            .env("HOOKBOX_LOG", "warn")
            .env("HOOKBOX_CACHE_DIR", "off")
            .env_remove("HOOKBOX_STATE")
            .env("HOOKBOX_SERVE_TOKENS", tokens)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("hookbox serve starts");
        let serve = Serve {
            _process: Process(child),
            port,
            log,
        };
        wait_for("hookbox serve answering", || {
            get(port, "/healthz").is_some_and(|(status, _)| status == 200)
        });
        serve
    }

    fn status(&self) -> Value {
        let (_, body) = get(self.port, "/status").unwrap();
        serde_json::from_str(&body).unwrap()
    }

    fn metrics(&self) -> String {
        get(self.port, "/metrics").unwrap().1
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

/// HAProxy on a free loopback port, round-robin over `servers`, each
/// checked at `/healthz` every 200 ms, a request whose server refuses the
/// connection sent to the other.
struct Balancer {
    _process: Process,
    port: u16,
}

impl Balancer {
    fn start(label: &str, servers: &[u16]) -> Balancer {
        let dir = fresh(&format!("{label}-haproxy"));
        let port = free_port();
        let config = dir.join("haproxy.cfg");
        std::fs::write(&config, haproxy_config(port, servers)).unwrap();
        let child = Command::new("haproxy")
            .arg("-f")
            .arg(&config)
            .arg("-db")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("haproxy starts");
        wait_for("haproxy answering", || {
            get(port, "/healthz").is_some_and(|(status, _)| status == 200)
        });
        Balancer {
            _process: Process(child),
            port,
        }
    }
}

/// The configuration docs/serve.md shows, on the ports given.
fn haproxy_config(port: u16, servers: &[u16]) -> String {
    let mut config = format!(
        "global\n    maxconn 1024\n\ndefaults\n    mode http\n    timeout connect 2s\n    timeout client 60s\n    timeout server 60s\n    retries 3\n    option redispatch\n\nfrontend hooks\n    bind 127.0.0.1:{port}\n    default_backend hookbox\n\nbackend hookbox\n    balance roundrobin\n    option httpchk GET /healthz\n"
    );
    for (i, server) in servers.iter().enumerate() {
        config.push_str(&format!(
            "    server hookbox{i} 127.0.0.1:{server} check inter 200ms fall 1 rise 1\n"
        ));
    }
    config
}

/// One HTTP/1.1 request on its own connection: the status and the body.
fn request(port: u16, method: &str, path: &str, body: &str) -> Option<(u16, String)> {
    request_as(port, method, path, body, None)
}

/// The same, with `Authorization: Bearer TOKEN`.
fn request_as(
    port: u16,
    method: &str,
    path: &str,
    body: &str,
    token: Option<&str>,
) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    let authorization = token.map_or(String::new(), |t| format!("authorization: Bearer {t}\r\n"));
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nhost: localhost\r\n{authorization}content-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    let (head, body) = answer.split_once("\r\n\r\n")?;
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    Some((status, body.to_owned()))
}

fn get(port: u16, path: &str) -> Option<(u16, String)> {
    request(port, "GET", path, "")
}

/// Claude Code's `PreToolUse` HTTP hook for a Bash call of `session`,
/// through `port`: "allow" (no decision: Claude's own permissions decide)
/// or the decision, with its reason.
fn pre_tool_use(port: u16, session: &str) -> (String, String) {
    pre_tool_use_as(port, session, None)
}

/// The same, as the client of `token`.
fn pre_tool_use_as(port: u16, session: &str, token: Option<&str>) -> (String, String) {
    let input = json!({
        "session_id": session, "transcript_path": "/home/u/.claude/projects/p/s.jsonl",
        "cwd": "/home/u/p", "permission_mode": "default", "hook_event_name": "PreToolUse",
        "tool_name": "Bash", "tool_input": {"command": "ls", "description": "List files"},
        "tool_use_id": format!("toolu_{}", free_port()),
    });
    let (status, body) = request_as(port, "POST", "/claude-code/hook", &input.to_string(), token)
        .expect("the hook is answered");
    assert_eq!(status, 200, "a hook is always answered 200: {body}");
    let answer: Value = serde_json::from_str(&body).unwrap();
    let output = &answer["hookSpecificOutput"];
    let decision = output["permissionDecision"]
        .as_str()
        .unwrap_or("allow")
        .to_owned();
    let reason = output["permissionDecisionReason"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    (decision, reason)
}

fn decision(port: u16, session: &str) -> String {
    pre_tool_use(port, session).0
}

fn hooks_served(serve: &Serve) -> u64 {
    serve.status()["session_store"]["hooks"].as_u64().unwrap()
}

#[test]
fn a_call_budget_holds_across_two_instances_behind_a_balancer() {
    if !available() {
        return;
    }
    let redis = Redis::start("budget");
    let dir = budget_dir("budget", 3);
    let (a, b) = (
        Serve::start("budget-a", &dir, &redis.url()),
        Serve::start("budget-b", &dir, &redis.url()),
    );
    let lb = Balancer::start("budget", &[a.port, b.port]);
    for call in 1..=3 {
        assert_eq!(decision(lb.port, "s1"), "allow", "call {call} of 3");
    }
    let (denied, reason) = pre_tool_use(lb.port, "s1");
    assert_eq!(denied, "deny", "the fourth call is over budget");
    assert!(reason.contains("budget exhausted: 4 calls"), "{reason}");
    assert_eq!(
        decision(lb.port, "s2"),
        "allow",
        "another session has its own budget"
    );
    // Both instances took hooks of the session.
    assert!(hooks_served(&a) >= 2 && hooks_served(&b) >= 2);
    let status = a.status();
    assert_eq!(status["session_store"]["up"], true, "{status}");
    assert_eq!(status["session_store"]["shared"], true);
    assert!(
        status["session_store"]["at"]
            .as_str()
            .unwrap()
            .starts_with("redis://127.0.0.1:"),
        "{status}"
    );
    assert!(a.metrics().contains("hookbox_session_store_up 1"));
    // Each session is a key that expires (a day idle), and the lock is
    // gone after each hook.
    let sessions = redis.sessions();
    assert_eq!(sessions.len(), 2, "{sessions:?}");
    for (key, ttl) in sessions {
        assert!(!key.ends_with(":lock"), "a lock was left: {key}");
        assert!(
            ttl > 23 * 3600 * 1000 && ttl <= 24 * 3600 * 1000,
            "{key}: {ttl}"
        );
    }
}

#[test]
fn a_client_is_its_token_on_every_instance_whatever_order_they_list_tokens_in() {
    if !available() {
        return;
    }
    let redis = Redis::start("tokens");
    let dir = budget_dir("tokens", 2);
    let (alice, bob) = ("alice-0123456789abcdef", "bob-0123456789abcdef");
    let a = Serve::start_with_tokens("tokens-a", &dir, &redis.url(), &format!("{alice},{bob}"));
    let b = Serve::start_with_tokens("tokens-b", &dir, &redis.url(), &format!("{bob},{alice}"));
    let call = |serve: &Serve, token: &str| pre_tool_use_as(serve.port, "s", Some(token)).0;
    assert_eq!(call(&a, alice), "allow");
    assert_eq!(call(&b, alice), "allow", "alice's second call, on b");
    assert_eq!(
        call(&a, alice),
        "deny",
        "alice's third call is over her budget of 2"
    );
    // bob's session of the same id is another session.
    assert_eq!(call(&b, bob), "allow");
    assert_eq!(call(&a, bob), "allow");
    assert_eq!(call(&b, bob), "deny");
}

#[test]
fn concurrent_sessions_across_both_instances_lose_no_update() {
    if !available() {
        return;
    }
    let redis = Redis::start("concurrent");
    let dir = budget_dir("concurrent", 50);
    let (a, b) = (
        Serve::start("concurrent-a", &dir, &redis.url()),
        Serve::start("concurrent-b", &dir, &redis.url()),
    );
    let lb = Balancer::start("concurrent", &[a.port, b.port]);
    // 8 sessions × 50 hooks, two threads per session (a session's hooks
    // race each other too), all through the balancer.
    let port = lb.port;
    let threads: Vec<_> = (0..16)
        .map(|thread| {
            std::thread::spawn(move || {
                let session = format!("session-{}", thread / 2);
                (0..25)
                    .map(|_| decision(port, &session))
                    .filter(|d| d == "allow")
                    .count()
            })
        })
        .collect();
    let allowed: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(
        allowed, 400,
        "every one of the 50 calls of each session is within its budget"
    );
    // Each guard saw exactly 50 calls: the 51st of every session is over.
    for session in 0..8 {
        let (denied, reason) = pre_tool_use(port, &format!("session-{session}"));
        assert_eq!(denied, "deny", "session-{session}: {reason}");
        assert!(reason.contains("51 calls"), "session-{session}: {reason}");
    }
    assert!(hooks_served(&a) >= 100 && hooks_served(&b) >= 100);
}

#[test]
fn a_session_carries_on_through_the_other_instance_and_through_a_redis_outage() {
    if !available() {
        return;
    }
    let mut redis = Redis::start("outage");
    let dir = budget_dir("outage", 5);
    let a = Serve::start("outage-a", &dir, &redis.url());
    let b = Serve::start("outage-b", &dir, &redis.url());
    let lb = Balancer::start("outage", &[a.port, b.port]);
    assert_eq!(decision(lb.port, "s"), "allow");
    assert_eq!(decision(lb.port, "s"), "allow");
    // One instance dies mid-session: the balancer sends the session's
    // hooks to the other, which has its state (2 calls so far).
    drop(a);
    assert_eq!(decision(lb.port, "s"), "allow", "call 3");
    // Redis stops (saving what it holds): hooks are blocked, with the
    // agent's block, and logged.
    redis.shut_down();
    let (denied, reason) = pre_tool_use(lb.port, "s");
    assert_eq!(
        denied, "deny",
        "a store that is down never lets a call through"
    );
    assert!(
        reason.contains("session state in redis://127.0.0.1:"),
        "{reason}"
    );
    let status = b.status();
    assert_eq!(status["session_store"]["up"], false, "{status}");
    assert!(status["session_store"]["last_error"]["error"].is_string());
    assert!(b.metrics().contains("hookbox_session_store_up 0"));
    assert!(
        b.metrics()
            .contains("hookbox_session_store_total{result=\"error\"} 1")
    );
    assert!(b.log().contains("session state unavailable"), "{}", b.log());
    // Back up: the session resumes where it was (the blocked call did
    // not count): calls 4 and 5, then over budget.
    redis.run();
    assert_eq!(decision(lb.port, "s"), "allow", "call 4");
    assert_eq!(decision(lb.port, "s"), "allow", "call 5");
    assert_eq!(decision(lb.port, "s"), "deny", "call 6");
    assert_eq!(b.status()["session_store"]["up"], true);
}

#[test]
fn a_redis_slow_past_the_deadline_blocks_and_a_session_resumes_after_it() {
    if !available() {
        return;
    }
    let redis = Redis::start("slow");
    let dir = budget_dir("slow", 3);
    let serve = Serve::start("slow", &dir, &redis.url());
    assert_eq!(decision(serve.port, "s"), "allow");
    // Redis stops answering (it is paused): the hook is blocked once the
    // deadline (500 ms) passes, not left waiting.
    redis.process.as_ref().unwrap().signal("-STOP");
    let started = Instant::now();
    let (denied, reason) = pre_tool_use(serve.port, "s");
    let took = started.elapsed();
    redis.process.as_ref().unwrap().signal("-CONT");
    assert_eq!(denied, "deny");
    assert!(reason.contains("no answer within 500ms"), "{reason}");
    assert!(took < Duration::from_secs(10), "{took:?}");
    // What Redis ran late (the paused hook's take) holds the session for
    // a lease at most (2 s here); then the session goes on.
    assert_eq!(decision(serve.port, "s"), "allow", "call 2");
    assert_eq!(decision(serve.port, "s"), "allow", "call 3");
    assert_eq!(decision(serve.port, "s"), "deny", "call 4");
}

#[test]
fn a_store_answering_garbage_blocks_and_status_says_why() {
    if !available() {
        return;
    }
    // Something that is not Redis on the port: an HTTP server's answer.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut stream = stream;
            let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n");
        }
    });
    let dir = budget_dir("garbage", 3);
    let serve = Serve::start("garbage", &dir, &format!("redis://127.0.0.1:{port}"));
    let (denied, reason) = pre_tool_use(serve.port, "s");
    assert_eq!(denied, "deny");
    assert!(reason.contains("session state in redis://"), "{reason}");
    let status = serve.status();
    assert_eq!(status["session_store"]["up"], false, "{status}");
    assert_eq!(status["session_store"]["errors"], 1);
    // A hook that maps to nothing guarded asks nobody: no opinion, as ever.
    let notification =
        json!({"session_id": "s", "hook_event_name": "Notification", "message": "hi"});
    let (_, body) = request(
        serve.port,
        "POST",
        "/claude-code/hook",
        &notification.to_string(),
    )
    .unwrap();
    assert!(!body.contains("deny"), "{body}");
}

#[test]
fn a_state_key_that_is_not_a_sessions_blocks_and_names_the_key() {
    if !available() {
        return;
    }
    let redis = Redis::start("bad-state");
    let dir = budget_dir("bad-state", 3);
    let serve = Serve::start("bad-state", &dir, &redis.url());
    assert_eq!(decision(serve.port, "s"), "allow");
    let sessions = redis.sessions();
    let [(key, _)] = sessions.as_slice() else {
        panic!("{sessions:?}")
    };
    // Someone else's value under the key: never read as a new session.
    redis::cmd("SET")
        .arg(key)
        .arg("{\"calls\": 0}")
        .query::<()>(&mut redis.connection())
        .unwrap();
    let (denied, reason) = pre_tool_use(serve.port, "s");
    assert_eq!(denied, "deny");
    assert!(
        reason.contains(key.as_str()) && reason.contains("delete that key"),
        "{reason}"
    );
    // Deleted, the session starts afresh.
    redis::cmd("DEL")
        .arg(key)
        .query::<()>(&mut redis.connection())
        .unwrap();
    assert_eq!(decision(serve.port, "s"), "allow");
}

#[test]
fn a_reload_on_one_instance_moves_its_sessions_forward_and_the_other_refuses_them_until_it_reloads()
{
    if !available() {
        return;
    }
    let redis = Redis::start("reload");
    let (dir_a, dir_b) = (budget_dir("reload-a", 3), budget_dir("reload-b", 3));
    let a = Serve::start("reload-a", &dir_a, &redis.url());
    let b = Serve::start("reload-b", &dir_b, &redis.url());
    assert_eq!(decision(a.port, "s"), "allow", "call 1, on a");
    assert_eq!(
        decision(b.port, "s"),
        "allow",
        "call 2, on b: the same stack"
    );
    // Only a reloads, to a budget of 5.
    set_budget(&dir_a, 5);
    wait_for("a reloading", || a.status()["generation"] == 2);
    // The session moves to a's newer stack, keeping its state: call 3 of 5.
    assert_eq!(decision(a.port, "s"), "allow", "call 3, on a's new stack");
    // b has only the older stack: it refuses the session, never answering
    // it with a policy the session has left.
    let (refused, reason) = pre_tool_use(b.port, "s");
    assert_eq!(refused, "deny");
    assert!(
        reason.contains("does not have") && reason.contains("reload it"),
        "{reason}"
    );
    assert_eq!(b.status()["session_store"]["sessions_refused"], 1);
    assert_eq!(a.status()["session_store"]["sessions_moved"], 1);
    // b's refusal cost the session nothing: calls 4 and 5 on a, then over.
    assert_eq!(decision(a.port, "s"), "allow", "call 4");
    // A new session started on b's older stack is moved by a too.
    assert_eq!(decision(b.port, "new"), "allow");
    assert_eq!(decision(a.port, "new"), "allow");
    // b reloads to the same directory: it has the session's stack again.
    set_budget(&dir_b, 5);
    wait_for("b reloading", || b.status()["generation"] == 2);
    assert_eq!(decision(b.port, "s"), "allow", "call 5, on b");
    let (denied, reason) = pre_tool_use(b.port, "s");
    assert_eq!(denied, "deny");
    assert!(reason.contains("budget exhausted: 6 calls"), "{reason}");
}

#[test]
fn hook_processes_share_a_session_through_redis() {
    if !available() {
        return;
    }
    let redis = Redis::start("hook");
    let dir = budget_dir("hook", 1);
    let call = |session: &str, state: &str| {
        let input = json!({
            "session_id": session, "transcript_path": "/t.jsonl", "cwd": "/w",
            "permission_mode": "default", "hook_event_name": "PreToolUse",
            "tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "t",
        });
        let mut child = Command::new(env!("CARGO_BIN_EXE_hookbox"))
            .args(["hook", "claude-code", "--plugins"])
            .arg(&dir)
            .env("HOOKBOX_STATE", state)
            .env("HOOKBOX_LOG", "off")
            .env("HOOKBOX_CACHE_DIR", "off")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.to_string().as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0));
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if text.contains("\"deny\"") {
            "deny"
        } else {
            "allow"
        }
        .to_owned()
    };
    assert_eq!(call("s1", &redis.url()), "allow");
    assert_eq!(
        call("s1", &redis.url()),
        "deny",
        "the second call of s1 is over budget"
    );
    assert_eq!(call("s2", &redis.url()), "allow");
    // Redis is not there: the call is blocked, not allowed as a new session's.
    let nobody = format!("redis://127.0.0.1:{}", free_port());
    assert_eq!(call("s3", &nobody), "deny");
}

#[test]
fn tls_and_a_password_from_the_url_and_a_wrong_password_blocks() {
    if !available() {
        return;
    }
    let dir = fresh("tls-certs");
    // A CA the client trusts through SSL_CERT_FILE, and the server's
    // certificate for 127.0.0.1 from it (openssl, as Debian ships it).
    let openssl = |args: &[&str]| {
        let made = Command::new("openssl")
            .args(args)
            .current_dir(&dir)
            .output()
            .unwrap();
        assert!(
            made.status.success(),
            "{}",
            String::from_utf8_lossy(&made.stderr)
        );
    };
    let p256 = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
    ];
    openssl(
        &[
            &["req", "-x509"],
            &p256[..],
            &[
                "-days",
                "2",
                "-subj",
                "/CN=hookbox test CA",
                "-keyout",
                "ca.key",
                "-out",
                "ca.pem",
            ],
        ]
        .concat(),
    );
    openssl(
        &[
            &["req"],
            &p256[..],
            &[
                "-subj",
                "/CN=127.0.0.1",
                "-keyout",
                "key.pem",
                "-out",
                "cert.csr",
            ],
        ]
        .concat(),
    );
    std::fs::write(
        dir.join("leaf.ext"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n",
    )
    .unwrap();
    openssl(&[
        "x509",
        "-req",
        "-in",
        "cert.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "2",
        "-extfile",
        "leaf.ext",
        "-out",
        "cert.pem",
    ]);
    let tls_port = free_port();
    let cert = dir.join("cert.pem").display().to_string();
    let key = dir.join("key.pem").display().to_string();
    let ca = dir.join("ca.pem").display().to_string();
    let _redis = Redis::start_with(
        "tls",
        0,
        &[
            "--tls-port",
            &tls_port.to_string(),
            "--tls-cert-file",
            &cert,
            "--tls-key-file",
            &key,
            "--tls-ca-cert-file",
            &ca,
            "--tls-auth-clients",
            "no",
            "--requirepass",
            "a-long-redis-password",
        ],
    );
    state_init(
        &format!("rediss://:a-long-redis-password@127.0.0.1:{tls_port}"),
        &[("SSL_CERT_FILE", ca.as_str())],
    );
    let plugins = budget_dir("tls", 1);
    let start = |password: &str| {
        let port = free_port();
        let child = Command::new(env!("CARGO_BIN_EXE_hookbox"))
            .args([
                "serve",
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--plugins",
            ])
            .arg(&plugins)
            .arg("--state")
            .arg(format!("rediss://:{password}@127.0.0.1:{tls_port}"))
            .env("SSL_CERT_FILE", &ca)
            .env("HOOKBOX_LOG", "off")
            .env("HOOKBOX_CACHE_DIR", "off")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        wait_for("hookbox serve answering", || {
            get(port, "/healthz").is_some_and(|(status, _)| status == 200)
        });
        (Process(child), port)
    };
    let (_good, port) = start("a-long-redis-password");
    let (first, reason) = pre_tool_use(port, "s");
    assert_eq!(first, "allow", "{reason}");
    assert_eq!(decision(port, "s"), "deny", "the state is kept over TLS");
    let (_bad, port) = start("wrong");
    let (denied, reason) = pre_tool_use(port, "s");
    assert_eq!(denied, "deny");
    assert!(reason.contains("session state in rediss://"), "{reason}");
    let (_, status) = get(port, "/status").unwrap();
    assert!(
        !status.contains("a-long-redis-password") && !status.contains(":wrong@"),
        "{status}"
    );
}

/// A Redis password kept off the command line (which `ps` shows every
/// local user): from $HOOKBOX_STATE_PASSWORD or `--state-password-file`,
/// it authenticates; one in a `--state` URL on the command line works but
/// is warned of, and so is `redis://` to another machine (in the clear).
#[test]
fn a_redis_password_can_stay_off_the_command_line() {
    if !available() {
        return;
    }
    let redis = Redis::start_with(
        "password",
        free_port(),
        &["--requirepass", "a-long-redis-password"],
    );
    state_init(
        &redis.url(),
        &[("HOOKBOX_STATE_PASSWORD", "a-long-redis-password")],
    );
    let dir = budget_dir("password", 1);
    let secrets = fresh("password-file");
    let file = secrets.join("redis-password");
    std::fs::write(&file, "a-long-redis-password\n").unwrap();
    let call = |session: &str, state: &str, extra: &[&str], env: &[(&str, &str)]| {
        let input = json!({
            "session_id": session, "transcript_path": "/t.jsonl", "cwd": "/w",
            "permission_mode": "default", "hook_event_name": "PreToolUse",
            "tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "t",
        });
        let args = [&["--state-timeout-ms", "500"][..], extra].concat();
        let out = hook_on(&dir, state, (&args, env), &input);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let verdict = if stdout.contains("\"deny\"") {
            "deny"
        } else {
            "allow"
        };
        (verdict, String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let url = redis.url();
    let from_env = [("HOOKBOX_STATE_PASSWORD", "a-long-redis-password")];
    let (first, said) = call("s1", &url, &[], &from_env);
    assert_eq!(first, "allow", "{said}");
    assert!(!said.contains("warning"), "{said}");
    assert_eq!(call("s1", &url, &[], &from_env).0, "deny", "state kept");
    let from_file = ["--state-password-file", file.to_str().unwrap()];
    assert_eq!(call("s2", &url, &from_file, &[]).0, "allow");
    assert_eq!(call("s2", &url, &from_file, &[]).0, "deny", "state kept");
    // No password: Redis refuses, the hook is blocked.
    assert_eq!(call("s3", &url, &[], &[]).0, "deny");

    let in_url = format!("redis://:a-long-redis-password@127.0.0.1:{}", redis.port);
    let (verdict, said) = call("s4", &in_url, &[], &[]);
    assert_eq!(verdict, "allow", "{said}");
    assert!(said.contains("shown to every user"), "{said}");

    let remote = "redis://192.0.2.1:6379";
    let (verdict, said) = call("s5", remote, &[], &from_env);
    assert_eq!(verdict, "deny", "nothing answers there");
    assert!(said.contains("unencrypted"), "{said}");
}

/// With Redis down, a step Claude Code cannot refuse
/// (`PostToolUseFailure`, its error text holding a secret) is not waved
/// through unread: the answer is Claude's stop, as a guard's redaction
/// of it would have been, and the secret is nowhere in it.
#[test]
fn an_outage_never_lets_through_what_the_normal_path_stops() {
    if !available() {
        return;
    }
    let dir = budget_dir("outage-failure", 5);
    let nobody = format!("redis://127.0.0.1:{}", free_port());
    let secret = "ghp_16C7e42F292c6912E7710c838347Ae178B4a";
    let input = json!({
        "session_id": "s", "transcript_path": "/t.jsonl", "cwd": "/w",
        "permission_mode": "default", "hook_event_name": "PostToolUseFailure",
        "tool_name": "Bash", "tool_input": {"command": "deploy"}, "tool_use_id": "t",
        "error": format!("deploy failed: bad credentials GITHUB_TOKEN={secret}"),
    });
    let out = hook_on(&dir, &nobody, (&["--state-timeout-ms", "300"], &[]), &input);
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let answer: Value = serde_json::from_str(&stdout).expect("an answer, not silence");
    assert_eq!(answer["continue"], false, "{answer}");
    assert!(!stdout.contains(secret), "{stdout}");
}

/// `hookbox hook claude-code --plugins DIR --state STATE ARGS...` on
/// `input`, with `env` (and no state settings of this process's own).
fn hook_on(
    dir: &Path,
    state: &str,
    (args, env): (&[&str], &[(&str, &str)]),
    input: &Value,
) -> std::process::Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_hookbox"));
    command
        .args(["hook", "claude-code", "--plugins"])
        .arg(dir)
        .args(["--state", state])
        .args(args)
        .env_remove("HOOKBOX_STATE")
        .env_remove("HOOKBOX_STATE_PASSWORD")
        .env("HOOKBOX_LOG", "off")
        .env("HOOKBOX_CACHE_DIR", "off")
        .envs(env.iter().copied());
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.to_string().as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// `hookbox state init --state URL`, with `env`: it succeeds.
fn state_init(url: &str, env: &[(&str, &str)]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_hookbox"))
        .args(["state", "init", "--state", url])
        .env_remove("HOOKBOX_STATE")
        .env_remove("HOOKBOX_STATE_PASSWORD")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "hookbox state init: {said}");
    said
}

/// Redis restarted without its data: a session would start its budget
/// again from nothing. The store's epoch is gone with the data, so every
/// session is refused (the agent's block, saying why) until an operator
/// runs `hookbox state init`, which then starts them anew, knowingly.
#[test]
fn a_store_that_lost_its_data_takes_no_session_until_an_operator_says_so() {
    if !available() {
        return;
    }
    let mut redis = Redis::start("lost");
    let dir = budget_dir("lost", 2);
    let serve = Serve::start("lost", &dir, &redis.url());
    assert_eq!(decision(serve.port, "s"), "allow");
    assert_eq!(decision(serve.port, "s"), "allow");
    assert_eq!(decision(serve.port, "s"), "deny", "over budget");

    // Restarted empty (no dump: the data is lost).
    if let Some(mut process) = redis.process.take() {
        let _ = process.0.kill();
        let _ = process.0.wait();
    }
    let _ = std::fs::remove_dir_all(&redis.dir);
    std::fs::create_dir_all(&redis.dir).unwrap();
    redis.run();
    let (denied, reason) = pre_tool_use(serve.port, "s");
    assert_eq!(denied, "deny", "not a budget started again: {reason}");
    assert!(reason.contains("hookbox state init"), "{reason}");
    assert_eq!(decision(serve.port, "another"), "deny", "no session at all");

    let said = state_init(&redis.url(), &[]);
    assert!(said.contains("initialized"), "{said}");
    assert!(state_init(&redis.url(), &[]).contains("already"));
    assert_eq!(
        decision(serve.port, "s"),
        "allow",
        "started anew, knowingly"
    );
}
