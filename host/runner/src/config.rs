//! How the tool loop runs: its limits and loop detection.

use std::time::Duration;

use crate::events::LoopAction;

/// Loop detection: the same tool with identical arguments `threshold` times
/// in a row triggers `action`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoopDetection {
    /// Identical calls in a row that count as a loop.
    pub threshold: u32,
    /// What the runner does then.
    pub action: LoopAction,
}

/// How the tool loop runs.
#[derive(Clone, Debug)]
pub struct LoopConfig {
    /// Model calls per run, at most.
    pub max_iterations: u32,
    /// Run the tool calls of one model turn concurrently. Hooks still see
    /// them one by one, in the order the model made them.
    pub parallel_tools: bool,
    /// The whole run, at most.
    pub timeout: Option<Duration>,
    /// One tool call, at most; past it the call's outcome is a timeout.
    pub tool_timeout: Duration,
    /// Loop detection; `None` turns it off.
    pub loop_detection: Option<LoopDetection>,
    /// Ask the model to stream; hooks then see text and tool-call deltas.
    pub stream: bool,
    /// How many times an invalid tool call may be repaired before the run
    /// fails.
    pub max_repairs: u32,
}

impl Default for LoopConfig {
    fn default() -> LoopConfig {
        LoopConfig {
            max_iterations: 16,
            parallel_tools: true,
            timeout: Some(Duration::from_secs(600)),
            tool_timeout: Duration::from_secs(60),
            loop_detection: Some(LoopDetection {
                threshold: 3,
                action: LoopAction::InjectWarning,
            }),
            stream: false,
            max_repairs: 3,
        }
    }
}
