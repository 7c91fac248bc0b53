//! `--state`: where agents' sessions keep their state between hooks, for
//! `hookbox serve` and `hookbox hook AGENT`.

use std::sync::Arc;
use std::time::Duration;

use std::process::ExitCode;

use anyhow::{Context, Result};
use hookbox_agents::{RedisStore, SessionBackend, SessionStore};

use crate::terminal::say;

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
    /// A subagent's hooks share its session's state (a budget spans the
    /// session and every subagent it starts); without it, each subagent
    /// has state of its own, begun empty.
    #[arg(long)]
    pub subagents_share_state: bool,
    /// With Redis: a file holding its password (its first line), in
    /// place of one in the URL, which `ps` shows every local user.
    /// $HOOKBOX_STATE_PASSWORD gives it too.
    #[arg(long, value_name = "FILE")]
    pub state_password_file: Option<std::path::PathBuf>,
}

impl StateArgs {
    /// The store `--state` names; with `ping`, a Redis that does not
    /// answer is warned of (and used anyway: hooks are blocked until it
    /// answers, and it may be starting too).
    pub(crate) fn open(&self, ping: bool) -> Result<Arc<dyn SessionBackend>> {
        // An empty `HOOKBOX_STATE=` is no choice: the default.
        match self.state.as_deref().filter(|s| !s.is_empty()) {
            Some(url) if url.starts_with("redis://") || url.starts_with("rediss://") => {
                let password = self.password()?;
                let store = RedisStore::open_with(url, password.as_deref())?
                    .with_timeout(Duration::from_millis(self.state_timeout_ms.max(1)))
                    .with_lease(Duration::from_millis(self.state_lease_ms.max(1)));
                if password.is_none() && on_the_command_line(url) {
                    crate::terminal::tell!(
                        "hookbox: warning: the password in --state's URL is shown to every user of this machine (ps); give it in $HOOKBOX_STATE_PASSWORD or --state-password-file instead"
                    );
                }
                if let Some(host) = store.in_the_clear() {
                    crate::terminal::tell!(
                        "hookbox: warning: Redis at {host} is reached unencrypted (redis://): its password and every session's state cross the network readable; use rediss://"
                    );
                }
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

    /// The Redis password kept out of the URL: `--state-password-file`'s
    /// first line, else $HOOKBOX_STATE_PASSWORD.
    fn password(&self) -> Result<Option<String>> {
        if let Some(file) = &self.state_password_file {
            let text = std::fs::read_to_string(file).with_context(|| {
                format!("--state-password-file {}: cannot read it", file.display())
            })?;
            let line = text.lines().next().unwrap_or_default();
            anyhow::ensure!(
                !line.is_empty(),
                "--state-password-file {}: its first line is empty; put the password there",
                file.display()
            );
            return Ok(Some(line.to_owned()));
        }
        Ok(std::env::var("HOOKBOX_STATE_PASSWORD")
            .ok()
            .filter(|p| !p.is_empty()))
    }
}

/// Whether `url` holds a password and came from the command line (not
/// from $HOOKBOX_STATE), where every local user can read it.
fn on_the_command_line(url: &str) -> bool {
    let from_env = std::env::var("HOOKBOX_STATE").is_ok_and(|env| env == url);
    let userinfo = url
        .split_once("://")
        .and_then(|(_, rest)| rest.split(['/', '?']).next())
        .and_then(|authority| authority.rsplit_once('@'))
        .map(|(userinfo, _)| userinfo);
    let has_password = userinfo.is_some_and(|u| u.contains(':') && !u.ends_with(':'));
    has_password && !from_env
}

/// `hookbox state`'s arguments.
#[derive(clap::Args)]
pub(crate) struct StateCommandArgs {
    #[command(subcommand)]
    command: StateCommand,
}

#[derive(clap::Subcommand)]
enum StateCommand {
    /// Marks the Redis `--state` names as hookbox's session store (its
    /// epoch), unless it is already: a store without it takes no session.
    /// Run it once for a new store, and after a store lost its data (with
    /// persistence on), which restarts every session's state from nothing.
    Init {
        #[command(flatten)]
        state: StateArgs,
    },
}

impl StateCommandArgs {
    pub(crate) fn execute(self) -> Result<ExitCode> {
        let StateCommand::Init { state } = self.command;
        let url = state
            .state
            .as_deref()
            .filter(|url| url.starts_with("redis://") || url.starts_with("rediss://"))
            .context("hookbox state init works on a Redis store: give --state redis://... (or $HOOKBOX_STATE); a directory needs no init")?;
        let password = state.password()?;
        let store = RedisStore::open_with(url, password.as_deref())?
            .with_timeout(Duration::from_millis(state.state_timeout_ms.max(1)));
        let place = store.describe();
        if store.init()? {
            say!("initialized {place}: sessions are taken from now on");
        } else {
            say!("{place} is initialized already; nothing changed");
        }
        Ok(ExitCode::SUCCESS)
    }
}
