//! What several commands share: the flags of the commands that listen over
//! HTTP or log decisions, and the CLI's runtime.

use std::path::{Path, PathBuf};
use std::sync::Arc;

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
