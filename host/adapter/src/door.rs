//! A guarded session: the one hookbox run a client's session has, from its
//! start to its end, pinned to the stack it started on.
//!
//! | a door asks about an event | [`Door::decide`] answers |
//! |---|---|
//! | the run could not start (no instance slots free) | that failure, every time, naming [`hookbox::HOST`] (cause `limit`) |
//! | no plugin of the stack subscribes to its kind, the run goes on, and the caller keeps the context (it passes one) | the kind's neutral flow (continue; fail for invalid-tool-call), without taking the run's lock or building a context |
//! | the same, but the run keeps the context ([`Door::decide`] without one) | the run is stepped, so its turn and streaming state stay true for the events that follow |
//! | an earlier decision panicked in the host while it held the run | a fail-closed naming [`hookbox::HOST`] (cause `trap`), for that event and every later one: a run left half-decided is not trusted |
//! | the run is over (a terminate, a fail, a fail-closed) | the stack is asked all the same, so the event gets the run's end again, subscribed or not |
//! | otherwise | the stack's decision |
//!
//! Asking can block up to the plugins' deadlines; from an async loop use
//! [`Door::ask`], which answers the shortcut rows in place and takes the
//! rest off the executor as the caller chose ([`Asking`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

use hookbox::{
    Cause, Decision, EventKind, EventKinds, FailClosed, HookContext, HookStack, Outcome, Run,
    StepEvent,
};

/// One client session's hookbox run.
pub struct Door {
    /// `Err`: the run could not start.
    run: Result<Mutex<Run>, FailClosed>,
    run_id: String,
    /// What the run's stack subscribes to.
    wants: EventKinds,
    /// Set once the run has ended.
    over: AtomicBool,
}

impl Door {
    /// Opens a run on `stack`, if the runtime has an instance slot free for
    /// each of its plugins; else a door whose every event fails closed
    /// naming the host, cause `limit` ([`Door::refused`] says so up
    /// front).
    pub fn open(stack: &HookStack, run_id: impl Into<String>) -> Door {
        let run_id = run_id.into();
        let run = stack
            .try_start_run(run_id.clone())
            .map(Mutex::new)
            .map_err(|busy| FailClosed::host(Cause::Limit, busy.to_string()));
        Door {
            run,
            run_id,
            wants: stack.subscriptions(),
            over: AtomicBool::new(false),
        }
    }

    /// A door around a run started otherwise (one that waited for its
    /// slots, or watches its decisions), on a stack subscribing to `wants`.
    pub fn around(run: Run, wants: EventKinds) -> Door {
        Door {
            run_id: run.run_id().to_owned(),
            over: AtomicBool::new(run.is_over()),
            run: Ok(Mutex::new(run)),
            wants,
        }
    }

    /// The run's id.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// Why the run could not start, if it could not.
    pub fn refused(&self) -> Option<&FailClosed> {
        self.run.as_ref().err()
    }

    /// Whether asking about `kind` can answer anything but its neutral
    /// flow: a plugin subscribes to it, or the run is over (or never
    /// started). When it cannot, a door need not even build the event.
    pub fn wants(&self, kind: EventKind) -> bool {
        self.wants.contains(kind) || self.over.load(Ordering::Acquire) || self.run.is_err()
    }

    /// Whether a plugin of the stack subscribes to `kind`: whether the
    /// stack has an opinion of its own there, where a door leaves
    /// unsubscribed events to its client's own policy.
    pub fn subscribes(&self, kind: EventKind) -> bool {
        self.wants.contains(kind)
    }

    /// Whether the run has ended (or never started).
    pub fn is_over(&self) -> bool {
        self.over.load(Ordering::Acquire) || self.run.is_err()
    }

    /// Runs `f` on the run itself (its context, its scratchpads).
    ///
    /// # Errors
    /// Why the run could not start.
    pub fn with_run<T>(&self, f: impl FnOnce(&mut Run) -> T) -> Result<T, FailClosed> {
        Ok(f(&mut *self.lock()?))
    }

