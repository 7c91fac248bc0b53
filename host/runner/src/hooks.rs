//! The runner's side of a [`Run`]: asks the stack off the async executor,
//! reports decisions as loop events, and turns the ends of a run
//! into a [`RunStatus`].

use crate::events::{EventSink, LoopEvent};
use crate::report::RunStatus;
use crate::text::cut;
use crate::tool_loop::Setup;
use hookbox::Flow;
use hookbox::{Decision, Run};
use hookbox::{EventKind, EventKinds, HookContext, StepEvent};

/// How many bytes of a flow's payload a loop event shows.
const DETAIL_BYTES: usize = 200;

pub(crate) struct Hooks {
    /// `None` only while a dispatch is in flight on the blocking pool.
    run: Option<Run>,
    subscriptions: EventKinds,
    agent_name: Option<String>,
    events: EventSink,
}

impl Hooks {
    pub fn new(setup: &Setup, run_id: &str, events: EventSink) -> Hooks {
        let mut run = setup.stack.start_run(run_id);
        if let Some(observer) = &setup.observer {
            run.observe(observer.clone());
        }
        Hooks {
            run: Some(run),
            subscriptions: setup.stack.subscriptions(),
            agent_name: setup.name.clone(),
            events,
        }
    }

    pub fn context(&self, turn: u32, is_streaming: bool) -> HookContext {
        HookContext {
            run_id: self
                .run
                .as_ref()
                .map(|r| r.run_id().to_owned())
                .unwrap_or_default(),
            turn,
            is_streaming,
            agent_name: self.agent_name.clone(),
        }
    }

    /// Whether any hook wants `kind`: when none does, building the event
    /// can be skipped too.
    pub fn wants(&self, kind: EventKind) -> bool {
        self.subscriptions.contains(kind)
    }

    /// Asks the stack about `event`. A guest call can take up to its
    /// deadline, so it runs on tokio's blocking pool, never on the executor.
    ///
    /// `Err` carries how the run ends: a fail-closed outcome, or a
    /// terminate.
    pub async fn ask(&mut self, ctx: HookContext, event: StepEvent) -> Result<Decision, RunStatus> {
        let kind = event.kind();
        if !self.wants(kind) {
            return Ok(Decision::new(kind.default_flow()));
        }
        let Some(mut run) = self.run.take() else {
            return Err(RunStatus::Error(
                "a hook dispatch was abandoned midway; the run cannot go on".into(),
            ));
        };
        // The decision's own span (`apply_guardrail`, from the stack) is a
        // child of the run's on the blocking thread too, and goes to the
        // same subscriber.
        let joined = hookbox_adapter::on_blocking_pool(tracing::Span::current(), move || {
            let outcome = run.dispatch(&ctx, &event);
            (run, outcome)
        })
        .await;
        let outcome = match joined {
            Ok((run, outcome)) => {
                self.run = Some(run);
                outcome
            }
            Err(e) => return Err(RunStatus::Error(format!("hook dispatch failed: {e}"))),
        };
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
