//! The tool loop: one model turn after another, the stack consulted at every
//! step, each flow honoured exactly
//! (docs/contract.md#events-and-the-flows-they-honour,
//! docs/runner.md#flows-at-each-step).
//!
//! One iteration:
//! 1. `completion-call`: the merged patch shapes this turn's request only.
//! 2. The model answers; when it streams, every `text-delta` and
//!    `tool-call-delta` goes to the stack, then `stream-response-finish`.
//! 3. `completion-response`, then `model-turn-finished`.
//! 4. Tool calls, in the order the model made them: an unknown or disallowed
//!    one is an `invalid-tool-call` (fail, retry, repair, skip); a valid one
//!    is a `tool-call` (continue, rewrite-args, skip). Loop detection looks
//!    at the arguments the tool would run with.
//! 5. The calls that survived run, concurrently if configured.
//! 6. `tool-result` for every call, in order: the model sees the rewritten
//!    result, hooks and telemetry keep the raw outcome.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::Value;
use tracing::Instrument;

use hookbox::json::is_json;
use hookbox::{
    EventKind, InvalidToolCall, ModelResponse, ModelTurnFinished, Role, StepEvent, TextDelta,
    ToolCallDelta, ToolChoice, ToolErrorKind, ToolOutcome, Usage,
};
use hookbox::{Flow, HookStack, RequestPatch};

use crate::config::{LoopConfig, LoopDetection};
use crate::events::{EventSink, LoopAction, LoopEvent};
use crate::guard::Guard;
use crate::model::{
    ChatMessage, Model, ModelChunk, ModelRequest, ModelTurn, ToolCallAssembler, ToolCallRequest,
};
use crate::report::{RunReport, RunStatus, ToolRecord};
use crate::text::cut;
use crate::tools::{ToolOutput, ToolSet};
use hookbox_adapter::ToolUse;
use hookbox_adapter::verdict::Call;

/// Most bytes of a tool's arguments or result recorded on a span.
const SPAN_TEXT_BYTES: usize = 4096;

/// What an [`Agent`](crate::Agent) is made of: the loop reads it, the
/// agent's builder fills it.
#[derive(Clone)]
pub(crate) struct Setup {
    pub model: Arc<dyn Model>,
    pub tools: ToolSet,
    pub stack: HookStack,
    pub name: Option<String>,
    pub preamble: Option<String>,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u32>,
    pub tool_choice: ToolChoice,
    pub additional_params: serde_json::Map<String, Value>,
    pub config: LoopConfig,
    pub observer: Option<Arc<dyn hookbox::Observe>>,
}

/// A run's state; it outlives the loop's future so a timeout still reports
/// everything done before it.
pub(crate) struct LoopState<'a> {
    setup: &'a Setup,
    run_id: String,
    prompt: String,
    guard: Guard,
    events: EventSink,
    messages: Vec<ChatMessage>,
    iterations: u32,
    usage: Usage,
    text: String,
    tool_calls: Vec<ToolRecord>,
    /// The last executed (tool, arguments) and how many times in a row.
    last_call: Option<(String, String)>,
    repeats: u32,
}

/// One tool call on its way through the hooks.
struct Pending {
    record: ToolRecord,
    internal_id: String,
    /// Set when the tool is to run.
    run: bool,
    extensions: Value,
    /// The `execute_tool` span, once it ran: the delivered result is
    /// recorded on it after the tool-result hooks.
    span: Option<tracing::Span>,
}

/// What the model was offered this turn, to validate its calls against.
struct Offer {
    /// Advertised and permitted by the tool choice.
    allowed: Vec<String>,
    choice: ToolChoice,
}

impl Offer {
    fn of(request: &ModelRequest) -> Offer {
        let advertised = request.tools.iter().map(|t| t.name.clone());
        let allowed = match &request.tool_choice {
            ToolChoice::None => Vec::new(),
            ToolChoice::Specific(names) => advertised.filter(|n| names.contains(n)).collect(),
            ToolChoice::Auto | ToolChoice::Required => advertised.collect(),
        };
        Offer {
            allowed,
            choice: request.tool_choice.clone(),
        }
    }
}

/// What the hooks made of one call.
enum Decided {
    /// Run it, or deliver its (skip) result without running it.
    Call(Box<Pending>),
    /// Discard the turn; re-prompt with this feedback.
    Retry(String),
}

