//! The native half of the `hookbox` npm package: a thin skin over the
//! adapter layer's binding ([`hookbox_adapter::binding`]). `lib/index.js`
//! around it gives JavaScript its idiom (typed errors, promises, `using`),
//! and the framework guards (`lib/ai.js`, `lib/openai-agents.js`) keep only
//! the mapping into each framework's terms.
//!
//! | JavaScript (`lib/index.js`) | native | Rust underneath |
//! |---|---|---|
//! | `Stack.fromDirectory(dir)` | [`Stack::from_directory`] | [`binding::Stack::directory`]: hot-reloaded, each run pinned to the snapshot it started on |
//! | `Stack.fromFiles(paths)` | [`Stack::from_files`] | [`binding::Stack::files`] |
//! | `stack.startRun()` | [`Stack::start_run`] | [`binding::Stack::start_run`] |
//! | `await run.send(event)` | [`Run::send`] | [`hookbox_adapter::Door::decide`]; the outcome in its JSON form (docs/contract.md#json-forms) |
//! | `await run.toolCall(...)` | [`Run::tool_call`] | [`hookbox_adapter::Door::tool_call`] |
//! | `await run.toolResult(...)` | [`Run::tool_result`] | [`hookbox_adapter::Door::tool_result`] |
//! | `await run.completionCall(...)` | [`Run::completion_call`] | [`hookbox_adapter::Door::completion_call`] |
//!
//! Every asynchronous method is an `AsyncTask`: the guest call runs on
//! libuv's thread pool, never on the JavaScript thread, so a guest that
//! runs to its deadline does not hold up Node's event loop. Each has a
//! `…Sync` twin that runs on the calling thread.
//!
//! The native side never throws for a run that ended: a verdict carries
//! its [`Stop`], and `lib/index.js` throws it as `FailedClosed` or
//! `Terminated`. Input that is no event is thrown as an `Error` whose
//! message starts `InvalidEvent:`; a stack that does not load as one
//! starting `LoadError:`.

#![allow(clippy::needless_pass_by_value)] // napi-rs takes arguments by value.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use hookbox::{FailClosed, Message, StepEvent, Stopped, ToolOutcome};
use hookbox_adapter::ToolUse;
use hookbox_adapter::binding::{self, CallAnswer};
use hookbox_adapter::verdict::{Reading, Request};
use napi::bindgen_prelude::*;
use napi_derive::napi;

/// The name hookbox's own decisions carry (a closed run, a refused call).
#[napi]
pub const HOST: &str = hookbox::HOST;

fn load_error(e: impl std::fmt::Display) -> Error {
    Error::from_reason(format!("LoadError: {e}"))
}

fn invalid(e: impl std::fmt::Display) -> Error {
    Error::from_reason(format!("InvalidEvent: {e}"))
}

/// How a run ended, for `lib/index.js` to throw.
#[napi(object)]
#[derive(Clone)]
pub struct Stop {
    /// `failed-closed` or `terminated`.
    pub kind: String,
    /// The sentence to show.
    pub message: String,
    /// The plugin that failed or terminated the run (`hookbox` for the
    /// host).
    pub plugin: String,
    /// A fail-closed's cause: trap, deadline, memory, stack, oversized,
    /// unsupported-flow, invalid-json, load, limit.
    pub cause: Option<String>,
    /// A fail-closed's detail.
    pub detail: Option<String>,
    /// A terminate's event.
    pub event: Option<String>,
    /// A terminate's reason.
    pub reason: Option<String>,
}

impl Stop {
    fn of(stop: &Stopped) -> Stop {
        match stop {
            Stopped::FailedClosed(failure) => Stop::failed(failure),
            Stopped::Terminated {
                plugin,
                event,
                reason,
            } => Stop {
                kind: "terminated".into(),
                message: stop.reason(),
                plugin: plugin.clone(),
                cause: None,
                detail: None,
                event: Some(event.name().into()),
                reason: Some(reason.clone()),
            },
        }
    }

    fn failed(failure: &FailClosed) -> Stop {
        Stop {
            kind: "failed-closed".into(),
            message: Stopped::FailedClosed(failure.clone()).reason(),
            plugin: failure.plugin.to_string(),
            cause: Some(failure.cause.to_string()),
            detail: Some(failure.detail.clone()),
            event: None,
            reason: None,
        }
    }
}

