//! An agent: a model, tools, a hook stack and the loop's settings; and what
//! a run of it reports.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures_util::Stream;
use serde::Serialize;
use tokio::sync::mpsc;

use crate::error::FailClosed;
use crate::event::{EventKind, ToolChoice, ToolOutcome, Usage};
use crate::runner::events::{EventSink, LoopAction, LoopCallback, LoopEvent};
use crate::runner::model::{ChatMessage, Model};
use crate::runner::tools::ToolSet;
use crate::stack::HookStack;

/// Loop detection: the same tool with identical arguments `threshold` times
/// in a row triggers `action`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoopDetection {
    pub threshold: u32,
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

/// A model, its tools, the hook stack that guards them, and the baseline
/// request every turn starts from.
#[derive(Clone)]
pub struct Agent {
    pub(crate) model: Arc<dyn Model>,
    pub(crate) tools: ToolSet,
    pub(crate) stack: HookStack,
    pub(crate) name: Option<String>,
    pub(crate) preamble: Option<String>,
    pub(crate) temperature: Option<f64>,
    pub(crate) max_tokens: Option<u32>,
    pub(crate) tool_choice: ToolChoice,
    pub(crate) additional_params: serde_json::Map<String, serde_json::Value>,
    pub(crate) config: LoopConfig,
    pub(crate) on_event: Option<LoopCallback>,
}

impl Agent {
    pub fn new(model: Arc<dyn Model>) -> Agent {
        Agent {
            model,
            tools: ToolSet::new(),
            stack: HookStack::new(),
            name: None,
            preamble: None,
            temperature: None,
            max_tokens: None,
            tool_choice: ToolChoice::Auto,
            additional_params: serde_json::Map::new(),
            config: LoopConfig::default(),
            on_event: None,
        }
    }

    pub fn tools(mut self, tools: ToolSet) -> Agent {
        self.tools = tools;
        self
    }

    /// The stack every run of this agent consults (each run gets its own
    /// guest instances).
    pub fn stack(mut self, stack: HookStack) -> Agent {
        self.stack = stack;
        self
    }

    /// The agent's name, as hooks see it in their context.
    pub fn name(mut self, name: impl Into<String>) -> Agent {
        self.name = Some(name.into());
        self
    }

    /// The baseline system prompt.
    pub fn preamble(mut self, preamble: impl Into<String>) -> Agent {
        self.preamble = Some(preamble.into());
        self
    }

    pub fn temperature(mut self, temperature: f64) -> Agent {
        self.temperature = Some(temperature);
        self
    }

    pub fn max_tokens(mut self, max_tokens: u32) -> Agent {
        self.max_tokens = Some(max_tokens);
        self
    }

    pub fn tool_choice(mut self, tool_choice: ToolChoice) -> Agent {
        self.tool_choice = tool_choice;
        self
    }

    /// Extra top-level fields of every request (a JSON object's entries).
    pub fn additional_params(
        mut self,
        params: serde_json::Map<String, serde_json::Value>,
    ) -> Agent {
        self.additional_params = params;
        self
    }

    pub fn config(mut self, config: LoopConfig) -> Agent {
        self.config = config;
        self
    }

    /// Receives every loop event of every run, in order.
    pub fn on_event(mut self, callback: impl Fn(&LoopEvent) + Send + Sync + 'static) -> Agent {
        self.on_event = Some(Arc::new(callback));
        self
    }

    /// Runs the tool loop on `prompt` to its end.
    pub async fn run(&self, prompt: &str) -> RunReport {
        self.run_with(prompt, self.sink(None)).await
    }

    /// Runs the tool loop on its own task; its loop events arrive on the
    /// stream (every one, in order), its report through the handle.
    pub fn run_stream(
        self: &Arc<Self>,
        prompt: &str,
    ) -> (
        impl Stream<Item = LoopEvent> + Send + Unpin + use<>,
        tokio::task::JoinHandle<RunReport>,
    ) {
        let (sender, mut receiver) = mpsc::unbounded_channel();
        let agent = Arc::clone(self);
        let prompt = prompt.to_owned();
        let handle = tokio::spawn(async move {
            let sink = agent.sink(Some(sender));
            agent.run_with(&prompt, sink).await
        });
        let events = futures_util::stream::poll_fn(move |cx| receiver.poll_recv(cx));
        (events, handle)
    }

    fn sink(&self, channel: Option<mpsc::UnboundedSender<LoopEvent>>) -> EventSink {
        EventSink {
            callback: self.on_event.clone(),
            channel,
        }
    }

    async fn run_with(&self, prompt: &str, events: EventSink) -> RunReport {
        static RUNS: AtomicU64 = AtomicU64::new(0);
        let run_id = format!(
            "run-{}-{}",
            std::process::id(),
            RUNS.fetch_add(1, Ordering::Relaxed) + 1
        );
        let mut state = crate::runner::tool_loop::LoopState::new(self, &run_id, prompt, events);
        let status = match self.config.timeout {
            None => state.drive().await,
            Some(limit) => match tokio::time::timeout(limit, state.drive()).await {
                Ok(status) => status,
                Err(_) => RunStatus::TimedOut(limit),
            },
        };
        state.finish(status)
    }
}

/// How a run ended.
#[derive(Clone, Debug, PartialEq)]
pub enum RunStatus {
    /// The model answered without calling a tool.
    Finished,
    /// A hook answered terminate.
    Terminated {
        reason: String,
        plugin: Option<String>,
        event: EventKind,
    },
    /// A hook misbehaved; the diagnostic names it and the cause.
    FailedClosed(FailClosed),
    /// An invalid tool call that no hook retried, repaired or skipped.
    InvalidToolCall {
        tool_name: String,
        reason: String,
        plugin: Option<String>,
    },
    /// Loop detection with [`LoopAction::Stop`].
    LoopStopped { tool_name: String, count: u32 },
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
    pub duration: Duration,
}

/// The end of a run: how it ended and everything it produced.
#[derive(Clone, Debug)]
pub struct RunReport {
    pub run_id: String,
    pub status: RunStatus,
    /// The model's last text.
    pub text: String,
    /// The conversation, as the model will see it next (no system preamble).
    pub messages: Vec<ChatMessage>,
    pub iterations: u32,
    pub usage: Usage,
    pub tool_calls: Vec<ToolRecord>,
}
