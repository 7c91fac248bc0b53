//! The HookStack: hooks in registration order, composed by the event's rule.
//!
//! | event | rule |
//! |---|---|
//! | completion-call | **accumulate**: every hook is asked; patches merge in order ([`RequestPatch::merge`]); terminate stops the stack and discards the patch |
//! | tool-call | **chain**: a rewrite-args is threaded into the next hook's event; skip / terminate end the chain, and a rewrite made before them is kept ([`Decision::rewritten`]) |
//! | tool-result | **chain** on the model-visible result; outcome and extensions stay the tool's raw values for every hook |
//! | every other | **first non-continue wins** |
//!
//! A shadow plugin ([`HookStack::push_shadow`], `mode = "shadow"` in the
//! manifest) is asked in its place like any other, and its answer is
//! checked the same way, but it never takes part in the composition: what
//! it would have done (a non-continue answer, or the failure that would
//! have failed the run closed) is logged, and reported in
//! [`Decision::shadow`]. A shadow that fails is not asked again in the run.
//!
//! Each hook's answer is checked against the flows its event honours
//! ([`crate::rules`]) before it is composed; a rewrite-args must be JSON. A
//! stack is itself a hook: nesting one follows the same rules, and a stack of
//! continue-only hooks is continue. When every hook of the top-level stack
//! continues on an invalid-tool-call, the run fails ([`Flow::Fail`]).
//!
//! A [`HookStack`] is a definition, shared by every run. [`HookStack::start_run`]
//! makes a [`Run`]: the per-run state, where each WASM plugin gets a fresh
//! instance the first time an event it subscribed to arrives. Nothing a guest
//! keeps survives its run.
//!
//! Why a returned flow and not a `next()` continuation: a hook cannot forget
//! to call the rest of the stack, cannot run it twice, and the host can check
//! every answer before acting on it.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::engine::Runtime;
use crate::error::{Busy, Cause, FailClosed};
use crate::event::{EventKind, EventKinds, HookContext, StepEvent};
use crate::flow::{Flow, RequestPatch};
use crate::json::{canonical, is_json_object};
use crate::matcher::ToolMatcher;
use crate::plugin::{Plugin, PluginInstance};
use crate::rules::Composition;
use crate::slots::Reservation;

/// A hook written in Rust, running in the host. Shared by every run.
pub trait Hook: Send + Sync {
    /// The name diagnostics and decisions give it.
    fn name(&self) -> &str;

    /// The event kinds to dispatch to this hook; all by default.
    fn subscriptions(&self) -> EventKinds {
        EventKinds::ALL
    }

    /// Decides what to do at one step; checked against the event's rule like a guest's answer.
    fn on_event(&self, ctx: &HookContext, event: &StepEvent) -> Flow;
}

/// A [`Hook`] made of a name and a closure.
pub struct FnHook<F> {
    name: String,
    f: F,
}

/// Makes a native hook from a closure: `hook_fn("deny-shell", |_, _| Flow::Continue)`.
pub fn hook_fn<F>(name: impl Into<String>, f: F) -> FnHook<F>
where
    F: Fn(&HookContext, &StepEvent) -> Flow + Send + Sync,
{
    FnHook {
        name: name.into(),
        f,
    }
}

impl<F> Hook for FnHook<F>
where
    F: Fn(&HookContext, &StepEvent) -> Flow + Send + Sync,
{
    fn name(&self) -> &str {
        &self.name
    }
    fn on_event(&self, ctx: &HookContext, event: &StepEvent) -> Flow {
        (self.f)(ctx, event)
    }
}

/// The net answer of a stack to one event.
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    /// What the agent loop must do.
    pub flow: Flow,
    /// The hook that decided: the one that did not continue, the last
    /// rewriter of a chain, or the patch contributors joined with `+`.
    /// `None` when every hook continued.
    pub plugin: Option<Arc<str>>,
    /// On a chained event ended by skip or terminate: the arguments (or
    /// result) as rewritten by earlier hooks, which the following
    /// tool-result event must carry.
    pub rewritten: Option<String>,
    /// What shadow plugins would have done instead of continuing, in stack
    /// order: none of it was acted on.
    pub shadow: Vec<Shadowed>,
}

/// A shadow plugin's answer other than continue, or its failure: what it
/// would have done had it been enforcing.
#[derive(Clone, Debug, PartialEq)]
pub struct Shadowed {
    /// The shadow plugin.
    pub plugin: Arc<str>,
    /// Its answer (checked like an enforcing plugin's), or the failure that
    /// would have failed the run closed.
    pub outcome: Result<Flow, FailClosed>,
}

impl Decision {
    /// Who decided, as a client is told: the plugin, or [`crate::HOST`]
    /// when no plugin in particular did.
    pub fn by(&self) -> Arc<str> {
        self.plugin
            .clone()
            .unwrap_or_else(|| Arc::from(crate::HOST))
    }

    /// A decision of `flow` that no plugin in particular made.
    pub fn new(flow: Flow) -> Decision {
        Decision {
            flow,
            plugin: None,
            rewritten: None,
            shadow: Vec::new(),
        }
    }