impl<'a> LoopState<'a> {
    pub fn new(setup: &'a Setup, run_id: &str, prompt: &str, events: EventSink) -> LoopState<'a> {
        LoopState {
            setup,
            run_id: run_id.to_owned(),
            prompt: prompt.to_owned(),
            guard: Guard::new(
                (&setup.stack, setup.observer.as_ref()),
                setup.name.clone(),
                run_id,
                events.clone(),
            ),
            events,
            messages: vec![ChatMessage::user(prompt)],
            iterations: 0,
            usage: Usage::default(),
            text: String::new(),
            tool_calls: Vec::new(),
            last_call: None,
            repeats: 0,
        }
    }

    pub fn finish(self, status: RunStatus) -> RunReport {
        tracing::info!(run = %self.run_id, status = status.name(), "run ended: {status}");
        RunReport {
            run_id: self.run_id,
            status,
            text: self.text,
            messages: self.messages,
            iterations: self.iterations,
            usage: self.usage,
            tool_calls: self.tool_calls,
        }
    }

    /// Runs iterations until the run ends.
    pub async fn drive(&mut self) -> RunStatus {
        let max = self.setup.config.max_iterations;
        while self.iterations < max {
            self.iterations += 1;
            match self.iteration(self.iterations).await {
                Ok(true) => return RunStatus::Finished,
                Ok(false) => {}
                Err(status) => return status,
            }
        }
        RunStatus::MaxIterations(max)
    }

    /// One model turn and its tool calls; `Ok(true)` when the model is done.
    async fn iteration(&mut self, turn: u32) -> Result<bool, RunStatus> {
        let streaming = self.setup.config.stream;
        self.events.emit(LoopEvent::IterationStart {
            iteration: turn,
            message_count: self.messages.len(),
        });

        // 1. completion-call
        let patch = self.completion_call(turn, streaming).await?;
        let request = self.request(patch, streaming)?;
        let offer = Offer::of(&request);

        // 2. the model; 3. its answer through the stack
        let answer = self.call_model(turn, request).await?;
        self.answered(turn, streaming, &answer).await?;

        // Only an answer every hook let through is the run's text.
        self.text = answer.content.clone();
        if answer.tool_calls.is_empty() {
            self.messages
                .push(ChatMessage::new(Role::Assistant, answer.content));
            return Ok(true);
        }

        // 4. the hooks decide every call, in order
        let mut pending = Vec::with_capacity(answer.tool_calls.len());
        for (index, call) in answer.tool_calls.iter().enumerate() {
            let internal_id = format!("{}-t{turn}-c{index}", self.run_id);
            match self.decide_call(turn, call, &internal_id, &offer).await? {
                Decided::Call(p) => pending.push(*p),
                Decided::Retry(feedback) => {
                    // The turn is discarded: the model tries again with the
                    // feedback, no tool of this turn runs.
                    self.messages.push(ChatMessage::user(feedback));
                    return Ok(false);
                }
            }
        }
        self.messages.push(ChatMessage {
            role: Role::Assistant,
            content: answer.content,
            tool_calls: answer.tool_calls,
            tool_call_id: None,
        });

        // 5. run them
        execute(self.setup, &self.events, &mut pending).await;

        // 6. tool-result, in order
        self.deliver_results(turn, streaming, pending).await?;
        Ok(false)
    }

    /// Step 1: the completion-call event; the merged patch for this turn.
    async fn completion_call(
        &mut self,
        turn: u32,
        streaming: bool,
    ) -> Result<Option<RequestPatch>, RunStatus> {
        if !self.guard.wants(EventKind::CompletionCall) {
            return Ok(None);
        }
        let history = self
            .messages
            .iter()
            .map(ChatMessage::to_hook_message)
            .collect();
        let ctx = self.guard.context(turn, streaming);
        let asked = (self.prompt.clone(), history);
        Ok(self.guard.completion_call(ctx, asked, turn).await?.patch)
    }

    /// Step 3: the model's answer through the stack (stream-response-finish
    /// when streaming, completion-response, model-turn-finished); counts its
    /// usage.
    async fn answered(
        &mut self,
        turn: u32,
        streaming: bool,
        answer: &ModelTurn,
    ) -> Result<(), RunStatus> {
        if let Some(usage) = answer.usage {
            self.usage.input_tokens += usage.input_tokens;
            self.usage.output_tokens += usage.output_tokens;
        }
        let response = ModelResponse {
            content: answer.content.clone(),
            usage: answer.usage,
        };
        let ctx = self.guard.context(turn, streaming);
        let prompt = self.prompt.clone();
        self.guard
            .answered(ctx, prompt, response, streaming)
            .await?;
        self.events.emit(LoopEvent::LlmResponseReceived {
            iteration: turn,
            has_tool_calls: !answer.tool_calls.is_empty(),
            text_length: answer.content.chars().count(),
        });
        let event = StepEvent::ModelTurnFinished(ModelTurnFinished {
            turn,
            content: answer.content.clone(),
            usage: answer.usage,
        });
        self.guard
            .ask(self.guard.context(turn, streaming), event)
            .await?;
        Ok(())
    }

    /// Step 6: every call's tool-result, in order; the model gets the
    /// (possibly rewritten) results. Every call of the turn stays on the
    /// record, also when a hook ends the run midway.
    async fn deliver_results(
        &mut self,
        turn: u32,
        streaming: bool,
        pending: Vec<Pending>,
    ) -> Result<(), RunStatus> {
        let mut pending = pending.into_iter();
        while let Some(mut call) = pending.next() {
            let span = call.span.take();
            let record = &call.record;
            let tool = ToolUse::new(
                &*record.tool_name,
                &*record.args,
                Some(record.call_id.clone()),
            )
            .internal(&*call.internal_id)
            .extensions(&call.extensions);
            let ctx = self.guard.context(turn, streaming);
            let outcome = record.outcome.clone();
            let read = self.guard.tool_result(ctx, tool, &record.result, outcome);
            match read.await {
                Ok(reading) => {
                    if let Some(text) = reading.text() {
                        call.record.result = text;
                    }
                }
                Err(status) => {
                    self.tool_calls.push(call.record);
                    self.tool_calls.extend(pending.map(|p| p.record));
                    return Err(status);
                }
            }
            if let Some(span) = span.filter(|_| hookbox::trace::capture_content()) {
                span.record(
                    "gen_ai.tool.call.result",
                    cut(&call.record.result, SPAN_TEXT_BYTES),
                );
            }
            self.messages.push(ChatMessage::tool(
                call.record.call_id.clone(),
                call.record.result.clone(),
            ));
            self.tool_calls.push(call.record);
        }
        Ok(())
    }

    /// The request for this turn: the setup's baseline with `patch` on top.
    fn request(
        &self,
        patch: Option<RequestPatch>,
        stream: bool,
    ) -> Result<ModelRequest, RunStatus> {
        let setup = self.setup;
        let patch = patch.unwrap_or_default();
        let system = hookbox_adapter::verdict::with_context(
            patch.preamble.or_else(|| setup.preamble.clone()),
            patch.extra_context,
        );
        let mut messages: Vec<ChatMessage> = system.into_iter().map(ChatMessage::system).collect();
        match patch.history {
            // A patched history is plain role and text; tool messages lose
            // the call they answered, so they go as user messages.
            Some(history) => messages.extend(history.iter().map(|m| match m.role {
                Role::Tool => ChatMessage::user(format!("[tool result] {}", m.content)),
                _ => ChatMessage::from(m),
            })),
            None => messages.extend(self.messages.iter().cloned()),
        }
        let mut tools: Vec<_> = setup.tools.specs().cloned().collect();
        if let Some(active) = &patch.active_tools {
            tools.retain(|t| active.contains(&t.name));
        }
        let mut additional_params = setup.additional_params.clone();
        if let Some(text) = &patch.additional_params {
            match serde_json::from_str::<Value>(text) {
                Ok(Value::Object(extra)) => additional_params.extend(extra),
                _ => {
                    return Err(RunStatus::Error(format!(
                        "a request patch's additional-params is not a JSON object: {}",
                        cut(text, 200)
                    )));
                }
            }
        }
        Ok(ModelRequest {
            model: setup.model.name().to_owned(),
            messages,
            tools,
            tool_choice: patch
                .tool_choice
                .unwrap_or_else(|| setup.tool_choice.clone()),
            temperature: patch.temperature.or(setup.temperature),
            max_tokens: patch.max_tokens.or(setup.max_tokens),
            additional_params,
            stream,
        })
    }

    /// Calls the model, streaming deltas to the hooks when it streams.
    async fn call_model(
        &mut self,
        turn: u32,
        request: ModelRequest,
    ) -> Result<ModelTurn, RunStatus> {
        let span = tracing::info_span!(
            "chat",
            otel.name = format!("chat {}", request.model),
            otel.kind = "client",
            gen_ai.operation.name = "chat",
            gen_ai.provider.name = self.setup.model.provider(),
            gen_ai.conversation.id = self.run_id.as_str(),
            gen_ai.request.model = %request.model,
            gen_ai.usage.input_tokens = tracing::field::Empty,
            gen_ai.usage.output_tokens = tracing::field::Empty,
            gen_ai.response.finish_reasons = tracing::field::Empty,
        );
        let model_name = request.model.clone();
        let mut chunks = self.setup.model.respond(request);
        let mut aggregated = String::new();
        let mut calls = ToolCallAssembler::default();
        let turn_done = async {
            while let Some(chunk) = chunks.next().await {
                let chunk = chunk.map_err(|e| RunStatus::Error(e.to_string()))?;
                match chunk {
                    ModelChunk::Done(answer) => return Ok(answer),
                    ModelChunk::Text(delta) => {
                        aggregated.push_str(&delta);
                        if self.guard.wants(EventKind::TextDelta) {
                            let event = StepEvent::TextDelta(TextDelta {
                                delta,
                                aggregated: aggregated.clone(),
                            });
                            self.guard
                                .ask(self.guard.context(turn, true), event)
                                .await?;
                        }
                    }
                    ModelChunk::ToolCall {
                        index,
                        id,
                        name,
                        arguments,
                    } => {
                        let (call_id, call_name) = {
                            let call =
                                calls.push(index, id.as_deref(), name.as_deref(), &arguments);
                            (call.id.clone(), call.name.clone())
                        };
                        let position = calls.position(index).unwrap_or(index);
                        if self.guard.wants(EventKind::ToolCallDelta) {
                            let event = StepEvent::ToolCallDelta(ToolCallDelta {
                                tool_call_id: call_id,
                                internal_call_id: format!("{}-t{turn}-c{position}", self.run_id),
                                tool_name: (!call_name.is_empty()).then_some(call_name),
                                delta: arguments,
                            });
                            self.guard
                                .ask(self.guard.context(turn, true), event)
                                .await?;
                        }
                    }
                }
            }
            Err(RunStatus::Error(format!(
                "model `{model_name}` ended its answer without finishing it"
            )))
        }
        .instrument(span.clone())
        .await;
        let answer = turn_done?;
        if let Some(usage) = answer.usage {
            span.record("gen_ai.usage.input_tokens", usage.input_tokens);
            span.record("gen_ai.usage.output_tokens", usage.output_tokens);
        }
        if let Some(reason) = &answer.finish_reason {
            // An array in the conventions; `tracing` has strings, so it is
            // a JSON array, which the exporter turns back into one.
            span.record(
                "gen_ai.response.finish_reasons",
                serde_json::json!([reason]).to_string(),
            );
        }
        Ok(answer)
    }

    /// A call that does not run breaks a streak of identical calls.
    fn streak_broken(&mut self, decided: Decided) -> Decided {
        self.last_call = None;
        self.repeats = 0;
        decided
    }

    /// Takes one tool call through invalid-tool-call (until valid), the
    /// tool-call chain and loop detection.
    async fn decide_call(
        &mut self,
        turn: u32,
        call: &ToolCallRequest,
        internal_id: &str,
        offer: &Offer,
    ) -> Result<Decided, RunStatus> {
        // Hooks, loop detection and the tool all see one reading of the
        // arguments: valid JSON is re-serialised (a duplicate key cannot
        // mean one thing to a guard and another to the tool).
        let args = canonical_json(&call.arguments);
        let mut record = ToolRecord {
            call_id: call.id.clone(),
            emitted_name: call.name.clone(),
            tool_name: call.name.clone(),
            emitted_args: call.arguments.clone(),
            args: args.clone(),
            result: String::new(),
            outcome: ToolOutcome::Success,
            executed: false,
            duration: Duration::ZERO,
        };
        let call = CallAt {
            turn,
            streaming: self.setup.config.stream,
            call_id: &call.id,
            internal_id,
        };
        if let Some(decided) = self.validate(&call, &mut record, offer).await? {
            return Ok(decided);
        }
        if let Some(decided) = self.tool_call(&call, &mut record).await? {
            return Ok(decided);
        }
        if let Some(decided) = self.detect_loop(&call, &mut record)? {
            return Ok(decided);
        }
        Ok(Decided::Call(Box::new(Pending {
            record,
            internal_id: internal_id.to_owned(),
            run: true,
            extensions: Value::Object(Default::default()),
            span: None,
        })))
    }

    /// An unknown tool, or one not allowed this turn, is an
    /// invalid-tool-call: fail, retry, skip, or repair (the new name is
    /// validated again, a few times at most). `None`: the call is valid.
    async fn validate(
        &mut self,
        at: &CallAt<'_>,
        record: &mut ToolRecord,
        offer: &Offer,
    ) -> Result<Option<Decided>, RunStatus> {
        let mut repairs = 0;
        loop {
            let name = &record.tool_name;
            let known = self.setup.tools.get(name).is_some();
            if known && offer.allowed.contains(name) {
                return Ok(None);
            }
            let reason = if known {
                format!("tool `{name}` is not allowed this turn")
            } else {
                format!("there is no tool `{name}`")
            };
            let event = StepEvent::InvalidToolCall(InvalidToolCall {
                tool_name: name.clone(),
                tool_call_id: Some(at.call_id.to_owned()),
                internal_call_id: Some(at.internal_id.to_owned()),
                args: is_json(&record.args).then(|| record.args.clone()),
                available_tools: self.setup.tools.names().map(str::to_owned).collect(),
                allowed_tools: offer.allowed.clone(),
                tool_choice: Some(offer.choice.clone()),
            });
            let decision = self
                .guard
                .ask(self.guard.context(at.turn, at.streaming), event)
                .await?;
            let plugin = decision.plugin.as_deref().map(str::to_owned);
            match decision.flow {
                Flow::Retry(feedback) => return Ok(Some(Decided::Retry(feedback))),
                Flow::Skip(reason) => {
                    let skipped = ToolOutcome::Skipped(reason.clone());
                    let decided = not_run(record.clone(), at.internal_id, skipped, reason);
                    return Ok(Some(self.streak_broken(decided)));
                }
                Flow::Repair(new_name) if repairs < self.setup.config.max_repairs => {
                    repairs += 1;
                    tracing::info!(from = %record.tool_name, to = %new_name, "tool name repaired");
                    record.tool_name = new_name;
                }
                Flow::Repair(new_name) => {
                    return Err(RunStatus::InvalidToolCall {
                        tool_name: new_name,
                        reason: format!("{reason}; still invalid after {repairs} repairs"),
                        plugin,
                    });
                }
                // fail, and continue (which counts as fail)
                _ => {
                    return Err(RunStatus::InvalidToolCall {
                        tool_name: record.tool_name.clone(),
                        reason,
                        plugin,
                    });
                }
            }
        }
    }

    /// The tool-call event: a chain of rewrites, ended by skip or
    /// terminate. `None`: the call goes ahead (with the rewritten
    /// arguments, if any).
    async fn tool_call(
        &mut self,
        at: &CallAt<'_>,
        record: &mut ToolRecord,
    ) -> Result<Option<Decided>, RunStatus> {
        let tool = ToolUse::new(
            &*record.tool_name,
            &*record.args,
            Some(at.call_id.to_owned()),
        )
        .internal(at.internal_id);
        let ctx = self.guard.context(at.turn, at.streaming);
        let reason = match self.guard.tool_call(ctx, tool).await? {
            Call::Run { args, .. } => {
                record.args = args;
                return Ok(None);
            }
            Call::Skip { reason, args, .. } => {
                record.args = args;
                reason
            }
            Call::Refuse { why, .. } => why,
            Call::Stop(stopped) => return Err(crate::guard::status_of(stopped)),
        };
        let denied = ToolOutcome::Denied(reason.clone());
        let decided = not_run(record.clone(), at.internal_id, denied, reason);
        Ok(Some(self.streak_broken(decided)))
    }

    /// Loop detection, on what would run: the same tool with identical
    /// arguments too many times in a row warns, stops the run, or is not
    /// run and the model is told why. `None`: the call goes ahead.
    fn detect_loop(
        &mut self,
        at: &CallAt<'_>,
        record: &mut ToolRecord,
    ) -> Result<Option<Decided>, RunStatus> {
        let key = (record.tool_name.clone(), record.args.clone());
        if self.last_call.as_ref() == Some(&key) {
            self.repeats += 1;
        } else {
            self.last_call = Some(key);
            self.repeats = 1;
        }
        let Some(LoopDetection { threshold, action }) = self.setup.config.loop_detection else {
            return Ok(None);
        };
        if threshold < 2 || self.repeats < threshold {
            return Ok(None);
        }
        let count = self.repeats;
        tracing::warn!(
            tool = %record.tool_name,
            count,
            action = action.name(),
            "loop detected: identical tool calls in a row"
        );
        self.events.emit(LoopEvent::LoopDetected {
            tool_name: record.tool_name.clone(),
            consecutive_count: count,
            action,
        });
        match action {
            LoopAction::Warn => Ok(None),
            LoopAction::Stop => Err(RunStatus::LoopStopped {
                tool_name: record.tool_name.clone(),
                count,
            }),
            LoopAction::InjectWarning => {
                let warning = format!(
                    "Not executed: you called `{}` with these same arguments {count} times in a row, and the result will not change. Do something else, or answer with what you have.",
                    record.tool_name
                );
                let skipped = ToolOutcome::Skipped(warning.clone());
                Ok(Some(not_run(
                    record.clone(),
                    at.internal_id,
                    skipped,
                    warning,
                )))
            }
        }
    }
}

/// Where a tool call is decided: its turn and ids.
struct CallAt<'a> {
    turn: u32,
    streaming: bool,
    call_id: &'a str,
    internal_id: &'a str,
}