/// Options of [`Stack::from_directory`].
#[napi(object)]
pub struct DirectoryOptions {
    /// Watch the directory and hot-reload it (default true).
    pub watch: Option<bool>,
    /// How long a change must settle before it loads (default 200 ms).
    pub debounce_ms: Option<u32>,
    /// Instance slots of the process's runtime for this setting.
    pub max_instances: Option<u32>,
}

/// Options of [`Stack::from_files`].
#[napi(object)]
pub struct FilesOptions {
    /// Each plugin's configuration, by its name (its file stem).
    pub config: Option<HashMap<String, HashMap<String, String>>>,
    /// Instance slots of the process's runtime for this setting.
    pub max_instances: Option<u32>,
}

/// One plugin of a stack and how it loaded.
#[napi(object)]
pub struct PluginInfo {
    /// Its name.
    pub name: String,
    /// Its file, as a directory's manifest names it.
    pub file: Option<String>,
    /// Whether a failure to load it fails every run closed.
    pub required: Option<bool>,
    /// `enforce` or `shadow`.
    pub mode: Option<String>,
    /// Whether it loaded.
    pub loaded: bool,
    /// Why it did not.
    pub error: Option<String>,
}

/// A stack of guard plugins that runs start on.
#[napi]
pub struct Stack(Arc<binding::Stack>);

#[napi]
impl Stack {
    /// The plugins of `directory` (its `hookbox.toml`, or every `*.wasm`).
    #[napi(factory)]
    pub fn from_directory(directory: String, options: Option<DirectoryOptions>) -> Result<Stack> {
        let options = options.unwrap_or(DirectoryOptions {
            watch: None,
            debounce_ms: None,
            max_instances: None,
        });
        let debounce = options
            .watch
            .unwrap_or(true)
            .then(|| Duration::from_millis(options.debounce_ms.unwrap_or(200).into()));
        binding::Stack::directory(&PathBuf::from(directory), debounce, options.max_instances)
            .map(|stack| Stack(Arc::new(stack)))
            .map_err(load_error)
    }

    /// The plugins at `paths`, in order, each named for its file stem.
    #[napi(factory)]
    pub fn from_files(paths: Vec<String>, options: Option<FilesOptions>) -> Result<Stack> {
        let (config, max_instances) = options
            .map(|o| (o.config.unwrap_or_default(), o.max_instances))
            .unwrap_or_default();
        let config: HashMap<String, BTreeMap<String, String>> = config
            .into_iter()
            .map(|(name, settings)| (name, settings.into_iter().collect()))
            .collect();
        let paths: Vec<PathBuf> = paths.into_iter().map(PathBuf::from).collect();
        binding::Stack::files(&paths, config, max_instances)
            .map(|stack| Stack(Arc::new(stack)))
            .map_err(load_error)
    }

    /// Starts a run on the newest version of the stack.
    #[napi]
    pub fn start_run(&self, run_id: Option<String>) -> Run {
        Run(Arc::new(self.0.start_run(run_id, "node")))
    }

    /// The version of the stack new runs start on.
    #[napi(getter)]
    pub fn generation(&self) -> i64 {
        i64::try_from(self.0.generation()).unwrap_or(i64::MAX)
    }

    /// How many plugins new runs get.
    #[napi(getter)]
    pub fn size(&self) -> u32 {
        u32::try_from(self.0.len()).unwrap_or(u32::MAX)
    }

    /// Each plugin and how it loaded.
    #[napi(getter)]
    pub fn plugins(&self) -> Vec<PluginInfo> {
        self.0
            .plugins()
            .into_iter()
            .map(|p| PluginInfo {
                name: p.name,
                file: p.file,
                required: p.required,
                mode: p.mode.map(str::to_owned),
                loaded: p.loaded,
                error: p.error,
            })
            .collect()
    }

    /// Why the directory's latest change could not be loaded.
    #[napi(getter)]
    pub fn directory_error(&self) -> Option<String> {
        self.0.directory_error()
    }

    /// The plugins new runs get that subscribe to none of the events named
    /// in `sent` (kebab-case).
    #[napi]
    pub fn unheard(&self, sent: Vec<String>) -> Result<Vec<String>> {
        let kinds = sent
            .iter()
            .map(|name| {
                serde_json::from_value::<hookbox::EventKind>(serde_json::Value::String(
                    name.clone(),
                ))
                .map_err(|_| invalid(format!("`{name}` is not an event kind")))
            })
            .collect::<Result<hookbox::EventKinds>>()?;
        Ok(self.0.unheard(kinds))
    }

