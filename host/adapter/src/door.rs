//! The one entry of every door: a client session's hookbox run, from its
//! start to its end, pinned to the stack it started on, asked in the
//! client's own terms (docs/architecture.md#the-door).
//!
//! A door hands over what its client holds, raw: a tool call's arguments
//! as text or JSON ([`Args`]), a tool's result as text or any JSON (a
//! list, records, content blocks), a model call's prompt and messages.
//! [`Door`] builds the event, with one argument policy and one
//! result-shape rule ([`crate::shape`]), asks the stack, settles the
//! outcome ([`Stopped::settle`]) and answers a verdict or the stop:
//!
//! | a door asks | answer |
//! |---|---|
//! | [`Door::tool_call`]: arguments that are not a JSON object | [`Call::Refuse`] naming [`hookbox::HOST`]: no guard could check them, so the call does not run |
//! | [`Door::tool_call`] | the stack's verdict ([`crate::verdict::tool_call`]): run (the arguments in canonical form, or a guard's rewrite), skip, refuse |
//! | [`Door::tool_result`] | keep, or replace with the rewrite in the result's own shape ([`Reading`]) |
//! | [`Door::completion_call`] | continue, or a [`Request`] patch for this call only |
//! | [`Door::answered`]: the model's answer | nothing, or the stop; asked as stream-response-finish (when it streamed), then completion-response, every time |
//! | [`Door::observe`]: any other event | nothing, or the stop |
//! | any of these, once the run has ended | the stop, again: the same one |
//!
//! A tool call without an id of its own gets one (`call-N`), so its result
//! can name it. Under every ask, [`Door::decide`]:
//!
//! | a door asks about an event | [`Door::decide`] answers |
//! |---|---|
//! | the run could not start (no instance slots free) | that failure, every time, naming [`hookbox::HOST`] (cause `limit`) |
//! | the run has ended (a terminate, a fail, a fail-closed, a stop the door decided itself with [`Door::end`]) | the outcome that ended it, again, without asking |
//! | the run was closed before it ended | a failure naming [`hookbox::HOST`] (cause `limit`): start another |
//! | no plugin of the stack subscribes to its kind, and the caller keeps the context (it passes one) | the kind's neutral flow (continue; fail for invalid-tool-call), without taking the run's lock or building a context |
//! | the same, but the run keeps the context (no context passed) | the run is stepped, so its turn and streaming state stay true for the events that follow |
//! | the host panics while deciding | a fail-closed naming [`hookbox::HOST`] (cause `trap`), for that event and every later one: a run left half-decided is not trusted |
//! | otherwise | the stack's decision |
//!
//! Asking can block up to the plugins' deadlines; from an async loop use
//! the `ask_` twins, which answer the shortcut rows in place and take the
//! rest off the executor as the caller chose ([`Asking`]).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use hookbox::{
    Cause, CompletionCall, CompletionResponse, Decision, EventKind, EventKinds, FailClosed, Flow,
    HookContext, HookStack, Message, ModelResponse, Outcome, Run, StepEvent, Stopped,
    StreamResponseFinish, TextDelta, ToolCall, ToolOutcome, ToolResult,
};
use serde_json::Value;

use crate::stream::Held;
use crate::verdict::{self, Call, Reading, Request};

/// One client session's hookbox run.
pub struct Door {
    /// `Err`: the run could not start. `None` inside: closed, its
    /// instances given back.
    run: Result<Mutex<Option<Run>>, FailClosed>,
    run_id: String,
    /// What the run's stack subscribes to.
    wants: EventKinds,
    /// Set once the run has ended (or was closed).
    over: AtomicBool,
    /// The outcome that ended the run and the kind of event it ended at:
    /// remembered once, here, and given to every later event, closed or
    /// not, as the same stop.
    end: OnceLock<(Outcome, EventKind)>,
    /// Numbers the tool calls that came without an id.
    next_call: AtomicU64,
    /// Told every decision other than continue, as it is made.
    tap: Option<Tap>,
    /// The model's streamed text, held back where a guard may still
    /// rewrite it.
    held: Mutex<Held>,
}

/// What [`Door::tapped`] tells: the kind of event asked about and the
/// stack's decision on it.
pub type Tap = Box<dyn Fn(EventKind, &Decision) + Send + Sync>;

/// A tool call's arguments, as the client holds them.
#[derive(Clone, Debug, PartialEq)]
pub enum Args {
    /// JSON text.
    Text(String),
    /// A JSON value: an object; a string holding one (as some clients
    /// send them); or none (`null`), which is `{}`.
    Json(Value),
}

impl Args {
    /// The arguments in the one canonical form, if they are JSON at all.
    fn canonical(&self) -> Option<String> {
        match self {
            Args::Text(text) | Args::Json(Value::String(text)) => hookbox::json::canonical(text),
            Args::Json(Value::Null) => Some("{}".to_owned()),
            Args::Json(value) => hookbox::json::canonical(&value.to_string()),
        }
    }
}

impl From<&str> for Args {
    fn from(text: &str) -> Args {
        Args::Text(text.to_owned())
    }
}

impl From<String> for Args {
    fn from(text: String) -> Args {
        Args::Text(text)
    }
}

impl From<Value> for Args {
    fn from(value: Value) -> Args {
        Args::Json(value)
    }
}

