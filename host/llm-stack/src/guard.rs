//! One hookbox run per tool loop: where it plugs into llm-stack, and how
//! its answers become llm-stack's.

#![allow(
    clippy::result_large_err,
    reason = "llm-stack's own error type, passed on as llm-stack returns it"
)]

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use futures_util::StreamExt;
use hookbox::watch::StackSource;
use hookbox::{Cause, Decision, EventKind, FailClosed, Flow, StepEvent, Stopped};
use hookbox::{
    InvalidToolCall, ModelResponse, ModelTurnFinished, TextDelta, ToolCallDelta, ToolError,
    ToolErrorKind, ToolOutcome,
};
use hookbox_adapter::verdict::{Call as Verdict, Reading};
use hookbox_adapter::{Args, Asking, Door, ToolUse};
use llm_stack::intercept::{
    Interceptor, InterceptorStack, Next, ToolExec, ToolRequest, ToolResponse,
};
use llm_stack::provider::ProviderMetadata;
use llm_stack::tool::ToolApproval;
use llm_stack::{
    ChatParams, ChatResponse, ChatStream, DynProvider, LlmError, Provider, StreamEvent,
};
use llm_stack::{ToolLoopConfig, ToolRegistry, Usage};

use crate::map;

/// The error code of an `LlmError::Provider` that is a hookbox stop.
pub(crate) const STOP_CODE: &str = "hookbox";

/// A hookbox stack for llm-stack tool loops: one [`GuardRun`] per loop.
#[derive(Clone)]
pub struct Guard {
    source: Arc<StackSource>,
}

impl Guard {
    /// A guard over `source`: a [`hookbox::HookStack`], or a hot-reloaded
    /// plugin directory (`StackSource::watch`).
    pub fn new(source: impl Into<StackSource>) -> Guard {
        Guard {
            source: Arc::new(source.into()),
        }
    }

    /// A hookbox run for one tool loop, on the source's newest snapshot:
    /// fresh guest instances, kept to the run's end.
    ///
    /// # Errors
    /// A [`Stopped`] naming `hookbox` (cause `limit`) when the runtime has
    /// no instance slots free for the run.
    pub fn start_run(&self, run_id: impl Into<String>) -> Result<GuardRun, Stopped> {
        let snapshot = self.source.snapshot();
        let door = Door::open(&snapshot.stack, run_id);
        if let Some(failure) = door.refused() {
            return Err(Stopped::FailedClosed(failure.clone()));
        }
        Ok(GuardRun {
            shared: Arc::new(Shared {
                door: Arc::new(door),
                turn: AtomicU32::new(0),
                streaming: AtomicBool::new(true),
                allowed: Mutex::new(None),
            }),
        })
    }
}

/// One hookbox run, and the pieces that plug it into one llm-stack tool
/// loop: [`GuardRun::provider`], [`GuardRun::registry`] (or
/// [`GuardRun::interceptor`]) and [`GuardRun::config`]. Clones share the
/// run.
#[derive(Clone)]
pub struct GuardRun {
    shared: Arc<Shared>,
}

struct Shared {
    /// The hookbox run, pinned to the snapshot the loop started on.
    door: Arc<Door>,
    /// Model calls so far.
    turn: AtomicU32,
    /// Whether the model call under way streams (llm-stack's loop always
    /// does; a direct `generate` does not).
    streaming: AtomicBool,
    /// The tools this turn's request let the model call, when a request
    /// narrowed them (its tools, or a tool choice of none): a call to any
    /// other is an invalid tool call, not a call llm-stack would run.
    allowed: Mutex<Option<HashSet<String>>>,
}

impl GuardRun {
    /// Why the stack ended the run, if it did: the run's end, which its
    /// door remembers.
    pub fn stopped(&self) -> Option<Stopped> {
        self.shared.door.stopped()
    }

    /// Ends the run with `stopped` (the first stop stays).
    fn stop(&self, stopped: impl Into<Stopped>) -> Stopped {
        self.shared.door.end(stopped)
    }

    fn context(&self) -> hookbox::HookContext {
        hookbox::HookContext {
            run_id: self.shared.door.run_id().to_owned(),
            turn: self.shared.turn.load(Ordering::Relaxed),
            is_streaming: self.shared.streaming.load(Ordering::Relaxed),
            agent_name: None,
        }
    }

    /// Whether a plugin has an opinion on `kind` (else llm-stack's own
    /// policy decides).
    fn subscribes(&self, kind: EventKind) -> bool {
        self.shared.door.subscribes(kind)
    }

