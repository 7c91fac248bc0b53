//! An agent: a model, tools, a hook stack and the loop's settings, put
//! together with a builder; running it drives the tool loop.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use futures_util::Stream;
use hookbox::{HookStack, ToolChoice};
use tokio::sync::mpsc;
use tracing::Instrument;

use crate::config::LoopConfig;
use crate::events::{EventSink, LoopCallback, LoopEvent};
use crate::model::Model;
use crate::report::{RunReport, RunStatus};
use crate::tool_loop::{LoopState, Setup};
use crate::tools::ToolSet;

/// A model, its tools, the hook stack that guards them, and the baseline
/// request every turn starts from.
#[derive(Clone)]
pub struct Agent {
    setup: Setup,
    on_event: Option<LoopCallback>,
}

impl Agent {
    /// An agent for `model`, with no tools, an empty stack and default
    /// settings.
    pub fn new(model: Arc<dyn Model>) -> Agent {
        Agent {
            setup: Setup {
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
                observer: None,
            },
            on_event: None,
        }
    }

    /// The tools the model can call.
    pub fn tools(mut self, tools: ToolSet) -> Agent {
        self.setup.tools = tools;
        self
    }

    /// The stack every run of this agent consults (each run gets its own
    /// guest instances).
    pub fn stack(mut self, stack: HookStack) -> Agent {
        self.setup.stack = stack;
        self
    }

    /// Tells `observer` of every hook's answer in every run (see
    /// [`hookbox::Run::observe`]): a decision log, metrics.
    pub fn observe(mut self, observer: Arc<dyn hookbox::Observe>) -> Agent {
        self.setup.observer = Some(observer);
        self
    }

    /// The agent's name, as hooks see it in their context.
    pub fn name(mut self, name: impl Into<String>) -> Agent {
        self.setup.name = Some(name.into());
        self
    }

    /// The baseline system prompt.
    pub fn preamble(mut self, preamble: impl Into<String>) -> Agent {
        self.setup.preamble = Some(preamble.into());
        self
    }

    /// The sampling temperature; unset, the model's default.
    pub fn temperature(mut self, temperature: f64) -> Agent {
        self.setup.temperature = Some(temperature);
        self
    }

    /// Most tokens per answer; unset, the model's default.
    pub fn max_tokens(mut self, max_tokens: u32) -> Agent {
        self.setup.max_tokens = Some(max_tokens);
        self
    }

    /// Whether and which tools the model must call (default: auto).
    pub fn tool_choice(mut self, tool_choice: ToolChoice) -> Agent {
        self.setup.tool_choice = tool_choice;
        self
    }

    /// Extra top-level fields of every request (a JSON object's entries).
    pub fn additional_params(
        mut self,
        params: serde_json::Map<String, serde_json::Value>,
    ) -> Agent {
        self.setup.additional_params = params;
        self
    }

    /// How the tool loop runs: limits, timeouts, loop detection, streaming.
    pub fn config(mut self, config: LoopConfig) -> Agent {
        self.setup.config = config;
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
        // The run's root span: every model call, tool run and hook decision
        // is inside it.
        let span = tracing::info_span!(
            "invoke_agent",
            otel.name = "invoke_agent",
            otel.kind = "internal",
            gen_ai.operation.name = "invoke_agent",
            gen_ai.provider.name = self.setup.model.provider(),
            gen_ai.request.model = self.setup.model.name(),
            gen_ai.conversation.id = run_id.as_str(),
            hookbox.status = tracing::field::Empty,
            error.type = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
            otel.status_description = tracing::field::Empty,
        );
        let mut state = LoopState::new(&self.setup, &run_id, prompt, events);
        let drive = state.drive().instrument(span.clone());
        let status = match self.setup.config.timeout {
            None => drive.await,
            Some(limit) => match tokio::time::timeout(limit, drive).await {
                Ok(status) => status,
                Err(_) => RunStatus::TimedOut(limit),
            },
        };
        span.record("hookbox.status", status.name());
        // A guard's terminate or a stopped loop is an answer, not an error.
        if matches!(
            status,
            RunStatus::FailedClosed(_) | RunStatus::Error(_) | RunStatus::TimedOut(_)
        ) {
            span.record("error.type", status.name());
            span.record("otel.status_code", "error");
            span.record("otel.status_description", status.to_string().as_str());
        }
        span.in_scope(|| state.finish(status))
    }
}