    /// Asks the stack about `event`, here and now (see the table above):
    /// with `ctx`, as [`Run::dispatch`] does; without, as [`Run::step`]
    /// does, the run keeping its own context in step.
    pub fn decide(&self, ctx: Option<&HookContext>, event: &StepEvent) -> Outcome {
        let kind = event.kind();
        if ctx.is_some() && !self.wants(kind) {
            return Ok(Decision::new(kind.default_flow()));
        }
        let mut run = self.lock()?;
        let outcome = match ctx {
            Some(ctx) => run.dispatch(ctx, event),
            None => run.step(event),
        };
        if run.is_over() {
            self.over.store(true, Ordering::Release);
        }
        outcome
    }

    /// The run, locked. A lock a panicking thread left poisoned (a host
    /// bug: a panic inside a guest call never reaches here, the core turns
    /// it into a fail-closed) ends the run: what the panic left half done
    /// is not trusted.
    fn lock(&self) -> Result<MutexGuard<'_, Run>, FailClosed> {
        match &self.run {
            Ok(run) => run.lock().map_err(|_| {
                self.over.store(true, Ordering::Release);
                FailClosed::host(
                    Cause::Trap,
                    "hookbox panicked while deciding an earlier event of this run (a bug: please report it); the run is over",
                )
            }),
            Err(failure) => Err(failure.clone()),
        }
    }
}

/// Where [`Door::ask`] runs a call that may block.
#[cfg(feature = "tokio")]
#[derive(Clone, Debug)]
pub enum Asking {
    /// As [`crate::off_executor`]: in place, the worker's other tasks
    /// handed off, where the runtime allows.
    OffExecutor,
    /// As [`crate::on_blocking_pool`], inside this span.
    OnPool(tracing::Span),
}

