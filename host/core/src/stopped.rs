//! Why the stack ended a run, as the one line of text a framework's stop
//! path carries, and back.
//!
//! Frameworks stop a run with a reason string (rig's
//! `PromptError::Cancelled { reason }`, an `LlmError`'s message). An
//! adapter writes [`Stopped::reason`] there; the embedder gets the typed
//! value back with [`Stopped::from_reason`]. The plugin's name is written
//! as a JSON string, so no name or detail can be mistaken for the frame.

use std::fmt;
use std::sync::Arc;

use crate::decision::{Decision, Outcome};
use crate::error::{Cause, FailClosed};
use crate::event::EventKind;
use crate::flow::Flow;

/// How every reason begins.
const PREFIX: &str = "hookbox stopped the run: ";

/// Why the stack ended a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stopped {
    /// A hook misbehaved (or the host refused the run): names it and the
    /// cause.
    FailedClosed(FailClosed),
    /// A hook answered `terminate`.
    Terminated {
        /// The hook that did.
        plugin: String,
        /// The event it answered.
        event: EventKind,
        /// Its reason.
        reason: String,
    },
}

impl Stopped {
    /// The stop an outcome means, if it ends the run: a fail-closed or a
    /// terminate (of the deciding plugin, else [`crate::HOST`]). Other
    /// flows (a `fail` on an invalid tool call included) go the
    /// framework's own way.
    pub fn of(outcome: &Outcome, event: EventKind) -> Option<Stopped> {
        match outcome {
            Err(failure) => Some(Stopped::FailedClosed(failure.clone())),
            Ok(decision) => match &decision.flow {
                Flow::Terminate(reason) => Some(Stopped::Terminated {
                    plugin: decision.by().to_string(),
                    event,
                    reason: reason.clone(),
                }),
                _ => None,
            },
        }
    }

    /// The outcome of an event as a framework whose run ends on a stop
    /// takes it: the decision, or the stop ([`Stopped::of`]). A `fail`
    /// answered to any event but an invalid tool call is the run's end
    /// replayed (a plugin failed an invalid tool call earlier): that stop.
    ///
    /// # Errors
    /// The stop, when the outcome ends the run.
    pub fn settle(outcome: Outcome, event: EventKind) -> Result<Decision, Stopped> {
        if let Some(stop) = Stopped::of(&outcome, event) {
            return Err(stop);
        }
        match outcome {
            Ok(decision) if decision.flow == Flow::Fail && event != EventKind::InvalidToolCall => {
                Err(Stopped::run_failed(&decision.by()))
            }
            Ok(decision) => Ok(decision),
            // `Stopped::of` took every failure.
            Err(failure) => Err(Stopped::FailedClosed(failure)),
        }
    }

    /// The stop of a run that `plugin` ended by failing an invalid tool
    /// call.
    pub fn run_failed(plugin: &str) -> Stopped {
        Stopped::Terminated {
            plugin: plugin.to_owned(),
            event: EventKind::InvalidToolCall,
            reason: "the stack failed an invalid tool call, which ended the run".to_owned(),
        }
    }

    /// The plugin that stopped the run.
    pub fn plugin(&self) -> &str {
        match self {
            Stopped::FailedClosed(failure) => &failure.plugin,
            Stopped::Terminated { plugin, .. } => plugin,
        }
    }

    /// The one-line reason a framework carries: `hookbox stopped the run:
    /// plugin "NAME" failed closed (CAUSE): DETAIL`, or `... plugin "NAME"
    /// terminated it at EVENT: REASON`.
    pub fn reason(&self) -> String {
        self.to_string()
    }

    /// The stop a [`Stopped::reason`] was written from; `None` for any other
    /// text.
    pub fn from_reason(text: &str) -> Option<Stopped> {
        let rest = text.strip_prefix(PREFIX)?.strip_prefix("plugin ")?;
        let mut names = serde_json::Deserializer::from_str(rest).into_iter::<String>();
        let plugin = names.next()?.ok()?;
        let rest = &rest[names.byte_offset()..];
        if let Some(rest) = rest.strip_prefix(" failed closed (") {
            let (cause, detail) = rest.split_once("): ")?;
            let cause = Cause::from_name(cause)?;
            return Some(Stopped::FailedClosed(FailClosed::new(
                &Arc::from(plugin),
                cause,
                detail,
            )));
        }
        let (event, reason) = rest.strip_prefix(" terminated it at ")?.split_once(": ")?;
        let event = EventKind::ALL.into_iter().find(|k| k.name() == event)?;
        Some(Stopped::Terminated {
            plugin,
            event,
            reason: reason.to_owned(),
        })
    }
}

