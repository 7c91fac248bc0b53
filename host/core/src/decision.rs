//! What a stack answers: the net [`Decision`] of one event (or the
//! [`FailClosed`] that ends the run), what each hook answered as an
//! [`Observe`] sees it, and their JSON forms.

use std::sync::Arc;
use std::time::Duration;

use crate::error::FailClosed;
use crate::event::EventKind;
use crate::flow::Flow;

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
/// decision logs are built from ([`crate::Run::observe`]). Called on the thread
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