#[cfg(feature = "tokio")]
impl Door {
    /// [`Door::decide`] from an async loop: the shortcut rows are answered
    /// in place, the rest off the executor as `asking` says.
    pub async fn ask(
        self: &std::sync::Arc<Self>,
        ctx: Option<HookContext>,
        event: StepEvent,
        asking: Asking,
    ) -> Outcome {
        let kind = event.kind();
        if ctx.is_some() && !self.wants(kind) {
            return Ok(Decision::new(kind.default_flow()));
        }
        if let Some(failure) = self.refused() {
            return Err(failure.clone());
        }
        let door = self.clone();
        let ask = move || door.decide(ctx.as_ref(), &event);
        match asking {
            Asking::OffExecutor => crate::off_executor(ask).await,
            Asking::OnPool(span) => crate::on_blocking_pool(span, ask)
                .await
                .unwrap_or_else(|why| Err(crate::unfinished(&why))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hookbox::{Flow, Hook, ToolCall, ToolOutcome, ToolResult};
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;

    fn tool_call() -> StepEvent {
        StepEvent::ToolCall(ToolCall {
            tool_name: "bash".into(),
            tool_call_id: None,
            internal_call_id: "1".into(),
            args: "{}".into(),
        })
    }

    fn tool_result() -> StepEvent {
        StepEvent::ToolResult(ToolResult {
            tool_name: "bash".into(),
            tool_call_id: None,
            internal_call_id: "1".into(),
            args: "{}".into(),
            result: "out".into(),
            outcome: ToolOutcome::Success,
            extensions: "{}".into(),
        })
    }

    /// Terminates every tool result, the only kind it subscribes to, and
    /// counts the events it is given.
    struct Ender(Arc<AtomicUsize>);

    impl Hook for Ender {
        fn name(&self) -> &str {
            "ender"
        }
        fn subscriptions(&self) -> EventKinds {
            EventKinds::NONE.with(EventKind::ToolResult)
        }
        fn on_event(&self, _ctx: &HookContext, _event: &StepEvent) -> Flow {
            self.0.fetch_add(1, Ordering::SeqCst);
            Flow::Terminate("no".into())
        }
    }

    fn ending() -> (HookStack, Arc<AtomicUsize>) {
        let calls = Arc::new(AtomicUsize::new(0));
        let mut stack = HookStack::new();
        stack.push_hook(Ender(calls.clone()));
        (stack, calls)
    }

    #[test]
    fn an_event_no_plugin_subscribes_to_is_neutral_without_asking() {
        let (stack, calls) = ending();
        let door = Door::open(&stack, "r");
        assert!(!door.wants(EventKind::ToolCall));
        let ctx = HookContext {
            run_id: "r".into(),
            turn: 1,
            is_streaming: false,
            agent_name: None,
        };
        let decision = door.decide(Some(&ctx), &tool_call()).unwrap();
        assert_eq!(decision.flow, Flow::Continue);
        assert_eq!(calls.load(Ordering::SeqCst), 0);
    }

    /// Answers skip on tool calls only, saying the turn it was told of.
    struct Turns;

    impl Hook for Turns {
        fn name(&self) -> &str {
            "turns"
        }
        fn subscriptions(&self) -> EventKinds {
            EventKinds::NONE.with(EventKind::ToolCall)
        }
        fn on_event(&self, ctx: &HookContext, _event: &StepEvent) -> Flow {
            Flow::Skip(format!("turn {}", ctx.turn))
        }
    }

    #[test]
    fn without_a_context_the_run_keeps_it_through_unsubscribed_events() {
        let mut stack = HookStack::new();
        stack.push_hook(Turns);
        let door = Door::open(&stack, "r");
        let turn = StepEvent::CompletionCall(hookbox::CompletionCall {
            prompt: "hi".into(),
            history: Vec::new(),
            turn: 0,
        });
        assert!(!door.wants(EventKind::CompletionCall));
        for _ in 0..2 {
            assert_eq!(door.decide(None, &turn).unwrap().flow, Flow::Continue);
        }
        assert_eq!(
            door.decide(None, &tool_call()).unwrap().flow,
            Flow::Skip("turn 2".into())
        );
    }

    #[test]
    fn a_run_a_host_panic_left_half_decided_fails_closed_from_then_on() {
        let (stack, calls) = ending();
        let door = Door::open(&stack, "r");
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            door.with_run(|_run| panic!("a host bug"))
        }));
        assert!(panicked.is_err());
        for event in [tool_call(), tool_result()] {
            let failure = door.decide(None, &event).unwrap_err();
            assert_eq!(&*failure.plugin, hookbox::HOST);
            assert_eq!(failure.cause, Cause::Trap);
        }
        assert!(door.is_over());
        assert_eq!(calls.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn once_the_run_is_over_every_event_gets_its_end() {
        let (stack, calls) = ending();
        let door = Door::open(&stack, "r");
        let ended = door.decide(None, &tool_result()).unwrap();
        assert_eq!(ended.flow, Flow::Terminate("no".into()));
        assert!(door.is_over() && door.wants(EventKind::ToolCall));
        // An unsubscribed kind after the end is asked, and gets the end
        // without the hook being asked again.
        let replayed = door.decide(None, &tool_call()).unwrap();
        assert_eq!(replayed.flow, Flow::Terminate("no".into()));
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn the_async_ask_answers_as_decide_does() {
        let (stack, _calls) = ending();
        let door = Arc::new(Door::open(&stack, "r"));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let (call, result) = runtime.block_on(async {
            let call = door.ask(None, tool_call(), Asking::OffExecutor).await;
            let result = door
                .ask(None, tool_result(), Asking::OnPool(tracing::Span::none()))
                .await;
            (call, result)
        });
        assert_eq!(call.unwrap().flow, Flow::Continue);
        assert_eq!(result.unwrap().flow, Flow::Terminate("no".into()));
    }
}