    /// Whether the run is over after this decision (terminate, or fail).
    pub fn ends_run(&self) -> bool {
        matches!(self.flow, Flow::Terminate(_) | Flow::Fail)
    }
}

/// The outcome of dispatching one event.
pub type Outcome = Result<Decision, FailClosed>;

/// Watches every hook's answer in a run as it is made: what metrics and
/// decision logs are built from ([`Run::observe`]). Called on the thread
/// that dispatches, after each hook answered and its answer was checked:
/// keep it short (count, or hand the record to a queue).
pub trait Observe: Send + Sync {
    /// One hook answered (or failed).
    fn decided(&self, decided: &Decided<'_>);
}

/// One hook's answer to one event, as an [`Observe`] sees it.
#[derive(Debug)]
pub struct Decided<'a> {
    /// The run.
    pub run_id: &'a str,
    /// The hook (plugin, native hook or unloadable plugin).
    pub plugin: &'a Arc<str>,
    /// The event's kind.
    pub kind: EventKind,
    /// Its answer, checked against the event; or the failure that fails
    /// the run closed (a shadow's: that would have).
    pub outcome: Result<&'a Flow, &'a FailClosed>,
    /// Whether it is a shadow plugin (its answer was not acted on).
    pub shadow: bool,
    /// Time from asking to the checked answer, its instantiation included
    /// when this was its first event of the run.
    pub took: Duration,
}

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

/// Hooks in registration order. Cheap to clone; shared by every run.
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
            run.ended = Some(Err(FailClosed::new(
                &Arc::from("hookbox"),
                Cause::Limit,
                busy.to_string(),
            )));
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

/// One run through a stack: owns the run's guest instances and its context.
///
/// A caller that knows the turn (an agent loop) passes a context to
/// [`Run::dispatch`]; a caller relaying a session's events (replay, a
/// sidecar, an agent's hook) lets the run keep it with [`Run::step`].
pub struct Run {
    /// Its instance slots, given back when it is dropped.
    _reservations: Vec<Reservation>,
    /// The run's own context: its id, and the turn [`Run::step`] keeps.
    ctx: HookContext,
    slots: Vec<Slot>,
    /// What any hook of the stack subscribed to: other kinds are answered
    /// without walking the stack.
    subscriptions: EventKinds,
    /// Tool events for tools no hook is scoped to are answered likewise.
    tool_scope: ToolScope,
    /// Events carrying more text are refused before any guest runs.
    max_event_bytes: usize,
    ended: Option<Outcome>,
    /// Told of every hook's answer; see [`Run::observe`].
    observer: Option<Arc<dyn Observe>>,
}

enum Slot {
    Native {
        name: Arc<str>,
        hook: Arc<dyn Hook>,
    },
    Plugin {
        plugin: Arc<Plugin>,
        instance: Instance,
        /// Asked, never acted on.
        shadow: bool,
        /// Asked about these tools' events only.
        tools: Option<Arc<ToolMatcher>>,
    },
    Stack {
        slots: Vec<Slot>,
        subscriptions: EventKinds,
        tool_scope: ToolScope,
    },
    Unloadable {
        name: Arc<str>,
        reason: String,
    },
}

enum Instance {
    /// Started on its first event, its scratchpad holding this seed.
    NotStarted(BTreeMap<String, String>),
    Live(PluginInstance),
    /// Failed once: never entered again.
    Dead,
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

/// [`Run::dispatch`] on the run's parts, so [`Run::step`] can lend its own
/// context.
fn dispatch_to(
    slots: &mut [Slot],
    (subscriptions, tool_scope, max_event_bytes): (EventKinds, &ToolScope, usize),
    (ended, observer): (&mut Option<Outcome>, Option<&dyn Observe>),
    ctx: &HookContext,
    event: &StepEvent,
) -> Outcome {
    if let Some(ended) = ended {
        return ended.clone();
    }
    let kind = event.kind();
    if subscriptions.contains(kind) && event.payload_len() > max_event_bytes {
        // The host's own bound: no guest is blamed for text it never got.
        let failure = FailClosed::new(
            &Arc::from("hookbox"),
            Cause::Oversized,
            format!(
                "the `{kind}` event carries {} bytes of text, more than the {max_event_bytes} this host accepts; refused before any plugin ran",
                event.payload_len()
            ),
        );
        let outcome = Err(failure);
        crate::trace::record(&crate::trace::decision_span(kind, ctx), &outcome);
        *ended = Some(outcome.clone());
        return outcome;
    }
    if !subscriptions.contains(kind) && kind != EventKind::InvalidToolCall {
        return Ok(Decision::new(kind.default_flow()));
    }
    // A tool no hook is scoped to: nobody to ask (an invalid tool call
    // then fails, as when nobody subscribed).
    if event
        .tool_name()
        .is_some_and(|tool| tool_scope.answers_alone(tool))
    {
        return Ok(Decision::new(kind.default_flow()));
    }
    let mut asking = Asking {
        shadows: Vec::new(),
        observer,
    };
    let span = crate::trace::decision_span(kind, ctx);
    let outcome = span
        .in_scope(|| compose(slots, ctx, event, kind, &mut asking))
        .map(|mut decision| {
            if decision.flow.is_continue() {
                decision.flow = kind.default_flow();
            }
            decision.shadow = asking.shadows;
            decision
        });
    crate::trace::record(&span, &outcome);
    if outcome.as_ref().map_or(true, Decision::ends_run) {
        *ended = Some(outcome.clone());
    }
    outcome
}

/// What one dispatch carries through the stack: what shadow plugins would
/// have done, gathered on the way, and who is told of each answer.
struct Asking<'o> {
    shadows: Vec<Shadowed>,
    observer: Option<&'o dyn Observe>,
}

