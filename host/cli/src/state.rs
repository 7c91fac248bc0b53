//! `--state`: where agents' sessions keep their state between hooks, for
//! `hookbox serve` and `hookbox hook AGENT`.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use hookbox_agents::{RedisStore, SessionBackend, SessionStore};

#[derive(clap::Args, Clone, Debug)]
pub(crate) struct StateArgs {
    /// Where agents' sessions keep their state (each plugin's scratchpad)
    /// between hooks: a directory of this machine (default
    /// $HOOKBOX_STATE_DIR, else $XDG_STATE_HOME/hookbox/sessions), or a
    /// Redis URL shared by every instance behind a load balancer:
    /// redis://[:PASSWORD@]HOST[:PORT][/DB], rediss:// for TLS.
    #[arg(long = "state", env = "HOOKBOX_STATE", value_name = "DIR|URL")]
    pub state: Option<String>,
    /// With Redis: the most one command may take (connecting included)
    /// before the hook is blocked, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 2000)]
    pub state_timeout_ms: u64,
    /// With Redis: how long one hook may hold its session, in
    /// milliseconds (past it, the hook is blocked and its update dropped);
    /// a session whose holder died is free again after it.
    #[arg(long, value_name = "MS", default_value_t = 10_000)]
    pub state_lease_ms: u64,
}

impl StateArgs {
    /// The store `--state` names; with `ping`, a Redis that does not
    /// answer is warned of (and used anyway: hooks are blocked until it
    /// answers, and it may be starting too).
    pub(crate) fn open(&self, ping: bool) -> Result<Arc<dyn SessionBackend>> {
        // An empty `HOOKBOX_STATE=` is no choice: the default.
        match self.state.as_deref().filter(|s| !s.is_empty()) {
            Some(url) if url.starts_with("redis://") || url.starts_with("rediss://") => {
                let store = RedisStore::open(url)?
                    .with_timeout(Duration::from_millis(self.state_timeout_ms.max(1)))
                    .with_lease(Duration::from_millis(self.state_lease_ms.max(1)));
                if ping && let Err(e) = store.ping() {
                    crate::terminal::tell!(
                        "hookbox: warning: {e}; agents' hooks are blocked until it answers"
                    );
                }
                Ok(Arc::new(store))
            }
            Some(url) if url.contains("://") => anyhow::bail!(
                "--state {}: a Redis URL starts with redis:// or rediss://; anything else is a directory",
                url.split("://").next().unwrap_or_default()
            ),
            Some(dir) => Ok(Arc::new(SessionStore::open(dir.as_ref())?)),
            None => {
                let dir = SessionStore::default_dir().context(
                    "no directory for session state: set --state, HOOKBOX_STATE_DIR (or HOME)",
                )?;
                Ok(Arc::new(SessionStore::open(&dir)?))
            }
        }
    }
}