    /// Reloads a watched directory now, off the JavaScript thread; the new
    /// generation.
    #[napi(ts_return_type = "Promise<number>")]
    pub fn reload(&self) -> AsyncTask<Ask<i64>> {
        let stack = self.0.clone();
        Ask::task(move || Ok(i64::try_from(stack.reload()).unwrap_or(i64::MAX)))
    }
}

/// A guest call for libuv's pool: the closure runs there, its value is
/// handed to JavaScript on its thread.
pub struct Ask<T>(Option<Box<dyn FnOnce() -> Result<T> + Send>>);

impl<T> Ask<T> {
    fn task(f: impl FnOnce() -> Result<T> + Send + 'static) -> AsyncTask<Ask<T>>
    where
        Ask<T>: Task,
    {
        AsyncTask::new(Ask(Some(Box::new(f))))
    }
}

impl<T: ToNapiValue + TypeName + Send + 'static> Task for Ask<T> {
    type Output = T;
    type JsValue = T;

    fn compute(&mut self) -> Result<T> {
        let f = self
            .0
            .take()
            .ok_or_else(|| Error::from_reason("a hookbox task ran twice"))?;
        f()
    }

    fn resolve(&mut self, _env: Env, output: T) -> Result<T> {
        Ok(output)
    }
}

/// One agent run's guards, pinned to the stack version it started on.
#[napi]
pub struct Run(Arc<binding::Run>);

/// What the stack decided about an event, in its JSON form
/// (docs/contract.md#json-forms; a fail-closed carries `fail_closed`).
fn send(run: &binding::Run, event: &str) -> std::result::Result<String, String> {
    let event: StepEvent = serde_json::from_str(event)
        .map_err(|e| format!("not an event in hookbox's JSON form: {e}"))?;
    Ok(run.door().answer_json(&event).1.to_string())
}

fn tool_call(run: &binding::Run, name: String, args: String, id: Option<String>) -> ToolCall {
    match run.door().tool_call(None, ToolUse::new(name, args, id)) {
        Ok(call) => ToolCall::of(call.into()),
        Err(stop) => ToolCall::stopped(Stop::of(&stop)),
    }
}

fn tool_result(
    run: &binding::Run,
    name: String,
    args: String,
    result: String,
    id: Option<String>,
) -> ToolResult {
    let returned = serde_json::Value::String(result);
    match run.door().tool_result(
        None,
        ToolUse::new(name, args, id),
        &returned,
        ToolOutcome::Success,
    ) {
        Ok(reading @ Reading::Replace { .. }) => {
            let by = match &reading {
                Reading::Replace { by, .. } => Some(by.to_string()),
                Reading::Keep => None,
            };
            ToolResult::of(reading.text(), by, None)
        }
        Ok(Reading::Keep) => ToolResult::of(None, None, None),
        Err(stop) => ToolResult::of(None, None, Some(Stop::of(&stop))),
    }
}

fn completion_call(
    run: &binding::Run,
    prompt: String,
    messages: &str,
    turn: u32,
) -> std::result::Result<ModelCall, String> {
    let history: Vec<Message> = serde_json::from_str(messages)
        .map_err(|e| format!("the messages are not a list of {{role, content}} objects: {e}"))?;
    Ok(
        match run.door().completion_call(None, prompt, history, turn) {
            Ok(request) => ModelCall {
                request,
                stop: None,
            },
            Err(stop) => ModelCall::stopped(Stop::of(&stop)),
        },
    )
}