    /// Asks the stack without holding up the executor
    /// ([`hookbox_adapter::off_executor`]: in place on a multi-threaded
    /// runtime, the worker's other tasks handed off; on the blocking pool
    /// on a current-thread one). `Err` ends the run.
    async fn ask(&self, event: StepEvent) -> Result<Decision, Stopped> {
        let asked = self
            .shared
            .door
            .ask_observe(Some(self.context()), event, Asking::OffExecutor)
            .await;
        self.failed(asked)
    }

    /// Asks about the model's answer ([`hookbox_adapter::Door::answered`]).
    async fn answered(
        &self,
        prompt: String,
        response: ModelResponse,
        streamed: bool,
    ) -> Result<(), Stopped> {
        let ctx = Some(self.context());
        let door = &self.shared.door;
        door.ask_answered(ctx, prompt, response, streamed, Asking::OffExecutor)
            .await
    }

    /// [`GuardRun::ask`] from one of llm-stack's synchronous callbacks: on a
    /// multi-threaded runtime the worker hands its other tasks off while
    /// the guard runs (`block_in_place`); elsewhere it blocks in place.
    fn ask_blocking(&self, event: StepEvent) -> Result<Decision, Stopped> {
        let ctx = self.context();
        let asked = hookbox_adapter::blocking_here(|| self.shared.door.observe(Some(&ctx), &event));
        self.failed(asked)
    }

    /// A fail ends the run here wherever it comes (llm-stack has no way to
    /// fail an invalid tool call but ending the run): the run's end.
    fn failed(&self, asked: Result<Decision, Stopped>) -> Result<Decision, Stopped> {
        match asked {
            Ok(decision) if decision.flow == Flow::Fail => {
                Err(self.stop(Stopped::run_failed(&decision.by())))
            }
            asked => asked,
        }
    }

    /// `result` as the caller should take it: a loop that llm-stack ended
    /// on its own terms (its iteration limit, its timeout) after the stack
    /// had stopped the run is the stop, not a result.
    ///
    /// # Errors
    /// `result`'s own error, or the stop (`LlmError::Provider` with code
    /// `hookbox`).
    pub fn check<T>(&self, result: Result<T, LlmError>) -> Result<T, LlmError> {
        match (result, self.stopped()) {
            (Ok(_), Some(stopped)) => Err(stop_error(&stopped)),
            (result, _) => result,
        }
    }

    /// `inner` with the stack asked around each model call: completion-call
    /// (its patch applies to that call only), then text-delta and
    /// tool-call-delta as the model streams, then stream-response-finish
    /// and model-turn-finished. Once the run has stopped, every call fails
    /// with the stop (an `LlmError::Provider` with code `hookbox`) and the
    /// model is not called.
    pub fn provider(&self, inner: Arc<dyn DynProvider>) -> GuardedProvider {
        GuardedProvider {
            inner,
            run: self.clone(),
        }
    }