/// A tool call as its client hands it over.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolUse {
    /// The tool.
    pub name: String,
    /// Its arguments.
    pub args: Args,
    /// The model's id for the call, if it gave one.
    pub call_id: Option<String>,
    /// The door's own id for the call, where it has one besides the
    /// model's (else the model's, else `call-N`).
    pub internal_id: Option<String>,
    /// A result's tool-specific extras, JSON object text that hooks read
    /// and cannot rewrite (else `{}`).
    pub extensions: Option<String>,
}

impl ToolUse {
    /// A call of `name` with `args`, by the model's `call_id`.
    pub fn new(name: impl Into<String>, args: impl Into<Args>, call_id: Option<String>) -> ToolUse {
        ToolUse {
            name: name.into(),
            args: args.into(),
            call_id,
            internal_id: None,
            extensions: None,
        }
    }

    /// The same call, by the door's own id too.
    #[must_use]
    pub fn internal(mut self, id: impl Into<String>) -> ToolUse {
        self.internal_id = Some(id.into());
        self
    }

    /// The same call, its result carrying `extensions` (a JSON object).
    #[must_use]
    pub fn extensions(mut self, extensions: &Value) -> ToolUse {
        self.extensions = Some(extensions.to_string());
        self
    }

    /// The tool-call event every door asks for this call, with the
    /// arguments as guards see them (the one canonical form); or, for
    /// arguments that are not a JSON object, the refusal naming
    /// [`hookbox::HOST`]: no guard could check them. Its internal id is
    /// the door's, else the model's, else empty ([`Door::tool_call`]
    /// numbers a call without either).
    ///
    /// # Errors
    /// The refusal.
    pub fn call_event(self) -> Result<(StepEvent, String), Call> {
        let Some(asked) = self.args.canonical().filter(|a| a.starts_with('{')) else {
            return Err(Call::Refuse {
                by: Arc::from(hookbox::HOST),
                why: format!(
                    "the arguments of `{}` are not a JSON object, so no guard could check them; the call did not run",
                    self.name
                ),
            });
        };
        let event = StepEvent::ToolCall(ToolCall {
            internal_call_id: self.internal_or_model_id(),
            tool_name: self.name,
            tool_call_id: self.call_id,
            args: asked.clone(),
        });
        Ok((event, asked))
    }

    /// The tool-result event every door asks for this call, which ended
    /// as `outcome` and `returned` what the model would read: text, or any
    /// JSON, which guards read as its text ([`crate::shape::result_text`]).
    pub fn result_event(self, returned: &Value, outcome: ToolOutcome) -> StepEvent {
        StepEvent::ToolResult(ToolResult {
            internal_call_id: self.internal_or_model_id(),
            args: self.args.canonical().unwrap_or_else(|| "{}".to_owned()),
            tool_name: self.name,
            tool_call_id: self.call_id,
            result: crate::shape::result_text(returned),
            outcome,
            extensions: self.extensions.unwrap_or_else(|| "{}".to_owned()),
        })
    }

