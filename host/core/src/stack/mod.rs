//! The HookStack: its definition and builder; its runs (`run`) and how
//! an event goes through them (`compose`).

mod compose;
mod hook;
mod run;
#[cfg(test)]
mod tests;

use crate::decision::{Decided, Decision, Observe, Outcome, Shadowed};
pub use hook::{FnHook, Hook, hook_fn};
pub use run::Run;

use compose::{Instance, Slot};

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::engine::Runtime;
use crate::error::{Busy, Cause, FailClosed};
use crate::event::{EventKind, EventKinds, HookContext};
use crate::matcher::ToolMatcher;
use crate::plugin::Plugin;
use crate::slots::Reservation;

#[derive(Clone)]
enum Entry {
    Native(Arc<dyn Hook>),
    Plugin {
        plugin: Arc<Plugin>,
        shadow: bool,
        tools: Option<Arc<ToolMatcher>>,
    },
    Stack(Arc<HookStack>),
    /// A required plugin that could not be loaded: every run fails closed.
    Unloadable {
        name: Arc<str>,
        reason: String,
    },
}

/// Hooks in registration order, composed by the event's rule. Cheap to
/// clone; shared by every run.
///
/// | event | rule |
/// |---|---|
/// | completion-call | **accumulate**: every hook is asked; patches merge in order ([`crate::RequestPatch::merge`]); terminate stops the stack and discards the patch |
/// | tool-call | **chain**: a rewrite-args is threaded into the next hook's event; skip / terminate end the chain, and a rewrite made before them is kept ([`Decision::rewritten`]) |
/// | tool-result | **chain** on the model-visible result; outcome and extensions stay the tool's raw values for every hook |
/// | every other | **first non-continue wins** |
///
/// A shadow plugin ([`HookStack::push_shadow`], `mode = "shadow"` in the
/// manifest) is asked in its place like any other, and its answer is
/// checked the same way, but it never takes part in the composition: what
/// it would have done (a non-continue answer, or the failure that would
/// have failed the run closed) is logged, and reported in
/// [`Decision::shadow`]. A shadow that fails is not asked again in the run.
///
/// Each hook's answer is checked against the flows its event honours
/// ([`crate::rules`]) before it is composed; a rewrite-args must be JSON. A
/// stack is itself a hook: nesting one follows the same rules, and a stack of
/// continue-only hooks is continue. When every hook of the top-level stack
/// continues on an invalid-tool-call, the run fails ([`crate::Flow::Fail`]).
///
/// A [`HookStack`] is a definition, shared by every run. [`HookStack::start_run`]
/// makes a [`Run`]: the per-run state, where each WASM plugin gets a fresh
/// instance the first time an event it subscribed to arrives. Nothing a guest
/// keeps survives its run.
///
/// Why a returned flow and not a `next()` continuation: a hook cannot forget
/// to call the rest of the stack, cannot run it twice, and the host can check
/// every answer before acting on it.
#[derive(Clone, Default)]
pub struct HookStack {
    entries: Vec<Entry>,
    subscriptions: EventKinds,
    /// See [`HookStack::with_max_event_bytes`]; `None` is the default.
    max_event_bytes: Option<usize>,
    /// Instance slots a run reserves, per runtime: one per plugin, nested
    /// stacks included.
    slots_needed: Vec<(Runtime, usize)>,
    /// The tools any hook of the stack is asked about, when every hook
    /// that takes tool events is scoped to tools.
    tool_scope: ToolScope,
}

/// Whether a stack's tool events can be answered without asking anyone.
#[derive(Clone, Default)]
enum ToolScope {
    /// No hook takes tool events yet.
    #[default]
    Nobody,
    /// Every hook that takes them is scoped: these tools, together.
    Tools(Arc<ToolMatcher>),
    /// Some hook takes every tool's events.
    Everyone,
}

impl ToolScope {
    fn widen(&mut self, scope: ToolScope) {
        *self = match (std::mem::take(self), scope) {
            (ToolScope::Everyone, _) | (_, ToolScope::Everyone) => ToolScope::Everyone,
            (ToolScope::Nobody, other) | (other, ToolScope::Nobody) => other,
            (ToolScope::Tools(a), ToolScope::Tools(b)) => ToolScope::Tools(Arc::new(a.union(&b))),
        };
    }

