//! One hook of a session whose state lives in a store, from the lock to
//! the save: what `hookbox hook` and both of `hookbox serve`'s paths (a
//! live run per session, a run per hook on a shared store) do alike.
//!
//! | step | what happens | when it cannot |
//! |---|---|---|
//! | lock | the session is taken in the store: its hooks take turns, on every process and instance | [`StepRefused::Store`] |
//! | load | its saved state: the stack it is pinned to, its scratchpads, how its run ended | [`StepRefused::Store`] |
//! | pin (shared stores, when a stack is given) | [`Saved::pinned_to`]: the same stack, or a newer one it moves to ([`Stepped::moved`]) | an older stack: [`StepRefused::Unpinned`] |
//! | replay the end | a session whose run ended (a terminate, a fail-closed) is refused: nothing proceeds after its end | [`StepRefused::Ended`] |
//! | restore | the saved scratchpads, into a run that starts with this hook ([`SessionRun`]) | [`StepRefused::Broken`] |
//! | decide | the caller's decision on the session's door | — |
//! | save | the scratchpads after it, and the run's end if it ended now | [`StepRefused::Store`] |

use std::time::{Duration, Instant, SystemTime};

use hookbox::{FailClosed, Outcome, StepEvent};
use hookbox_adapter::Door;

use super::{Pin, Pinned, SessionBackend, StoreError};
use crate::Session;

/// The run a session's hook is decided on.
pub enum SessionRun<'a> {
    /// A run started for this hook: the session's scratchpads are restored
    /// into it.
    Fresh(&'a Door),
    /// The session's live run; `new` when it starts with this hook (then
    /// the scratchpads are restored), else it kept its state itself.
    Live {
        /// The run.
        door: &'a Door,
        /// Whether it starts with this hook.
        new: bool,
    },
}

impl SessionRun<'_> {
    fn door(&self) -> &Door {
        match self {
            SessionRun::Fresh(door) | SessionRun::Live { door, .. } => door,
        }
    }

    fn restores(&self) -> bool {
        match self {
            SessionRun::Fresh(_) => true,
            SessionRun::Live { new, .. } => *new,
        }
    }
}

/// A hook decided in its session's state.
#[derive(Debug)]
pub struct Stepped {
    /// The stack's answer.
    pub outcome: Outcome,
    /// The time spent in the store (lock, load, save), not deciding.
    pub in_store: Duration,
    /// The stack the session moved from, when it moved to this one.
    pub moved: Option<Pin>,
}

/// Why a session's hook was not decided; see the module's table.
#[derive(Debug)]
pub enum StepRefused {
    /// The store failed (down, slow, answering garbage).
    Store(StoreError),
    /// The session runs on a stack newer than this one.
    Unpinned(String),
    /// The session's run has ended: what stopped it.
    Ended(String),
    /// The run could not take or give its state (it could not start).
    Broken(FailClosed),
}

/// Decides `event` for `session` of `agent` in `store`, as the module's
/// table says: `decide` asks the session's door (the caller adds its span
/// and metrics). `pin`: the digest of the stack deciding and when it was
/// loaded, checked where the store is shared.
///
/// # Errors
/// Why the hook was not decided.
pub fn step(
    store: &dyn SessionBackend,
    (agent, session): (&str, &Session),
    pin: Option<(&str, SystemTime)>,
    run: &SessionRun<'_>,
    event: &StepEvent,
    decide: impl FnOnce(&Door, &StepEvent) -> Outcome,
) -> Result<Stepped, StepRefused> {
    let started = Instant::now();
    let mut hold = store.lock(agent, session).map_err(StepRefused::Store)?;
    let mut saved = hold.load().map_err(StepRefused::Store)?;
    let mut in_store = started.elapsed();
    let mut moved = None;
    if let Some((digest, loaded_at)) = pin.filter(|_| store.shared()) {
        match saved.pinned_to(digest, loaded_at) {
            Pinned::New | Pinned::Same => {}
            Pinned::Moved { from } => moved = Some(from),
            Pinned::Refused { why } => return Err(StepRefused::Unpinned(why)),
        }
    }
    if let Some(stop) = &saved.stopped {
        return Err(StepRefused::Ended(stop.clone()));
    }
    let door = run.door();
    let kept = std::mem::take(&mut saved.scratchpads);
    if run.restores() {
        door.with_run(|run| run.restore_scratchpads(kept))
            .map_err(StepRefused::Broken)?;
    }
    let outcome = decide(door, event);
    saved.scratchpads = door
        .with_run(|run| run.scratchpads())
        .map_err(StepRefused::Broken)?;
    saved.record_stop(&outcome, event.kind());
    let giving_back = Instant::now();
    hold.save(&saved).map_err(StepRefused::Store)?;
    in_store += giving_back.elapsed();
    Ok(Stepped {
        outcome,
        in_store,
        moved,
    })
}