#[napi]
impl Run {
    /// Asks the run's guards about `event`, JSON text in the form of
    /// docs/contract.md#json-forms; resolves to the outcome's JSON text.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn send(&self, event: String) -> AsyncTask<Ask<String>> {
        let run = self.0.clone();
        Ask::task(move || send(&run, &event).map_err(invalid))
    }

    /// [`Run::send`] on the calling thread.
    #[napi]
    pub fn send_sync(&self, event: String) -> Result<String> {
        send(&self.0, &event).map_err(invalid)
    }

    /// The streamed text ended: the rest of it the guards held back, as
    /// they last decided it (docs/contract.md#streamed-text).
    #[napi]
    pub fn text_done(&self) -> String {
        self.0.door().text_done()
    }

    /// Whether the tool `tool_name` may run with `args` (JSON text).
    #[napi(ts_return_type = "Promise<ToolCall>")]
    pub fn tool_call(
        &self,
        tool_name: String,
        args: String,
        tool_call_id: Option<String>,
    ) -> AsyncTask<Ask<ToolCall>> {
        let run = self.0.clone();
        Ask::task(move || Ok(tool_call(&run, tool_name, args, tool_call_id)))
    }

    /// [`Run::tool_call`] on the calling thread.
    #[napi]
    pub fn tool_call_sync(
        &self,
        tool_name: String,
        args: String,
        tool_call_id: Option<String>,
    ) -> ToolCall {
        tool_call(&self.0, tool_name, args, tool_call_id)
    }

    /// What the model may read of the tool `tool_name`'s `result` (text),
    /// after it ran with `args` (JSON text).
    #[napi(ts_return_type = "Promise<ToolResult>")]
    pub fn tool_result(
        &self,
        tool_name: String,
        args: String,
        result: String,
        tool_call_id: Option<String>,
    ) -> AsyncTask<Ask<ToolResult>> {
        let run = self.0.clone();
        Ask::task(move || Ok(tool_result(&run, tool_name, args, result, tool_call_id)))
    }

    /// [`Run::tool_result`] on the calling thread.
    #[napi]
    pub fn tool_result_sync(
        &self,
        tool_name: String,
        args: String,
        result: String,
        tool_call_id: Option<String>,
    ) -> ToolResult {
        tool_result(&self.0, tool_name, args, result, tool_call_id)
    }

    /// What to change of the model call about to be made: the run's
    /// `prompt`, the `messages` sent this turn (JSON text of a list of
    /// `{role, content}`), the 1-based `turn`.
    #[napi(ts_return_type = "Promise<ModelCall>")]
    pub fn completion_call(
        &self,
        prompt: String,
        messages: String,
        turn: u32,
    ) -> AsyncTask<Ask<ModelCall>> {
        let run = self.0.clone();
        Ask::task(move || completion_call(&run, prompt, &messages, turn).map_err(invalid))
    }

    /// [`Run::completion_call`] on the calling thread.
    #[napi]
    pub fn completion_call_sync(
        &self,
        prompt: String,
        messages: String,
        turn: u32,
    ) -> Result<ModelCall> {
        completion_call(&self.0, prompt, &messages, turn).map_err(invalid)
    }

    /// For the benchmark (bench/node): `n` tool calls of `tool_name` with
    /// `args` decided by Rust's own loop; the seconds they took.
    #[napi]
    pub fn time_tool_calls(&self, tool_name: String, args: String, n: u32) -> Result<f64> {
        let door = self.0.door();
        let started = std::time::Instant::now();
        for _ in 0..n {
            let call = door.tool_call(None, ToolUse::new(tool_name.as_str(), args.as_str(), None));
            std::hint::black_box(call).ok();
        }
        Ok(started.elapsed().as_secs_f64())
    }

    /// Ends the run with a failure its adapter decided (`plugin`, or the
    /// host; `cause`; `detail`), replayed to every later step as a guard's
    /// stop is; a run already over keeps its end. Returns the stop.
    #[napi]
    pub fn end(&self, plugin: Option<String>, cause: String, detail: String) -> Result<Stop> {
        let cause = hookbox::Cause::from_name(&cause)
            .ok_or_else(|| invalid(format!("`{cause}` is not a cause a run fails closed with")))?;
        let failure = match plugin {
            Some(plugin) => FailClosed::new(&Arc::from(plugin.as_str()), cause, detail),
            None => FailClosed::host(cause, detail),
        };
        Ok(Stop::of(&self.0.door().end(failure)))
    }

    /// How the run ended, if it has: the same stop every later step gets.
    #[napi(getter)]
    pub fn stop(&self) -> Option<Stop> {
        self.0.door().stopped().map(|stop| Stop::of(&stop))
    }

    /// Ends the run now and gives its plugin instances back.
    #[napi]
    pub fn close(&self) {
        self.0.close();
    }

    /// The run's id.
    #[napi(getter)]
    pub fn run_id(&self) -> String {
        self.0.run_id().to_owned()
    }

    /// The version of the stack the run is pinned to.
    #[napi(getter)]
    pub fn generation(&self) -> i64 {
        i64::try_from(self.0.generation()).unwrap_or(i64::MAX)
    }

    /// Whether the run has ended.
    #[napi(getter)]
    pub fn is_over(&self) -> bool {
        self.0.is_over()
    }
}