    /// What a hook of `subscriptions`, scoped to `tools`, adds.
    fn of(subscriptions: EventKinds, tools: Option<&Arc<ToolMatcher>>) -> ToolScope {
        let takes_tools = [
            EventKind::ToolCall,
            EventKind::ToolResult,
            EventKind::InvalidToolCall,
        ]
        .into_iter()
        .any(|k| subscriptions.contains(k));
        match (takes_tools, tools) {
            (false, _) => ToolScope::Nobody,
            (true, Some(tools)) => ToolScope::Tools(tools.clone()),
            (true, None) => ToolScope::Everyone,
        }
    }

    /// Whether no hook is asked about `tool`.
    fn answers_alone(&self, tool: &str) -> bool {
        match self {
            ToolScope::Nobody => true,
            ToolScope::Tools(tools) => !tools.matches(tool),
            ToolScope::Everyone => false,
        }
    }
}

impl HookStack {
    /// The most text an event may carry by default (32 MiB: half of a
    /// guest's default memory).
    pub const DEFAULT_MAX_EVENT_BYTES: usize = 32 << 20;

    /// The stack with another bound on the text an event may carry. An
    /// event past it is refused before any guest runs: the run fails closed
    /// naming `hookbox` itself, cause `oversized`, not a guest that could
    /// not hold it.
    pub fn with_max_event_bytes(mut self, bytes: usize) -> HookStack {
        self.max_event_bytes = Some(bytes);
        self
    }

    /// An empty stack (continue on everything but invalid-tool-call).
    pub fn new() -> HookStack {
        HookStack::default()
    }

    /// Adds a native Rust hook after the others.
    pub fn push_hook(&mut self, hook: impl Hook + 'static) -> &mut Self {
        self.subscriptions = self.subscriptions.union(hook.subscriptions());
        self.tool_scope
            .widen(ToolScope::of(hook.subscriptions(), None));
        self.entries.push(Entry::Native(Arc::new(hook)));
        self
    }

    /// Adds a WASM plugin after the others; each run gets its own instance.
    pub fn push_plugin(&mut self, plugin: Arc<Plugin>) -> &mut Self {
        self.push_wasm(plugin, false, None)
    }

    /// Adds a WASM plugin asked about tool-call, tool-result and
    /// invalid-tool-call events only for the tools `tools` matches (other
    /// kinds as it subscribed); `shadow` as for [`HookStack::push_shadow`].
    /// A tool event no hook of the stack is scoped to is answered without
    /// entering any guest.
    pub fn push_scoped(
        &mut self,
        plugin: Arc<Plugin>,
        tools: ToolMatcher,
        shadow: bool,
    ) -> &mut Self {
        self.push_wasm(plugin, shadow, Some(Arc::new(tools)))
    }

    /// Adds a WASM plugin in shadow mode after the others: asked at its
    /// place, its answers and failures logged and reported
    /// ([`Decision::shadow`]), never acted on. Its instance is per run, as
    /// for any plugin.
    pub fn push_shadow(&mut self, plugin: Arc<Plugin>) -> &mut Self {
        self.push_wasm(plugin, true, None)
    }

    fn push_wasm(
        &mut self,
        plugin: Arc<Plugin>,
        shadow: bool,
        tools: Option<Arc<ToolMatcher>>,
    ) -> &mut Self {
        self.subscriptions = self.subscriptions.union(plugin.subscriptions());
        self.tool_scope
            .widen(ToolScope::of(plugin.subscriptions(), tools.as_ref()));
        self.need_slots(plugin.runtime(), 1);
        self.entries.push(Entry::Plugin {
            plugin,
            shadow,
            tools,
        });
        self
    }

    /// Nests a stack: it answers as one hook, by the same rules.
    pub fn push_stack(&mut self, stack: HookStack) -> &mut Self {
        self.subscriptions = self.subscriptions.union(stack.subscriptions);
        self.tool_scope.widen(stack.tool_scope.clone());
        for (runtime, needed) in &stack.slots_needed {
            self.need_slots(runtime, *needed);
        }
        self.entries.push(Entry::Stack(Arc::new(stack)));
        self
    }

    /// Records a plugin that is required but could not be loaded: every run
    /// of this stack fails closed at its first event, naming it.
    pub fn push_unloadable(&mut self, name: &str, reason: impl Into<String>) -> &mut Self {
        self.subscriptions = EventKinds::ALL;
        self.tool_scope = ToolScope::Everyone;
        self.entries.push(Entry::Unloadable {
            name: Arc::from(name),
            reason: reason.into(),
        });
        self
    }

    /// The union of what the stack's hooks subscribed to.
    pub fn subscriptions(&self) -> EventKinds {
        self.subscriptions
    }

