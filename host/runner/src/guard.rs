//! The runner's guarded session ([`Door`]): asks the stack off the async
//! executor, reports decisions as loop events, and turns the ends of a run
//! into a [`RunStatus`].

use std::sync::Arc;

use crate::events::{EventSink, LoopEvent};
use crate::report::RunStatus;
use crate::text::cut;

use hookbox::{Decision, EventKind, Flow, HookContext, HookStack, Observe, StepEvent};
use hookbox_adapter::{Asking, Door};

/// How many bytes of a flow's payload a loop event shows.
const DETAIL_BYTES: usize = 200;

/// One run of the loop, guarded by the stack.
pub(crate) struct Guard {
    door: Arc<Door>,
    agent_name: Option<String>,
    events: EventSink,
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
        Guard {
            door: Arc::new(Door::around(run, stack.subscriptions())),
            agent_name,
            events,
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

    /// Asks the stack about `event`. A guest call can take up to its
    /// deadline, so it runs on tokio's blocking pool, never on the executor.
    ///
    /// `Err` carries how the run ends: a fail-closed outcome, or a
    /// terminate.
    pub async fn ask(&self, ctx: HookContext, event: StepEvent) -> Result<Decision, RunStatus> {
        let kind = event.kind();
        // On the blocking pool, so the loop's own timeout can give up on a
        // call in flight; the decision's own span (`apply_guardrail`, from
        // the stack) is a child of the run's there too, and goes to the
        // same subscriber.
        let outcome = self
            .door
            .ask(Some(ctx), event, Asking::OnPool(tracing::Span::current()))
            .await;
        let decision = match outcome {
            Ok(decision) => decision,
            Err(failure) => {
                tracing::error!("{failure}");
                return Err(RunStatus::FailedClosed(failure));
            }
        };
        let plugin = decision.plugin.as_deref().map(str::to_owned);
        if !decision.flow.is_continue() {
            self.events.emit(LoopEvent::HookDecision {
                event: kind,
                flow: decision.flow.name().to_owned(),
                plugin: plugin.clone(),
                detail: detail(&decision.flow),
            });
        }
        if let Flow::Terminate(reason) = &decision.flow {
            return Err(RunStatus::Terminated {
                reason: reason.clone(),
                plugin,
                event: kind,
            });
        }
        Ok(decision)
    }
}

/// How the run ends on `stopped`.
pub(crate) fn status_of(stopped: hookbox::Stopped) -> RunStatus {
    match stopped {
        hookbox::Stopped::FailedClosed(failure) => RunStatus::FailedClosed(failure),
        hookbox::Stopped::Terminated {
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
