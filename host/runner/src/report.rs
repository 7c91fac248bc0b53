//! What a run reports: how it ended, each tool call, the transcript.

use std::time::Duration;

use hookbox::{EventKind, FailClosed, ToolOutcome, Usage};
use serde::Serialize;

use crate::model::ChatMessage;

/// How a run ended.
#[derive(Clone, Debug, PartialEq)]
pub enum RunStatus {
    /// The model answered without calling a tool.
    Finished,
    /// A hook answered terminate.
    Terminated {
        /// Why, as the hook said.
        reason: String,
        /// The plugin that terminated the run, when known.
        plugin: Option<String>,
        /// The event it answered.
        event: EventKind,
    },
    /// A hook misbehaved; the diagnostic names it and the cause.
    FailedClosed(FailClosed),
    /// An invalid tool call that no hook retried, repaired or skipped.
    InvalidToolCall {
        /// The invalid tool name (the last repair's, if any).
        tool_name: String,
        /// Why the call is invalid.
        reason: String,
        /// The deciding plugin; `None` when no hook handled the call.
        plugin: Option<String>,
    },
    /// Loop detection with [`LoopAction::Stop`](crate::LoopAction::Stop).
    LoopStopped {
        /// The tool called again and again.
        tool_name: String,
        /// Identical calls in a row.
        count: u32,
    },
    /// The model was still calling tools after this many iterations.
    MaxIterations(u32),
    /// The run went past its timeout.
    TimedOut(Duration),
    /// The model or the runner failed (an HTTP error, a bad answer ...).
    Error(String),
}

impl RunStatus {
    /// A short kebab-case name: `finished`, `terminated`, `failed-closed` ...
    pub fn name(&self) -> &'static str {
        match self {
            RunStatus::Finished => "finished",
            RunStatus::Terminated { .. } => "terminated",
            RunStatus::FailedClosed(_) => "failed-closed",
            RunStatus::InvalidToolCall { .. } => "invalid-tool-call",
            RunStatus::LoopStopped { .. } => "loop-stopped",
            RunStatus::MaxIterations(_) => "max-iterations",
            RunStatus::TimedOut(_) => "timed-out",
            RunStatus::Error(_) => "error",
        }
    }
}

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunStatus::Finished => f.write_str("finished"),
            RunStatus::Terminated {
                reason,
                plugin,
                event,
            } => match plugin {
                Some(plugin) => write!(f, "terminated by `{plugin}` at {event}: {reason}"),
                None => write!(f, "terminated at {event}: {reason}"),
            },
            RunStatus::FailedClosed(failure) => write!(f, "failed closed: {failure}"),
            RunStatus::InvalidToolCall {
                tool_name, reason, ..
            } => write!(f, "invalid tool call `{tool_name}`: {reason}"),
            RunStatus::LoopStopped { tool_name, count } => write!(
                f,
                "stopped: `{tool_name}` called {count} times in a row with identical arguments"
            ),
            RunStatus::MaxIterations(n) => write!(f, "stopped after {n} iterations"),
            RunStatus::TimedOut(limit) => write!(f, "timed out after {limit:?}"),
            RunStatus::Error(reason) => write!(f, "error: {reason}"),
        }
    }
}

/// What happened to one tool call.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolRecord {
    /// The model's id for the call.
    pub call_id: String,
    /// The name the model used.
    pub emitted_name: String,
    /// The tool that ran (after a repair), or would have.
    pub tool_name: String,
    /// The arguments the model emitted.
    pub emitted_args: String,
    /// The arguments the tool ran with (after rewrites).
    pub args: String,
    /// What the model was given.
    pub result: String,
    /// What really happened.
    pub outcome: ToolOutcome,
    /// Whether the tool ran.
    pub executed: bool,
    /// How long the tool ran; zero when it did not run.
    pub duration: Duration,
}

/// The end of a run: how it ended and everything it produced.
#[derive(Clone, Debug)]
pub struct RunReport {
    /// The run's id (`run-<pid>-<n>`), as hooks see it.
    pub run_id: String,
    /// How the run ended.
    pub status: RunStatus,
    /// The model's last text.
    pub text: String,
    /// The conversation, as the model will see it next (no system preamble).
    pub messages: Vec<ChatMessage>,
    /// Iterations (model calls) the run started.
    pub iterations: u32,
    /// Tokens used, summed over the model's answers.
    pub usage: Usage,
    /// Each tool call that reached its tool-result step, in order.
    pub tool_calls: Vec<ToolRecord>,
}
