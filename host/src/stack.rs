//! The HookStack: hooks in registration order, composed by the event's rule.
//!
//! | event | rule |
//! |---|---|
//! | completion-call | **accumulate**: every hook is asked; patches merge in order ([`RequestPatch::merge`]); terminate stops the stack and discards the patch |
//! | tool-call | **chain**: a rewrite-args is threaded into the next hook's event; skip / terminate end the chain, and a rewrite made before them is kept ([`Decision::rewritten`]) |
//! | tool-result | **chain** on the model-visible result; outcome and extensions stay the tool's raw values for every hook |
//! | every other | **first non-continue wins** |
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
use std::sync::Arc;

use crate::error::{Cause, FailClosed};
use crate::event::{EventKind, EventKinds, HookContext, StepEvent};
use crate::flow::{Flow, RequestPatch};
use crate::json::{is_json, is_json_object};
use crate::plugin::{Plugin, PluginInstance};
use crate::rules::Composition;

/// A hook written in Rust, running in the host. Shared by every run.
pub trait Hook: Send + Sync {
    fn name(&self) -> &str;

    /// The event kinds to dispatch to this hook; all by default.
    fn subscriptions(&self) -> EventKinds {
        EventKinds::ALL
    }

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
    FnHook { name: name.into(), f }
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
}

impl Decision {
    fn of(flow: Flow) -> Decision {
        Decision { flow, plugin: None, rewritten: None }
    }

    /// Whether the run is over after this decision (terminate, or fail).
    pub fn ends_run(&self) -> bool {
        matches!(self.flow, Flow::Terminate(_) | Flow::Fail)
    }
}

/// The outcome of dispatching one event.
pub type Outcome = Result<Decision, FailClosed>;

#[derive(Clone)]
enum Entry {
    Native(Arc<dyn Hook>),
    Plugin(Arc<Plugin>),
    Stack(Arc<HookStack>),
    /// A required plugin that could not be loaded: every run fails closed.
    Unloadable { name: Arc<str>, reason: String },
}

/// Hooks in registration order. Cheap to clone; shared by every run.
#[derive(Clone, Default)]
pub struct HookStack {
    entries: Vec<Entry>,
    subscriptions: EventKinds,
}

impl HookStack {
    pub fn new() -> HookStack {
        HookStack::default()
    }

    pub fn push_hook(&mut self, hook: impl Hook + 'static) -> &mut Self {
        self.subscriptions = self.subscriptions.union(hook.subscriptions());
        self.entries.push(Entry::Native(Arc::new(hook)));
        self
    }

    pub fn push_plugin(&mut self, plugin: Arc<Plugin>) -> &mut Self {
        self.subscriptions = self.subscriptions.union(plugin.subscriptions());
        self.entries.push(Entry::Plugin(plugin));
        self
    }

    /// Nests a stack: it answers as one hook, by the same rules.
    pub fn push_stack(&mut self, stack: HookStack) -> &mut Self {
        self.subscriptions = self.subscriptions.union(stack.subscriptions);
        self.entries.push(Entry::Stack(Arc::new(stack)));
        self
    }

    /// Records a plugin that is required but could not be loaded: every run
    /// of this stack fails closed at its first event, naming it.
    pub fn push_unloadable(&mut self, name: &str, reason: impl Into<String>) -> &mut Self {
        self.subscriptions = EventKinds::ALL;
        self.entries.push(Entry::Unloadable { name: Arc::from(name), reason: reason.into() });
        self
    }

    /// The union of what the stack's hooks subscribed to.
    pub fn subscriptions(&self) -> EventKinds {
        self.subscriptions
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Starts a run: per-run state for every hook; WASM plugins are
    /// instantiated lazily, on the first event they subscribed to.
    pub fn start_run(&self, run_id: impl Into<String>) -> Run {
        Run { run_id: run_id.into(), slots: self.slots(), ended: None }
    }

    fn slots(&self) -> Vec<Slot> {
        self.entries
            .iter()
            .map(|entry| match entry {
                Entry::Native(hook) => Slot::Native { name: Arc::from(hook.name()), hook: hook.clone() },
                Entry::Plugin(plugin) => Slot::Plugin { plugin: plugin.clone(), instance: Instance::NotStarted },
                Entry::Stack(stack) => Slot::Stack { slots: stack.slots(), subscriptions: stack.subscriptions },
                Entry::Unloadable { name, reason } => Slot::Unloadable { name: name.clone(), reason: reason.clone() },
            })
            .collect()
    }
}

/// One run through a stack: owns the run's guest instances.
pub struct Run {
    run_id: String,
    slots: Vec<Slot>,
    ended: Option<Outcome>,
}

enum Slot {
    Native { name: Arc<str>, hook: Arc<dyn Hook> },
    Plugin { plugin: Arc<Plugin>, instance: Instance },
    Stack { slots: Vec<Slot>, subscriptions: EventKinds },
    Unloadable { name: Arc<str>, reason: String },
}

enum Instance {
    NotStarted,
    Live(PluginInstance),
    /// Failed once: never entered again.
    Dead,
}

impl Run {
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// A context for this run at `turn`.
    pub fn context(&self, turn: u32) -> HookContext {
        HookContext { run_id: self.run_id.clone(), turn, is_streaming: false, agent_name: None }
    }