/// A call that will not run: its record says why, and the model gets
/// `result` in its place.
fn not_run(record: ToolRecord, internal_id: &str, outcome: ToolOutcome, result: String) -> Decided {
    Decided::Call(Box::new(Pending {
        record: ToolRecord {
            result,
            outcome,
            ..record
        },
        internal_id: internal_id.to_owned(),
        run: false,
        extensions: Value::Object(Default::default()),
        span: None,
    }))
}

/// Valid JSON re-serialised (duplicate keys collapse to the last, as the
/// tool will read them); anything else as it is.
fn canonical_json(text: &str) -> String {
    hookbox::json::canonical(text).unwrap_or_else(|| text.to_owned())
}

/// Runs the calls that are to run: all at once, or one after another.
async fn execute(setup: &Setup, events: &EventSink, pending: &mut [Pending]) {
    let runs = pending.iter_mut().filter(|p| p.run);
    if setup.config.parallel_tools {
        futures_util::future::join_all(runs.map(|p| execute_one(setup, events, p))).await;
    } else {
        for p in runs {
            execute_one(setup, events, p).await;
        }
    }
}

async fn execute_one(setup: &Setup, events: &EventSink, call: &mut Pending) {
    let record = &mut call.record;
    let span = tracing::info_span!(
        "execute_tool",
        otel.name = format!("execute_tool {}", record.tool_name),
        otel.kind = "internal",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = %record.tool_name,
        gen_ai.tool.call.id = %record.call_id,
        gen_ai.tool.call.arguments = tracing::field::Empty,
        gen_ai.tool.call.result = tracing::field::Empty,
    );
    if hookbox::trace::capture_content() {
        span.record(
            "gen_ai.tool.call.arguments",
            cut(&record.args, SPAN_TEXT_BYTES),
        );
    }
    events.emit(LoopEvent::ToolExecutionStart {
        call_id: record.call_id.clone(),
        tool_name: record.tool_name.clone(),
        arguments: serde_json::from_str(&record.args)
            .unwrap_or_else(|_| Value::String(record.args.clone())),
    });
    let started = Instant::now();
    let limit = setup.config.tool_timeout;
    let output = tokio::time::timeout(limit, setup.tools.call(&record.tool_name, &record.args))
        .instrument(span.clone())
        .await
        .unwrap_or_else(|_| {
            ToolOutput::error(
                ToolErrorKind::Timeout,
                format!("`{}` ran longer than {limit:?}", record.tool_name),
            )
        });
    record.duration = started.elapsed();
    record.executed = true;
    record.result = output.result;
    record.outcome = output.outcome;
    call.extensions = output.extensions;
    call.span = Some(span);
    events.emit(LoopEvent::ToolExecutionEnd {
        call_id: record.call_id.clone(),
        tool_name: record.tool_name.clone(),
        result: record.result.clone(),
        outcome: record.outcome.clone(),
        duration: record.duration,
    });
}
