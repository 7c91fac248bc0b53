//! Run state that spans an agent's session: each plugin's scratchpad, saved
//! after a hook and restored into the next hook's run, wherever that run
//! is (another hook process, another `hookbox serve` instance). Guest
//! instances stay fresh per run; only what a guest put in its scratchpad
//! (bounded by its quota) carries over.
//!
//! One trait, [`SessionBackend`], two stores:
//!
//! | store | for | shared | a session's calls take turns by |
//! |---|---|---|---|
//! | [`SessionStore`] (files) | one machine: `hookbox hook` processes, one `serve` | no | a file lock |
//! | [`RedisStore`] (feature `redis`) | every instance of a deployment | yes | a leased lock; a save is fenced by it |
//!
//! A call holds its session from reading its state to writing it back, so
//! calls of one session never lose each other's updates; a state is written
//! whole or not at all; a session idle past the store's age limit is over
//! and reads as new.
//!
//! A shared store also pins each session to the stack it runs on
//! ([`Pin`]): an instance whose stack differs moves the session to its own
//! stack when that stack was loaded later (keeping the session's state),
//! and refuses the session's hooks when it was loaded earlier, so a
//! session never goes back to an older policy ([`Saved::pinned_to`]).

mod file;
#[cfg(feature = "redis")]
mod redis;
mod step;

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use hookbox::{EventKind, Outcome, Stopped};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::Session;

pub use file::{SessionLock, SessionStore};
#[cfg(feature = "redis")]
pub use redis::RedisStore;
pub use step::{SessionRun, StepRefused, Stepped, step};

/// Each plugin's scratchpad, by plugin name (as `Run::scratchpads` names
/// them).
pub type Scratchpads = BTreeMap<String, BTreeMap<String, String>>;

/// Why session state could not be read or kept.
#[derive(Debug, thiserror::Error)]
#[error("session state in {place}: {reason}")]
pub struct StoreError {
    /// Where: a file or directory, or a store's address.
    pub place: String,
    /// What went wrong, and what to do about it.
    pub reason: String,
}

/// Where sessions keep their state between hooks.
pub trait SessionBackend: Send + Sync + std::fmt::Debug {
    /// Takes `session` of `agent` for one call, waiting (a bounded time)
    /// for another call of it to finish with it.
    ///
    /// # Errors
    /// [`StoreError`] when the store cannot be reached, answers garbage,
    /// or the session stays taken past the wait.
    fn lock(&self, agent: &str, session: &Session) -> Result<Box<dyn SessionHold>, StoreError>;

    /// What the store is and where, for `/status` and logs (no password).
    fn describe(&self) -> String;

    /// Whether processes on other machines share it: then sessions are
    /// pinned to a stack ([`Saved::pinned_to`]).
    fn shared(&self) -> bool;
}

/// One session, taken for one call until dropped (or saved).
pub trait SessionHold: Send {
    /// What the session's last call saved; empty for a new session or one
    /// past the age limit.
    ///
    /// # Errors
    /// [`StoreError`] when it cannot be read (a shared store that holds
    /// something that is not a session's state is an error, not a new
    /// session).
    fn load(&mut self) -> Result<Saved, StoreError>;

    /// Replaces the session's state with `saved`, whole, and gives the
    /// session back. A state the store holds already only marks the
    /// session used.
    ///
    /// # Errors
    /// [`StoreError`] when it cannot be written, or the call no longer
    /// holds the session; the last state is then kept.
    fn save(&mut self, saved: &Saved) -> Result<(), StoreError>;
}

/// What a session keeps between its hooks. Read strictly: a value with
/// other fields, or without `scratchpads`, is not a session's state.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Saved {
    /// The stack the session runs on (a shared store keeps it; the file
    /// store does not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack: Option<Pin>,
    /// Each plugin's scratchpad.
    pub scratchpads: Scratchpads,
    /// The session's run ended (a terminate, a guard that failed closed):
    /// why, as the agent is told. Every later hook of the session is
    /// blocked with it, as a run's later events are, until a newer stack
    /// takes the session. (A shared store keeps it; the file store does
    /// not, as `serve`'s live run keeps it there.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
}

