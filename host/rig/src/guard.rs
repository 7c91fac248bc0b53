//! The `AgentHook`: one hookbox run per rig run, asked off the executor.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use hookbox::watch::StackSource;
use hookbox::{Cause, Decision, EventKind, FailClosed, Flow, StepEvent, Stopped};
use hookbox::{InvalidToolCall, ModelResponse, ModelTurnFinished, TextDelta, ToolCallDelta};
use rig_agent::agent::{
    AgentHook, CompletionCallAction, CompletionCallEvent, DispatchAction, DispatchEvent,
    HookContext, InvalidToolCallAction, ModelTurnAction, ObservationAction, OutcomeAction,
    OutcomeEvent, RunSettled, RunStart, RunStartAction,
};
use rig_agent::run::{InvalidToolCallContext, InvalidToolCallReason};
use rig_core::completion::message::{Message as RigMessage, ToolChoice as RigToolChoice};
use rig_core::effect::{Answered, EffectKind};

use crate::map;
use hookbox_adapter::verdict::{Call, Reading};
use hookbox_adapter::{Asking, Door, ToolUse};
use serde_json::Value;

/// hookbox's stack as a rig [`AgentHook`]: add it with
/// `AgentBuilder::add_hook` (every run of the agent) or
/// `AgentRunner::add_hook` (one run).
///
/// Each rig run gets its own hookbox run on the newest snapshot of the
/// source: fresh guest instances, kept to the run's end, nothing shared with
/// other runs. A stack that fails closed or terminates stops the rig run
/// through rig's own stop path (`PromptError::Cancelled`, whose reason
/// [`crate::stopped`] reads back). Guards are asked without holding up the
/// executor (`hookbox_adapter::off_executor`).
#[derive(Clone)]
pub struct Guard {
    inner: Arc<Inner>,
}

struct Inner {
    source: StackSource,
    /// Tells this guard's runs apart from another guard's in rig's per-run
    /// scratchpad.
    id: u64,
}

/// Held while a run is looked up or opened, by every guard: rig's
/// scratchpad update is a remove and a re-insert, so two guards (or two
/// parallel tool calls of a resumed run) opening at once could lose one.
static OPENING: Mutex<()> = Mutex::new(());

/// This guard's hookbox runs for one rig run, in rig's per-run scratchpad:
/// dropped with it, even when the caller drops the run midway.
#[derive(Clone, Default)]
struct Runs(BTreeMap<u64, Arc<GuardRun>>);

struct GuardRun {
    /// The hookbox run, pinned to the snapshot the rig run started on.
    door: Arc<Door>,
    /// The run's prompt, as rig gave it at the run's start.
    prompt: Mutex<Option<String>>,
}

impl Guard {
    /// A guard over `source`: a [`hookbox::HookStack`], or a hot-reloaded
    /// plugin directory (`StackSource::watch`).
    pub fn new(source: impl Into<StackSource>) -> Guard {
        static IDS: AtomicU64 = AtomicU64::new(1);
        Guard {
            inner: Arc::new(Inner {
                source: source.into(),
                id: IDS.fetch_add(1, Ordering::Relaxed),
            }),
        }
    }

    /// This rig run's hookbox run, opened on the newest snapshot when it
    /// has none yet.
    fn run(&self, ctx: &HookContext) -> Arc<GuardRun> {
        let _opening = OPENING.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(run) = ctx
            .scratchpad()
            .get::<Runs>()
            .and_then(|r| r.0.get(&self.inner.id).cloned())
        {
            return run;
        }
        let snapshot = self.inner.source.snapshot();
        let run = Arc::new(GuardRun {
            door: Arc::new(Door::open(&snapshot.stack, format!("rig-{}", ctx.run_id()))),
            prompt: Mutex::new(None),
        });
        ctx.scratchpad()
            .update::<Runs, _>(|runs| runs.0.insert(self.inner.id, run.clone()));
        run
    }

    /// The run's prompt: the one it started with, else (a resumed run)
    /// `current`.
    fn prompt(&self, ctx: &HookContext, current: Option<&RigMessage>) -> String {
        let run = self.run(ctx);
        let prompt = run.prompt.lock().unwrap_or_else(|e| e.into_inner());
        match (&*prompt, current) {
            (Some(prompt), _) => prompt.clone(),
            (None, Some(current)) => map::message(current).content,
            (None, None) => String::new(),
        }
    }

