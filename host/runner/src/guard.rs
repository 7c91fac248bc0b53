//! The runner's guarded session ([`Door`]): asks it off the async
//! executor, reports its decisions as loop events (its tap), and turns the
//! ends of a run into a [`RunStatus`].

use std::sync::Arc;

use crate::events::{EventSink, LoopEvent};
use crate::report::RunStatus;
use crate::text::cut;

use hookbox::{
    Decision, EventKind, Flow, HookContext, HookStack, Message, ModelResponse, Observe, StepEvent,
    Stopped, ToolOutcome,
};
use hookbox_adapter::verdict::{Call, Reading, Request};
use hookbox_adapter::{Asking, Door, ToolUse};
use serde_json::Value;

/// How many bytes of a flow's payload a loop event shows.
const DETAIL_BYTES: usize = 200;

/// One run of the loop, guarded by the stack.
pub(crate) struct Guard {
    door: Arc<Door>,
    agent_name: Option<String>,
}

impl Guard {
    /// A run of `stack` for the agent `agent_name`, its hooks' answers
    /// told to `observer`, its decisions reported to `events`.
    pub fn new(
        (stack, observer): (&HookStack, Option<&Arc<dyn Observe>>),
        agent_name: Option<String>,
        run_id: &str,
        events: EventSink,
    ) -> Guard {
        let mut run = stack.start_run(run_id);
        if let Some(observer) = observer {
            run.observe(observer.clone());
        }
        let door =
            Door::around(run, stack.subscriptions()).tapped(Box::new(move |kind, decision| {
                events.emit(LoopEvent::HookDecision {
                    event: kind,
                    flow: decision.flow.name().to_owned(),
                    plugin: decision.plugin.as_deref().map(str::to_owned),
                    detail: detail(&decision.flow),
                });
            }));
        Guard {
            door: Arc::new(door),
            agent_name,
        }
    }

    pub fn context(&self, turn: u32, is_streaming: bool) -> HookContext {
        HookContext {
            run_id: self.door.run_id().to_owned(),
            turn,
            is_streaming,
            agent_name: self.agent_name.clone(),
        }
    }

    /// Whether asking about `kind` can answer anything but its neutral
    /// flow: when it cannot, building the event can be skipped too.
    pub fn wants(&self, kind: EventKind) -> bool {
        self.door.wants(kind)
    }

    /// A guest call can take up to its deadline, so it runs on tokio's
    /// blocking pool, never on the executor, where the loop's own timeout
    /// can give up on it; the decision's own span (`apply_guardrail`, from
    /// the stack) is a child of the run's there too.
    fn asking() -> Asking {
        Asking::OnPool(tracing::Span::current())
    }

    /// Asks the stack about `event`, any but a tool call, its result and a
    /// model call. `Err`: how the run ends.
    pub async fn ask(&self, ctx: HookContext, event: StepEvent) -> Result<Decision, RunStatus> {
        let asked = self.door.ask_observe(Some(ctx), event, Self::asking());
        asked.await.map_err(status_of)
    }

    /// Asks about the model's answer to the run's `prompt`.
    pub async fn answered(
        &self,
        ctx: HookContext,
        prompt: String,
        response: ModelResponse,
        streamed: bool,
    ) -> Result<(), RunStatus> {
        let asked = self
            .door
            .ask_answered(Some(ctx), prompt, response, streamed, Self::asking());
        asked.await.map_err(status_of)
    }

    /// Whether the tool call may run, and with which arguments.
    pub async fn tool_call(&self, ctx: HookContext, call: ToolUse) -> Result<Call, RunStatus> {
        let asked = self.door.ask_tool_call(Some(ctx), call, Self::asking());
        asked.await.map_err(status_of)
    }

    /// What the model reads of a tool's `result`.
    pub async fn tool_result(
        &self,
        ctx: HookContext,
        call: ToolUse,
        result: &str,
        outcome: ToolOutcome,
    ) -> Result<Reading, RunStatus> {
        let returned = Value::String(result.to_owned());
        let asked = self
            .door
            .ask_tool_result(Some(ctx), call, &returned, outcome, Self::asking());
        asked.await.map_err(status_of)
    }

    /// The patch for the model call of `turn`, given the run's prompt and
    /// the history it sends.
    pub async fn completion_call(
        &self,
        ctx: HookContext,
        (prompt, history): (String, Vec<Message>),
        turn: u32,
    ) -> Result<Request, RunStatus> {
        let asked = self
            .door
            .ask_completion_call(Some(ctx), prompt, history, turn, Self::asking());
        asked.await.map_err(status_of)
    }
}

/// How the run ends on `stopped`.
pub(crate) fn status_of(stopped: Stopped) -> RunStatus {
    match stopped {
        Stopped::FailedClosed(failure) => {
            tracing::error!("{failure}");
            RunStatus::FailedClosed(failure)
        }
        Stopped::Terminated {
            plugin,
            event,
            reason,
        } => RunStatus::Terminated {
            reason,
            plugin: Some(plugin),
            event,
        },
    }
}

fn detail(flow: &Flow) -> String {
    let text = match flow {
        Flow::Continue | Flow::Fail => return String::new(),
        Flow::Terminate(s)
        | Flow::Skip(s)
        | Flow::RewriteArgs(s)
        | Flow::RewriteResult(s)
        | Flow::Retry(s)
        | Flow::Repair(s) => s.clone(),
        Flow::PatchRequest(patch) => serde_json::to_string(patch).unwrap_or_default(),
    };
    cut(&text, DETAIL_BYTES)
}