    fn internal_or_model_id(&self) -> String {
        self.internal_id
            .clone()
            .or_else(|| self.call_id.clone())
            .unwrap_or_default()
    }
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
            .map(|run| Mutex::new(Some(run)))
            .map_err(|busy| FailClosed::host(Cause::Limit, busy.to_string()));
        Door {
            run,
            run_id,
            wants: stack.subscriptions(),
            over: AtomicBool::new(false),
            end: OnceLock::new(),
            next_call: AtomicU64::new(0),
            tap: None,
            held: Mutex::default(),
        }
    }

    /// A door around a run started otherwise (one that waited for its
    /// slots, or watches its decisions), on a stack subscribing to `wants`.
    pub fn around(run: Run, wants: EventKinds) -> Door {
        Door {
            run_id: run.run_id().to_owned(),
            over: AtomicBool::new(run.is_over()),
            run: Ok(Mutex::new(Some(run))),
            wants,
            end: OnceLock::new(),
            next_call: AtomicU64::new(0),
            tap: None,
            held: Mutex::default(),
        }
    }

    /// The same door, telling `tap` every decision other than continue
    /// as the stack makes it (a terminate too, before it is raised; an
    /// event's own default, such as fail for an invalid tool call nobody
    /// subscribes to): a runner's progress events, a log. Not told: a
    /// failure, and the end replayed to a later event.
    #[must_use]
    pub fn tapped(mut self, tap: Tap) -> Door {
        self.tap = Some(tap);
        self
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
        self.wants.contains(kind) || self.is_over()
    }

    /// Whether a plugin of the stack subscribes to `kind`: whether the
    /// stack has an opinion of its own there, where a door leaves
    /// unsubscribed events to its client's own policy.
    pub fn subscribes(&self, kind: EventKind) -> bool {
        self.wants.contains(kind)
    }

    /// Whether the run has ended (or never started, or was closed).
    pub fn is_over(&self) -> bool {
        self.over.load(Ordering::Acquire) || self.run.is_err()
    }

    /// The stop that ended the run, if it has ended: the same for every
    /// event that asks after it.
    pub fn stopped(&self) -> Option<Stopped> {
        let (end, kind) = match &self.run {
            Err(failure) => return Some(Stopped::FailedClosed(failure.clone())),
            Ok(_) => self.end.get()?,
        };
        Some(match Stopped::settle(end.clone(), *kind) {
            Err(stop) => stop,
            // A fail on an invalid tool call: its own event took the
            // client's way; for every later one, the run failed.
            Ok(failed) => Stopped::run_failed(&failed.by()),
        })
    }

    /// Runs `f` on the run itself (its context, its scratchpads).
    ///
    /// # Errors
    /// Why the run could not start, or that it was closed.
    pub fn with_run<T>(&self, f: impl FnOnce(&mut Run) -> T) -> Result<T, FailClosed> {
        let mut run = self.lock()?;
        let run = run.as_mut().ok_or_else(|| self.closed())?;
        Ok(f(run))
    }

    /// Ends the run with a stop the door decided itself (a patch its
    /// client cannot apply, a flow its client cannot take): every later
    /// event gets it, as it gets a guard's. A run already over keeps its
    /// own end.
    ///
    /// Returns the stop to raise now: `stop`, or the end the run had.
    pub fn end(&self, stop: impl Into<Stopped>) -> Stopped {
        let end = match stop.into() {
            Stopped::FailedClosed(failure) => (Err(failure), EventKind::ToolCall),
            Stopped::Terminated {
                plugin,
                event,
                reason,
            } => (
                Ok(Decision {
                    plugin: Some(Arc::from(plugin.as_str())),
                    ..Decision::new(Flow::Terminate(reason))
                }),
                event,
            ),
        };
        self.end.get_or_init(|| end);
        self.over.store(true, Ordering::Release);
        self.stopped()
            .unwrap_or_else(|| Stopped::FailedClosed(self.closed()))
    }

    /// Ends the run now and gives its plugin instances back to the
    /// runtime. A run that had ended keeps giving its end to every later
    /// event; one that had not fails them closed naming the host.
    pub fn close(&self) {
        let taken = match &self.run {
            Ok(run) => run.lock().unwrap_or_else(|p| p.into_inner()).take(),
            Err(_) => None,
        };
        self.end
            .get_or_init(|| (Err(self.closed()), EventKind::ToolCall));
        self.over.store(true, Ordering::Release);
        drop(taken);
    }

    /// Asks the stack about `event`, here and now (see the second table):
    /// with `ctx`, as [`Run::dispatch`] does; without, as [`Run::step`]
    /// does, the run keeping its own context in step.
    pub fn decide(&self, ctx: Option<&HookContext>, event: &StepEvent) -> Outcome {
        if let Some((end, _)) = self.end.get() {
            return end.clone();
        }
        let kind = event.kind();
        if ctx.is_some() && !self.wants(kind) {
            return self.told(kind, Ok(Decision::new(kind.default_flow())));
        }
        let mut guard = self.lock()?;
        let Some(run) = guard.as_mut() else {
            return self
                .end
                .get()
                .map_or_else(|| Err(self.closed()), |(end, _)| end.clone());
        };
        let asked = catch_unwind(AssertUnwindSafe(|| match ctx {
            Some(ctx) => run.dispatch(ctx, event),
            None => run.step(event),
        }));
        let panicked_here = asked.is_err();
        let outcome = asked.unwrap_or_else(|_| Err(panicked()));
        if panicked_here || run.is_over() {
            self.end.get_or_init(|| (outcome.clone(), kind));
            self.over.store(true, Ordering::Release);
        }
        drop(guard);
        self.told(kind, outcome)
    }

    /// `outcome`, a decision just made on a `kind` of event, told to the
    /// tap.
    fn told(&self, kind: EventKind, outcome: Outcome) -> Outcome {
        if let (Some(tap), Ok(decision)) = (&self.tap, &outcome)
            && !decision.flow.is_continue()
        {
            tap(kind, decision);
        }
        outcome
    }

    /// [`Door::decide`], settled: the decision, or the stop it means.
    ///
    /// # Errors
    /// The stop, when the run ends (now or earlier).
    pub fn observe(
        &self,
        ctx: Option<&HookContext>,
        event: &StepEvent,
    ) -> Result<Decision, Stopped> {
        if let Some(stop) = self.stopped() {
            return Err(stop);
        }
        let decision = Stopped::settle(self.decide(ctx, event), event.kind())?;
        // A rewrite of streamed text needs the text held back
        // ([`Door::text_delta`]); a door that passes deltas on as they come
        // cannot honour it, and does not pass the text on unredacted.
        if let (StepEvent::TextDelta(_), Flow::RewriteResult(_)) = (event, &decision.flow) {
            let detail = "it rewrote streamed text, and this door passes each delta on as it comes: it cannot hold the text back for the rewrite (docs/contract.md#streamed-text)";
            let failure = match &decision.plugin {
                Some(plugin) => FailClosed::new(plugin, Cause::UnsupportedFlow, detail),
                None => FailClosed::host(Cause::UnsupportedFlow, detail),
            };
            return Err(self.end(failure));
        }
        Ok(decision)
    }

    /// Whether the tool `call` may run; see the first table.
    ///
    /// # Errors
    /// The stop, when the run ends (now or earlier).
    pub fn tool_call(&self, ctx: Option<&HookContext>, call: ToolUse) -> Result<Call, Stopped> {
        let (event, asked) = match self.call_event(call) {
            Ok(built) => built,
            Err(refused) => return Ok(refused),
        };
        call_verdict(self.observe(ctx, &event), asked)
    }

    /// What the model may read of `returned`, the result of the tool
    /// `call`, which ended as `outcome`: keep it, or a guard's rewrite in
    /// its shape (text for text; the same structure for other JSON, or the
    /// structure withheld).
    ///
    /// # Errors
    /// The stop, when the run ends.
    pub fn tool_result(
        &self,
        ctx: Option<&HookContext>,
        call: ToolUse,
        returned: &Value,
        outcome: ToolOutcome,
    ) -> Result<Reading, Stopped> {
        let event = self.result_event(call, returned, outcome);
        verdict::reading(self.observe(ctx, &event), returned)
    }

    /// What to change of the model call about to be made: the run's
    /// `prompt`, the `history` sent this turn, the 1-based `turn`.
    ///
    /// # Errors
    /// The stop, when the run ends.
    pub fn completion_call(
        &self,
        ctx: Option<&HookContext>,
        prompt: String,
        history: Vec<Message>,
        turn: u32,
    ) -> Result<Request, Stopped> {
        let event = completion_event(prompt, history, turn);
        Ok(Request::of(self.observe(ctx, &event)?))
    }

    /// A delta of the model's streamed text: what the client may show of
    /// the text now (docs/contract.md#streamed-text). With no plugin on
    /// text-delta, the delta itself; else the stack is asked with the text
    /// so far, and what no later delta can change of its decision is
    /// shown. The rest comes with [`Door::text_done`].
    ///
    /// # Errors
    /// The stop, when the run ends: a guard's, or the door's own when a
    /// guard rewrites text the client has already been shown.
    pub fn text_delta(&self, ctx: Option<&HookContext>, delta: &str) -> Result<String, Stopped> {
        self.text_step(ctx, delta).map(|(_, show)| show)
    }

    /// [`Door::text_delta`], with the stack's decision.
    fn text_step(
        &self,
        ctx: Option<&HookContext>,
        delta: &str,
    ) -> Result<(Decision, String), Stopped> {
        if !self.wants(EventKind::TextDelta) {
            return Ok((Decision::new(Flow::Continue), delta.to_owned()));
        }
        let mut held = self
            .held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let event = StepEvent::TextDelta(TextDelta {
            delta: delta.to_owned(),
            aggregated: held.push(delta).to_owned(),
        });
        if let Some(stop) = self.stopped() {
            return Err(stop);
        }
        let decision = Stopped::settle(self.decide(ctx, &event), EventKind::TextDelta)?;
        let rewritten = match &decision.flow {
            Flow::RewriteResult(text) => Some(text.clone()),
            _ => None,
        };
        match held.decided(rewritten) {
            Ok(show) => Ok((decision, show)),
            Err(reached) => {
                let detail = format!(
                    "it rewrote streamed text the client had already been shown ({} characters); the stream ends here",
                    reached.shown.chars().count()
                );
                let failure = match &decision.plugin {
                    Some(plugin) => FailClosed::new(plugin, Cause::UnsupportedFlow, detail),
                    None => FailClosed::host(Cause::UnsupportedFlow, detail),
                };
                Err(self.end(failure))
            }
        }
    }

    /// What a client that sends events in their JSON form gets back
    /// (`serve`'s events route, the Node binding's `send`): the decision in
    /// its JSON form, and for a text-delta or a stream-response-finish,
    /// `show`, the streamed text to display now ([`Door::text_delta`],
    /// [`Door::text_done`]); with the outcome it is the form of. The door
    /// keeps the text so far itself: a text-delta's `aggregated` is not
    /// read.
    pub fn answer_json(&self, event: &StepEvent) -> (Outcome, Value) {
        let (outcome, show) = match event {
            StepEvent::TextDelta(delta) => match self.text_step(None, &delta.delta) {
                Ok((decision, show)) => (Ok(decision), Some(show)),
                // The stop, in the form every later event gets it.
                Err(_) => (self.decide(None, event), None),
            },
            StepEvent::StreamResponseFinish(_) => {
                let rest = self.text_done();
                let outcome = self.decide(None, event);
                let goes_on = matches!(&outcome, Ok(d) if !matches!(d.flow, Flow::Terminate(_)));
                (outcome, goes_on.then_some(rest))
            }
            _ => (self.decide(None, event), None),
        };
        let mut value = hookbox::outcome_json(&outcome);
        if let (Some(show), Value::Object(map)) = (show, &mut value) {
            map.insert("show".into(), Value::String(show));
        }
        (outcome, value)
    }

    /// The streamed text ended: the rest of it, as the guards last decided
    /// it (the last delta's decision saw it whole).
    pub fn text_done(&self) -> String {
        self.held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .done()
    }

    /// The model answered a call with `response` to the run's `prompt`,
    /// `streamed` or not: stream-response-finish when it streamed, then
    /// completion-response, every time, so a guard of the answer sees
    /// every answer whichever way it came.
    ///
    /// # Errors
    /// The stop, when the run ends.
    pub fn answered(
        &self,
        ctx: Option<&HookContext>,
        prompt: String,
        response: ModelResponse,
        streamed: bool,
    ) -> Result<(), Stopped> {
        for event in answer_events(prompt, response, streamed) {
            self.observe(ctx, &event)?;
        }
        Ok(())
    }

    /// The tool-call event of `call` ([`ToolUse::call_event`]), a call
    /// without an id numbered.
    fn call_event(&self, call: ToolUse) -> Result<(StepEvent, String), Call> {
        self.numbered(call).call_event()
    }

    /// The tool-result event of `call` ([`ToolUse::result_event`]), a call
    /// without an id numbered.
    fn result_event(&self, call: ToolUse, returned: &Value, outcome: ToolOutcome) -> StepEvent {
        self.numbered(call).result_event(returned, outcome)
    }

    /// `call`, given an internal id (`call-N`) if it has none of its own.
    fn numbered(&self, mut call: ToolUse) -> ToolUse {
        if call.internal_id.is_none() && call.call_id.is_none() {
            let n = self.next_call.fetch_add(1, Ordering::Relaxed);
            call.internal_id = Some(format!("call-{n}"));
        }
        call
    }

    fn closed(&self) -> FailClosed {
        FailClosed::host(
            Cause::Limit,
            format!("run {} is closed; start another", self.run_id),
        )
    }

    /// The run, locked. A lock a panicking thread left poisoned (a host
    /// bug outside a decision: [`Door::with_run`]'s) ends the run: what the
    /// panic left half done is not trusted.
    fn lock(&self) -> Result<MutexGuard<'_, Option<Run>>, FailClosed> {
        match &self.run {
            Ok(run) => run.lock().map_err(|_| {
                let failure = panicked();
                self.end
                    .get_or_init(|| (Err(failure.clone()), EventKind::ToolCall));
                self.over.store(true, Ordering::Release);
                failure
            }),
            Err(failure) => Err(failure.clone()),
        }
    }
}