    /// Whether any plugin of this rig run's stack subscribes to `kind`.
    fn subscribes(&self, ctx: &HookContext, kind: EventKind) -> bool {
        self.run(ctx).door.subscribes(kind)
    }

    /// This rig run's door, and the hookbox context of this step.
    fn door(&self, ctx: &HookContext) -> (Arc<Door>, hookbox::HookContext) {
        let door = self.run(ctx).door.clone();
        let hook_ctx = hookbox::HookContext {
            run_id: door.run_id().to_owned(),
            turn: u32::try_from(ctx.turn()).unwrap_or(u32::MAX),
            is_streaming: ctx.is_streaming(),
            agent_name: ctx.agent_name().map(str::to_owned),
        };
        (door, hook_ctx)
    }

    /// Asks the stack about `event`. `Err` is how the run ends: a
    /// fail-closed or a terminate (or, once a plugin failed an invalid tool
    /// call, any later event; the fail itself goes rig's own way).
    async fn ask(&self, ctx: &HookContext, event: StepEvent) -> Result<Decision, Stopped> {
        let (door, hook_ctx) = self.door(ctx);
        door.ask_observe(Some(hook_ctx), event, Asking::OffExecutor)
            .await
    }
}

impl AgentHook for Guard {
    fn name(&self) -> Option<String> {
        Some("hookbox".to_owned())
    }

    async fn on_run_start(&self, ctx: &HookContext, event: RunStart<'_>) -> RunStartAction {
        // Opens the run now: a run that cannot have its instances stops
        // before the model is called.
        let run = self.run(ctx);
        *run.prompt.lock().unwrap_or_else(|e| e.into_inner()) =
            Some(map::message(event.prompt).content);
        match run.door.refused() {
            None => RunStartAction::Continue,
            Some(failure) => RunStartAction::Stop(Stopped::from(failure.clone()).reason()),
        }
    }

    async fn on_run_settled(&self, ctx: &HookContext, _event: RunSettled<'_>) {
        // The run's instances go back now, not when rig drops the context.
        ctx.scratchpad()
            .update::<Runs, _>(|runs| runs.0.remove(&self.inner.id));
    }

    async fn on_completion_call(
        &self,
        ctx: &HookContext,
        event: CompletionCallEvent<'_>,
    ) -> CompletionCallAction {
        // The messages sent this turn: rig's history, then the turn's prompt
        // (the run's prompt on the first turn, the tool results after).
        let history = event
            .history
            .iter()
            .map(|m| map::message(m))
            .chain([map::message(event.prompt)])
            .collect();
        let prompt = self.prompt(ctx, Some(event.prompt));
        let turn = u32::try_from(event.turn).unwrap_or(u32::MAX);
        let (door, hook_ctx) = self.door(ctx);
        let asked = door
            .ask_completion_call(Some(hook_ctx), prompt, history, turn, Asking::OffExecutor)
            .await;
        match asked {
            Err(stopped) => CompletionCallAction::Stop(stopped.reason()),
            Ok(request) => {
                let (Some(patch), Some(plugin)) = (request.patch, request.by) else {
                    return CompletionCallAction::Continue;
                };
                match map::request_patch(patch, event.history, event.prompt, &plugin) {
                    Ok(patch) => CompletionCallAction::Patch(patch),
                    Err(failure) => CompletionCallAction::Stop(door.end(failure).reason()),
                }
            }
        }
    }

    async fn on_model_turn_finished(
        &self,
        ctx: &HookContext,
        event: rig_agent::agent::ModelTurnFinished<'_>,
    ) -> ModelTurnAction {
        let finished = StepEvent::ModelTurnFinished(ModelTurnFinished {
            turn: u32::try_from(event.turn).unwrap_or(u32::MAX),
            content: map::answer_text(event.content),
            usage: map::usage(&event.usage),
        });
        match self.ask(ctx, finished).await {
            Err(stopped) => ModelTurnAction::Stop(stopped.reason()),
            Ok(_) => ModelTurnAction::Continue,
        }
    }

