//! `cargo bench -p hookbox-bench --bench serve`: `hookbox serve` under
//! keep-alive load (issue 20, target 6), against in-process dispatch of the
//! same stack measured in the same process.
//!
//! A stack of 8 bench guards (1 KiB tool calls, all continue) is served on
//! loopback. Each client connection has one run and one keep-alive
//! HTTP/1.1 connection, posting the next event as soon as the last answer
//! is in (closed loop); one client thread drives them all, as `wrk` does.
//! The client is on the same machine and shares its cores with the server,
//! as the target asks.
//!
//! The baseline runs the same stack in this process with as many threads
//! as cores, each with its own run, dispatching the same event in a loop.
//! The report (printed, and written to `target/criterion/serve-report.md`)
//! gives events/s and latency percentiles for each, and what serve adds
//! per event: the process's CPU time per served event (server and client)
//! less its CPU time per dispatched one.
//!
//! Two floors say where serve's share goes, through the same server and
//! client: the same events to a run of an empty stack (HTTP, parsing, the
//! hand-off to the blocking pool and back, the answer), and to a run that
//! does not exist (HTTP and parsing, answered 404 on the worker: no
//! hand-off, no stack).
//!
//! `-- --seconds S` sets each measurement's length (default 5), and
//! `-- --connections 8,32,64` the connection counts tried.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use hookbox::{HookStack, Runtime, RuntimeConfig};
use hookbox_bench::{Answer, tool_call, wasm_stack};
use hookbox_serve::{ServeConfig, Server, StackSource};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};

/// Events/s and latencies of one measurement.
struct Load {
    events: usize,
    elapsed: Duration,
    /// CPU time the whole process used meanwhile (server, client, and
    /// every thread), in seconds.
    cpu: f64,
    /// Every event's latency, sorted.
    latencies: Vec<Duration>,
}

impl Load {
    fn per_second(&self) -> f64 {
        self.events as f64 / self.elapsed.as_secs_f64()
    }

    fn percentile(&self, p: f64) -> Duration {
        let last = self.latencies.len().saturating_sub(1);
        self.latencies
            .get(((last as f64) * p).round() as usize)
            .copied()
            .unwrap_or_default()
    }

    fn of(per_thread: Vec<Vec<Duration>>, elapsed: Duration, cpu: f64) -> Load {
        let mut latencies: Vec<Duration> = per_thread.into_iter().flatten().collect();
        latencies.sort_unstable();
        Load {
            events: latencies.len(),
            elapsed,
            cpu,
            latencies,
        }
    }

    /// The process's CPU time per event, in µs.
    fn cpu_us(&self) -> f64 {
        self.cpu * 1e6 / self.events.max(1) as f64
    }
}

/// The CPU time (user and system) this process has used, in seconds, from
/// `/proc/self/stat` (0 where there is none).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command name, which is in parentheses.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |(_, rest)| rest)
        .split_whitespace()
        .collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15 (11 and 12 after the name).
    (ticks(11) + ticks(12)) / 100.0
}

fn main() -> Result<()> {
    let (seconds, connections) = arguments()?;
    let runtime = Runtime::new(RuntimeConfig::default())?;
    let plugin = hookbox_bench::plugin(&runtime)?;
    let event = tool_call(1024, Answer::Continue);
    let body = serde_json::to_vec(&event)?;
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let window = Duration::from_secs_f64(seconds);

    // The baseline at each concurrency: as many live runs as connections,
    // on as many threads as cores.
    let stack = Arc::new(wasm_stack(&plugin, 8));
    in_process(&stack, &event, (cores, cores), Duration::from_millis(500)); // warm-up
    let mut baselines = Vec::new();
    for &n in &connections {
        eprintln!("in-process dispatch: {n} runs on {cores} threads, {seconds} s");
        baselines.push(in_process(&stack, &event, (cores, n), window));
    }
    drop(stack);

    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let most = connections.iter().copied().max().unwrap_or(1);
    let config = ServeConfig {
        max_in_flight: most,
        max_runs: most,
        max_connections: most + 1,
        ..ServeConfig::default()
    };
    let loopback: SocketAddr = "127.0.0.1:0".parse()?;
    let serve = |stack: HookStack| {
        tokio.block_on(Server::start(
            StackSource::fixed(stack),
            loopback,
            config.clone(),
        ))
    };
    let server = serve(wasm_stack(&plugin, 8))?;
    let empty = serve(HookStack::new())?;

    let mut served = Vec::new();
    for &n in &connections {
        eprintln!("serve: {n} keep-alive connections, {seconds} s, and its floors");
        clients(server.addr, &body, n, Duration::from_millis(500), To::Run)?; // warm-up
        served.push(Served {
            n,
            stack: clients(server.addr, &body, n, window, To::Run)?,
            empty: clients(empty.addr, &body, n, window, To::Run)?,
            unknown: clients(server.addr, &body, n, window, To::UnknownRun)?,
        });
    }
    drop((server, empty));

    let report = report(cores, &baselines, &served);
    println!("\n{report}");
    let path = criterion_dir().join("serve-report.md");
    std::fs::create_dir_all(criterion_dir())?;
    std::fs::write(&path, &report).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

fn arguments() -> Result<(f64, Vec<usize>)> {
    let mut seconds = 5.0;
    let mut connections = vec![8, 32, 64];
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--seconds" => {
                seconds = args
                    .next()
                    .context("--seconds needs a number")?
                    .parse()
                    .context("--seconds needs a number")?;
            }
            "--connections" => {
                connections = args
                    .next()
                    .context("--connections needs a list such as 8,32,64")?
                    .split(',')
                    .map(str::parse)
                    .collect::<Result<_, _>>()
                    .context("--connections needs a list such as 8,32,64")?;
            }
            // cargo bench passes --bench; nothing else is ours.
            "--bench" => {}
            other => bail!("unknown argument {other:?}; try --seconds S or --connections 8,32,64"),
        }
    }
    ensure!(
        seconds > 0.0 && !connections.is_empty(),
        "nothing to measure"
    );
    Ok((seconds, connections))
}

