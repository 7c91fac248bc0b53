//! `cargo bench -p hookbox-bench --bench sessions`: what keeping agents'
//! sessions in Redis adds to a hook through `hookbox serve` (issue 36),
//! against the file store, measured in the same process:
//!
//! - `no store`: serve's live run per session, nothing saved;
//! - `file store`: the same, each hook's state saved to a file under its
//!   lock (what `hookbox serve` does by default);
//! - `Redis, one instance`: each hook a run of its own on the state read
//!   from Redis and written back (two Lua scripts);
//! - `Redis, two instances behind HAProxy`: the same on two servers,
//!   round-robin.
//!
//! The guard is call-budget with a budget never reached: its scratchpad
//! changes on every hook, so every hook writes its state (the costly case).
//! Each of `--sessions` client threads (default 8) is one Claude Code
//! session on its own keep-alive connection, posting `PreToolUse` hooks in
//! a closed loop for `--seconds` (default 5) per configuration; the
//! configurations run in turn, twice, and the better run of each is kept.
//! Redis and HAProxy are Debian's (`tests/sessions/setup.sh`), started
//! here on free loopback ports; the servers are in this process.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use hookbox::watch::Snapshot;
use hookbox::{Runtime, RuntimeConfig};
use hookbox_agents::{RedisStore, SessionBackend, SessionStore};
use hookbox_serve::{ServeConfig, Server, StackSource};

/// A child process, killed on drop.
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

fn wait_until_listening(port: u16, what: &str) -> Result<()> {
    let started = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        ensure!(
            started.elapsed() < Duration::from_secs(30),
            "{what} did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

fn redis(dir: &Path) -> Result<(Process, u16)> {
    let port = free_port()?;
    let child = Command::new("redis-server")
        .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
        .arg("--dir")
        .arg(dir)
        .args(["--port", &port.to_string()])
        .stdout(Stdio::null())
        .spawn()
        .context("redis-server (tests/sessions/setup.sh installs it)")?;
    wait_until_listening(port, "redis-server")?;
    Ok((Process(child), port))
}

fn haproxy(dir: &Path, servers: &[u16]) -> Result<(Process, u16)> {
    let port = free_port()?;
    let mut config = format!(
        "defaults\n    mode http\n    timeout connect 2s\n    timeout client 60s\n    timeout server 60s\n\nfrontend hooks\n    bind 127.0.0.1:{port}\n    default_backend hookbox\n\nbackend hookbox\n    balance roundrobin\n"
    );
    for (i, server) in servers.iter().enumerate() {
        config.push_str(&format!("    server hookbox{i} 127.0.0.1:{server}\n"));
    }
    let path = dir.join("haproxy.cfg");
    std::fs::write(&path, config)?;
    let child = Command::new("haproxy")
        .arg("-f")
        .arg(&path)
        .arg("-db")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("haproxy (tests/sessions/setup.sh installs it)")?;
    wait_until_listening(port, "haproxy")?;
    Ok((Process(child), port))
}

/// One keep-alive connection posting one session's hooks.
struct Client {
    reader: BufReader<TcpStream>,
    request: Vec<u8>,
}

impl Client {
    fn connect(port: u16, session: &str) -> Result<Client> {
        let stream = TcpStream::connect(("127.0.0.1", port))?;
        stream.set_nodelay(true)?;
        let input = serde_json::json!({
            "session_id": session, "transcript_path": "/home/u/.claude/projects/p/s.jsonl",
            "cwd": "/home/u/p", "permission_mode": "default", "hook_event_name": "PreToolUse",
            "tool_name": "Bash", "tool_input": {"command": "ls -la", "description": "List files"},
            "tool_use_id": "toolu_01",
        })
        .to_string();
        let request = format!(
            "POST /claude-code/hook HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{input}",
            input.len()
        )
        .into_bytes();
        Ok(Client {
            reader: BufReader::new(stream),
            request,
        })
    }

    /// One hook; fails unless it was answered 200 without a decision.
    fn hook(&mut self) -> Result<()> {
        self.reader.get_mut().write_all(&self.request)?;
        let mut line = String::new();
        let mut length = 0;
        let mut status = None;
        loop {
            line.clear();
            ensure!(self.reader.read_line(&mut line)? > 0, "connection closed");
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if status.is_none() {
                status = header.split_whitespace().nth(1).map(str::to_owned);
            } else if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse()?;
            }
        }
        let mut body = vec![0; length];
        self.reader.read_exact(&mut body)?;
        ensure!(status.as_deref() == Some("200"), "status {status:?}");
        ensure!(
            !body.windows(4).any(|w| w == b"deny"),
            "a hook was denied: {}",
            String::from_utf8_lossy(&body)
        );
        Ok(())
    }
}

/// Hooks per second and latencies of one configuration.
struct Load {
    hooks: usize,
    elapsed: Duration,
    latencies: Vec<Duration>,
}

impl Load {
    fn per_second(&self) -> f64 {
        self.hooks as f64 / self.elapsed.as_secs_f64()
    }

    fn percentile(&self, p: f64) -> Duration {
        let last = self.latencies.len().saturating_sub(1);
        self.latencies[((last as f64) * p).round() as usize]
    }
}

fn load(port: u16, sessions: usize, seconds: f64, round: usize) -> Result<Load> {
    let deadline = Duration::from_secs_f64(seconds);
    let started = Instant::now();
    let threads: Vec<_> = (0..sessions)
        .map(|i| {
            std::thread::spawn(move || -> Result<Vec<Duration>> {
                let mut client = Client::connect(port, &format!("bench-{round}-{i}"))?;
                let mut latencies = Vec::new();
                while started.elapsed() < deadline {
                    let sent = Instant::now();
                    client.hook()?;
                    latencies.push(sent.elapsed());
                }
                Ok(latencies)
            })
        })
        .collect();
    let mut latencies = Vec::new();
    for thread in threads {
        latencies.extend(
            thread
                .join()
                .map_err(|_| anyhow::anyhow!("a client panicked"))??,
        );
    }
    let elapsed = started.elapsed();
    latencies.sort_unstable();
    Ok(Load {
        hooks: latencies.len(),
        elapsed,
        latencies,
    })
}

fn snapshot(runtime: &Runtime, dir: &Path) -> Result<Arc<Snapshot>> {
    let loaded = hookbox::directory::load(runtime, dir)?;
    Ok(Arc::new(Snapshot {
        plugins: loaded.plugins,
        ..Snapshot::of_stack(loaded.stack)
    }))
}

fn arguments() -> Result<(f64, usize)> {
    let mut seconds = 5.0;
    let mut sessions = 8;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--seconds" => seconds = args.next().context("--seconds S")?.parse()?,
            "--sessions" => sessions = args.next().context("--sessions N")?.parse()?,
            // What cargo bench passes to every bench binary.
            "--bench" => {}
            other => bail!("unknown argument {other}: --seconds S, --sessions N"),
        }
    }
    Ok((seconds, sessions))
}