    async fn on_invalid_tool_call(
        &self,
        ctx: &HookContext,
        event: &InvalidToolCallContext,
    ) -> Option<InvalidToolCallAction> {
        // Arguments that are not a JSON object are not an invalid tool call
        // in hookbox's sense (a tool unknown or not allowed): rig answers
        // them with its own feedback. And with no plugin subscribed, rig's
        // own policy (and later hooks) decide.
        if matches!(
            event.reason,
            InvalidToolCallReason::MalformedArguments { .. }
        ) || !self.subscribes(ctx, EventKind::InvalidToolCall)
        {
            return None;
        }
        let invalid = StepEvent::InvalidToolCall(InvalidToolCall {
            tool_name: event.tool_name.clone(),
            tool_call_id: event.tool_call_id.as_ref().map(|id| id.wire().into_owned()),
            internal_call_id: None,
            args: event.args.clone(),
            available_tools: event.available_tools.clone(),
            allowed_tools: event.allowed_tools.clone(),
            tool_choice: event.tool_choice.as_ref().map(map::tool_choice),
        });
        let decision = match self.ask(ctx, invalid).await {
            Err(stopped) => return Some(InvalidToolCallAction::stop(stopped.reason())),
            Ok(decision) => decision,
        };
        // What rig would refuse is refused here, naming the plugin: rig
        // would end the run with its own error instead.
        let by = decision.by();
        let door = self.run(ctx).door.clone();
        let refuse = |detail: String| {
            let failure = FailClosed::new(&by, Cause::UnsupportedFlow, detail);
            Some(InvalidToolCallAction::stop(door.end(failure).reason()))
        };
        match decision.flow {
            Flow::Retry(feedback) => Some(InvalidToolCallAction::retry(feedback)),
            Flow::Repair(tool_name) if !event.allowed_tools.contains(&tool_name) => refuse(format!(
                "repaired the call to `{}` into `{tool_name}`, which is not a tool this turn allows",
                event.tool_name
            )),
            Flow::Repair(tool_name) => Some(InvalidToolCallAction::repair(tool_name)),
            Flow::Skip(_) if matches!(event.tool_choice, Some(RigToolChoice::None)) => refuse(
                "skipped an invalid tool call on a turn whose tool choice is none; rig cannot record a result for it"
                    .to_owned(),
            ),
            Flow::Skip(reason) => Some(InvalidToolCallAction::skip(reason)),
            // Every subscribed plugin continued, or one answered fail: the
            // stack's answer is fail.
            _ => Some(InvalidToolCallAction::fail()),
        }
    }

    async fn on_text_delta(
        &self,
        ctx: &HookContext,
        event: rig_agent::agent::TextDelta<'_>,
    ) -> ObservationAction {
        let delta = StepEvent::TextDelta(TextDelta {
            delta: event.delta.to_owned(),
            aggregated: event.aggregated.to_owned(),
        });
        observe(self.ask(ctx, delta).await)
    }

    async fn on_tool_call_delta(
        &self,
        ctx: &HookContext,
        event: rig_agent::agent::ToolCallDelta<'_>,
    ) -> ObservationAction {
        let part = event.part.index().to_string();
        let delta = StepEvent::ToolCallDelta(ToolCallDelta {
            tool_call_id: part.clone(),
            internal_call_id: part,
            tool_name: Some(event.tool_name.to_owned()).filter(|n| !n.is_empty()),
            delta: event.delta.to_owned(),
        });
        observe(self.ask(ctx, delta).await)
    }

    async fn on_dispatch(&self, ctx: &HookContext, event: DispatchEvent<'_>) -> DispatchAction {
        let EffectKind::ToolCall { name, args } = event.kind else {
            return DispatchAction::Proceed;
        };
        let call = ToolUse::new(
            name.as_str(),
            args.as_str(),
            event.call_id.map(|id| id.wire().into_owned()),
        )
        .internal(event.id.as_u64().to_string());
        let (door, hook_ctx) = self.door(ctx);
        let patch = |args: String| {
            DispatchAction::Patch(EffectKind::ToolCall {
                name: name.clone(),
                args,
            })
        };
        // The one canonical form: what the guards check is what the tool
        // gets.
        match door
            .ask_tool_call(Some(hook_ctx), call, Asking::OffExecutor)
            .await
        {
            Err(stopped) => DispatchAction::stop(stopped.reason()),
            Ok(Call::Skip { reason, .. }) => DispatchAction::skip(reason),
            Ok(Call::Refuse { why, .. }) => DispatchAction::skip(why),
            Ok(Call::Run { args: run, .. }) if run != *args => patch(run),
            Ok(_) => DispatchAction::Proceed,
        }
    }