/// The stack a session is pinned to: its digest
/// ([`hookbox::directory::stack_digest`]) and when it was loaded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pin {
    /// The stack's digest.
    pub digest: String,
    /// When the stack was loaded, in milliseconds since the Unix epoch.
    pub loaded_ms: u64,
}

impl Pin {
    /// The pin of a stack with `digest`, loaded at `loaded_at`.
    pub fn new(digest: &str, loaded_at: SystemTime) -> Pin {
        Pin {
            digest: digest.to_owned(),
            loaded_ms: unix_ms(loaded_at),
        }
    }
}

/// What a process with a given stack does with a session
/// ([`Saved::pinned_to`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pinned {
    /// The session is new, or its state predates pins: it is pinned to
    /// this stack.
    New,
    /// The session runs on this stack.
    Same,
    /// The session ran on an older stack: it moves to this one, keeping
    /// its state.
    Moved {
        /// The stack it ran on.
        from: Pin,
    },
    /// The session runs on a stack loaded after this one: its hooks are
    /// refused here until this process has that stack.
    Refused {
        /// What to tell the agent and the log.
        why: String,
    },
}

impl Saved {
    /// Which stack the session's hook runs on, for a process whose stack
    /// has `digest` and was loaded at `loaded_at`: the session's own when
    /// it is this one; this one when it was loaded after the session's
    /// (the session moves forward, with its state); none when it was
    /// loaded before (a session never goes back to an older policy, and
    /// this process does not have the newer one). Sets [`Saved::stack`]
    /// to the stack the hook runs on.
    pub fn pinned_to(&mut self, digest: &str, loaded_at: SystemTime) -> Pinned {
        let here = Pin::new(digest, loaded_at);
        let Some(pin) = self.stack.take() else {
            self.stack = Some(here);
            return Pinned::New;
        };
        if pin.digest == here.digest {
            self.stack = Some(pin);
            return Pinned::Same;
        }
        if here.loaded_ms > pin.loaded_ms {
            // A new run on the newer stack: not over, whatever ended the
            // last one.
            self.stack = Some(here);
            self.stopped = None;
            return Pinned::Moved { from: pin };
        }
        let why = format!(
            "this session runs on stack {} (loaded {} ms after this instance's stack {}), which this instance does not have; reload it with the same plugin directory as the others",
            short(&pin.digest),
            pin.loaded_ms - here.loaded_ms,
            short(&here.digest),
        );
        self.stack = Some(pin);
        Pinned::Refused { why }
    }

    /// Records the stop `outcome` of an `event` means, if it ends the run
    /// ([`Stopped::settle`]); a stop already recorded stays.
    pub fn record_stop(&mut self, outcome: &Outcome, event: EventKind) {
        if self.stopped.is_none()
            && let Err(stop) = Stopped::settle(outcome.clone(), event)
        {
            self.stopped = Some(crate::blocked(&stop));
        }
    }
}

fn short(digest: &str) -> &str {
    digest.get(..12).unwrap_or(digest)
}

