//! The `hookbox` command line: run an agent under a plugin directory, serve
//! a stack over HTTP, answer coding agents' hooks, check plugins, replay
//! recorded events through a stack, watch a directory. This file parses
//! the command line, sets up logging, dispatches and maps results to exit
//! codes; each command is an `Args` struct with its `execute` in its
//! module (`run`, `serve`, `agent_hook`, `mcp`, `check`, `replay`, `watch`,
//! `author`, `registry`), which reads the files and prints, and the work is
//! done by the crates below (`hookbox`, `hookbox-runner`,
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
mod shared;
mod state;
pub mod telemetry;
mod terminal;
mod watch;

use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};

pub(crate) use shared::{BrowserArgs, DecisionLogArgs, runtime, runtime_with};

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

#[derive(Subcommand)]
enum Command {
    /// Serve a plugin directory over HTTP/JSON: runs, events, status,
    /// metrics, Claude Code's HTTP hook (see docs/serve.md).
    /// Reloads on change. Clients show a bearer token of
    /// $HOOKBOX_SERVE_TOKENS (comma-separated, one per client); required
    /// unless listening on loopback.
    Serve(serve::ServeArgs),
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
    Hook(agent_hook::AgentHookArgs),
    /// `hookbox hook claude-code`, by its older name.
    ClaudeCode(agent_hook::ClaudeCodeArgs),
    /// Run an agent: a model and the workspace tools, guarded by plugins.
    /// Prints the loop's progress live and a summary. Exit status: 0 the
    /// model finished, 3 a hook terminated the run, 4 the run failed closed,
    /// 5 it stopped otherwise (invalid tool call, loop, iterations, timeout),
    /// 1 the run ended in an error (model unreachable), 2 bad setup
    /// (arguments, files, plugins).
    Run(run::RunArgs),
    /// Keep a plugin directory loaded and reloaded; print each reload;
    /// with --events, replay events (JSON lines) against the live stack.
    Watch(watch::WatchArgs),
    /// Load and validate plugins or plugin directories; print what each
    /// plugin subscribes to and imports.
    Check(check::CheckArgs),
    /// Guard an MCP server: speaks MCP on stdio to the client and starts
    /// COMMAND as the server (or reaches the one at --upstream URL). Every tools/call and its result pass through
    /// the plugin directory's stack; every other message passes through
    /// byte for byte (see docs/mcp.md). Exits with the
    /// server's exit code.
    Mcp(mcp::McpArgs),
    /// Make a guard project that builds, passes its own test cases and
    /// loads: `hookbox new no-shell --lang rust`.
    New(author::NewArgs),
    /// Build a guard project into a component and check it loads (Rust
    /// needs only cargo: the component is encoded in-process).
    Build(author::BuildArgs),
    /// Run test cases against guards or plugin directories: a guard project
    /// is built first and takes its cases from DIR/cases/, a plugin
    /// directory from DIR/cases/, a component from FILE.cases/. Prints a
    /// diff for every failing step; exits 1 if any failed.
    Test(author::TestArgs),
    /// Pin every plugin of a directory that loads to the sha256 of its
    /// bytes, in hookbox.toml (written if there is none), and every
    /// registry `source` to the digest pulled under its tag (pulling the
    /// tags not pulled yet). A pinned plugin whose bytes change is refused,
    /// also on hot reload.
    Lock(author::LockArgs),
    /// Pull a guard from an OCI registry into a plugin directory's store
    /// (DIR/.oci), checking its digests and, under the directory's
    /// `[trust]`, its cosign signature. Loading reads the store only.
    Pull(registry::PullArgs),
    /// Push a guard component to an OCI registry, in the CNCF Wasm OCI
    /// artifact layout (what wkg, ORAS and Spin read).
    Push(registry::PushArgs),
    /// Replay events (JSON lines) through a stack; print the net flow of each.
    Replay(replay::ReplayArgs),
    /// Agents' session state: `hookbox state init --state redis://...`
    /// marks a Redis as hookbox's (once, and again after it lost its data:
    /// until then no session is taken, none starts again from nothing
    /// unnoticed).
    State(state::StateCommandArgs),
}

impl Command {
    fn execute(self) -> Result<ExitCode> {
        match self {
            Command::Serve(args) => args.execute(),
            Command::Hook(args) => args.execute(),
            Command::ClaudeCode(args) => args.execute(),
            Command::Run(args) => args.execute(),
            Command::Watch(args) => args.execute(),
            Command::Check(args) => args.execute(),
            Command::Mcp(args) => args.execute(),
            Command::New(args) => args.execute(),
            Command::Build(args) => args.execute(),
            Command::Test(args) => args.execute(),
            Command::Lock(args) => args.execute(),
            Command::Pull(args) => args.execute(),
            Command::Push(args) => args.execute(),
            Command::Replay(args) => args.execute(),
            Command::State(args) => args.execute(),
        }
    }
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
        Command::ClaudeCode(_) | Command::Hook(_) => "off",
        // stderr is the MCP server's log, as its client shows it.
        Command::Mcp(_) => "hookbox=warn,hookbox_mcp=warn,hookbox::guest=info,warn",
        _ => "hookbox=info,hookbox_serve=info,warn",
    };
    // Spans go to OTLP from the commands whose runs live long enough to
    // trace; an agent hook's process lives for one event (`hookbox serve`'s
    // hook endpoint traces those).
    let export = matches!(
        cli.command,
        Command::Run(_) | Command::Serve(_) | Command::Mcp(_)
    );
    // Flushes the export when main returns, whatever the command did.
    let _telemetry = match telemetry::Telemetry::init(default_filter, export) {
        Ok(telemetry) => telemetry,
        Err(e) => {
            terminal::tell!("hookbox: {e:#}");
            return ExitCode::from(2);
        }
    };
    let result = cli.command.execute();
    match result {
        Ok(code) => code,
        Err(e) => {
            terminal::tell!("hookbox: {e:#}");
            if let Some(hint) = shared::hint(&format!("{e:#}")) {
                terminal::tell!("{hint}");
            }
            ExitCode::from(2)
        }
    }
}