fn compose(
    slots: &mut [Slot],
    ctx: &HookContext,
    event: &StepEvent,
    kind: EventKind,
    asking: &mut Asking<'_>,
) -> Outcome {
    match kind.composition() {
        Composition::Accumulate => accumulate(slots, ctx, event, kind, asking),
        Composition::Chain => chain(slots, ctx, event, kind, asking),
        Composition::FirstNonContinue => {
            for slot in slots.iter_mut().filter(|s| s.wants(kind, event)) {
                let Some(decision) = slot.ask(ctx, event, kind, asking) else {
                    continue;
                };
                let decision = decision?;
                if !decision.flow.is_continue() {
                    return Ok(decision);
                }
            }
            Ok(Decision::new(Flow::Continue))
        }
    }
}

fn accumulate(
    slots: &mut [Slot],
    ctx: &HookContext,
    event: &StepEvent,
    kind: EventKind,
    asking: &mut Asking<'_>,
) -> Outcome {
    let mut merged: Option<(RequestPatch, Arc<str>)> = None;
    for slot in slots.iter_mut().filter(|s| s.wants(kind, event)) {
        let Some(decision) = slot.ask(ctx, event, kind, asking) else {
            continue;
        };
        let decision = decision?;
        let plugin = decision.plugin.clone().unwrap_or_else(|| Arc::from("?"));
        match decision.flow {
            Flow::Continue => {}
            Flow::PatchRequest(patch) => {
                merged = Some(match merged {
                    None => (patch, plugin),
                    Some((mut acc, earlier)) => {
                        for conflict in acc.merge(patch) {
                            tracing::warn!(
                                field = conflict.0,
                                earlier = &*earlier,
                                later = &*plugin,
                                "request-patch conflict: the later hook's value wins"
                            );
                        }
                        (acc, Arc::from(format!("{earlier}+{plugin}")))
                    }
                });
            }
            _ => return Ok(decision),
        }
    }
    Ok(match merged {
        Some((patch, plugin)) => Decision {
            plugin: Some(plugin),
            ..Decision::new(Flow::PatchRequest(patch))
        },
        None => Decision::new(Flow::Continue),
    })
}

fn chain(
    slots: &mut [Slot],
    ctx: &HookContext,
    event: &StepEvent,
    kind: EventKind,
    asking: &mut Asking<'_>,
) -> Outcome {
    let mut current = Cow::Borrowed(event);
    let mut rewrite: Option<(String, Option<Arc<str>>)> = None;
    for slot in slots.iter_mut().filter(|s| s.wants(kind, event)) {
        let Some(decision) = slot.ask(ctx, &current, kind, asking) else {
            continue;
        };
        let decision = decision?;
        if let Some(kept) = decision.rewritten {
            rewrite = Some((kept, decision.plugin.clone()));
        }
        match decision.flow {
            Flow::Continue => {}
            Flow::RewriteArgs(text) | Flow::RewriteResult(text) => {
                match current.to_mut() {
                    StepEvent::ToolCall(call) => call.args.clone_from(&text),
                    StepEvent::ToolResult(result) => result.result.clone_from(&text),
                    _ => {}
                }
                rewrite = Some((text, decision.plugin));
            }
            flow => {
                return Ok(Decision {
                    plugin: decision.plugin,
                    rewritten: rewrite.map(|(text, _)| text),
                    ..Decision::new(flow)
                });
            }
        }
    }
    Ok(match rewrite {
        Some((text, plugin)) => Decision {
            plugin,
            ..Decision::new(if kind == EventKind::ToolCall {
                Flow::RewriteArgs(text)
            } else {
                Flow::RewriteResult(text)
            })
        },
        None => Decision::new(Flow::Continue),
    })
}

/// Every plugin slot in stack order (nested stacks included).
fn walk_plugins(slots: &[Slot], visit: &mut impl FnMut(&str, &Instance)) {
    for slot in slots {
        match slot {
            Slot::Plugin {
                plugin, instance, ..
            } => visit(plugin.name(), instance),
            Slot::Stack { slots, .. } => walk_plugins(slots, visit),
            _ => {}
        }
    }
}

/// [`walk_plugins`], able to change each instance.
fn walk_plugins_mut(slots: &mut [Slot], visit: &mut impl FnMut(&str, &mut Instance)) {
    for slot in slots {
        match slot {
            Slot::Plugin {
                plugin, instance, ..
            } => visit(plugin.name(), instance),
            Slot::Stack { slots, .. } => walk_plugins_mut(slots, visit),
            _ => {}
        }
    }
}