/// `runs` runs of `stack` on `threads` threads (each taking its share in
/// turn), dispatching `event` for `window`.
fn in_process(
    stack: &Arc<HookStack>,
    event: &hookbox::StepEvent,
    (threads, runs): (usize, usize),
    window: Duration,
) -> Load {
    let threads = threads.min(runs).max(1);
    let (started, cpu) = (Instant::now(), cpu_seconds());
    let per_thread = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                scope.spawn(move || {
                    let share = runs / threads + usize::from(t < runs % threads);
                    let mut mine: Vec<_> = (0..share)
                        .map(|i| stack.start_run(format!("in-process-{t}-{i}")))
                        .collect();
                    let mut latencies = Vec::with_capacity(1 << 20);
                    'timed: loop {
                        for run in &mut mine {
                            if started.elapsed() >= window {
                                break 'timed;
                            }
                            let ctx = run.context(1);
                            let t = Instant::now();
                            let outcome = run.dispatch(&ctx, event);
                            latencies.push(t.elapsed());
                            assert!(outcome.is_ok_and(|d| d.flow == hookbox::Flow::Continue));
                        }
                    }
                    latencies
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("a dispatch thread panicked"))
            .collect()
    });
    Load::of(per_thread, started.elapsed(), cpu_seconds() - cpu)
}

/// Where a client posts its events.
#[derive(Clone, Copy)]
enum To {
    /// Its own run: every answer must be `continue`.
    Run,
    /// A run id nobody made: every answer must be a 404.
    UnknownRun,
}

/// One connection count's measurements: the 8-plugin stack and the floors.
struct Served {
    n: usize,
    stack: Load,
    empty: Load,
    unknown: Load,
}

/// `n` clients, each a keep-alive connection with its own run, posting
/// `body` for `window`: one client thread multiplexing every connection
/// (as load generators such as `wrk` do), so the client takes as little
/// of the machine as it can.
fn clients(addr: SocketAddr, body: &[u8], n: usize, window: Duration, to: To) -> Result<Load> {
    let client = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    client.block_on(async {
        // Every connection and run is made before the clock starts, and
        // ended after it stops.
        let mut connections = Vec::with_capacity(n);
        for _ in 0..n {
            let mut http = Http::connect(addr).await?;
            let (status, created) = http.request("POST", "/runs", b"").await?;
            ensure!(status == 201, "POST /runs answered {status}: {created}");
            let created: serde_json::Value = serde_json::from_str(&created)?;
            let run = created["run_id"].as_str().context("no run_id")?.to_owned();
            connections.push((http, run));
        }
        let (started, cpu) = (Instant::now(), cpu_seconds());
        let tasks: Vec<_> = connections
            .into_iter()
            .map(|(http, run)| tokio::spawn(client_loop(http, run, body.to_vec(), window, to)))
            .collect();
        let mut per_connection = Vec::with_capacity(n);
        let mut done = Vec::with_capacity(n);
        for task in tasks {
            let (http, run, latencies) = task.await??;
            per_connection.push(latencies);
            done.push((http, run));
        }
        let load = Load::of(per_connection, started.elapsed(), cpu_seconds() - cpu);
        for (mut http, run) in done {
            let (status, _) = http.request("DELETE", &format!("/runs/{run}"), b"").await?;
            ensure!(status == 204, "DELETE answered {status}");
        }
        Ok(load)
    })
}