    /// The tool-execution interceptor: tool-call before each tool (skip,
    /// rewrite-args, terminate) and tool-result after it (rewrite-result,
    /// terminate). What the guards check is what runs only if no
    /// interceptor inside it (added after it) changes the arguments, and
    /// what the model reads is what they rewrote only if none outside it
    /// (added before it) changes the result: add it alone, or last with
    /// outer interceptors that leave results be.
    pub fn interceptor<Ctx: Send + Sync + 'static>(&self) -> Arc<dyn Interceptor<ToolExec<Ctx>>> {
        Arc::new(ToolGuard { run: self.clone() })
    }

    /// A copy of `registry` whose tools run through
    /// [`GuardRun::interceptor`] only: its interceptors are replaced, so
    /// with interceptors of your own, use `interceptor` instead.
    pub fn registry<Ctx: Send + Sync + 'static>(
        &self,
        registry: &ToolRegistry<Ctx>,
    ) -> ToolRegistry<Ctx> {
        registry
            .clone()
            .with_interceptors(InterceptorStack::new().with_shared(self.interceptor()))
    }

    /// `config` with the run's approval step: a call to a tool `registry`
    /// does not have is an invalid-tool-call (retry: the model reads the
    /// feedback as the call's error result; skip: the reason; fail or
    /// terminate: the run ends; repair: the run fails closed, llm-stack
    /// cannot rename a call). Calls to known tools go to `config`'s own
    /// `on_tool_call`, if any. Once the run has stopped, every call is
    /// denied.
    pub fn config<Ctx: Send + Sync + 'static>(
        &self,
        config: ToolLoopConfig,
        registry: &ToolRegistry<Ctx>,
    ) -> ToolLoopConfig {
        let known: HashSet<String> = registry.definitions().into_iter().map(|d| d.name).collect();
        let own = config.on_tool_call.clone();
        let run = self.clone();
        ToolLoopConfig {
            on_tool_call: Some(Arc::new(move |call: &llm_stack::ToolCall| {
                if let Some(stopped) = run.stopped() {
                    return ToolApproval::Deny(stopped.reason());
                }
                if !known.contains(&call.name) || !run.allows(&call.name) {
                    return run.invalid_call(call, &known);
                }
                match &own {
                    Some(own) => own(call),
                    None => ToolApproval::Approve,
                }
            })),
            ..config
        }
    }

    /// Whether this turn's request let the model call `tool`.
    fn allows(&self, tool: &str) -> bool {
        let allowed = self
            .shared
            .allowed
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        allowed.as_ref().is_none_or(|set| set.contains(tool))
    }

    fn invalid_call(&self, call: &llm_stack::ToolCall, known: &HashSet<String>) -> ToolApproval {
        let mut available: Vec<String> = known.iter().cloned().collect();
        available.sort();
        let allowed: Vec<String> = available
            .iter()
            .filter(|t| self.allows(t))
            .cloned()
            .collect();
        if !self.subscribes(EventKind::InvalidToolCall) {
            // No plugin has an opinion: llm-stack answers a call to an
            // unknown tool itself; a known tool the request did not offer
            // is refused (llm-stack would run it).
            return if known.contains(&call.name) {
                ToolApproval::Deny(format!(
                    "`{}` is not a tool you may call now; call one of: {}",
                    call.name,
                    allowed.join(", ")
                ))
            } else {
                ToolApproval::Approve
            };
        }
        let event = StepEvent::InvalidToolCall(InvalidToolCall {
            tool_name: call.name.clone(),
            tool_call_id: Some(call.id.clone()),
            internal_call_id: Some(call.id.clone()),
            args: Some(call.arguments.to_string()),
            available_tools: available,
            allowed_tools: allowed,
            tool_choice: None,
        });
        let decision = match self.ask_blocking(event) {
            Err(stopped) => return ToolApproval::Deny(stopped.reason()),
            Ok(decision) => decision,
        };
        let plugin = decision.by();
        match decision.flow {
            Flow::Retry(feedback) => ToolApproval::Deny(feedback),
            Flow::Skip(reason) => ToolApproval::Deny(reason),
            Flow::Repair(name) => {
                let failure = FailClosed::new(
                    &plugin,
                    Cause::UnsupportedFlow,
                    format!(
                        "answered repair (to `{name}`) for a call to unknown tool `{}`; llm-stack cannot rename a tool call, answer retry instead",
                        call.name
                    ),
                );
                ToolApproval::Deny(self.stop(failure).reason())
            }
            // Every subscribed plugin continued, or one answered fail: the
            // stack's answer is fail, which ends the run.
            _ => {
                let stopped = Stopped::Terminated {
                    plugin: plugin.to_string(),
                    event: EventKind::InvalidToolCall,
                    reason: format!("failed the invalid call to `{}`", call.name),
                };
                ToolApproval::Deny(self.stop(stopped).reason())
            }
        }
    }
}

/// An llm-stack provider with a hookbox run around each call; see
/// [`GuardRun::provider`].
pub struct GuardedProvider {
    inner: Arc<dyn DynProvider>,
    run: GuardRun,
}

fn stop_error(stopped: &Stopped) -> LlmError {
    LlmError::Provider {
        code: STOP_CODE.to_owned(),
        message: stopped.reason(),
        retryable: false,
    }
}

/// One model call: its prompt and turn, as the guards were told.
struct Call {
    prompt: String,
    turn: u32,
}

impl GuardedProvider {
    /// Asks completion-call; the params this call goes out with.
    async fn before(
        &self,
        params: &ChatParams,
        streaming: bool,
    ) -> Result<(ChatParams, Call), LlmError> {
        if let Some(stopped) = self.run.stopped() {
            return Err(stop_error(&stopped));
        }
        let turn = self.run.shared.turn.fetch_add(1, Ordering::Relaxed) + 1;
        self.run
            .shared
            .streaming
            .store(streaming, Ordering::Relaxed);
        let prompt = map::prompt(&params.messages);
        let history = params.messages.iter().map(map::message).collect();
        let request = self
            .run
            .shared
            .door
            .ask_completion_call(
                Some(self.run.context()),
                prompt.clone(),
                history,
                turn,
                Asking::OffExecutor,
            )
            .await
            .map_err(|s| stop_error(&s))?;
        let patched = match (request.patch, request.by) {
            (Some(patch), Some(plugin)) => map::apply_patch(patch, params, &plugin)
                .map_err(|failure| stop_error(&self.run.stop(failure)))?,
            _ => params.clone(),
        };
        *self
            .run
            .shared
            .allowed
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = map::allowed_tools(&patched);
        Ok((patched, Call { prompt, turn }))
    }
}

