//! The `hookbox` command line: run an agent under a plugin directory, serve
//! a stack over HTTP, answer coding agents' hooks, check plugins, replay
//! recorded events through a stack, watch a directory. Parsing, logging,
//! standard streams and exit codes only: the work is done by the crates
//! below (`hookbox`, `hookbox-runner`, `hookbox-serve`, `hookbox-agents`).
//!
//! The `hookbox` binary is [`main`]; `cargo demo` runs the same code
//! in-process. This library is that binary's, not a stable API.
//!
//! Exit codes: 0 success; 1 a check that found problems, or a run that
//! ended in an error (model unreachable); 2 bad usage or setup (arguments,
//! files, plugins that cannot load, an address in use); `run` also exits 3
//! when a hook terminated the run, 4 when it failed closed, 5 when it
//! stopped otherwise. `hook` (and `claude-code`) exits as its agent expects:
//! 0 with the answer in JSON, or 2 where that agent denies on exit 2.

mod agent_hook;
mod author;
mod hook_config;
mod mcp;
mod run;
pub mod telemetry;
mod terminal;

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use hookbox::{
    EventKinds, HookStack, LoadPhase, Plugin, PluginInfo, PluginOptions, Run, Runtime,
    RuntimeConfig, StepEvent,
};

#[derive(Parser)]
#[command(
    name = "hookbox",
    version,
    about = "Run LLM-agent hooks and guardrails as sandboxed WebAssembly components"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The agents `hookbox hook` speaks to.
#[derive(Clone, Copy, clap::ValueEnum)]
enum Agent {
    /// Claude Code (command hooks; HTTP hooks are `hookbox serve`'s).
    ClaudeCode,
    /// OpenAI Codex CLI's hooks.
    Codex,
    /// Gemini CLI's hooks.
    Gemini,
    /// Cursor's agent hooks.
    Cursor,
    /// GitHub Copilot's hooks (CLI and cloud agent).
    Copilot,
    /// Cline's hooks.
    Cline,
    /// Windsurf's Cascade hooks (the answer is the exit code).
    Windsurf,
    /// OpenCode, through hookbox's OpenCode plugin (`--print-config`
    /// prints it).
    Opencode,
}

#[derive(clap::Args)]
struct HookArgs {
    /// The plugin directory.
    #[arg(long = "plugins")]
    dir: PathBuf,
    /// Let a guard's rewrite of a call's arguments also grant the call.
    /// Off: the agent's own permission system decides on the changed call.
    #[arg(long)]
    allow_rewrites: bool,
    /// The event this hook is configured for, for agents whose input does
    /// not name it (Copilot: `preToolUse`, `permissionRequest`,
    /// `postToolUse`).
    #[arg(long)]
    event: Option<String>,
    /// Print the agent's hook configuration for this command (on stdout)
    /// and what the agent needs before it runs it (on stderr: Codex's
    /// trust review) instead of answering a hook. Claude Code, Codex and
    /// OpenCode (its plugin, to save in `.opencode/plugins/`).
    #[arg(long)]
    print_config: bool,
}