/// One connection's closed loop: the next event as soon as the last answer
/// is in, for `window`.
async fn client_loop(
    mut http: Http,
    run: String,
    body: Vec<u8>,
    window: Duration,
    to: To,
) -> Result<(Http, String, Vec<Duration>)> {
    let events = match to {
        To::Run => format!("/runs/{run}/events"),
        To::UnknownRun => "/runs/run-nobody-made-this-one/events".to_owned(),
    };
    let started = Instant::now();
    let mut latencies = Vec::with_capacity(1 << 18);
    while started.elapsed() < window {
        let t = Instant::now();
        let (status, answer) = http.request("POST", &events, &body).await?;
        latencies.push(t.elapsed());
        let expected = match to {
            To::Run => status == 200 && answer.starts_with(r#"{"flow":"continue""#),
            To::UnknownRun => status == 404,
        };
        ensure!(expected, "an event was answered {status}: {answer}");
    }
    Ok((http, run, latencies))
}

/// A minimal HTTP/1.1 keep-alive client: it writes a request and reads the
/// answer by its Content-Length, and nothing more, so the figures are the
/// server's.
struct Http {
    reader: BufReader<OwnedReadHalf>,
    writer: OwnedWriteHalf,
    request: Vec<u8>,
    line: String,
}

impl Http {
    async fn connect(addr: SocketAddr) -> Result<Http> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        let (read, write) = stream.into_split();
        Ok(Http {
            reader: BufReader::with_capacity(64 << 10, read),
            writer: write,
            request: Vec::with_capacity(4096),
            line: String::new(),
        })
    }

    async fn request(&mut self, method: &str, path: &str, body: &[u8]) -> Result<(u16, String)> {
        self.request.clear();
        std::io::Write::write_fmt(
            &mut self.request,
            format_args!(
                "{method} {path} HTTP/1.1\r\nhost: bench\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                body.len()
            ),
        )?;
        self.request.extend_from_slice(body);
        self.writer.write_all(&self.request).await?;

        self.line.clear();
        self.reader.read_line(&mut self.line).await?;
        let status: u16 = self
            .line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .with_context(|| format!("not an HTTP status line: {:?}", self.line))?;
        let mut length = 0usize;
        loop {
            self.line.clear();
            ensure!(
                self.reader.read_line(&mut self.line).await? > 0,
                "the server closed the connection"
            );
            let header = self.line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse()?;
            }
        }
        let mut answer = vec![0; length];
        self.reader.read_exact(&mut answer).await?;
        Ok((status, String::from_utf8(answer)?))
    }
}

fn us(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

fn report(cores: usize, baselines: &[Load], served: &[Served]) -> String {
    let row = |how: String, load: &Load, adds: String| {
        format!(
            "| {how} | {:.0} | {} | {} | {} | {:.1} µs | {adds} |\n",
            load.per_second(),
            us(load.percentile(0.5)),
            us(load.percentile(0.99)),
            us(load.percentile(0.999)),
            load.cpu_us(),
        )
    };
    let mut out = format!(
        "## `hookbox serve` under keep-alive load (8 plugins, 1 KiB tool calls, all continue; {cores} cores, client on the same machine)\n\n\
         CPU per event: the process's CPU time (every thread: for serve the server's and the client's) over the events. \
         The floors go through the same server and client: an empty stack's run (HTTP, parsing, the hand-off to the blocking pool), \
         and a run that does not exist (HTTP and parsing only, a 404 from the worker).\n\n\
         | how | events/s | p50 | p99 | p99.9 | CPU per event | serve adds |\n|---|---|---|---|---|---|---|\n"
    );
    for (baseline, served) in baselines.iter().zip(served) {
        let n = served.n;
        let adds = |load: &Load| {
            format!(
                "{:.1} µs ({:.2}×)",
                load.cpu_us() - baseline.cpu_us(),
                load.cpu_us() / baseline.cpu_us()
            )
        };
        out += &row(
            format!("in-process dispatch, {n} runs on {} threads", cores.min(n)),
            baseline,
            "—".into(),
        );
        out += &row(
            format!("serve, {n} connections (a run each)"),
            &served.stack,
            adds(&served.stack),
        );
        out += &row(
            format!("floor: serve, {n} connections, empty stack"),
            &served.empty,
            "—".into(),
        );
        out += &row(
            format!("floor: serve, {n} connections, unknown run (404)"),
            &served.unknown,
            "—".into(),
        );
    }
    out
}

fn criterion_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"))
        .join("criterion")
}