/// `name` the first time, then `name#2`, `name#3`...
fn unique_key(seen: &mut BTreeMap<String, usize>, name: &str) -> String {
    let count = seen.entry(name.to_owned()).or_insert(0);
    *count += 1;
    if *count == 1 {
        name.to_owned()
    } else {
        format!("{name}#{count}")
    }
}

fn instantiate_slots(slots: &mut [Slot], run_id: &str) -> Result<(), FailClosed> {
    for slot in slots {
        match slot {
            Slot::Plugin {
                plugin, instance, ..
            } => {
                if let Instance::NotStarted(seed) = instance {
                    match plugin.instantiate(run_id, std::mem::take(seed)) {
                        Ok(live) => *instance = Instance::Live(live),
                        Err(failure) => {
                            *instance = Instance::Dead;
                            return Err(failure);
                        }
                    }
                }
            }
            Slot::Stack { slots, .. } => instantiate_slots(slots, run_id)?,
            Slot::Unloadable { name, reason } => {
                return Err(FailClosed::new(
                    name,
                    Cause::Load,
                    format!("required plugin could not be loaded: {reason}"),
                ));
            }
            Slot::Native { .. } => {}
        }
    }
    Ok(())
}

impl Slot {
    /// Whether the slot is asked about `event`: it subscribed to its kind
    /// and, for a tool event, is scoped to its tool (or not scoped).
    fn wants(&self, kind: EventKind, event: &StepEvent) -> bool {
        match self {
            Slot::Native { hook, .. } => hook.subscriptions().contains(kind),
            Slot::Plugin { plugin, tools, .. } => {
                plugin.subscriptions().contains(kind)
                    && match (tools, event.tool_name()) {
                        (Some(tools), Some(tool)) => tools.matches(tool),
                        _ => true,
                    }
            }
            Slot::Stack {
                subscriptions,
                tool_scope,
                ..
            } => {
                subscriptions.contains(kind)
                    && !event
                        .tool_name()
                        .is_some_and(|tool| tool_scope.answers_alone(tool))
            }
            Slot::Unloadable { .. } => true,
        }
    }

    /// The slot's decision, or `None` for a shadow plugin, whose answer is
    /// recorded in `asking.shadows` (when it is not continue) instead. The
    /// observer, if any, is told of every hook's answer.
    fn ask(
        &mut self,
        ctx: &HookContext,
        event: &StepEvent,
        kind: EventKind,
        asking: &mut Asking<'_>,
    ) -> Option<Outcome> {
        let (name, shadow) = match self {
            // A nested stack's own slots report themselves.
            Slot::Stack { .. } => return Some(self.decide(ctx, event, kind, asking)),
            Slot::Plugin {
                instance: Instance::Dead,
                shadow: true,
                ..
            } => return None, // reported when it failed; a run never dies of a shadow
            Slot::Plugin { plugin, shadow, .. } => (plugin.name_arc().clone(), *shadow),
            Slot::Native { name, .. } | Slot::Unloadable { name, .. } => (name.clone(), false),
        };
        let observer = asking.observer;
        let started = observer.map(|_| Instant::now());
        let outcome = self.decide(ctx, event, kind, asking);
        if let (Some(observer), Some(started)) = (observer, started) {
            observer.decided(&Decided {
                run_id: &ctx.run_id,
                plugin: &name,
                kind,
                outcome: outcome.as_ref().map(|d| &d.flow),
                shadow,
                took: started.elapsed(),
            });
        }
        if !shadow {
            return Some(outcome);
        }
        let outcome = match outcome {
            Ok(decision) if decision.flow.is_continue() => return None,
            Ok(decision) => {
                tracing::info!(
                    target: "hookbox::shadow",
                    plugin = &*name,
                    event = kind.name(),
                    flow = decision.flow.name(),
                    "shadow plugin would have answered `{}`; not acted on",
                    decision.flow.name()
                );
                Ok(decision.flow)
            }
            Err(failure) => {
                tracing::warn!(
                    target: "hookbox::shadow",
                    plugin = &*name,
                    event = kind.name(),
                    cause = failure.cause.name(),
                    "shadow plugin failed (the run goes on): {failure}"
                );
                Err(failure)
            }
        };
        asking.shadows.push(Shadowed {
            plugin: name,
            outcome,
        });
        None
    }

    fn decide(
        &mut self,
        ctx: &HookContext,
        event: &StepEvent,
        kind: EventKind,
        asking: &mut Asking<'_>,
    ) -> Outcome {
        match self {
            Slot::Native { name, hook } => checked(name, kind, hook.on_event(ctx, event)),
            Slot::Plugin {
                plugin, instance, ..
            } => {
                let live = match instance {
                    Instance::Live(live) => live,
                    Instance::Dead => {
                        return Err(FailClosed::new(
                            plugin.name_arc(),
                            Cause::Trap,
                            "failed earlier in this run",
                        ));
                    }
                    Instance::NotStarted(seed) => {
                        match plugin.instantiate(&ctx.run_id, std::mem::take(seed)) {
                            Ok(live) => instance.insert_live(live),
                            Err(failure) => {
                                *instance = Instance::Dead;
                                return Err(failure);
                            }
                        }
                    }
                };
                match plugin.call(live, ctx, event) {
                    Ok(flow) => checked(plugin.name_arc(), kind, flow),
                    Err(failure) => {
                        *instance = Instance::Dead;
                        Err(failure)
                    }
                }
            }
            Slot::Stack { slots, .. } => compose(slots, ctx, event, kind, asking),
            Slot::Unloadable { name, reason } => Err(FailClosed::new(
                name,
                Cause::Load,
                format!("required plugin could not be loaded: {reason}"),
            )),
        }
    }
}