    /// Each hook and plugin, in order (a nested stack's in its place), by
    /// name, with what it subscribes to; a required plugin that did not
    /// load subscribes to everything (it fails every run closed).
    pub fn subscribers(&self) -> Vec<(String, EventKinds)> {
        let mut found = Vec::new();
        for entry in &self.entries {
            match entry {
                Entry::Native(hook) => found.push((hook.name().to_owned(), hook.subscriptions())),
                Entry::Plugin { plugin, .. } => {
                    found.push((plugin.name().to_owned(), plugin.subscriptions()));
                }
                Entry::Stack(stack) => found.extend(stack.subscribers()),
                Entry::Unloadable { name, .. } => found.push((name.to_string(), EventKinds::ALL)),
            }
        }
        found
    }

    /// How many entries (hooks, plugins, nested stacks) it holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn need_slots(&mut self, runtime: &Runtime, needed: usize) {
        match self.slots_needed.iter_mut().find(|(r, _)| r.same(runtime)) {
            Some((_, count)) => *count += needed,
            None => self.slots_needed.push((runtime.clone(), needed)),
        }
    }

    /// The instance slots a run of this stack holds: one per plugin (hooks
    /// written in Rust hold none).
    pub fn instances_per_run(&self) -> usize {
        self.slots_needed.iter().map(|(_, needed)| needed).sum()
    }

    /// Instance slots held by live runs, and how many there are, on the
    /// runtime its plugins were compiled on (summed, should they come from
    /// several); `(0, 0)` for a stack without plugins.
    pub fn instance_slots(&self) -> (usize, usize) {
        self.slots_needed
            .iter()
            .map(|(runtime, _)| runtime.instance_slots())
            .fold((0, 0), |(u, c), (used, capacity)| (u + used, c + capacity))
    }

    /// Starts a run: per-run state for every hook; WASM plugins are
    /// instantiated lazily, on the first event they subscribed to.
    ///
    /// A run that does not fit in the runtime's instance slots (see
    /// [`HookStack::try_start_run`]) is over from the start: every event
    /// fails closed naming `hookbox`, cause `limit`.
    pub fn start_run(&self, run_id: impl Into<String>) -> Run {
        let run_id = run_id.into();
        self.try_start_run(run_id.clone()).unwrap_or_else(|busy| {
            let mut run = self.run_with(run_id, Vec::new());
            run.ended = Some(Err(FailClosed::host(Cause::Limit, busy.to_string())));
            run
        })
    }

    /// Starts a run if the runtime has an instance slot free for each of
    /// its plugins ([`crate::RuntimeConfig::max_instances`]), which it
    /// holds until it is dropped.
    ///
    /// # Errors
    /// [`Busy`] when it does not fit; nothing ran.
    pub fn try_start_run(&self, run_id: impl Into<String>) -> Result<Run, Busy> {
        let reservations = self
            .slots_needed
            .iter()
            .map(|(runtime, needed)| runtime.reserve(*needed))
            .collect::<Result<Vec<_>, Busy>>()?;
        Ok(self.run_with(run_id.into(), reservations))
    }

    fn run_with(&self, run_id: String, reservations: Vec<Reservation>) -> Run {
        Run {
            _reservations: reservations,
            ctx: HookContext {
                run_id,
                turn: 0,
                is_streaming: false,
                agent_name: None,
            },
            slots: self.slots(),
            subscriptions: self.subscriptions,
            tool_scope: self.tool_scope.clone(),
            max_event_bytes: self
                .max_event_bytes
                .unwrap_or(HookStack::DEFAULT_MAX_EVENT_BYTES),
            ended: None,
            observer: None,
        }
    }

    fn slots(&self) -> Vec<Slot> {
        self.entries
            .iter()
            .map(|entry| match entry {
                Entry::Native(hook) => Slot::Native {
                    name: Arc::from(hook.name()),
                    hook: hook.clone(),
                },
                Entry::Plugin {
                    plugin,
                    shadow,
                    tools,
                } => Slot::Plugin {
                    plugin: plugin.clone(),
                    instance: Instance::NotStarted(BTreeMap::new()),
                    shadow: *shadow,
                    tools: tools.clone(),
                },
                Entry::Stack(stack) => Slot::Stack {
                    slots: stack.slots(),
                    subscriptions: stack.subscriptions,
                    tool_scope: stack.tool_scope.clone(),
                },
                Entry::Unloadable { name, reason } => Slot::Unloadable {
                    name: name.clone(),
                    reason: reason.clone(),
                },
            })
            .collect()
    }
}