/// Asks the end of a model call: completion-response (or
/// stream-response-finish), then model-turn-finished.
async fn finished(
    run: &GuardRun,
    call: Call,
    streaming: bool,
    content: String,
    usage: &Usage,
) -> Result<(), LlmError> {
    let usage = Some(hookbox::Usage {
        input_tokens: usage.input_tokens,
        output_tokens: usage.output_tokens,
    });
    let response = ModelResponse {
        content: content.clone(),
        usage,
    };
    run.answered(call.prompt, response, streaming)
        .await
        .map_err(|s| stop_error(&s))?;
    let turn = call.turn;
    run.ask(StepEvent::ModelTurnFinished(ModelTurnFinished {
        turn,
        content,
        usage,
    }))
    .await
    .map_err(|s| stop_error(&s))?;
    Ok(())
}

impl Provider for GuardedProvider {
    async fn generate(&self, params: &ChatParams) -> Result<ChatResponse, LlmError> {
        let (params, call) = self.before(params, false).await?;
        let response = self.inner.generate_boxed(&params).await?;
        let text = response.text().unwrap_or_default().to_owned();
        finished(&self.run, call, false, text, &response.usage).await?;
        Ok(response)
    }

    async fn stream(&self, params: &ChatParams) -> Result<ChatStream, LlmError> {
        let (params, call) = self.before(params, true).await?;
        let inner = self.inner.stream_boxed(&params).await?;
        let state = Streaming {
            inner,
            run: self.run.clone(),
            call: Some(call),
            text: String::new(),
            usage: Usage::default(),
            calls: HashMap::new(),
            ended: false,
        };
        Ok(Box::pin(futures_util::stream::unfold(
            state,
            Streaming::next,
        )))
    }

    fn metadata(&self) -> ProviderMetadata {
        self.inner.metadata()
    }
}

/// A model's stream with the stack asked about each delta and its end.
struct Streaming {
    inner: ChatStream,
    run: GuardRun,
    /// Until the end was asked about.
    call: Option<Call>,
    text: String,
    usage: Usage,
    /// Each streamed tool call's id, by its index.
    calls: HashMap<u32, String>,
    ended: bool,
}

impl Streaming {
    async fn next(mut self) -> Option<(Result<StreamEvent, LlmError>, Streaming)> {
        if self.ended {
            return None;
        }
        let Some(event) = self.inner.next().await else {
            // A stream that stops without `Done` is still the end of the
            // answer: the guards are asked about it all the same.
            self.ended = true;
            let call = self.call.take()?;
            let text = std::mem::take(&mut self.text);
            return match finished(&self.run, call, true, text, &self.usage).await {
                Ok(()) => None,
                Err(e) => Some((Err(e), self)),
            };
        };
        let event = match event {
            Ok(event) => event,
            Err(e) => return Some((Err(e), self)),
        };
        let asked = match &event {
            StreamEvent::TextDelta(delta) => {
                self.text.push_str(delta);
                let aggregated = self.text.clone();
                ask_delta(
                    &self.run,
                    StepEvent::TextDelta(TextDelta {
                        delta: delta.clone(),
                        aggregated,
                    }),
                )
                .await
            }
            StreamEvent::ToolCallStart { index, id, name } => {
                self.calls.insert(*index, id.clone());
                let delta = ToolCallDelta {
                    tool_call_id: id.clone(),
                    internal_call_id: index.to_string(),
                    tool_name: Some(name.clone()),
                    delta: String::new(),
                };
                ask_delta(&self.run, StepEvent::ToolCallDelta(delta)).await
            }
            StreamEvent::ToolCallDelta { index, json_chunk } => {
                let delta = ToolCallDelta {
                    tool_call_id: self.calls.get(index).cloned().unwrap_or_default(),
                    internal_call_id: index.to_string(),
                    tool_name: None,
                    delta: json_chunk.clone(),
                };
                ask_delta(&self.run, StepEvent::ToolCallDelta(delta)).await
            }
            StreamEvent::Usage(usage) => {
                self.usage = usage.clone();
                Ok(())
            }
            StreamEvent::Done { .. } => match self.call.take() {
                Some(call) => finished(&self.run, call, true, self.text.clone(), &self.usage).await,
                None => Ok(()),
            },
            _ => Ok(()),
        };
        match asked {
            Ok(()) => Some((Ok(event), self)),
            Err(e) => {
                self.ended = true;
                Some((Err(e), self))
            }
        }
    }
}