impl Instance {
    fn insert_live(&mut self, live: PluginInstance) -> &mut PluginInstance {
        *self = Instance::Live(live);
        match self {
            Instance::Live(live) => live,
            _ => unreachable!("just set"),
        }
    }
}

/// Checks one hook's answer against its event before it is composed.
fn checked(plugin: &Arc<str>, kind: EventKind, flow: Flow) -> Outcome {
    tracing::debug!(target: "hookbox::decision", plugin = &**plugin, event = kind.name(), flow = flow.name());
    if !kind.honours(&flow) {
        let honoured: Vec<&str> = crate::rules::flows_honoured_by(kind).collect();
        return Err(FailClosed::new(
            plugin,
            Cause::UnsupportedFlow,
            format!(
                "answered `{}` to a `{kind}` event, which honours only {}",
                flow.name(),
                honoured.join(", ")
            ),
        ));
    }
    let flow = match flow {
        // The next guard and the tool read the rewrite in the canonical
        // form, so what a guard checked is what runs.
        Flow::RewriteArgs(args) => match canonical(&args) {
            Some(args) => Flow::RewriteArgs(args),
            None => {
                return Err(FailClosed::new(
                    plugin,
                    Cause::InvalidJson,
                    "rewrite-args is not valid JSON",
                ));
            }
        },
        flow => flow,
    };
    match &flow {
        Flow::PatchRequest(RequestPatch {
            additional_params: Some(params),
            ..
        }) if !is_json_object(params) => {
            return Err(FailClosed::new(
                plugin,
                Cause::InvalidJson,
                "patch-request's additional-params is not a JSON object",
            ));
        }
        _ => {}
    }
    Ok(Decision {
        plugin: Some(plugin.clone()),
        ..Decision::new(flow)
    })
}

/// The JSON form of [`Decision::shadow`]: `[{"plugin": P, "flow": {...}}`
/// or `{"plugin": P, "fail_closed": {"cause": C, "detail": D}}, ...]`.
pub fn shadow_json(shadow: &[Shadowed]) -> serde_json::Value {
    use serde_json::json;
    shadow
        .iter()
        .map(|s| match &s.outcome {
            Ok(flow) => json!({ "plugin": &*s.plugin, "flow": flow }),
            Err(failure) => json!({
                "plugin": &*s.plugin,
                "fail_closed": { "cause": failure.cause, "detail": failure.detail },
            }),
        })
        .collect()
}