/// The completion-call event every door asks before a model call: the
/// run's `prompt`, the `history` the call sends, its 1-based `turn` (0
/// where the client counts none, as a coding agent's prompt hook).
pub fn completion_event(prompt: String, history: Vec<Message>, turn: u32) -> StepEvent {
    StepEvent::CompletionCall(CompletionCall {
        prompt,
        history,
        turn,
    })
}

/// The events of a model's answer, in the order they are asked.
fn answer_events(prompt: String, response: ModelResponse, streamed: bool) -> Vec<StepEvent> {
    let mut events = Vec::with_capacity(2);
    if streamed {
        events.push(StepEvent::StreamResponseFinish(StreamResponseFinish {
            prompt: prompt.clone(),
            response: response.clone(),
        }));
    }
    events.push(StepEvent::CompletionResponse(CompletionResponse {
        prompt,
        response,
    }));
    events
}

/// The host's fail-closed for a panic under a decision.
fn panicked() -> FailClosed {
    FailClosed::host(
        Cause::Trap,
        "hookbox panicked while deciding an event of this run (a bug: please report it); the run is over",
    )
}

fn call_verdict(settled: Result<Decision, Stopped>, asked: String) -> Result<Call, Stopped> {
    match verdict::tool_call(settled, asked) {
        Call::Stop(stop) => Err(stop),
        call => Ok(call),
    }
}