fn unix_ms(at: SystemTime) -> u64 {
    at.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A session's name in a store: a hash of the agent, session and subagent
/// ids, each whole (an id never becomes a path or a key, and `a/b` with
/// subagent `c` is not `a` with subagent `b/c`).
fn session_name(agent: &str, session: &Session) -> String {
    let mut hash = Sha256::new();
    for part in [
        agent,
        session.id.as_deref().unwrap_or(""),
        session.subagent.as_deref().unwrap_or(""),
    ] {
        hash.update((part.len() as u64).to_le_bytes());
        hash.update(part);
    }
    hash.finalize()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Sessions idle longer than this are over, in every store.
pub const DEFAULT_MAX_AGE: Duration = Duration::from_secs(24 * 3600);

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_millis(ms)
    }

    /// One test per row of the pin rule.
    #[test]
    fn a_new_session_is_pinned_to_the_stack_it_starts_on() {
        let mut saved = Saved::default();
        assert_eq!(saved.pinned_to("aaa", at(10)), Pinned::New);
        assert_eq!(saved.stack, Some(Pin::new("aaa", at(10))));
    }

    #[test]
    fn the_same_stack_loaded_at_another_time_is_the_same_stack() {
        let mut saved = Saved {
            stack: Some(Pin::new("aaa", at(10))),
            ..Saved::default()
        };
        assert_eq!(saved.pinned_to("aaa", at(99)), Pinned::Same);
        assert_eq!(saved.stack, Some(Pin::new("aaa", at(10))));
    }

    #[test]
    fn a_stack_loaded_later_takes_the_session_with_its_state() {
        let pads =
            Scratchpads::from([("budget".into(), BTreeMap::from([("n".into(), "2".into())]))]);
        let mut saved = Saved {
            stack: Some(Pin::new("aaa", at(10))),
            scratchpads: pads.clone(),
            stopped: None,
        };
        assert_eq!(
            saved.pinned_to("bbb", at(20)),
            Pinned::Moved {
                from: Pin::new("aaa", at(10))
            }
        );
        assert_eq!(saved.stack, Some(Pin::new("bbb", at(20))));
        assert_eq!(saved.scratchpads, pads);
    }

    #[test]
    fn a_run_that_ended_stays_ended_until_a_newer_stack_takes_the_session() {
        use hookbox::{Decision, Flow};
        let mut saved = Saved::default();
        saved.pinned_to("aaa", at(10));
        let go_on: Outcome = Ok(Decision::new(Flow::Continue));
        saved.record_stop(&go_on, EventKind::ToolCall);
        assert_eq!(saved.stopped, None);
        let end: Outcome = Ok(Decision::new(Flow::terminate("no more")));
        saved.record_stop(&end, EventKind::ToolCall);
        let stopped = saved.stopped.clone().unwrap();
        assert!(stopped.contains("no more"), "{stopped}");
        let json = serde_json::to_string(&saved).unwrap();
        assert_eq!(serde_json::from_str::<Saved>(&json).unwrap(), saved);
        assert_eq!(saved.pinned_to("aaa", at(99)), Pinned::Same);
        assert_eq!(saved.stopped.as_deref(), Some(stopped.as_str()));
        assert!(matches!(
            saved.pinned_to("bbb", at(20)),
            Pinned::Moved { .. }
        ));
        assert_eq!(saved.stopped, None, "a new run on the newer stack");
    }

    #[test]
    fn a_stack_loaded_earlier_is_refused_and_the_pin_stays() {
        let mut saved = Saved {
            stack: Some(Pin::new("bbb", at(20))),
            ..Saved::default()
        };
        let Pinned::Refused { why } = saved.pinned_to("aaa", at(10)) else {
            panic!("an older stack took the session");
        };
        assert!(why.contains("reload"), "{why}");
        assert_eq!(saved.stack, Some(Pin::new("bbb", at(20))));
    }

    #[test]
    fn a_state_without_a_pin_reads_and_a_pinless_one_writes_as_before() {
        let saved: Saved = serde_json::from_str(r#"{"scratchpads":{"p":{"k":"v"}}}"#).unwrap();
        assert_eq!(saved.stack, None);
        assert_eq!(
            serde_json::to_string(&Saved::default()).unwrap(),
            r#"{"scratchpads":{}}"#
        );
        for other in [r#"{"calls":0}"#, "{}", r#"{"scratchpads":{"p":{"k":1}}}"#] {
            assert!(serde_json::from_str::<Saved>(other).is_err(), "{other}");
        }
    }
}
