//! What several commands share: the flags of the commands that listen over
//! HTTP or log decisions, and the CLI's runtime.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use hookbox::{Runtime, RuntimeConfig};

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
/// `$HOOKBOX_CACHE_DIR` (`off` disables it) or the per-user default, and
/// the compile limit from `$HOOKBOX_MAX_COMPILE_SECS`.
pub(crate) fn runtime() -> Result<Runtime> {
    runtime_with(RuntimeConfig::default())
}

pub(crate) fn runtime_with(config: RuntimeConfig) -> Result<Runtime> {
    let cache_dir = match std::env::var_os("HOOKBOX_CACHE_DIR") {
        Some(dir) if dir == "off" => None,
        Some(dir) => Some(PathBuf::from(dir)),
        None => hookbox::cache::default_dir(),
    };
    let max_compile_time = match std::env::var_os(MAX_COMPILE_SECS) {
        Some(value) => compile_limit(&value)?,
        None => config.max_compile_time,
    };
    Ok(Runtime::new(RuntimeConfig {
        cache_dir,
        max_compile_time,
        ..config
    })?)
}

/// The variable that sets [`RuntimeConfig::max_compile_time`] for every
/// command: a machine that is slow or busy (a Python guard's CPython is
/// tens of seconds of compiling on two shared cores) can allow more.
pub(crate) const MAX_COMPILE_SECS: &str = "HOOKBOX_MAX_COMPILE_SECS";

fn compile_limit(value: &std::ffi::OsStr) -> Result<Duration> {
    value
        .to_str()
        .and_then(|text| text.trim().parse::<f64>().ok())
        .and_then(|secs| Duration::try_from_secs_f64(secs).ok())
        .filter(|limit| !limit.is_zero())
        .with_context(|| {
            format!(
                "{MAX_COMPILE_SECS}={}: not a number of seconds above 0 (the longest one plugin may take to compile; unset, {}s)",
                value.to_string_lossy(),
                RuntimeConfig::default().max_compile_time.as_secs()
            )
        })
}

/// What to add to an error (its whole text) that the compile limit caused:
/// how to raise it.
pub(crate) fn hint(error: &str) -> Option<String> {
    error.contains("RuntimeConfig::max_compile_time").then(|| {
        format!("hint: on a slow or busy machine, allow more with {MAX_COMPILE_SECS}=SECONDS")
    })
}
