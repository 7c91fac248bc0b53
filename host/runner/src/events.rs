//! Loop events: what a UI shows while a run goes on.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use hookbox::{EventKind, ToolOutcome};

/// What the runner does when the same tool is called with identical
/// arguments `threshold` times in a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LoopAction {
    /// Log a warning and run the call.
    Warn,
    /// End the run.
    Stop,
    /// Do not run the call; the model gets a warning as its result.
    InjectWarning,
}

impl LoopAction {
    /// Its kebab-case name: `warn`, `stop` or `inject-warning`.
    pub fn name(self) -> &'static str {
        match self {
            LoopAction::Warn => "warn",
            LoopAction::Stop => "stop",
            LoopAction::InjectWarning => "inject-warning",
        }
    }
}

/// An observable moment of a run, for UIs: "iteration 3", "calling
/// read_file", "read_file took 2 ms", "deny-tools skipped shell".
///
/// JSON form: tagged by `type` in kebab-case, fields snake_case.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum LoopEvent {
    /// A new iteration (model call) starts; 1-based.
    IterationStart {
        /// The iteration number, from 1.
        iteration: u32,
        /// Messages in the conversation so far (no system preamble).
        message_count: usize,
    },
    /// A tool is about to run, with the arguments it runs with.
    ToolExecutionStart {
        /// The model's id for the call.
        call_id: String,
        /// The tool about to run.
        tool_name: String,
        /// The arguments, after any hook rewrite (a JSON string when they
        /// are not valid JSON).
        arguments: serde_json::Value,
    },
    /// A tool finished: what it returned (before any hook rewrote it).
    ToolExecutionEnd {
        /// The model's id for the call.
        call_id: String,
        /// The tool that ran.
        tool_name: String,
        /// The text the tool returned.
        result: String,
        /// What really happened, e.g. an error or a timeout.
        outcome: ToolOutcome,
        /// How long the tool ran (JSON: milliseconds).
        #[serde(with = "millis")]
        duration: Duration,
    },
    /// The model answered.
    LlmResponseReceived {
        /// The iteration number, from 1.
        iteration: u32,
        /// Whether the answer calls tools.
        has_tool_calls: bool,
        /// Length of the answer's text, in characters.
        text_length: usize,
    },
    /// The same tool with identical arguments, `consecutive_count` times.
    LoopDetected {
        /// The tool called again and again.
        tool_name: String,
        /// Identical calls in a row so far.
        consecutive_count: u32,
        /// What the runner does about it.
        action: LoopAction,
    },
    /// The stack answered something other than continue.
    HookDecision {
        /// The event the stack was asked about.
        event: EventKind,
        /// The flow's kebab-case name: `skip`, `rewrite-args`, `terminate` ...
        flow: String,
        /// The deciding plugin; none for an event's default (an invalid
        /// tool call nobody handled fails).
        plugin: Option<String>,
        /// The flow's payload, cut to 200 bytes: a reason, new arguments ...
        detail: String,
    },
}

mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64() * 1000.0)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let ms = f64::deserialize(d)?;
        Duration::try_from_secs_f64(ms / 1000.0).map_err(serde::de::Error::custom)
    }
}

/// A callback that receives every loop event, in order, on the run's task.
pub type LoopCallback = Arc<dyn Fn(&LoopEvent) + Send + Sync>;

/// Where a run's loop events go: a callback, a channel, both or neither.
#[derive(Clone, Default)]
pub(crate) struct EventSink {
    pub callback: Option<LoopCallback>,
    pub channel: Option<mpsc::UnboundedSender<LoopEvent>>,
}

impl EventSink {
    pub fn emit(&self, event: LoopEvent) {
        if let Some(callback) = &self.callback {
            callback(&event);
        }
        if let Some(channel) = &self.channel {
            // A receiver that went away only stops listening; the run goes on.
            let _ = channel.send(event);
        }
    }
}