/// What to do with a tool call: a plain object, so the answer crosses to
/// JavaScript in one conversion rather than a getter call per field.
#[napi(object)]
pub struct ToolCall {
    /// `run`, `skip` or `refuse` (`stop` when the run ended).
    pub kind: String,
    /// `run`: the arguments to run the tool with, JSON object text.
    /// `skip`: what the skipping guard saw.
    pub args: Option<String>,
    /// `skip`: the model's answer instead of the tool's result. `refuse`:
    /// why the call did not run.
    pub reason: Option<String>,
    /// The plugin that rewrote (`run`), skipped or refused the call.
    pub by: Option<String>,
    /// Whether a guard rewrote the arguments.
    pub rewritten: bool,
    /// How the run ended, when it did.
    pub stop: Option<Stop>,
}

impl ToolCall {
    fn of(answer: CallAnswer) -> ToolCall {
        ToolCall {
            kind: answer.kind.to_owned(),
            rewritten: answer.rewritten(),
            args: answer.args,
            reason: answer.reason,
            by: answer.by,
            stop: None,
        }
    }

    fn stopped(stop: Stop) -> ToolCall {
        ToolCall {
            kind: "stop".to_owned(),
            args: None,
            reason: None,
            by: None,
            rewritten: false,
            stop: Some(stop),
        }
    }
}

/// What the model may read of a tool's result, as a plain object.
#[napi(object)]
pub struct ToolResult {
    /// `keep` or `replace` (`stop` when the run ended).
    pub kind: String,
    /// `replace`: the text to pass on instead of the result.
    pub text: Option<String>,
    /// The plugin that rewrote it.
    pub by: Option<String>,
    /// How the run ended, when it did.
    pub stop: Option<Stop>,
}

impl ToolResult {
    fn of(text: Option<String>, by: Option<String>, stop: Option<Stop>) -> ToolResult {
        let kind = match (&stop, &text) {
            (Some(_), _) => "stop",
            (None, Some(_)) => "replace",
            (None, None) => "keep",
        };
        ToolResult {
            kind: kind.to_owned(),
            text,
            by,
            stop,
        }
    }
}

/// What to change of the model call about to be made, for this call only.
#[napi]
pub struct ModelCall {
    request: Request,
    stop: Option<Stop>,
}

impl ModelCall {
    fn stopped(stop: Stop) -> ModelCall {
        ModelCall {
            request: Request {
                patch: None,
                by: None,
            },
            stop: Some(stop),
        }
    }
}

#[napi]
impl ModelCall {
    /// `continue` or `patch` (`stop` when the run ended).
    #[napi(getter)]
    pub fn kind(&self) -> &'static str {
        match (&self.stop, &self.request.patch) {
            (Some(_), _) => "stop",
            (None, Some(_)) => "patch",
            (None, None) => "continue",
        }
    }

    /// The plugin whose patch it is (the first, when several merged).
    #[napi(getter)]
    pub fn by(&self) -> Option<String> {
        self.request.by.as_deref().map(str::to_owned)
    }

    /// The patch's JSON text: the fields it sets (`preamble`,
    /// `temperature`, `max_tokens`, `tool_choice`, `active_tools`,
    /// `additional_params`, `extra_context`, `history`); `{}` for
    /// `continue`.
    #[napi(getter)]
    pub fn patch(&self) -> String {
        self.request
            .patch
            .as_ref()
            .and_then(|patch| serde_json::to_string(patch).ok())
            .unwrap_or_else(|| "{}".to_owned())
    }

    /// The system text the model reads this call, given the one it would
    /// have read: the patch's preamble in its place if it sets one, then
    /// each extra-context document as a `<document id="...">` block.
    #[napi]
    pub fn system(&self, system: Option<String>) -> Option<String> {
        self.request.system(system)
    }

    /// The failure to throw where `framework` cannot apply all of the
    /// patch (it sets a field not in `supported`): the patch's plugin,
    /// cause `unsupported-flow`. None when it can.
    #[napi]
    pub fn require_only(&self, framework: String, supported: Vec<String>) -> Option<Stop> {
        let supported: Vec<&str> = supported.iter().map(String::as_str).collect();
        self.request
            .require_only(&framework, &supported)
            .err()
            .map(|failure| Stop::failed(&failure))
    }

    /// How the run ended, when it did.
    #[napi(getter)]
    pub fn stop(&self) -> Option<Stop> {
        self.stop.clone()
    }
}