    /// Whether a terminate, a fail or a fail-closed ended the run.
    pub fn is_over(&self) -> bool {
        self.ended.is_some()
    }

    /// Asks the stack about one event.
    ///
    /// Once the run is over, every later call returns the outcome that ended
    /// it: nothing proceeds after a terminate.
    ///
    /// # Errors
    /// [`FailClosed`] when a hook misbehaved; the run is then over.
    pub fn dispatch(&mut self, ctx: &HookContext, event: &StepEvent) -> Outcome {
        if let Some(ended) = &self.ended {
            return ended.clone();
        }
        let kind = event.kind();
        let outcome = compose(&mut self.slots, ctx, event, kind).map(|mut decision| {
            if decision.flow.is_continue() {
                decision.flow = kind.default_flow();
            }
            decision
        });
        if outcome.as_ref().map_or(true, Decision::ends_run) {
            self.ended = Some(outcome.clone());
        }
        outcome
    }
}

fn compose(slots: &mut [Slot], ctx: &HookContext, event: &StepEvent, kind: EventKind) -> Outcome {
    match kind.composition() {
        Composition::Accumulate => accumulate(slots, ctx, event, kind),
        Composition::Chain => chain(slots, ctx, event, kind),
        Composition::FirstNonContinue => {
            for slot in slots.iter_mut().filter(|s| s.subscribes(kind)) {
                let decision = slot.decide(ctx, event, kind)?;
                if !decision.flow.is_continue() {
                    return Ok(decision);
                }
            }
            Ok(Decision::of(Flow::Continue))
        }
    }
}

fn accumulate(slots: &mut [Slot], ctx: &HookContext, event: &StepEvent, kind: EventKind) -> Outcome {
    let mut merged: Option<(RequestPatch, Arc<str>)> = None;
    for slot in slots.iter_mut().filter(|s| s.subscribes(kind)) {
        let decision = slot.decide(ctx, event, kind)?;
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
        Some((patch, plugin)) => Decision { flow: Flow::PatchRequest(patch), plugin: Some(plugin), rewritten: None },
        None => Decision::of(Flow::Continue),
    })
}

fn chain(slots: &mut [Slot], ctx: &HookContext, event: &StepEvent, kind: EventKind) -> Outcome {
    let mut current = Cow::Borrowed(event);
    let mut rewrite: Option<(String, Option<Arc<str>>)> = None;
    for slot in slots.iter_mut().filter(|s| s.subscribes(kind)) {
        let decision = slot.decide(ctx, &current, kind)?;
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
                return Ok(Decision { flow, plugin: decision.plugin, rewritten: rewrite.map(|(text, _)| text) });
            }
        }
    }
    Ok(match rewrite {
        Some((text, plugin)) => Decision {
            flow: if kind == EventKind::ToolCall { Flow::RewriteArgs(text) } else { Flow::RewriteResult(text) },
            plugin,
            rewritten: None,
        },
        None => Decision::of(Flow::Continue),
    })
}

impl Slot {
    fn subscribes(&self, kind: EventKind) -> bool {
        match self {
            Slot::Native { hook, .. } => hook.subscriptions().contains(kind),
            Slot::Plugin { plugin, .. } => plugin.subscriptions().contains(kind),
            Slot::Stack { subscriptions, .. } => subscriptions.contains(kind),
            Slot::Unloadable { .. } => true,
        }
    }

    fn decide(&mut self, ctx: &HookContext, event: &StepEvent, kind: EventKind) -> Outcome {
        match self {
            Slot::Native { name, hook } => checked(name, kind, hook.on_event(ctx, event)),
            Slot::Plugin { plugin, instance } => {
                let live = match instance {
                    Instance::Live(live) => live,
                    Instance::Dead => {
                        return Err(FailClosed::new(plugin.name_arc(), Cause::Trap, "failed earlier in this run"));
                    }
                    Instance::NotStarted => match plugin.instantiate(&ctx.run_id) {
                        Ok(live) => instance.insert_live(live),
                        Err(failure) => {
                            *instance = Instance::Dead;
                            return Err(failure);
                        }
                    },
                };
                match plugin.call(live, ctx, event) {
                    Ok(flow) => checked(plugin.name_arc(), kind, flow),
                    Err(failure) => {
                        *instance = Instance::Dead;
                        Err(failure)
                    }
                }
            }
            Slot::Stack { slots, .. } => compose(slots, ctx, event, kind),
            Slot::Unloadable { name, reason } => {
                Err(FailClosed::new(name, Cause::Load, format!("required plugin could not be loaded: {reason}")))
            }
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
            format!("answered `{}` to a `{kind}` event, which honours only {}", flow.name(), honoured.join(", ")),
        ));
    }
    match &flow {
        Flow::RewriteArgs(args) if !is_json(args) => {
            return Err(FailClosed::new(plugin, Cause::InvalidJson, "rewrite-args is not valid JSON"));
        }
        Flow::PatchRequest(RequestPatch { additional_params: Some(params), .. }) if !is_json_object(params) => {
            return Err(FailClosed::new(
                plugin,
                Cause::InvalidJson,
                "patch-request's additional-params is not a JSON object",
            ));
        }
        _ => {}
    }
    Ok(Decision { flow, plugin: Some(plugin.clone()), rewritten: None })
}
