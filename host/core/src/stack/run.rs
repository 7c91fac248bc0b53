//! One run through a stack: its instances, its context, its end.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::error::FailClosed;
use crate::event::{EventKinds, HookContext, StepEvent};
use crate::slots::Reservation;

use super::compose::{
    Instance, Slot, dispatch_to, instantiate_slots, unique_key, walk_plugins, walk_plugins_mut,
};
use super::{Observe, Outcome, ToolScope};

/// One run through a stack: owns the run's guest instances and its context.
///
/// A caller that knows the turn (an agent loop) passes a context to
/// [`Run::dispatch`]; a caller relaying a session's events (replay, a
/// sidecar, an agent's hook) lets the run keep it with [`Run::step`].
pub struct Run {
    /// Its instance slots, given back when it is dropped.
    pub(super) _reservations: Vec<Reservation>,
    /// The run's own context: its id, and the turn [`Run::step`] keeps.
    pub(super) ctx: HookContext,
    pub(super) slots: Vec<Slot>,
    /// What any hook of the stack subscribed to: other kinds are answered
    /// without walking the stack.
    pub(super) subscriptions: EventKinds,
    /// Tool events for tools no hook is scoped to are answered likewise.
    pub(super) tool_scope: ToolScope,
    /// Events carrying more text are refused before any guest runs.
    pub(super) max_event_bytes: usize,
    pub(super) ended: Option<Outcome>,
    /// Told of every hook's answer; see [`Run::observe`].
    pub(super) observer: Option<Arc<dyn Observe>>,
}

impl Run {
    /// The run's id, as hooks see it in their context.
    pub fn run_id(&self) -> &str {
        &self.ctx.run_id
    }

    /// A context for this run at `turn`.
    pub fn context(&self, turn: u32) -> HookContext {
        HookContext {
            turn,
            is_streaming: false,
            ..self.ctx.clone()
        }
    }

    /// The context [`Run::step`] keeps: the turn and streaming state so far.
    pub fn current_context(&self) -> &HookContext {
        &self.ctx
    }

    /// Asks the stack about the next event of a session, keeping the run's
    /// context in step: a completion-call starts a turn (its own `turn` when
    /// it names one, else the next) and ends streaming; a delta means the
    /// model is streaming.
    ///
    /// # Errors
    /// As [`Run::dispatch`].
    pub fn step(&mut self, event: &StepEvent) -> Outcome {
        match event {
            StepEvent::CompletionCall(call) => {
                self.ctx.turn = if call.turn > 0 {
                    call.turn
                } else {
                    self.ctx.turn + 1
                };
                self.ctx.is_streaming = false;
            }
            StepEvent::TextDelta(_) | StepEvent::ToolCallDelta(_) => self.ctx.is_streaming = true,
            _ => {}
        }
        dispatch_to(
            &mut self.slots,
            (self.subscriptions, &self.tool_scope, self.max_event_bytes),
            (&mut self.ended, self.observer.as_deref()),
            &self.ctx,
            event,
        )
    }

    /// Tells `observer` of every hook's answer from now on: the hook, the
    /// event kind, the checked flow or the failure, shadow or not, and how
    /// long it took. Without one, nothing is timed.
    pub fn observe(&mut self, observer: Arc<dyn Observe>) {
        self.observer = Some(observer);
    }

    /// Whether a terminate, a fail or a fail-closed ended the run.
    pub fn is_over(&self) -> bool {
        self.ended.is_some()
    }

    /// Instantiates every plugin of the run now instead of at its first
    /// event, so the cost (and any failure to start) comes up front.
    ///
    /// # Errors
    /// [`FailClosed`] naming the first plugin that could not start; the run
    /// is then over.
    pub fn instantiate_all(&mut self) -> Result<(), FailClosed> {
        if let Some(Err(failure)) = &self.ended {
            return Err(failure.clone());
        }
        let result = instantiate_slots(&mut self.slots, &self.ctx.run_id);
        if let Err(failure) = &result {
            self.ended = Some(Err(failure.clone()));
        }
        result
    }

    /// Each plugin's scratchpad so far this run, by plugin name (the second
    /// plugin of a name in stack order is `name#2`, and so on; nested
    /// stacks included). A plugin started this run is listed, also with an
    /// empty scratchpad; one not started yet is listed with what
    /// [`Run::restore_scratchpads`] gave it, if anything; one that failed
    /// is not listed.
    ///
    /// For authors replaying a session, and for adapters whose client
    /// starts a process per step: save it after a step, restore it into
    /// the next step's run, and run-scoped state spans the session.
    pub fn scratchpads(&self) -> BTreeMap<String, BTreeMap<String, String>> {
        let mut found = BTreeMap::new();
        let mut seen = BTreeMap::new();
        walk_plugins(&self.slots, &mut |name, instance| {
            let key = unique_key(&mut seen, name);
            let entries = match instance {
                Instance::Live(live) => live.scratchpad(),
                Instance::NotStarted(seed) if !seed.is_empty() => seed.clone(),
                _ => return,
            };
            found.insert(key, entries);
        });
        found
    }

    /// Gives each plugin, before it starts, the scratchpad `saved` holds
    /// under its name (as [`Run::scratchpads`] names them). Plugins already
    /// started keep theirs; names the stack does not have are ignored. A
    /// saved scratchpad past the plugin's quota fails it closed when it
    /// starts (cause `limit`).
    pub fn restore_scratchpads(&mut self, mut saved: BTreeMap<String, BTreeMap<String, String>>) {
        let mut seen = BTreeMap::new();
        walk_plugins_mut(&mut self.slots, &mut |name, instance| {
            let key = unique_key(&mut seen, name);
            if let (Instance::NotStarted(seed), Some(entries)) = (instance, saved.remove(&key)) {
                *seed = entries;
            }
        });
    }

    /// Asks the stack about one event.
    ///
    /// Once the run is over, every later call returns the outcome that ended
    /// it: nothing proceeds after a terminate.
    ///
    /// # Errors
    /// [`FailClosed`] when a hook misbehaved; the run is then over.
    pub fn dispatch(&mut self, ctx: &HookContext, event: &StepEvent) -> Outcome {
        dispatch_to(
            &mut self.slots,
            (self.subscriptions, &self.tool_scope, self.max_event_bytes),
            (&mut self.ended, self.observer.as_deref()),
            ctx,
            event,
        )
    }
}