fn main() -> Result<()> {
    let (seconds, sessions) = arguments()?;
    let scratch =
        std::env::temp_dir().join(format!("hookbox-bench-sessions-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch)?;
    let plugins = scratch.join("plugins");
    std::fs::create_dir_all(&plugins)?;
    std::fs::copy(
        hookbox_tests::guests::CALL_BUDGET,
        plugins.join("call-budget.wasm"),
    )?;
    std::fs::write(
        plugins.join("hookbox.toml"),
        "[[plugin]]\nfile = \"call-budget.wasm\"\n[plugin.config]\nmax_calls = \"1000000000000\"\n",
    )?;
    let (_redis, redis_port) = redis(&scratch)?;
    let redis_url = format!("redis://127.0.0.1:{redis_port}");
    let runtime = Runtime::new(RuntimeConfig::default())?;
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let start = |store: Option<Arc<dyn SessionBackend>>| -> Result<Server> {
        let config = ServeConfig {
            session_store: store,
            ..ServeConfig::default()
        };
        let source = StackSource::Fixed(snapshot(&runtime, &plugins)?);
        let addr: SocketAddr = "127.0.0.1:0".parse()?;
        Ok(tokio.block_on(Server::start(source, addr, config))?)
    };
    let redis_store =
        || -> Result<Arc<dyn SessionBackend>> { Ok(Arc::new(RedisStore::open(&redis_url)?)) };
    // A new Redis is made hookbox's store first (`hookbox state init`).
    RedisStore::open(&redis_url)?.init()?;
    let files = SessionStore::open(&scratch.join("sessions"))?;
    let plain = start(None)?;
    let with_files = start(Some(Arc::new(files)))?;
    let with_redis = start(Some(redis_store()?))?;
    let (second_a, second_b) = (start(Some(redis_store()?))?, start(Some(redis_store()?))?);
    let (_haproxy, balanced) = haproxy(&scratch, &[second_a.addr.port(), second_b.addr.port()])?;
    let configurations: [(&str, u16); 4] = [
        ("no store (live run, nothing saved)", plain.addr.port()),
        ("file store", with_files.addr.port()),
        ("Redis, one instance", with_redis.addr.port()),
        ("Redis, two instances behind HAProxy", balanced),
    ];
    let mut best: Vec<Option<Load>> = (0..configurations.len()).map(|_| None).collect();
    for round in 0..2 {
        for (i, (name, port)) in configurations.iter().enumerate() {
            let measured = load(*port, sessions, seconds, round * 10 + i)?;
            eprintln!(
                "{name}: {:.0} hooks/s, p50 {:?}",
                measured.per_second(),
                measured.percentile(0.5)
            );
            if best[i]
                .as_ref()
                .is_none_or(|b| measured.per_second() > b.per_second())
            {
                best[i] = Some(measured);
            }
        }
    }
    let file = best[1].as_ref().context("measured")?;
    let none = best[0].as_ref().context("measured")?;
    let mut report = format!(
        "{sessions} sessions, each a keep-alive connection in a closed loop, {seconds} s per run, better of 2 runs\n\n| how | hooks/s | p50 | p99 | p50 against no store | p50 against the file store | in the store per hook (mean) |\n|---|---|---|---|---|---|---|\n"
    );
    let servers: [&[&Server]; 4] = [
        &[&plain],
        &[&with_files],
        &[&with_redis],
        &[&second_a, &second_b],
    ];
    for (((name, _), load), servers) in configurations.iter().zip(&best).zip(servers) {
        let load = load.as_ref().context("measured")?;
        let p50 = load.percentile(0.5);
        let ratio = |base: &Load| p50.as_secs_f64() / base.percentile(0.5).as_secs_f64();
        let (mut sum, mut count) = (0.0, 0.0);
        for server in servers {
            let (s, c) = store_time(server.addr.port())?;
            sum += s;
            count += c;
        }
        let in_store = if count > 0.0 {
            format!("{:.0} µs", sum / count * 1e6)
        } else {
            "—".to_owned()
        };
        report.push_str(&format!(
            "| {name} | {:.0} | {:.0} µs | {:.0} µs | {:.2}× | {:.2}× | {in_store} |\n",
            load.per_second(),
            p50.as_secs_f64() * 1e6,
            load.percentile(0.99).as_secs_f64() * 1e6,
            ratio(none),
            ratio(file),
        ));
    }
    let shares: Vec<String> = [&second_a, &second_b]
        .iter()
        .map(|server| {
            let metrics = metrics(server.addr.port())?;
            let line = metrics
                .lines()
                .find(|l| l.starts_with("hookbox_session_store_total{result=\"ok\"}"))
                .context("no store metric")?;
            Ok(line.rsplit(' ').next().unwrap_or("?").to_owned())
        })
        .collect::<Result<_>>()?;
    report.push_str(&format!(
        "\nHooks each instance behind HAProxy took: {}\n",
        shares.join(" and ")
    ));
    println!("{report}");
    let out: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/criterion");
    std::fs::create_dir_all(&out)?;
    std::fs::write(out.join("sessions-report.md"), &report)?;
    drop((plain, with_files, with_redis, second_a, second_b));
    let _ = std::fs::remove_dir_all(&scratch);
    Ok(())
}

/// The server's time in the session store: seconds in all, and hooks.
fn store_time(port: u16) -> Result<(f64, f64)> {
    let metrics = metrics(port)?;
    let value = |name: &str| {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    Ok((
        value("hookbox_session_store_seconds_sum "),
        value("hookbox_session_store_seconds_count "),
    ))
}

fn metrics(port: u16) -> Result<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.write_all(b"GET /metrics HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n")?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    let (_, body) = answer.split_once("\r\n\r\n").context("no body")?;
    Ok(body.to_owned())
}