impl Request {
    /// The request a settled completion-call decision makes.
    fn of(decision: Decision) -> Request {
        let by = decision.by();
        match decision.flow {
            Flow::PatchRequest(patch) => Request {
                patch: Some(patch),
                by: Some(by),
            },
            _ => Request {
                patch: None,
                by: None,
            },
        }
    }
}

/// Where the `ask_` twins run a call that may block.
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
        self: &Arc<Self>,
        ctx: Option<HookContext>,
        event: StepEvent,
        asking: Asking,
    ) -> Outcome {
        if let Some((end, _)) = self.end.get() {
            return end.clone();
        }
        let kind = event.kind();
        if ctx.is_some() && !self.wants(kind) {
            return self.told(kind, Ok(Decision::new(kind.default_flow())));
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

    /// [`Door::observe`] from an async loop.
    ///
    /// # Errors
    /// The stop, when the run ends (now or earlier).
    pub async fn ask_observe(
        self: &Arc<Self>,
        ctx: Option<HookContext>,
        event: StepEvent,
        asking: Asking,
    ) -> Result<Decision, Stopped> {
        if let Some(stop) = self.stopped() {
            return Err(stop);
        }
        let kind = event.kind();
        Stopped::settle(self.ask(ctx, event, asking).await, kind)
    }

    /// [`Door::tool_call`] from an async loop.
    ///
    /// # Errors
    /// The stop, when the run ends (now or earlier).
    pub async fn ask_tool_call(
        self: &Arc<Self>,
        ctx: Option<HookContext>,
        call: ToolUse,
        asking: Asking,
    ) -> Result<Call, Stopped> {
        let (event, asked) = match self.call_event(call) {
            Ok(built) => built,
            Err(refused) => return Ok(refused),
        };
        call_verdict(self.ask_observe(ctx, event, asking).await, asked)
    }

    /// [`Door::completion_call`] from an async loop.
    ///
    /// # Errors
    /// The stop, when the run ends.
    pub async fn ask_completion_call(
        self: &Arc<Self>,
        ctx: Option<HookContext>,
        prompt: String,
        history: Vec<Message>,
        turn: u32,
        asking: Asking,
    ) -> Result<Request, Stopped> {
        let event = completion_event(prompt, history, turn);
        Ok(Request::of(self.ask_observe(ctx, event, asking).await?))
    }

    /// [`Door::answered`] from an async loop.
    ///
    /// # Errors
    /// The stop, when the run ends.
    pub async fn ask_answered(
        self: &Arc<Self>,
        ctx: Option<HookContext>,
        prompt: String,
        response: ModelResponse,
        streamed: bool,
        asking: Asking,
    ) -> Result<(), Stopped> {
        for event in answer_events(prompt, response, streamed) {
            self.ask_observe(ctx.clone(), event, asking.clone()).await?;
        }
        Ok(())
    }

    /// [`Door::tool_result`] from an async loop.
    ///
    /// # Errors
    /// The stop, when the run ends.
    pub async fn ask_tool_result(
        self: &Arc<Self>,
        ctx: Option<HookContext>,
        call: ToolUse,
        returned: &Value,
        outcome: ToolOutcome,
        asking: Asking,
    ) -> Result<Reading, Stopped> {
        let event = self.result_event(call, returned, outcome);
        verdict::reading(self.ask_observe(ctx, event, asking).await, returned)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hookbox::{Document, Hook, RequestPatch, hook_fn};
    use serde_json::json;
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

    /// A door on a stack of one guard answering `flow` to everything.
    fn answering(flow: Flow) -> Door {
        let mut stack = HookStack::new();
        stack.push_hook(hook_fn("guard", move |_, _| flow.clone()));
        Door::open(&stack, "t")
    }

    /// A door on a guard that rewrites every result to `text`.
    fn rewriting(text: &str) -> Door {
        answering(Flow::RewriteResult(text.into()))
    }

    fn use_of(args: impl Into<Args>) -> ToolUse {
        ToolUse::new("t", args, None)
    }

    /// `failure` names the host, with `cause`.
    fn assert_host(failure: &FailClosed, cause: Cause) {
        assert_eq!((&*failure.plugin, failure.cause), (hookbox::HOST, cause));
    }

    /// A door on a guard that redacts `secret` from the text streamed so
    /// far, and only that.
    fn redacting(secret: &str) -> Door {
        let secret = secret.to_owned();
        let mut stack = HookStack::new();
        stack.push_hook(hook_fn("redactor", move |_, event| match event {
            StepEvent::TextDelta(d) if d.aggregated.contains(&secret) => {
                Flow::RewriteResult(d.aggregated.replace(&secret, "[REDACTED]"))
            }
            _ => Flow::Continue,
        }));
        Door::open(&stack, "t")
    }

    #[test]
    fn streamed_text_is_shown_only_where_no_later_delta_can_change_it() {
        let door = redacting("sk-live-4f9a8b7c");
        let mut shown = Vec::new();
        for delta in ["The key is sk-live-4f9a", "8b7c, keep it ", "safe."] {
            shown.push(door.text_delta(None, delta).unwrap());
        }
        shown.push(door.text_done());
        assert_eq!(shown.concat(), "The key is [REDACTED], keep it safe.");
        assert!(shown.iter().all(|s| !s.contains("sk-live")), "{shown:?}");
        // A door with no plugin on text-delta shows each delta as it comes.
        let plain = Door::open(&HookStack::new(), "t");
        assert_eq!(plain.text_delta(None, "Hel").unwrap(), "Hel");
    }

    #[test]
    fn a_rewrite_of_streamed_text_already_shown_ends_the_run_naming_the_plugin() {
        // A "secret" of many words, longer than what is held back.
        let long = "x ".repeat(60);
        let door = redacting(&format!("{long}y"));
        door.text_delta(None, &long).unwrap();
        let Err(Stopped::FailedClosed(failure)) = door.text_delta(None, "y") else {
            panic!("a rewrite of shown text went on");
        };
        assert_eq!(
            (&*failure.plugin, failure.cause),
            ("redactor", Cause::UnsupportedFlow)
        );
        assert!(door.is_over());
    }

    #[test]
    fn a_door_that_passes_deltas_on_ends_the_run_on_a_rewrite_of_them() {
        let door = redacting("sk-live");
        let event = StepEvent::TextDelta(TextDelta {
            delta: "sk-live".into(),
            aggregated: "sk-live".into(),
        });
        let Err(Stopped::FailedClosed(failure)) = door.observe(None, &event) else {
            panic!("an observer passed a rewritten delta on");
        };
        assert_eq!(&*failure.plugin, "redactor");
        assert!(
            failure.detail.contains("cannot hold the text back"),
            "{}",
            failure.detail
        );
    }

    #[test]
    fn a_json_client_is_told_what_to_show_of_streamed_text() {
        let door = redacting("sk-live-4f9a8b7c");
        let delta = |d: &str| {
            StepEvent::TextDelta(TextDelta {
                delta: d.into(),
                aggregated: String::new(),
            })
        };
        let (_, first) = door.answer_json(&delta("key sk-live-4f9a "));
        assert_eq!(first["show"], "");
        let (_, second) = door.answer_json(&delta("8b7c"));
        assert_eq!(second["flow"], "continue");
        let finish = StepEvent::StreamResponseFinish(StreamResponseFinish {
            prompt: String::new(),
            response: ModelResponse {
                content: "key sk-live-4f9a 8b7c".into(),
                usage: None,
            },
        });
        let (_, last) = door.answer_json(&finish);
        assert_eq!(
            format!(
                "{}{}{}",
                first["show"].as_str().unwrap(),
                second["show"].as_str().unwrap(),
                last["show"].as_str().unwrap()
            ),
            "key sk-live-4f9a 8b7c"
        );
    }

    // The second table, one test per row.

    #[test]
    fn a_run_that_could_not_start_fails_every_event_naming_the_host() {
        let mut stack = HookStack::new();
        stack.push_hook(hook_fn("g", |_, _| Flow::Continue));
        let door = Door {
            run: Err(FailClosed::host(Cause::Limit, "no slots")),
            ..Door::open(&stack, "r")
        };
        let failure = door.decide(None, &tool_call()).unwrap_err();
        assert_host(&failure, Cause::Limit);
        assert!(door.is_over());
    }

    #[test]
    fn a_tap_is_told_each_decision_but_continue_as_it_is_made_and_never_a_replayed_end() {
        let told = Arc::new(Mutex::new(Vec::new()));
        let (stack, _) = ending();
        let seen = told.clone();
        let door = Door::open(&stack, "r").tapped(Box::new(move |kind, decision| {
            seen.lock()
                .unwrap()
                .push((kind, decision.flow.name().to_owned()));
        }));
        let ctx = HookContext::default();
        // Nobody subscribes: continue is not told; an invalid tool call's
        // default, fail, is.
        door.decide(Some(&ctx), &tool_call()).unwrap();
        let invalid = StepEvent::InvalidToolCall(hookbox::InvalidToolCall {
            tool_name: "nope".into(),
            tool_call_id: None,
            internal_call_id: None,
            args: None,
            available_tools: Vec::new(),
            allowed_tools: Vec::new(),
            tool_choice: None,
        });
        door.decide(Some(&ctx), &invalid).unwrap();
        door.decide(None, &tool_result()).unwrap();
        door.decide(None, &tool_result()).unwrap();
        assert_eq!(
            *told.lock().unwrap(),
            [
                (EventKind::InvalidToolCall, "fail".to_owned()),
                (EventKind::ToolResult, "terminate".to_owned()),
            ]
        );
    }

    #[test]
    fn once_the_run_is_over_every_event_gets_its_end() {
        let (stack, calls) = ending();
        let door = Door::open(&stack, "r");
        let ended = door.decide(None, &tool_result()).unwrap();
        assert_eq!(ended.flow, Flow::Terminate("no".into()));
        assert!(door.is_over() && door.wants(EventKind::ToolCall));
        // An unsubscribed kind after the end gets the end, without the hook
        // being asked again.
        let replayed = door.decide(None, &tool_call()).unwrap();
        assert_eq!(replayed.flow, Flow::Terminate("no".into()));
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_fail_on_an_invalid_tool_call_is_that_call_s_and_every_later_event_s_stop() {
        let door = answering(Flow::Fail);
        let invalid = StepEvent::InvalidToolCall(hookbox::InvalidToolCall {
            tool_name: "nope".into(),
            ..hookbox::InvalidToolCall::default()
        });
        // Its own event goes the client's way (the fail is the answer) ...
        assert_eq!(door.observe(None, &invalid).unwrap().flow, Flow::Fail);
        // ... and every later one is stopped: the run failed.
        assert_eq!(
            door.tool_call(None, use_of("{}")).unwrap_err(),
            Stopped::run_failed("guard")
        );
        assert_eq!(door.stopped(), Some(Stopped::run_failed("guard")));
    }

    #[test]
    fn a_stop_the_door_decides_is_every_later_event_s_end() {
        let door = answering(Flow::Continue);
        let failure = FailClosed::new(&Arc::from("g"), Cause::UnsupportedFlow, "cannot apply");
        let stop = door.end(failure.clone());
        assert_eq!(stop, Stopped::FailedClosed(failure.clone()));
        assert_eq!(door.decide(None, &tool_call()), Err(failure.clone()));
        // A later stop of its own does not replace the first.
        let again = door.end(FailClosed::host(Cause::Trap, "x"));
        assert_eq!(again, Stopped::FailedClosed(failure));
    }

    #[test]
    fn a_closed_run_gives_its_end_again_and_an_unended_one_fails_naming_the_host() {
        let door = answering(Flow::Terminate("enough".into()));
        let stop = door.tool_call(None, use_of("{}")).unwrap_err();
        door.close();
        assert_eq!(door.tool_call(None, use_of("{}")).unwrap_err(), stop);
        assert_eq!(
            door.completion_call(None, "p".into(), vec![], 2)
                .unwrap_err(),
            Stopped::Terminated {
                plugin: "guard".into(),
                event: EventKind::ToolCall,
                reason: "enough".into()
            }
        );

        let open = answering(Flow::Continue);
        open.close();
        let Err(Stopped::FailedClosed(failure)) = open.tool_call(None, use_of("{}")) else {
            panic!("a closed run let a call through");
        };
        assert_host(&failure, Cause::Limit);
        assert!(failure.detail.contains("closed"), "{}", failure.detail);
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
        let turn = StepEvent::CompletionCall(CompletionCall {
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
    fn a_panic_while_deciding_fails_closed_naming_the_host_from_then_on() {
        let mut stack = HookStack::new();
        stack.push_hook(hook_fn("buggy", |_, event| match event {
            StepEvent::ToolCall(_) => panic!("a host bug"),
            _ => Flow::Continue,
        }));
        let door = Door::open(&stack, "r");
        for event in [tool_call(), tool_result()] {
            let failure = door.decide(None, &event).unwrap_err();
            assert_host(&failure, Cause::Trap);
        }
        assert!(door.is_over());
    }

    #[test]
    fn a_run_a_host_panic_left_half_done_fails_closed_from_then_on() {
        let (stack, calls) = ending();
        let door = Door::open(&stack, "r");
        let panicked = std::panic::catch_unwind(AssertUnwindSafe(|| {
            door.with_run(|_run| panic!("a host bug"))
        }));
        assert!(panicked.is_err());
        for event in [tool_call(), tool_result()] {
            let failure = door.decide(None, &event).unwrap_err();
            assert_host(&failure, Cause::Trap);
        }
        assert!(door.is_over());
        assert_eq!(calls.load(Ordering::SeqCst), 0);
    }

    // The first table, one test per row.

    #[test]
    fn arguments_that_are_not_an_object_are_refused_by_the_host() {
        let door = answering(Flow::Continue);
        for args in [Args::from("[1]"), Args::from("nope"), Args::Json(json!(3))] {
            let call = door.tool_call(None, use_of(args.clone())).unwrap();
            assert!(
                matches!(call, Call::Refuse { ref by, .. } if &**by == hookbox::HOST),
                "{args:?}: {call:?}"
            );
        }
    }

    #[test]
    fn a_call_runs_with_its_arguments_in_canonical_form_text_or_json() {
        let door = answering(Flow::Continue);
        let asked = [
            Args::from(r#"{ "a" : "\u0062" }"#),
            Args::Json(json!({"a": "b"})),
        ];
        for args in asked {
            assert_eq!(
                door.tool_call(None, use_of(args)).unwrap(),
                Call::Run {
                    args: r#"{"a":"b"}"#.into(),
                    rewritten_by: None
                }
            );
        }
    }

    #[test]
    fn a_text_result_is_read_and_rewritten_as_text() {
        let reading = rewriting("[redacted]")
            .tool_result(
                None,
                use_of("{}"),
                &json!("key=s3cret"),
                ToolOutcome::Success,
            )
            .unwrap();
        assert_eq!(
            reading,
            Reading::Replace {
                with: json!("[redacted]"),
                by: Arc::from("guard"),
                fits: true
            }
        );
    }

    /// What a guard is shown of a result, and what the door makes of its
    /// rewrite: every shape a client hands over.
    #[test]
    fn every_shape_of_result_is_read_whole_and_a_rewrite_keeps_its_shape() {
        let shapes = [
            json!([{"id": 1, "cell": "s3cret"}, {"id": 2, "cell": "ok"}]),
            json!([{"type": "text", "text": "fine"}, {"type": "json", "json": {"key": "s3cret"}}]),
            json!(["row s3cret", "row two"]),
            json!({"rows": [["s3cret"]]}),
        ];
        for returned in shapes {
            let seen = Arc::new(Mutex::new(String::new()));
            let mut stack = HookStack::new();
            let shown = seen.clone();
            stack.push_hook(hook_fn("redact", move |_, event| match event {
                StepEvent::ToolResult(result) => {
                    *shown.lock().unwrap() = result.result.clone();
                    Flow::RewriteResult(result.result.replace("s3cret", "[REDACTED]"))
                }
                _ => Flow::Continue,
            }));
            let door = Door::open(&stack, "r");
            let reading = door
                .tool_result(None, use_of("{}"), &returned, ToolOutcome::Success)
                .unwrap();
            assert_eq!(*seen.lock().unwrap(), returned.to_string());
            let Reading::Replace {
                with, fits: true, ..
            } = reading
            else {
                panic!("{returned}: {reading:?}");
            };
            assert_eq!(
                with.to_string(),
                returned.to_string().replace("s3cret", "[REDACTED]")
            );
        }
    }

    #[test]
    fn a_rewrite_that_does_not_fit_the_shape_withholds_the_result() {
        let returned = json!([{"id": 1, "cell": "s3cret"}]);
        let reading = rewriting("blocked")
            .tool_result(None, use_of("{}"), &returned, ToolOutcome::Success)
            .unwrap();
        let Reading::Replace {
            with, fits: false, ..
        } = reading
        else {
            panic!("{reading:?}");
        };
        assert!(!with.to_string().contains("s3cret"), "{with}");
        assert!(
            with[0]["cell"].as_str().unwrap().contains("withheld"),
            "{with}"
        );
    }

    #[test]
    fn a_model_call_continues_or_is_patched_for_this_call() {
        assert_eq!(
            answering(Flow::Continue)
                .completion_call(None, "p".into(), vec![], 1)
                .unwrap(),
            Request {
                patch: None,
                by: None
            }
        );
        let patch = RequestPatch {
            extra_context: Some(vec![Document {
                id: "rules".into(),
                text: "Be kind.".into(),
            }]),
            ..RequestPatch::default()
        };
        let request = answering(Flow::PatchRequest(patch.clone()))
            .completion_call(None, "p".into(), vec![], 1)
            .unwrap();
        assert_eq!(request.patch, Some(patch));
        assert_eq!(request.by.as_deref(), Some("guard"));
    }

    #[test]
    fn a_terminate_is_the_stop_of_every_later_ask() {
        let door = answering(Flow::Terminate("no".into()));
        let first = door.tool_call(None, use_of("{}")).unwrap_err();
        assert_eq!(first.plugin(), "guard");
        assert!(
            door.tool_result(None, use_of("{}"), &json!("r"), ToolOutcome::Success)
                .is_err()
        );
        assert!(door.completion_call(None, "p".into(), vec![], 1).is_err());
    }

    #[test]
    fn the_async_asks_answer_as_the_synchronous_ones_do() {
        let (stack, _calls) = ending();
        let door = Arc::new(Door::open(&stack, "r"));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let (call, result) = runtime.block_on(async {
            let call = door
                .ask_tool_call(None, use_of("{}"), Asking::OffExecutor)
                .await;
            let result = door
                .ask_tool_result(
                    None,
                    use_of("{}"),
                    &json!("out"),
                    ToolOutcome::Success,
                    Asking::OnPool(tracing::Span::none()),
                )
                .await;
            (call, result)
        });
        assert_eq!(
            call.unwrap(),
            Call::Run {
                args: "{}".into(),
                rewritten_by: None
            }
        );
        assert_eq!(result.unwrap_err().plugin(), "ender");
    }
}