    async fn on_outcome(&self, ctx: &HookContext, event: OutcomeEvent<'_>) -> OutcomeAction {
        match event.kind {
            EffectKind::ToolCall { name, args } => self.tool_outcome(ctx, &event, name, args).await,
            EffectKind::Completion { request, .. } => {
                let Some(response) = event.completion() else {
                    return OutcomeAction::Proceed;
                };
                let prompt = self.prompt(ctx, request.chat_history.last().map(|m| &**m));
                let response = ModelResponse {
                    content: map::answer_text(&response.choice),
                    usage: map::usage(&response.usage),
                };
                let (door, hook_ctx) = self.door(ctx);
                let streamed = ctx.is_streaming();
                let asking = Asking::OffExecutor;
                match door
                    .ask_answered(Some(hook_ctx), prompt, response, streamed, asking)
                    .await
                {
                    Err(stopped) => OutcomeAction::stop(stopped.reason()),
                    Ok(()) => OutcomeAction::Proceed,
                }
            }
            _ => OutcomeAction::Proceed,
        }
    }
}

impl Guard {
    async fn tool_outcome(
        &self,
        ctx: &HookContext,
        event: &OutcomeEvent<'_>,
        name: &str,
        args: &str,
    ) -> OutcomeAction {
        // What the tool returned in its shape (JSON, text), or, for an
        // output of several parts or a failed dispatch, the text the model
        // reads.
        let (outcome, returned) = match event.outcome {
            Ok(Answered::ToolResult { result }) => {
                let (outcome, visible) = map::tool_outcome(result);
                let output = result.output();
                let returned = match (output.as_json(), output.as_text()) {
                    (Some(json), _) => json.clone(),
                    (None, Some(text)) => Value::String(text.to_owned()),
                    (None, None) => Value::String(visible),
                };
                (outcome, returned)
            }
            Ok(_) => return OutcomeAction::Proceed,
            Err(report) => (
                hookbox::ToolOutcome::Error(hookbox::ToolError {
                    kind: hookbox::ToolErrorKind::Other,
                    message: report.message.clone(),
                }),
                Value::String(report.message.clone()),
            ),
        };
        let call = ToolUse::new(name, args, event.call_id.map(|id| id.wire().into_owned()))
            .internal(event.id.as_u64().to_string());
        let (door, hook_ctx) = self.door(ctx);
        let asked = door
            .ask_tool_result(
                Some(hook_ctx),
                call,
                &returned,
                outcome,
                Asking::OffExecutor,
            )
            .await;
        let (with, plugin) = match asked {
            Err(stopped) => return OutcomeAction::stop(stopped.reason()),
            Ok(Reading::Keep) => return OutcomeAction::Proceed,
            Ok(Reading::Replace { with, by, .. }) => (with, by),
        };
        match event.outcome {
            Ok(Answered::ToolResult { result }) => {
                match map::rewritten_output(result.output(), with) {
                    Ok(output) => OutcomeAction::Replace(Ok(Answered::ToolResult {
                        result: result.clone().with_output(output),
                    })),
                    Err(detail) => OutcomeAction::stop(
                        door.end(FailClosed::new(&plugin, Cause::UnsupportedFlow, detail))
                            .reason(),
                    ),
                }
            }
            // A failed dispatch: the model sees the report's message, so the
            // rewrite replaces that.
            Err(report) => {
                let mut report = report.clone();
                report.message = hookbox_adapter::shape::result_text(&with);
                OutcomeAction::Replace(Err(report))
            }
            Ok(_) => OutcomeAction::Proceed,
        }
    }
}

fn observe(answer: Result<Decision, Stopped>) -> ObservationAction {
    match answer {
        Err(stopped) => ObservationAction::Stop(stopped.reason()),
        Ok(_) => ObservationAction::Continue,
    }
}