async fn ask_delta(run: &GuardRun, event: StepEvent) -> Result<(), LlmError> {
    run.ask(event).await.map(drop).map_err(|s| stop_error(&s))
}

/// The tool-execution interceptor; see [`GuardRun::interceptor`].
struct ToolGuard {
    run: GuardRun,
}

impl<Ctx: Send + Sync + 'static> Interceptor<ToolExec<Ctx>> for ToolGuard {
    fn intercept<'a>(
        &'a self,
        input: &'a ToolRequest,
        next: Next<'a, ToolExec<Ctx>>,
    ) -> Pin<Box<dyn Future<Output = ToolResponse> + Send + 'a>> {
        Box::pin(self.guard(input, next))
    }
}

impl ToolGuard {
    async fn guard<Ctx: Send + Sync + 'static>(
        &self,
        input: &ToolRequest,
        next: Next<'_, ToolExec<Ctx>>,
    ) -> ToolResponse {
        let refused = |stopped: Stopped| ToolResponse {
            content: stopped.reason(),
            is_error: true,
        };
        // The one canonical form: what the guards check is what the tool
        // gets.
        let call = ToolUse::new(
            input.name.as_str(),
            Args::Json(input.arguments.clone()),
            Some(input.call_id.clone()),
        );
        let door = &self.run.shared.door;
        let asked = door
            .ask_tool_call(Some(self.run.context()), call, Asking::OffExecutor)
            .await;
        // Not run (skipped, or refused): the reason is the call's result,
        // and the guards see that result like any other, with the
        // arguments the deciding hook saw.
        let run_with = match asked {
            Err(stopped) | Ok(Verdict::Stop(stopped)) => return refused(stopped),
            Ok(Verdict::Run { args, .. }) => args,
            Ok(Verdict::Skip { reason, args, .. }) => {
                return self.not_run(input, Args::Text(args), reason).await;
            }
            Ok(Verdict::Refuse { why, .. }) => {
                let args = Args::Json(input.arguments.clone());
                return self.not_run(input, args, why).await;
            }
        };
        let Ok(arguments) = serde_json::from_str(&run_with) else {
            // The stack hands on only JSON rewrites; this is a tool call
            // whose own arguments were not JSON.
            return ToolResponse {
                content: "the tool call's arguments are not JSON".to_owned(),
                is_error: true,
            };
        };
        let request = ToolRequest {
            name: input.name.clone(),
            call_id: input.call_id.clone(),
            arguments,
        };
        let response = next.run(&request).await;
        let outcome = if response.is_error {
            ToolOutcome::Error(ToolError {
                kind: ToolErrorKind::Execution,
                message: response.content.clone(),
            })
        } else {
            ToolOutcome::Success
        };
        self.result(input, Args::Text(run_with), response, outcome)
            .await
    }

    /// A call that did not run: `reason` is its result, asked about as any.
    async fn not_run(&self, input: &ToolRequest, args: Args, reason: String) -> ToolResponse {
        let response = ToolResponse {
            content: reason.clone(),
            is_error: true,
        };
        self.result(input, args, response, ToolOutcome::Skipped(reason))
            .await
    }

    /// Asks tool-result about `response`: the response the model reads.
    async fn result(
        &self,
        input: &ToolRequest,
        args: Args,
        response: ToolResponse,
        outcome: ToolOutcome,
    ) -> ToolResponse {
        let call = ToolUse::new(input.name.as_str(), args, Some(input.call_id.clone()));
        let returned = serde_json::Value::String(response.content.clone());
        let asked = self
            .run
            .shared
            .door
            .ask_tool_result(
                Some(self.run.context()),
                call,
                &returned,
                outcome,
                Asking::OffExecutor,
            )
            .await;
        match asked {
            Err(stopped) => ToolResponse {
                content: stopped.reason(),
                is_error: true,
            },
            Ok(Reading::Replace { with, .. }) => ToolResponse {
                content: hookbox_adapter::shape::result_text(&with),
                is_error: response.is_error,
            },
            Ok(Reading::Keep) => response,
        }
    }
}
