//! `hookbox serve`: the process around `hookbox-serve`'s server (the
//! instance pool sized for its runs, the open-file limit, the tokens, the
//! signals that stop it).

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use hookbox::RuntimeConfig;

use crate::state::StateArgs;
use crate::{BrowserArgs, DecisionLogArgs, runtime_with, terminal};

/// `hookbox serve`'s arguments (its help is on [`crate`]'s `Command`).
#[derive(clap::Args)]
pub(crate) struct ServeArgs {
    /// The plugin directory.
    #[arg(long = "plugins")]
    dir: std::path::PathBuf,
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
    state: crate::state::StateArgs,
    #[command(flatten)]
    browsers: crate::BrowserArgs,
    #[command(flatten)]
    decision_log: crate::DecisionLogArgs,
}

impl ServeArgs {
    pub(crate) fn execute(self) -> Result<ExitCode> {
        serve(
            &self.dir,
            self.listen,
            (self.idle_secs, self.max_runs, self.max_instances),
            (self.allow_rewrites, self.end_sessions_on_reload),
            &self.state,
            &self.browsers,
            &self.decision_log,
        )
    }
}

pub(crate) fn serve(
    dir: &Path,
    listen: std::net::SocketAddr,
    (idle_secs, max_runs, max_instances): (u64, usize, Option<u32>),
    (allow_rewrites, end_sessions_on_reload): (bool, bool),
    state: &StateArgs,
    browsers: &BrowserArgs,
    decision_log: &DecisionLogArgs,
) -> Result<ExitCode> {
    let decision_log = decision_log.open()?;
    open_files_for(hookbox_serve::ServeConfig::default().max_connections);
    let tokens = bearer_tokens("HOOKBOX_SERVE_TOKENS", listen)?;
    let session_store = state.open(true)?;
    let session_store_at = session_store.describe();
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
            subagents_share_state: state.subagents_share_state,
        },
        end_sessions_on_reload,
        session_store: Some(session_store),
        tokens,
        allowed_hosts: browsers.hosts.clone(),
        allowed_origins: browsers.origins.clone(),
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
            "hookbox serve: {} on http://{} (POST /runs, POST /runs/ID/events, GET /status, GET /metrics); sessions' state: {}",
            dir.display(),
            server.addr,
            session_store_at,
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