/// The JSON form of an [`Outcome`]: the net flow, with
/// `plugin` naming the decider (and `shadow` listing what shadow plugins
/// would have done, when any did not continue), or for a fail-closed run a terminate flow
/// with `fail_closed: {plugin, cause}`.
pub fn outcome_json(outcome: &Outcome) -> serde_json::Value {
    use serde_json::{Value, json};
    match outcome {
        Ok(decision) => {
            let mut value = serde_json::to_value(&decision.flow).unwrap_or(Value::Null);
            if let Value::Object(map) = &mut value {
                if let Some(plugin) = &decision.plugin {
                    map.insert("plugin".into(), json!(&**plugin));
                }
                if let Some(rewritten) = &decision.rewritten {
                    map.insert("rewritten".into(), json!(rewritten));
                }
                if !decision.shadow.is_empty() {
                    map.insert("shadow".into(), shadow_json(&decision.shadow));
                }
            }
            value
        }
        Err(failure) => json!({
            "flow": "terminate",
            "reason": failure.to_string(),
            "fail_closed": { "plugin": &*failure.plugin, "cause": failure.cause, "detail": failure.detail },
        }),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::event::{
        CompletionCall, InvalidToolCall, TextDelta, ToolCall, ToolOutcome, ToolResult,
    };
    use crate::flow::Document;

    /// A hook that answers with `answer(event)` and records what it saw.
    struct Fake<F> {
        name: &'static str,
        answer: F,
        seen: Arc<Mutex<Vec<StepEvent>>>,
    }

    impl<F: Fn(&StepEvent) -> Flow + Send + Sync> Hook for Fake<F> {
        fn name(&self) -> &str {
            self.name
        }
        fn on_event(&self, _ctx: &HookContext, event: &StepEvent) -> Flow {
            self.seen.lock().unwrap().push(event.clone());
            (self.answer)(event)
        }
    }

    type Seen = Arc<Mutex<Vec<StepEvent>>>;

    fn fake(
        stack: &mut HookStack,
        name: &'static str,
        answer: impl Fn(&StepEvent) -> Flow + Send + Sync + 'static,
    ) -> Seen {
        let seen = Seen::default();
        stack.push_hook(Fake {
            name,
            answer,
            seen: seen.clone(),
        });
        seen
    }

    fn answers(flows: Vec<(&'static str, Flow)>) -> (HookStack, Vec<Seen>) {
        let mut stack = HookStack::new();
        let seen = flows
            .into_iter()
            .map(|(name, flow)| fake(&mut stack, name, move |_| flow.clone()))
            .collect();
        (stack, seen)
    }

    fn dispatch(stack: &HookStack, event: &StepEvent) -> Outcome {
        let mut run = stack.start_run("r");
        run.dispatch(&run.context(1), event)
    }

    fn call(args: &str) -> StepEvent {
        StepEvent::ToolCall(ToolCall {
            tool_name: "t".into(),
            args: args.into(),
            ..Default::default()
        })
    }

    fn result(text: &str) -> StepEvent {
        StepEvent::ToolResult(ToolResult {
            tool_name: "t".into(),
            args: "{}".into(),
            result: text.into(),
            outcome: ToolOutcome::Error(crate::event::ToolError {
                kind: crate::event::ToolErrorKind::Execution,
                message: "raw".into(),
            }),
            extensions: r#"{"exit":1}"#.into(),
            ..Default::default()
        })
    }

    fn completion() -> StepEvent {
        StepEvent::CompletionCall(CompletionCall {
            prompt: "p".into(),
            history: vec![],
            turn: 1,
        })
    }

    fn invalid() -> StepEvent {
        StepEvent::InvalidToolCall(InvalidToolCall {
            tool_name: "shel".into(),
            ..Default::default()
        })
    }

    fn patch(f: impl FnOnce(&mut RequestPatch)) -> Flow {
        let mut p = RequestPatch::default();
        f(&mut p);
        Flow::PatchRequest(p)
    }

    fn doc(id: &str) -> Document {
        Document {
            id: id.into(),
            text: id.into(),
        }
    }

    fn asked(seen: &Seen) -> usize {
        seen.lock().unwrap().len()
    }

    #[test]
    fn completion_call_asks_every_hook_and_merges_patches_in_registration_order() {
        let (stack, seen) = answers(vec![
            ("a", patch(|p| p.extra_context = Some(vec![doc("a")]))),
            ("b", Flow::Continue),
            ("c", patch(|p| p.extra_context = Some(vec![doc("c")]))),
        ]);
        let decision = dispatch(&stack, &completion()).unwrap();
        assert_eq!(
            decision.flow,
            patch(|p| p.extra_context = Some(vec![doc("a"), doc("c")]))
        );
        assert_eq!(decision.plugin.as_deref(), Some("a+c"));
        assert!(seen.iter().all(|s| asked(s) == 1));
    }

    #[test]
    fn completion_call_conflicting_fields_take_the_later_hook() {
        let (stack, _) = answers(vec![
            ("a", patch(|p| p.temperature = Some(0.9))),
            ("b", patch(|p| p.temperature = Some(0.1))),
        ]);
        assert_eq!(
            dispatch(&stack, &completion()).unwrap().flow,
            patch(|p| p.temperature = Some(0.1))
        );
    }

    #[test]
    fn completion_call_terminate_stops_the_stack_and_discards_the_patch() {
        let (stack, seen) = answers(vec![
            ("a", patch(|p| p.preamble = Some("x".into()))),
            ("b", Flow::terminate("stop")),
            ("c", patch(|p| p.preamble = Some("y".into()))),
        ]);
        let decision = dispatch(&stack, &completion()).unwrap();
        assert_eq!(decision.flow, Flow::terminate("stop"));
        assert_eq!(decision.plugin.as_deref(), Some("b"));
        assert_eq!(asked(&seen[2]), 0, "hooks after a terminate are not asked");
    }

    #[test]
    fn completion_call_with_only_continues_is_continue() {
        let (stack, _) = answers(vec![("a", Flow::Continue), ("b", Flow::Continue)]);
        assert_eq!(
            dispatch(&stack, &completion()).unwrap().flow,
            Flow::Continue
        );
    }

    #[test]
    fn tool_call_rewrites_thread_into_the_next_hook() {
        let mut stack = HookStack::new();
        fake(&mut stack, "a", |_| Flow::rewrite_args(r#"{"n":1}"#));
        let seen_b = fake(&mut stack, "b", |_| Flow::Continue);
        fake(&mut stack, "c", |_| Flow::rewrite_args(r#"{"n":2}"#));
        let decision = dispatch(&stack, &call("{}")).unwrap();
        assert_eq!(decision.flow, Flow::rewrite_args(r#"{"n":2}"#));
        assert_eq!(decision.plugin.as_deref(), Some("c"));
        assert_eq!(
            seen_b.lock().unwrap()[0],
            call(r#"{"n":1}"#),
            "b saw a's rewrite"
        );
    }

    #[test]
    fn tool_call_skip_ends_the_chain_and_keeps_the_earlier_rewrite() {
        let (stack, seen) = answers(vec![
            ("jail", Flow::rewrite_args(r#"{"path":"/w/a"}"#)),
            ("deny", Flow::skip("no")),
            ("later", Flow::rewrite_args("{}")),
        ]);
        let decision = dispatch(&stack, &call("{}")).unwrap();
        assert_eq!(decision.flow, Flow::skip("no"));
        assert_eq!(decision.plugin.as_deref(), Some("deny"));
        assert_eq!(decision.rewritten.as_deref(), Some(r#"{"path":"/w/a"}"#));
        assert_eq!(asked(&seen[2]), 0);
    }

    #[test]
    fn tool_call_terminate_ends_the_chain_and_keeps_the_earlier_rewrite() {
        let (stack, _) = answers(vec![
            ("a", Flow::rewrite_args("[1]")),
            ("b", Flow::terminate("budget")),
        ]);
        let decision = dispatch(&stack, &call("{}")).unwrap();
        assert_eq!(
            (decision.flow, decision.rewritten.as_deref()),
            (Flow::terminate("budget"), Some("[1]"))
        );
    }

    #[test]
    fn tool_result_rewrites_chain_while_outcome_and_extensions_stay_raw() {
        let mut stack = HookStack::new();
        fake(&mut stack, "redact", |_| Flow::rewrite_result("[redacted]"));
        let seen = fake(&mut stack, "truncate", |e| match e {
            StepEvent::ToolResult(r) => Flow::rewrite_result(format!("{}!", r.result)),
            _ => Flow::Continue,
        });
        let decision = dispatch(&stack, &result("secret")).unwrap();
        assert_eq!(decision.flow, Flow::rewrite_result("[redacted]!"));
        let StepEvent::ToolResult(second) = &seen.lock().unwrap()[0] else {
            unreachable!()
        };
        let StepEvent::ToolResult(original) = result("secret") else {
            unreachable!()
        };
        assert_eq!(second.result, "[redacted]");
        assert_eq!(
            (&second.outcome, &second.extensions),
            (&original.outcome, &original.extensions)
        );
    }

    #[test]
    fn other_events_take_the_first_non_continue_and_ask_no_further() {
        let (stack, seen) = answers(vec![
            ("a", Flow::Continue),
            ("b", Flow::terminate("first")),
            ("c", Flow::terminate("second")),
        ]);
        let event = StepEvent::TextDelta(TextDelta {
            delta: "d".into(),
            aggregated: "d".into(),
        });
        let decision = dispatch(&stack, &event).unwrap();
        assert_eq!(
            (decision.flow, decision.plugin.as_deref()),
            (Flow::terminate("first"), Some("b"))
        );
        assert_eq!(asked(&seen[2]), 0);
    }

    #[test]
    fn invalid_tool_call_continue_passes_to_the_next_hook() {
        let (stack, _) = answers(vec![("a", Flow::Continue), ("b", Flow::repair("shell"))]);
        assert_eq!(
            dispatch(&stack, &invalid()).unwrap().flow,
            Flow::repair("shell")
        );
    }

    #[test]
    fn invalid_tool_call_where_every_hook_continues_fails_the_run() {
        let (stack, _) = answers(vec![("a", Flow::Continue)]);
        let mut run = stack.start_run("r");
        let decision = run.dispatch(&run.context(1), &invalid()).unwrap();
        assert_eq!((decision.flow, decision.plugin), (Flow::Fail, None));
        assert!(run.is_over());
        assert_eq!(
            HookStack::new()
                .start_run("r")
                .dispatch(&HookContext::default(), &invalid())
                .unwrap()
                .flow,
            Flow::Fail
        );
    }

    #[test]
    fn a_stack_of_continue_only_hooks_continues() {
        let (stack, _) = answers(vec![("a", Flow::Continue), ("b", Flow::Continue)]);
        for event in [completion(), call("{}"), result("r")] {
            assert_eq!(
                dispatch(&stack, &event).unwrap(),
                Decision::new(Flow::Continue)
            );
        }
    }

    #[test]
    fn hooks_run_in_registration_order() {
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut stack = HookStack::new();
        for name in ["first", "second", "third"] {
            let order = order.clone();
            stack.push_hook(hook_fn(name, move |_, _| {
                order.lock().unwrap().push(name);
                Flow::Continue
            }));
        }
        dispatch(&stack, &completion()).unwrap();
        assert_eq!(*order.lock().unwrap(), ["first", "second", "third"]);
    }

    #[test]
    fn nesting_a_stack_inside_a_stack_changes_nothing() {
        let flows = || {
            vec![
                (
                    "a",
                    patch(|p| p.active_tools = Some(vec!["x".into(), "y".into()])),
                ),
                ("b", Flow::rewrite_args(r#"{"b":1}"#)),
                ("c", patch(|p| p.active_tools = Some(vec!["y".into()]))),
            ]
        };
        let (flat, _) = answers(flows());
        let mut flows = flows();
        let last = flows.pop().unwrap();
        let (inner, _) = answers(flows);
        let mut nested = HookStack::new();
        nested.push_stack(inner);
        fake(&mut nested, last.0, move |_| last.1.clone());
        for event in [completion(), call("{}"), result("r")] {
            let (flat, nested) = (dispatch(&flat, &event), dispatch(&nested, &event));
            assert_eq!(flat.map(|d| d.flow), nested.map(|d| d.flow), "{event:?}");
        }
    }

    #[test]
    fn a_nested_stack_keeps_its_rewrite_before_a_skip() {
        let (inner, _) = answers(vec![
            ("jail", Flow::rewrite_args("[2]")),
            ("deny", Flow::skip("no")),
        ]);
        let mut outer = HookStack::new();
        outer.push_stack(inner);
        let decision = dispatch(&outer, &call("{}")).unwrap();
        assert_eq!(
            (decision.flow, decision.rewritten.as_deref()),
            (Flow::skip("no"), Some("[2]"))
        );
    }

    #[test]
    fn a_nested_stack_that_continues_on_invalid_tool_call_lets_the_next_hook_decide() {
        let (inner, _) = answers(vec![("a", Flow::Continue)]);
        let mut outer = HookStack::new();
        outer.push_stack(inner);
        fake(&mut outer, "repair", |_| Flow::repair("shell"));
        assert_eq!(
            dispatch(&outer, &invalid()).unwrap().flow,
            Flow::repair("shell")
        );
    }

    #[test]
    fn a_hook_not_subscribed_to_a_kind_is_not_asked() {
        struct OnlyToolCalls(Seen);
        impl Hook for OnlyToolCalls {
            fn name(&self) -> &str {
                "only"
            }
            fn subscriptions(&self) -> EventKinds {
                EventKinds::NONE.with(EventKind::ToolCall)
            }
            fn on_event(&self, _: &HookContext, event: &StepEvent) -> Flow {
                self.0.lock().unwrap().push(event.clone());
                Flow::terminate("asked")
            }
        }
        let seen = Seen::default();
        let mut stack = HookStack::new();
        stack.push_hook(OnlyToolCalls(seen.clone()));
        assert_eq!(
            dispatch(&stack, &completion()).unwrap().flow,
            Flow::Continue
        );
        assert_eq!(asked(&seen), 0);
        assert_eq!(
            dispatch(&stack, &call("{}")).unwrap().flow,
            Flow::terminate("asked")
        );
    }

    #[test]
    fn every_flow_an_event_does_not_honour_fails_closed_naming_the_hook() {
        let events = [
            completion(),
            StepEvent::CompletionResponse(Default::default()),
            StepEvent::ModelTurnFinished(Default::default()),
            invalid(),
            call("{}"),
            result("r"),
            StepEvent::TextDelta(Default::default()),
            StepEvent::ToolCallDelta(Default::default()),
            StepEvent::StreamResponseFinish(Default::default()),
        ];
        let mut refused = 0;
        for event in &events {
            for flow in crate::rules::every_flow() {
                let flow = match flow {
                    Flow::RewriteArgs(_) => Flow::rewrite_args("{}"),
                    other => other,
                };
                let honoured = event.kind().honours(&flow);
                let (stack, _) = answers(vec![("guard", flow.clone())]);
                match dispatch(&stack, event) {
                    Err(failure) => {
                        assert!(!honoured, "{} refused on {}", flow.name(), event.kind());
                        assert_eq!(
                            (&*failure.plugin, failure.cause),
                            ("guard", Cause::UnsupportedFlow)
                        );
                        refused += 1;
                    }
                    Ok(_) => assert!(honoured, "{} accepted on {}", flow.name(), event.kind()),
                }
            }
        }
        assert_eq!(refused, 81 - 26, "9 events x 9 flows, 26 honoured pairs");
    }

    #[test]
    fn a_rewrite_args_that_is_not_json_fails_closed() {
        let (stack, _) = answers(vec![("bad", Flow::rewrite_args("{not json"))]);
        let failure = dispatch(&stack, &call("{}")).unwrap_err();
        assert_eq!(
            (&*failure.plugin, failure.cause),
            ("bad", Cause::InvalidJson)
        );
    }

    #[test]
    fn additional_params_that_are_not_a_json_object_fail_closed() {
        let (stack, _) = answers(vec![(
            "bad",
            patch(|p| p.additional_params = Some("[1]".into())),
        )]);
        assert_eq!(
            dispatch(&stack, &completion()).unwrap_err().cause,
            Cause::InvalidJson
        );
    }

    #[test]
    fn after_a_terminate_the_run_is_over_and_stays_over() {
        let (stack, seen) = answers(vec![("a", Flow::terminate("done"))]);
        let mut run = stack.start_run("r");
        let ctx = run.context(1);
        let first = run.dispatch(&ctx, &call("{}"));
        assert!(run.is_over());
        assert_eq!(run.dispatch(&ctx, &completion()), first);
        assert_eq!(asked(&seen[0]), 1, "no hook is asked after the end");
    }

    #[test]
    fn an_unloadable_required_plugin_fails_every_run_closed() {
        let mut stack = HookStack::new();
        stack.push_unloadable("broken", "corrupt file");
        for run in 0..2 {
            let failure = stack
                .start_run(format!("r{run}"))
                .dispatch(&HookContext::default(), &call("{}"))
                .unwrap_err();
            assert_eq!((&*failure.plugin, failure.cause), ("broken", Cause::Load));
        }
    }
}
