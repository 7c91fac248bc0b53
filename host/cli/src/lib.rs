//! The `hookbox` command line: run an agent under a plugin directory, serve
//! a stack over HTTP, answer coding agents' hooks, check plugins, replay
//! recorded events through a stack, watch a directory. This file parses
//! the command line, sets up logging and maps results to exit codes; each
//! command has its module (`run`, `serve`, `agent_hook`, `mcp`, `check`,
//! `replay`, `watch`, `author`), which reads the files and prints, and the
//! work is done by the crates below (`hookbox`, `hookbox-runner`,
//! `hookbox-serve`, `hookbox-agents`, `hookbox-mcp`, `hookbox-author`).
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
mod check;
mod hook_config;
mod mcp;
mod registry;
mod replay;
mod run;
mod serve;
mod state;
pub mod telemetry;
mod terminal;
mod watch;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use hookbox::{Runtime, RuntimeConfig};

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
    /// The session this hook call belongs to, for agents whose input names
    /// none (Copilot): calls naming the same session share the plugins'
    /// state. Without it, such a call starts from nothing and keeps
    /// nothing; an input's own session id always wins.
    #[arg(long, env = "HOOKBOX_SESSION", value_name = "NAME")]
    session: Option<String>,
    /// Print the agent's hook configuration for this command (on stdout)
    /// and what the agent needs before it runs it (on stderr: Codex's
    /// trust review) instead of answering a hook. Claude Code, Codex and
    /// OpenCode (its plugin, to save in `.opencode/plugins/`).
    #[arg(long)]
    print_config: bool,
    #[command(flatten)]
    state: state::StateArgs,
}

#[derive(Subcommand)]
enum Command {
    /// Serve a plugin directory over HTTP/JSON: runs, events, status,
    /// metrics, Claude Code's HTTP hook (see docs/serve.md).
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
        state: state::StateArgs,
        #[command(flatten)]
        browsers: BrowserArgs,
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
    /// byte for byte (see docs/mcp.md). Exits with the
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
        /// With --listen: client sessions at once, at most (each has a
        /// server of its own).
        #[arg(long, value_name = "N", requires = "listen")]
        max_sessions: Option<usize>,
        /// With --listen: end a session nobody posted to for this many
        /// seconds, and answer a request the server leaves unanswered as
        /// long with an error (default 1800).
        #[arg(long, value_name = "SECS", requires = "listen")]
        idle_secs: Option<u64>,
        #[command(flatten)]
        browsers: BrowserArgs,
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
    /// bytes, in hookbox.toml (written if there is none), and every
    /// registry `source` to the digest pulled under its tag (pulling the
    /// tags not pulled yet). A pinned plugin whose bytes change is refused,
    /// also on hot reload.
    Lock {
        /// The plugin directory.
        dir: PathBuf,
    },
    /// Pull a guard from an OCI registry into a plugin directory's store
    /// (DIR/.oci), checking its digests and, under the directory's
    /// `[trust]`, its cosign signature. Loading reads the store only.
    Pull {
        /// `oci://registry/repository:tag` or `…@sha256:<digest>`.
        reference: String,
        /// The plugin directory.
        #[arg(long = "plugins", default_value = ".")]
        dir: PathBuf,
    },
    /// Push a guard component to an OCI registry, in the CNCF Wasm OCI
    /// artifact layout (what wkg, ORAS and Spin read).
    Push {
        /// The component (`.wasm`).
        file: PathBuf,
        /// `oci://registry/repository:tag`.
        reference: String,
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
        Command::ClaudeCode { hook } => Ok(agent_hook::answer(Agent::ClaudeCode, &hook)),
        Command::Hook { agent, hook } => Ok(agent_hook::answer(agent, &hook)),
        Command::Serve {
            dir,
            listen,
            idle_secs,
            max_runs,
            max_instances,
            allow_rewrites,
            end_sessions_on_reload,
            state,
            browsers,
            decision_log,
        } => serve::serve(
            &dir,
            listen,
            (idle_secs, max_runs, max_instances),
            (allow_rewrites, end_sessions_on_reload),
            &state,
            &browsers,
            &decision_log,
        ),
        Command::Check { plugins } => check::check(&plugins),
        Command::New {
            name,
            lang,
            dir,
            sdk,
        } => author::new(&name, &lang, &dir, sdk),
        Command::Build { dir, out } => author::build(&dir, out.as_deref()),
        Command::Test { paths, cases } => author::test(&paths, cases.as_deref()),
        Command::Lock { dir } => registry::pull_unpulled(&dir).and_then(|()| author::lock(&dir)),
        Command::Pull { reference, dir } => registry::pull(&reference, &dir),
        Command::Push { file, reference } => registry::push(&file, &reference),
        Command::Mcp {
            dir,
            hide_tools,
            upstream,
            listen,
            max_sessions,
            idle_secs,
            browsers,
            server_revision,
            command,
        } => {
            let config = hookbox_mcp::ProxyConfig {
                hidden_tools: hide_tools.into_iter().collect(),
                server_takes_2026: server_revision.is_some(),
                ..hookbox_mcp::ProxyConfig::default()
            };
            let defaults = hookbox_mcp::listen::Limits::default();
            let limits = hookbox_mcp::listen::Limits {
                sessions: max_sessions.unwrap_or(defaults.sessions),
                idle: idle_secs.map_or(defaults.idle, std::time::Duration::from_secs),
            };
            mcp::mcp(
                &dir,
                config,
                (upstream.as_deref(), listen.map(|addr| (addr, limits))),
                &browsers,
                &command,
            )
        }
        Command::Watch {
            dir,
            events,
            debounce_ms,
        } => watch::watch(&dir, events.as_deref(), debounce_ms),
        Command::Replay {
            plugins,
            dir,
            runs,
            scratchpad,
            config,
            events,
        } => replay::replay(plugins, dir, runs, scratchpad, &config, &events),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            terminal::tell!("hookbox: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// `--allow-host` and `--allow-origin`, for the commands that listen over
/// HTTP: by default no browser reaches them (`hookbox_adapter::gate`).
#[derive(clap::Args)]
pub(crate) struct BrowserArgs {
    /// A name the request's `Host` may carry besides `localhost` and IP
    /// literals (a reverse proxy's, this machine's DNS name); any other is
    /// refused as DNS rebinding. Repeat for more.
    #[arg(long = "allow-host", value_name = "NAME")]
    pub(crate) hosts: Vec<String>,
    /// A web origin (`http://host:port`) whose pages may reach the server;
    /// a request with any other `Origin` is refused. Repeat for more.
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    pub(crate) origins: Vec<String>,
}

impl BrowserArgs {
    /// The gate for a server whose tokens are `tokens`, from `source`.
    pub(crate) fn gate(
        &self,
        tokens: Vec<String>,
        source: &'static str,
    ) -> hookbox_adapter::gate::Gate {
        hookbox_adapter::gate::Gate::new(tokens, source)
            .allow_hosts(self.hosts.iter().cloned())
            .allow_origins(self.origins.iter().cloned())
    }
}

/// `--decision-log FILE|-` and `--decision-log-all`, for the commands whose
/// runs live long enough to log.
#[derive(clap::Args)]
pub(crate) struct DecisionLogArgs {
    /// Append a JSON line per decision other than continue, and per
    /// failure, to FILE (`-`: stdout); see docs/observability.md#decision-logs.
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
