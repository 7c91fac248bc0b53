//! How one event goes through a run's hooks: asking each, checking its
//! answer against the event, and composing the answers by the event's rule.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use crate::error::{Cause, FailClosed};
use crate::event::{EventKind, EventKinds, HookContext, StepEvent};
use crate::flow::{Flow, RequestPatch};
use crate::json::{canonical, is_json_object};
use crate::matcher::ToolMatcher;
use crate::plugin::{Plugin, PluginInstance};
use crate::rules::Composition;

use super::{Decided, Decision, Hook, Observe, Outcome, Shadowed, ToolScope};

pub(super) enum Slot {
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

pub(super) enum Instance {
    /// Started on its first event, its scratchpad holding this seed.
    NotStarted(BTreeMap<String, String>),
    Live(PluginInstance),
    /// Failed once: never entered again.
    Dead,
}

/// [`Run::dispatch`] on the run's parts, so [`Run::step`] can lend its own
/// context.
pub(super) fn dispatch_to(
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
        let failure = FailClosed::host(
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
        match decision.flow {
            Flow::Continue => {}
            Flow::PatchRequest(patch) => {
                let plugin = decision.plugin.unwrap_or_else(|| Arc::from("?"));
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
                    StepEvent::TextDelta(delta) => delta.aggregated.clone_from(&text),
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
pub(super) fn walk_plugins(slots: &[Slot], visit: &mut impl FnMut(&str, &Instance)) {
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
pub(super) fn walk_plugins_mut(slots: &mut [Slot], visit: &mut impl FnMut(&str, &mut Instance)) {
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
pub(super) fn unique_key(seen: &mut BTreeMap<String, usize>, name: &str) -> String {
    let count = seen.entry(name.to_owned()).or_insert(0);
    *count += 1;
    if *count == 1 {
        name.to_owned()
    } else {
        format!("{name}#{count}")
    }
}

pub(super) fn instantiate_slots(slots: &mut [Slot], run_id: &str) -> Result<(), FailClosed> {
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
        let observer = asking.observer;
        let (name, shadow) = match self {
            // A nested stack's own slots report themselves.
            Slot::Stack { .. } => return Some(self.decide(ctx, event, kind, asking)),
            Slot::Plugin {
                instance: Instance::Dead,
                shadow: true,
                ..
            } => return None, // reported when it failed; a run never dies of a shadow
            // Nobody to tell and nothing to record: the hot path.
            Slot::Plugin { shadow: false, .. } | Slot::Native { .. } | Slot::Unloadable { .. }
                if observer.is_none() =>
            {
                return Some(self.decide(ctx, event, kind, asking));
            }
            Slot::Plugin { plugin, shadow, .. } => (plugin.name_arc().clone(), *shadow),
            Slot::Native { name, .. } | Slot::Unloadable { name, .. } => (name.clone(), false),
        };
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
    // A continue names nobody: no hook decided anything.
    let plugin = (!flow.is_continue()).then(|| plugin.clone());
    Ok(Decision {
        plugin,
        ..Decision::new(flow)
    })
}