#[derive(Subcommand)]
enum Command {
    /// Serve a plugin directory over HTTP/JSON: runs, events, status,
    /// metrics, Claude Code's HTTP hook (see the README's `hookbox serve`).
    /// Reloads on change. Clients show a bearer token of
    /// $HOOKBOX_SERVE_TOKENS (comma-separated, one per client); required
    /// unless listening on loopback.
    Serve {
        /// The plugin directory.
        #[arg(long = "plugins")]
        dir: PathBuf,
        /// The address to listen on.
        #[arg(long, default_value = "127.0.0.1:8787")]
        listen: std::net::SocketAddr,
        /// End runs nobody posted to for this many seconds.
        #[arg(long, default_value_t = 300)]
        idle_secs: u64,
        /// Live runs at most.
        #[arg(long, default_value_t = 512)]
        max_runs: usize,
        /// Plugin instances live at once at most (a run holds one per
        /// plugin); a run past it is refused with 503. Default: --max-runs
        /// times the directory's plugins (at least 4 each).
        #[arg(long)]
        max_instances: Option<u32>,
        /// Let a guard's rewrite of a call's arguments also grant the call
        /// (agents' HTTP hooks).
        #[arg(long)]
        allow_rewrites: bool,
        /// After a reload, an agent session's next hook starts on the new
        /// stack (its run state starts afresh); by default a session keeps
        /// the stack it started with.
        #[arg(long)]
        end_sessions_on_reload: bool,
        #[command(flatten)]
        decision_log: DecisionLogArgs,
    },
    /// A coding agent's command hook: reads the hook's JSON on stdin, asks
    /// the plugin directory (run state spans the agent's session), answers
    /// in the agent's own terms. Every failure on an event the agent lets a
    /// hook block is that event's block; events not guarded get no opinion.
    ///
    /// Claude Code: give each hook entry `"onFailure": "block"` (2.1.295 and
    /// later), so that a hookbox that cannot start or times out blocks the
    /// action too; without it Claude Code runs the tool. A guard with no
    /// opinion leaves `permissionDecision` out (Claude Code's permissions
    /// decide); hookbox never answers `defer`, which pauses a headless
    /// session rather than deferring to the next hook.
    Hook {
        /// The agent whose hook protocol to speak.
        agent: Agent,
        #[command(flatten)]
        hook: HookArgs,
    },
    /// `hookbox hook claude-code`, by its older name.
    ClaudeCode {
        #[command(flatten)]
        hook: HookArgs,
    },
    /// Run an agent: a model and the workspace tools, guarded by plugins.
    /// Prints the loop's progress live and a summary. Exit status: 0 the
    /// model finished, 3 a hook terminated the run, 4 the run failed closed,
    /// 5 it stopped otherwise (invalid tool call, loop, iterations, timeout),
    /// 1 the run ended in an error (model unreachable), 2 bad setup
    /// (arguments, files, plugins).
    Run(run::RunArgs),
    /// Keep a plugin directory loaded and reloaded; print each reload;
    /// with --events, replay events (JSON lines) against the live stack.
    Watch {
        /// The plugin directory.
        #[arg(long = "plugins")]
        dir: PathBuf,
        /// Events to replay, one JSON object per line; `-` reads stdin. The
        /// command ends at their end. A blank line starts a new run.
        #[arg(long)]
        events: Option<PathBuf>,
        /// Quiet time after a change before reloading, in milliseconds.
        #[arg(long, default_value_t = 100)]
        debounce_ms: u64,
    },
    /// Load and validate plugins or plugin directories; print what each
    /// plugin subscribes to and imports.
    Check {
        /// Plugin components (`.wasm`) or plugin directories.
        #[arg(required = true)]
        plugins: Vec<PathBuf>,
    },
    /// Guard an MCP server: speaks MCP on stdio to the client and starts
    /// COMMAND as the server (or reaches the one at --upstream URL). Every tools/call and its result pass through
    /// the plugin directory's stack; every other message passes through
    /// byte for byte (see the README's `hookbox mcp`). Exits with the
    /// server's exit code.
    Mcp {
        /// The plugin directory.
        #[arg(long = "plugins")]
        dir: PathBuf,
        /// A tool not to offer: left out of tools/list, and a call to it
        /// answered as to a tool that does not exist. Repeat for more.
        #[arg(long = "hide-tool", value_name = "NAME")]
        hide_tools: Vec<String>,
        /// A remote MCP server to guard (the streamable HTTP transport),
        /// instead of starting one.
        #[arg(long, value_name = "URL")]
        upstream: Option<String>,
        /// Serve MCP clients over the streamable HTTP transport on this
        /// address (endpoint `/mcp`) instead of stdio: each client session
        /// gets its own server (or upstream session) and run, on the
        /// directory's stack when it began (the directory reloads). Clients
        /// show a bearer token of HOOKBOX_MCP_TOKENS (comma-separated, one
        /// per client; required unless the address is loopback).
        #[arg(long, value_name = "ADDR")]
        listen: Option<std::net::SocketAddr>,
        /// The server takes MCP 2026-07-28 (`server/discover` and requests
        /// naming their revision): pass them through. Without it the proxy
        /// initializes the server itself on a 2026-07-28 client's first
        /// request and bridges the session, since a server from before the
        /// revision may exit on `server/discover`.
        #[arg(long, value_name = "REVISION", value_parser = ["2026-07-28"])]
        server_revision: Option<String>,
        /// The MCP server to start, and its arguments (after `--`).
        #[arg(last = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
    /// Make a guard project that builds, passes its own test cases and
    /// loads: `hookbox new no-shell --lang rust`.
    New {
        /// The plugin's name, and its folder's: lowercase letters, digits, dashes.
        name: String,
        /// rust, javascript, python, c or go.
        #[arg(long, default_value = "rust")]
        lang: String,
        /// Where to make the folder.
        #[arg(long, default_value = ".")]
        dir: PathBuf,
        /// A Rust guard's `hookbox-sdk`: the path of the SDK's folder
        /// (default: the SDK this hookbox was built from).
        #[arg(long, value_name = "PATH")]
        sdk: Option<PathBuf>,
    },
    /// Build a guard project into a component and check it loads (Rust
    /// needs only cargo: the component is encoded in-process).
    Build {
        /// The project's folder.
        #[arg(default_value = ".")]
        dir: PathBuf,
        /// Where to write the component (default: DIR/NAME.wasm).
        #[arg(short, long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// Run test cases against guards or plugin directories: a guard project
    /// is built first and takes its cases from DIR/cases/, a plugin
    /// directory from DIR/cases/, a component from FILE.cases/. Prints a
    /// diff for every failing step; exits 1 if any failed.
    Test {
        /// Guard projects, components (`.wasm`) or plugin directories
        /// (default: the current folder).
        paths: Vec<PathBuf>,
        /// A case file, or a folder of them, instead of the default place.
        #[arg(long, value_name = "PATH")]
        cases: Option<PathBuf>,
    },
    /// Pin every plugin of a directory that loads to the sha256 of its
    /// bytes, in hookbox.toml (written if there is none). A pinned plugin
    /// whose bytes change is refused, also on hot reload.
    Lock {
        /// The plugin directory.
        dir: PathBuf,
    },
    /// Replay events (JSON lines) through a stack; print the net flow of each.
    Replay {
        /// A plugin, in stack order (repeatable).
        #[arg(long = "plugin")]
        plugins: Vec<PathBuf>,
        /// A plugin directory: its hookbox.toml, or every *.wasm in file-name
        /// order (stacked after the --plugin ones).
        #[arg(long = "plugins")]
        dir: Option<PathBuf>,
        /// Replay the file this many times, each a separate run.
        #[arg(long, default_value_t = 1)]
        runs: u32,
        /// Also print, after each event, what every plugin keeps in its
        /// scratchpad (`"scratchpads": {PLUGIN: {KEY: VALUE}}`).
        #[arg(long)]
        scratchpad: bool,
        /// A setting for a --plugin file, `PLUGIN.KEY=VALUE` (repeatable);
        /// directory plugins take theirs from hookbox.toml.
        #[arg(long = "config", value_name = "PLUGIN.KEY=VALUE")]
        config: Vec<String>,
        /// Events, one JSON object per line; `-` reads stdin.
        events: PathBuf,
    },
}

/// Runs the command line `args` (the first is the program name); logs go to
/// stderr, filtered by `HOOKBOX_LOG`, else `RUST_LOG` (default
/// `hookbox=info,warn`; for `run`, warnings and guests' logs).
pub fn main<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    // `run` prints its own progress: only guests' logs and problems go to
    // the log by default.
    let default_filter = match cli.command {
        Command::Run(_) => "warn,hookbox::guest=info,hookbox_runner=error",
        // Agents show a hook's stderr: keep it for the answer.
        Command::ClaudeCode { .. } | Command::Hook { .. } => "off",
        // stderr is the MCP server's log, as its client shows it.
        Command::Mcp { .. } => "hookbox=warn,hookbox_mcp=warn,hookbox::guest=info,warn",
        _ => "hookbox=info,hookbox_serve=info,warn",
    };
    // Spans go to OTLP from the commands whose runs live long enough to
    // trace; an agent hook's process lives for one event (`hookbox serve`'s
    // hook endpoint traces those).
    let export = matches!(
        cli.command,
        Command::Run(_) | Command::Serve { .. } | Command::Mcp { .. }
    );
    // Flushes the export when main returns, whatever the command did.
    let _telemetry = match telemetry::Telemetry::init(default_filter, export) {
        Ok(telemetry) => telemetry,
        Err(e) => {
            terminal::tell!("hookbox: {e:#}");
            return ExitCode::from(2);
        }
    };
    let result = match cli.command {
        Command::Run(args) => run::run(args),
        Command::ClaudeCode { hook } => Ok(agent_hook(Agent::ClaudeCode, &hook)),
        Command::Hook { agent, hook } => Ok(agent_hook(agent, &hook)),
        Command::Serve {
            dir,
            listen,
            idle_secs,
            max_runs,
            max_instances,
            allow_rewrites,
            end_sessions_on_reload,
            decision_log,
        } => serve(
            &dir,
            listen,
            (idle_secs, max_runs, max_instances),
            (allow_rewrites, end_sessions_on_reload),
            &decision_log,
        ),
        Command::Check { plugins } => check(&plugins),
        Command::New {
            name,
            lang,
            dir,
            sdk,
        } => author::new(&name, &lang, &dir, sdk),
        Command::Build { dir, out } => author::build(&dir, out.as_deref()),
        Command::Test { paths, cases } => author::test(&paths, cases.as_deref()),
        Command::Lock { dir } => author::lock(&dir),
        Command::Mcp {
            dir,
            hide_tools,
            upstream,
            listen,
            server_revision,
            command,
        } => {
            let config = hookbox_mcp::ProxyConfig {
                hidden_tools: hide_tools.into_iter().collect(),
                server_takes_2026: server_revision.is_some(),
                ..hookbox_mcp::ProxyConfig::default()
            };
            mcp::mcp(&dir, config, (upstream.as_deref(), listen), &command)
        }
        Command::Watch {
            dir,
            events,
            debounce_ms,
        } => watch(&dir, events.as_deref(), debounce_ms),
        Command::Replay {
            plugins,
            dir,
            runs,
            scratchpad,
            config,
            events,
        } => replay(plugins, dir, runs, scratchpad, &config, &events),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            terminal::tell!("hookbox: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn agent_hook(agent: Agent, args: &HookArgs) -> ExitCode {
    if args.print_config {
        let name = clap::ValueEnum::to_possible_value(&agent)
            .map(|v| v.get_name().to_owned())
            .unwrap_or_default();
        return match hook_config::print_config(&name, &args.dir, args.allow_rewrites) {
            Ok((config, steps)) => {
                println!("{config}");
                terminal::tell!("{steps}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                terminal::tell!("hookbox: {e:#}");
                ExitCode::from(2)
            }
        };
    }
    let options = hookbox_agents::Options {
        rewrites_grant: args.allow_rewrites,
    };
    let event = args.event.as_deref();
    let dir = &args.dir;
    match agent {
        Agent::ClaudeCode => {
            agent_hook::run::<hookbox_agents::claude_code::ClaudeCode>(dir, &options, event)
        }
        Agent::Codex => agent_hook::run::<hookbox_agents::codex::Codex>(dir, &options, event),
        Agent::Gemini => agent_hook::run::<hookbox_agents::gemini::Gemini>(dir, &options, event),
        Agent::Cursor => agent_hook::run::<hookbox_agents::cursor::Cursor>(dir, &options, event),
        Agent::Copilot => agent_hook::run::<hookbox_agents::copilot::Copilot>(dir, &options, event),
        Agent::Cline => agent_hook::run::<hookbox_agents::cline::Cline>(dir, &options, event),
        Agent::Windsurf => {
            agent_hook::run::<hookbox_agents::windsurf::Windsurf>(dir, &options, event)
        }
        Agent::Opencode => {
            agent_hook::run::<hookbox_agents::opencode::OpenCode>(dir, &options, event)
        }
    }
}

/// `--decision-log FILE|-` and `--decision-log-all`, for the commands whose
/// runs live long enough to log.
#[derive(clap::Args)]
pub(crate) struct DecisionLogArgs {
    /// Append a JSON line per decision other than continue, and per
    /// failure, to FILE (`-`: stdout); see the README's "Decision logs".
    /// Never slows a decision: records the sink cannot take are dropped
    /// and counted.
    #[arg(long = "decision-log", value_name = "FILE")]
    path: Option<PathBuf>,
    /// With --decision-log: every decision, continues included.
    #[arg(long = "decision-log-all", requires = "path")]
    all: bool,
}

impl DecisionLogArgs {
    pub(crate) fn open(&self) -> Result<Option<Arc<hookbox::audit::DecisionLog>>> {
        let Some(path) = &self.path else {
            return Ok(None);
        };
        let log = if path == Path::new("-") {
            hookbox::audit::DecisionLog::to_stdout()
        } else {
            hookbox::audit::DecisionLog::to_file(path).with_context(|| {
                format!("--decision-log {}: cannot append to it", path.display())
            })?
        };
        Ok(Some(Arc::new(if self.all { log.all() } else { log })))
    }
}

/// The CLI's runtime: the defaults, plus the compile cache in
/// `$HOOKBOX_CACHE_DIR` (`off` disables it) or the per-user default.
pub(crate) fn runtime() -> Result<Runtime> {
    runtime_with(RuntimeConfig::default())
}

pub(crate) fn runtime_with(config: RuntimeConfig) -> Result<Runtime> {
    let cache_dir = match std::env::var_os("HOOKBOX_CACHE_DIR") {
        Some(dir) if dir == "off" => None,
        Some(dir) => Some(PathBuf::from(dir)),
        None => hookbox::cache::default_dir(),
    };
    Ok(Runtime::new(RuntimeConfig {
        cache_dir,
        ..config
    })?)
}

fn serve(
    dir: &Path,
    listen: std::net::SocketAddr,
    (idle_secs, max_runs, max_instances): (u64, usize, Option<u32>),
    (allow_rewrites, end_sessions_on_reload): (bool, bool),
    decision_log: &DecisionLogArgs,
) -> Result<ExitCode> {
    let decision_log = decision_log.open()?;
    open_files_for(hookbox_serve::ServeConfig::default().max_connections);
    let tokens = bearer_tokens("HOOKBOX_SERVE_TOKENS", listen)?;
    let state_dir = hookbox_agents::SessionStore::default_dir()
        .context("no directory for session state: set HOOKBOX_STATE_DIR (or HOME)")?;
    let session_store = hookbox_agents::SessionStore::open(&state_dir)?;
    // Every run may hold an instance of each plugin: size the pool so that
    // --max-runs runs of this directory fit (a reload that adds plugins may
    // shed runs earlier, with 503 and the reason).
    let max_instances = max_instances.unwrap_or_else(|| {
        let plugins = hookbox::directory::plan(dir).map_or(0, |(entries, ..)| entries.len());
        u32::try_from(max_runs.saturating_mul(plugins.max(4))).unwrap_or(u32::MAX)
    });
    let runtime = runtime_with(RuntimeConfig {
        max_instances,
        ..RuntimeConfig::default()
    })
    .context("sizing the instance pool; lower --max-runs or --max-instances")?;
    let config = hookbox_serve::ServeConfig {
        idle_timeout: std::time::Duration::from_secs(idle_secs),
        max_runs,
        hooks: hookbox_agents::Options {
            rewrites_grant: allow_rewrites,
        },
        end_sessions_on_reload,
        session_store: Some(session_store),
        tokens,
        decision_log,
        ..Default::default()
    };
    let debounce = std::time::Duration::from_millis(100);
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    tokio.block_on(async {
        let source = hookbox_serve::StackSource::watch(&runtime, dir, debounce)?;
        let server = hookbox_serve::Server::start(source, listen, config).await?;
        terminal::tell!(
            "hookbox serve: {} on http://{} (POST /runs, POST /runs/ID/events, GET /status, GET /metrics)",
            dir.display(),
            server.addr
        );
        tokio::select! {
            served = server.wait() => served.context("serving")?,
            () = stop_signal() => terminal::tell!("hookbox serve: stopped"),
        }
        Ok::<_, anyhow::Error>(ExitCode::SUCCESS)
    })
    // Dropping the async runtime here ends the live runs (their spans end
    // too); main then flushes the trace export.
}

/// Raises this process's soft limit on open files to its hard limit, as
/// servers do: `serve` holds four per connection (the socket, and its
/// thread's runtime: an epoll, an eventfd and a signal pipe), and the usual
/// soft limit of 1024 would run out near 250 of the `connections` allowed.
/// Says so when even the hard limit is short.
fn open_files_for(connections: usize) {
    #[cfg(unix)]
    {
        let needed = (connections as u64) * 4 + 256;
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit and setrlimit read and write the struct given.
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
            return;
        }
        // macOS refuses an unlimited soft limit: a million is plenty.
        let wanted = limit.rlim_max.min(1 << 20);
        if limit.rlim_cur < wanted {
            let raised = libc::rlimit {
                rlim_cur: wanted,
                rlim_max: limit.rlim_max,
            };
            // SAFETY: as above.
            if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
                limit.rlim_cur = wanted;
            }
        }
        #[allow(
            clippy::useless_conversion,
            reason = "rlim_t is u64 here, not on every Unix"
        )]
        let have = u64::try_from(limit.rlim_cur).unwrap_or(u64::MAX);
        if have < needed {
            terminal::tell!(
                "hookbox serve: warning: this process may open {have} files, and {connections} connections need about {needed}; raise the limit (ulimit -n) or expect connections past about {} to be answered 503",
                have.saturating_sub(256) / 4
            );
        }
    }
    #[cfg(not(unix))]
    let _ = connections;
}

/// Resolves on Ctrl-C or, on Unix, SIGTERM: what a terminal or a service
/// manager sends to stop a server.
async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let Ok(mut term) = signal(SignalKind::terminate()) else {
            let _ = tokio::signal::ctrl_c().await;
            return;
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = tokio::signal::ctrl_c().await;
}

fn watch(dir: &Path, events: Option<&Path>, debounce_ms: u64) -> Result<ExitCode> {
    let runtime = runtime()?;
    let started = std::time::Instant::now();
    let watcher = Arc::new(hookbox::watch::DirWatcher::start(
        &runtime,
        dir,
        std::time::Duration::from_millis(debounce_ms),
    )?);
    let first = watcher.snapshot();
    terminal::tell!(
        "watching {}: generation 1, {} plugin(s), loaded in {:.1} ms",
        dir.display(),
        first.plugins.len(),
        started.elapsed().as_secs_f64() * 1e3
    );
    for status in &first.plugins {
        if let Err(error) = &status.result {
            terminal::tell!(
                "  {} ({}): {}: {}",
                status.name,
                status.file,
                error.phase,
                error.reason
            );
        }
    }
    let reporter = watcher.clone();
    std::thread::spawn(move || {
        loop {
            if let Some(report) = reporter.next_report(std::time::Duration::from_secs(3600)) {
                terminal::tell!(
                    "reload: generation {} in {:.1} ms; compiled [{}]; removed [{}]",
                    report.generation,
                    report.took.as_secs_f64() * 1e3,
                    report.compiled.join(", "),
                    report.removed.join(", ")
                );
                if let Some(why) = &report.directory_error {
                    terminal::tell!("  failed: {why}");
                }
                for error in &report.errors {
                    terminal::tell!(
                        "  failed: {}: {}: {}",
                        error.plugin,
                        error.phase,
                        error.reason
                    );
                }
            }
        }
    });
    let Some(events) = events else {
        loop {
            std::thread::park();
        }
    };
    let (name, reader) = open_events(events)?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut runs = 0;
    let mut run: Option<Run> = None;
    for (index, line) in reader.lines().enumerate() {
        let line = line.with_context(|| format!("{name}: cannot read line {}", index + 1))?;
        let trimmed = line.trim();
        if trimmed.is_empty() {
            run = None;
            continue;
        }
        if trimmed.starts_with("//") {
            continue;
        }
        let event: StepEvent = match serde_json::from_str(trimmed) {
            Ok(event) => event,
            Err(e) => {
                terminal::tell!("{name}:{}: not an event: {e}", index + 1);
                continue;
            }
        };
        let current = run.get_or_insert_with(|| {
            runs += 1;
            watcher.snapshot().stack.start_run(format!("watch-{runs}"))
        });
        let outcome = current.step(&event);
        writeln!(out, "{}", hookbox::outcome_json(&outcome))?;
        out.flush()?;
        if current.is_over() {
            run = None;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn check(paths: &[PathBuf]) -> Result<ExitCode> {
    let runtime = runtime()?;
    let mut failed = false;
    for path in paths {
        let ok = if path.is_dir() {
            check_dir(&runtime, path)
        } else if path.is_file() {
            check_file(&runtime, path)
        } else {
            terminal::tell!("{}: no such file or directory", path.display());
            false
        };
        failed |= !ok;
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// One component: its facts, and whether it loads (if not, why).
fn check_file(runtime: &Runtime, path: &Path) -> bool {
    match Plugin::from_file(runtime, path, PluginOptions::default()) {
        Ok(plugin) => {
            terminal::say!("{}: ok", path.display());
            describe(&plugin);
            true
        }
        Err(e) => {
            terminal::tell!("{}: refused: {e}", path.display());
            if !matches!(e.phase, LoadPhase::Read | LoadPhase::Compile) {
                refused_facts(runtime, &e.plugin, path);
            }
            false
        }
    }
}

/// Validates a whole plugin directory with its manifest.
fn check_dir(runtime: &Runtime, dir: &Path) -> bool {
    let loaded = match hookbox::directory::load(runtime, dir) {
        Ok(loaded) => loaded,
        Err(e) => {
            terminal::tell!("{e}");
            return false;
        }
    };
    let source = if loaded.has_manifest {
        "hookbox.toml"
    } else {
        "no manifest: every *.wasm in file-name order"
    };
    terminal::say!(
        "{}: {} plugin(s) ({source})",
        dir.display(),
        loaded.plugins.len()
    );
    for status in &loaded.plugins {
        let mut required = String::from(if status.required {
            "required"
        } else {
            "optional"
        });
        if status.mode == hookbox::manifest::Mode::Shadow {
            required.push_str(", shadow: asked, never acted on");
        }
        match &status.result {
            Ok(plugin) => {
                terminal::say!("- {} ({}, {required}): ok", status.name, status.file);
                describe(plugin);
                if let Some(digest) = &status.sha256 {
                    terminal::say!("  sha256:        {digest}");
                }
            }
            Err(error) => {
                terminal::tell!(
                    "- {} ({}, {required}): {}: {}",
                    status.name,
                    status.file,
                    error.phase,
                    error.reason
                );
                refused_facts(runtime, &status.name, &dir.join(&status.file));
            }
        }
    }
    for file in &loaded.unlisted {
        terminal::say!("- {file}: not in hookbox.toml, not loaded");
    }
    loaded.failures().next().is_none()
}

/// What a refused component is, even though it is not a hook (nothing when
/// it is not a component at all).
fn refused_facts(runtime: &Runtime, name: &str, path: &Path) {
    if let Ok(bytes) = std::fs::read(path)
        && let Ok(info) = hookbox::inspect(runtime, name, &bytes)
    {
        facts(&info, None);
    }
}

pub(crate) fn describe(plugin: &Plugin) {
    terminal::say!("  name:          {}", plugin.name());
    facts(plugin.info(), Some(plugin.subscriptions()));
}

/// The language-agnostic facts of a component.
fn facts(info: &PluginInfo, subscriptions: Option<EventKinds>) {
    terminal::say!("  size:          {} bytes", info.size_bytes);
    // Outermost first: the last producers section is the component's own.
    let produced = |fields: &[&str]| -> String {
        let values: Vec<&str> = info
            .producers
            .iter()
            .rev()
            .filter(|(field, _)| fields.contains(&field.as_str()))
            // "clang 21.1.4 (https://... commit)" -> "clang 21.1.4"
            .map(|(_, value)| value.split(" (").next().unwrap_or(value))
            .collect();
        or_none(&values.join(", ")).to_owned()
    };
    terminal::say!("  languages:     {}", produced(&["language"]));
    terminal::say!("  built with:    {}", produced(&["processed-by", "sdk"]));
    if let Some(kinds) = subscriptions {
        let kinds: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
        terminal::say!("  subscriptions: {}", or_none(&kinds.join(", ")));
    }
    let imports: Vec<String> = info
        .imports
        .iter()
        .map(|name| {
            if hookbox::inspect::provided(name) {
                name.clone()
            } else {
                format!("{name} (NOT PROVIDED)")
            }
        })
        .collect();
    terminal::say!("  imports:       {}", or_none(&imports.join(", ")));
    terminal::say!("  exports:       {}", or_none(&info.exports.join(", ")));
    if info.uses_wasi {
        terminal::say!(
            "  wasi:          imported; the guest gets an empty WASI (no files, env, network)"
        );
    }
}

fn or_none(s: &str) -> &str {
    if s.is_empty() { "none" } else { s }
}

fn replay(
    paths: Vec<PathBuf>,
    dir: Option<PathBuf>,
    runs: u32,
    scratchpad: bool,
    settings: &[String],
    events_path: &Path,
) -> Result<ExitCode> {
    let mut configs = parse_settings(settings)?;
    let events = read_events(events_path)?;
    let runtime = runtime()?;
    let (stack, _) = build_stack(&runtime, &paths, dir.as_deref(), &mut configs)?;

    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for run_number in 1..=runs {
        let mut run = stack.start_run(format!("replay-{run_number}"));
        for event in &events {
            let outcome = run.step(event);
            let mut line = hookbox::outcome_json(&outcome);
            if runs > 1 {
                line["run"] = run_number.into();
            }
            if scratchpad {
                line["scratchpads"] = serde_json::json!(run.scratchpads());
            }
            writeln!(out, "{line}")?;
            if run.is_over() {
                break;
            }
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// A stack of `--plugin` files (with their `--config` settings), then the
/// `--plugins` directory nested as one stack; and the sha256 of each
/// plugin's bytes, by name.
pub(crate) fn build_stack(
    runtime: &Runtime,
    paths: &[PathBuf],
    dir: Option<&Path>,
    configs: &mut BTreeMap<String, BTreeMap<String, String>>,
) -> Result<(HookStack, Arc<std::collections::HashMap<String, String>>)> {
    let mut stack = HookStack::new();
    let mut digests = std::collections::HashMap::new();
    for path in paths {
        if !path.is_file() {
            bail!("{}: no such plugin file", path.display());
        }
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let options = PluginOptions {
            config: configs.remove(&name).unwrap_or_default(),
            ..Default::default()
        };
        if let Ok(bytes) = std::fs::read(path) {
            digests.insert(name.clone(), hookbox::cache::sha256_hex(&bytes));
        }
        match Plugin::from_file(runtime, path, options) {
            Ok(plugin) => {
                stack.push_plugin(Arc::new(plugin));
            }
            Err(e) => {
                // A required plugin that cannot load makes the run fail closed.
                tracing::error!("{e}");
                stack.push_unloadable(&name, e.to_string());
            }
        }
    }
    if let Some(unknown) = configs.keys().next() {
        bail!("--config names plugin `{unknown}`, which is not among the --plugin files");
    }
    if let Some(dir) = dir {
        // The directory's plugins follow, with its manifest's order, config
        // and limits; a nested stack composes exactly like its plugins would.
        let loaded = hookbox::directory::load(runtime, dir)?;
        digests.extend(
            hookbox::audit::DecisionLog::digests(&loaded.plugins)
                .iter()
                .map(|(k, v)| (k.clone(), v.clone())),
        );
        stack.push_stack(loaded.stack);
    }
    Ok((stack, Arc::new(digests)))
}

/// `PLUGIN.KEY=VALUE` settings, grouped by plugin.
pub(crate) fn parse_settings(
    settings: &[String],
) -> Result<BTreeMap<String, BTreeMap<String, String>>> {
    let mut configs: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for setting in settings {
        let parsed = setting.split_once('=').and_then(|(name, value)| {
            let (plugin, key) = name.split_once('.')?;
            Some((plugin, key, value))
        });
        let Some((plugin, key, value)) = parsed else {
            bail!("--config {setting}: expected PLUGIN.KEY=VALUE, e.g. deny-tools.deny=shell");
        };
        configs
            .entry(plugin.to_owned())
            .or_default()
            .insert(key.to_owned(), value.to_owned());
    }
    Ok(configs)
}

/// Opens an events file, or stdin for `-`; returns a name for messages.
fn open_events(path: &Path) -> Result<(String, Box<dyn BufRead>)> {
    if path == Path::new("-") {
        return Ok(("stdin".into(), Box::new(std::io::stdin().lock())));
    }
    let file = std::fs::File::open(path)
        .with_context(|| format!("cannot open events file {}", path.display()))?;
    Ok((
        path.display().to_string(),
        Box::new(std::io::BufReader::new(file)),
    ))
}

/// Reads and parses every line before anything runs, so a typo on line 40
/// does not leave a half-replayed session.
fn read_events(path: &Path) -> Result<Vec<StepEvent>> {
    let (name, reader) = open_events(path)?;
    let mut events = Vec::new();
    for (index, line) in reader.lines().enumerate() {
        let line = line.with_context(|| format!("{name}: cannot read line {}", index + 1))?;
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with("//") {
            continue;
        }
        let event = serde_json::from_str(trimmed).with_context(|| {
            format!(
                "{name}:{}: not an event in the JSON form of the README",
                index + 1
            )
        })?;
        events.push(event);
    }
    Ok(events)
}

/// The bearer tokens in the environment variable `var` (comma-separated,
/// one per client), which an address reachable from other machines needs.
pub(crate) fn bearer_tokens(var: &str, listen: std::net::SocketAddr) -> Result<Vec<String>> {
    let tokens: Vec<String> = std::env::var(var)
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .collect();
    if tokens.is_empty() && !listen.ip().is_loopback() {
        bail!(
            "{listen} is reachable from other machines: set {var} (one secret token per client, comma-separated) or listen on 127.0.0.1"
        );
    }
    if tokens.iter().any(|t| t.len() < 16) {
        bail!("{var}: each token needs at least 16 characters");
    }
    Ok(tokens)
}