impl fmt::Display for Stopped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let quoted = |name: &str| serde_json::to_string(name).unwrap_or_default();
        match self {
            Stopped::FailedClosed(failure) => write!(
                f,
                "{PREFIX}plugin {} failed closed ({}): {}",
                quoted(&failure.plugin),
                failure.cause,
                failure.detail
            ),
            Stopped::Terminated {
                plugin,
                event,
                reason,
            } => write!(
                f,
                "{PREFIX}plugin {} terminated it at {event}: {reason}",
                quoted(plugin)
            ),
        }
    }
}

impl std::error::Error for Stopped {}

impl From<FailClosed> for Stopped {
    fn from(failure: FailClosed) -> Stopped {
        Stopped::FailedClosed(failure)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_stop_reads_back_from_its_reason() {
        let stops = [
            Stopped::FailedClosed(FailClosed::new(
                &Arc::from("loop"),
                Cause::Deadline,
                "ran past its 50 ms deadline",
            )),
            // A name and a detail that look like the frame itself.
            Stopped::FailedClosed(FailClosed::new(
                &Arc::from("x\" failed closed (trap): y"),
                Cause::UnsupportedFlow,
                "): (trap) \"",
            )),
            Stopped::Terminated {
                plugin: "budget".into(),
                event: EventKind::ToolCall,
                reason: "too many calls: stop".into(),
            },
        ];
        for stop in stops {
            assert_eq!(Stopped::from_reason(&stop.reason()), Some(stop.clone()));
        }
        assert_eq!(
            Stopped::FailedClosed(FailClosed::new(&Arc::from("loop"), Cause::Trap, "boom"))
                .reason(),
            r#"hookbox stopped the run: plugin "loop" failed closed (trap): boom"#
        );
    }

    #[test]
    fn other_text_is_not_a_stop() {
        for text in [
            "",
            "the run was cancelled",
            "hookbox stopped the run: plugin loop failed closed (trap): x",
            r#"hookbox stopped the run: plugin "loop" failed closed (nonsense): x"#,
            r#"hookbox stopped the run: plugin "loop" terminated it at nowhere: x"#,
        ] {
            assert_eq!(Stopped::from_reason(text), None, "{text}");
        }
    }

    #[test]
    fn only_terminates_and_failures_stop() {
        let stop = Stopped::of(
            &Ok(Decision {
                plugin: Some("p".into()),
                ..Decision::new(Flow::terminate("no"))
            }),
            EventKind::TextDelta,
        );
        assert_eq!(stop.map(|s| s.plugin().to_owned()).as_deref(), Some("p"));
        assert_eq!(
            Stopped::of(&Ok(Decision::new(Flow::Fail)), EventKind::InvalidToolCall),
            None
        );
        assert_eq!(
            Stopped::of(&Ok(Decision::new(Flow::skip("x"))), EventKind::ToolCall),
            None
        );
        let unnamed = Stopped::of(
            &Ok(Decision::new(Flow::terminate("no"))),
            EventKind::ToolCall,
        );
        assert_eq!(
            unnamed.map(|s| s.plugin().to_owned()).as_deref(),
            Some(crate::HOST)
        );
    }

    #[test]
    fn a_fail_ends_the_run_except_where_it_answers_an_invalid_tool_call() {
        let failed = || Ok(Decision::new(Flow::Fail));
        assert_eq!(
            Stopped::settle(failed(), EventKind::InvalidToolCall),
            Ok(Decision::new(Flow::Fail))
        );
        assert_eq!(
            Stopped::settle(failed(), EventKind::ToolCall),
            Err(Stopped::run_failed(crate::HOST))
        );
        let trapped = FailClosed::new(&Arc::from("g"), Cause::Trap, "x");
        assert_eq!(
            Stopped::settle(Err(trapped.clone()), EventKind::ToolCall),
            Err(Stopped::FailedClosed(trapped))
        );
        assert!(Stopped::settle(Ok(Decision::new(Flow::Continue)), EventKind::ToolCall).is_ok());
    }
}
