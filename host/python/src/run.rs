//! `hookbox.Run`: one agent run's guards, and what they decided.
//!
//! Each method is [`hookbox_adapter::Door`]'s, its values converted:
//!
//! | method | asks the stack about | answers | raises |
//! |---|---|---|---|
//! | `send(event)` | any event, in its JSON form (docs/contract.md#json-forms; a dict, or its JSON text) | a `Decision` (a terminate too: the run is then over) | `FailedClosed`; `InvalidEvent` for input that is no event |
//! | `tool_call(name, args)` | a tool-call (`args` a dict, or JSON object text) | `ToolCallVerdict`: `run` (with the arguments to run with), `skip` (answer the reason instead), `refuse` (a rewrite no client takes: do not run it, the run goes on) | `FailedClosed`, `Terminated` |
//! | `tool_result(name, args, result)` | a tool-result (`result` text, or any value JSON can carry: a list, records, content blocks) | `ToolResultVerdict`: `keep`, or `replace` with the rewrite in the result's own shape (`value`) and as text (`text`) | `FailedClosed`, `Terminated` |
//! | `completion_call(prompt, messages, turn, supported=...)` | a completion-call | `RequestVerdict`: `continue`, or `patch` (its fields, and the system text it makes); a patch of a field not in `supported` ends the run | `FailedClosed`, `Terminated` |
//!
//! Once a run has ended (a fail-closed, a terminate), every later event
//! gets that end again, closed or not: the same exception. Text holding a
//! lone surrogate is refused as `InvalidEvent` ([`crate::text`]).

use hookbox::{Cause, Decision as CoreDecision, FailClosed, Flow, Message, StepEvent, ToolOutcome};
use hookbox_adapter::binding::{self, CallAnswer};
use hookbox_adapter::verdict::{Reading, Request};
use hookbox_adapter::{Door, ToolUse};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use serde_json::Value;

use crate::errors;
use crate::text::{Text, text};

/// One agent run's guards, pinned to the stack version it started on.
#[pyclass(frozen, module = "hookbox")]
pub struct Run(pub binding::Run);

impl Run {
    /// `f` on the run's door, the GIL released.
    fn with<T: Send>(&self, py: Python<'_>, f: impl FnOnce(&Door) -> T + Send) -> T {
        py.detach(|| f(self.0.door()))
    }
}

/// `value` (a dict, or JSON text) as JSON: text as it is, anything else
/// as the value it holds.
fn json(value: &Bound<'_, PyAny>, what: &str) -> PyResult<hookbox_adapter::Args> {
    if value.is_instance_of::<PyString>() {
        return text(value, what).map(hookbox_adapter::Args::Text);
    }
    any_json(value, what).map(hookbox_adapter::Args::Json)
}

/// `value` as the JSON value it holds.
fn any_json(value: &Bound<'_, PyAny>, what: &str) -> PyResult<Value> {
    let crate::finite::Finite(value) = pythonize::depythonize(value).map_err(|e| {
        errors::invalid(value.py(), format!("{what} cannot be written as JSON: {e}"))
    })?;
    Ok(value)
}

#[pymethods]
impl Run {
    /// Asks the run's guards about `event`: a dict in the JSON form of
    /// docs/contract.md#json-forms
    /// (`{"event": "tool-call", "tool_name": ..., "args": ...}`,
    /// a `hookbox.events` TypedDict), or its JSON text.
    fn send(&self, py: Python<'_>, event: &Bound<'_, PyAny>) -> PyResult<Decision> {
        let event: StepEvent = if event.is_instance_of::<PyString>() {
            serde_json::from_str(&text(event, "the event")?).map_err(|e| {
                errors::invalid(py, format!("not an event in hookbox's JSON form: {e}"))
            })?
        } else {
            pythonize::depythonize(event).map_err(|e| {
                errors::invalid(py, format!("not an event in hookbox's JSON form: {e}"))
            })?
        };
        // A text-delta's and a stream-response-finish's answer says what
        // of the streamed text to show now (docs/contract.md#streamed-text).
        let (outcome, answer) = self.with(py, |door| door.answer_json(&event));
        let show = answer
            .get("show")
            .and_then(|s| s.as_str())
            .map(str::to_owned);
        match outcome {
            Ok(decision) => Ok(Decision(decision, show)),
            Err(failure) => Err(errors::failed_closed(py, &failure)),
        }
    }

    /// The streamed text ended: the rest of it the guards held back, as
    /// they last decided it (docs/contract.md#streamed-text).
    fn text_done(&self, py: Python<'_>) -> String {
        self.with(py, |door| door.text_done())
    }

    /// Asks whether the tool `tool_name` may run with `args` (a dict, or
    /// JSON object text), before it runs.
    #[pyo3(signature = (tool_name, args, *, tool_call_id = None))]
    fn tool_call(
        &self,
        py: Python<'_>,
        tool_name: Text,
        args: &Bound<'_, PyAny>,
        tool_call_id: Option<Text>,
    ) -> PyResult<ToolCallVerdict> {
        let call = ToolUse::new(
            tool_name.0,
            json(args, "the arguments")?,
            tool_call_id.map(|t| t.0),
        );
        self.with(py, |door| door.tool_call(None, call))
            .map(|call| ToolCallVerdict(call.into()))
            .map_err(|stop| errors::stopped(py, &stop))
    }

    /// Asks what the model may read of the tool `tool_name`'s `result`
    /// (text, or any value JSON can carry: guards read it as its JSON
    /// text), after it ran with `args`.
    #[pyo3(signature = (tool_name, args, result, *, tool_call_id = None))]
    fn tool_result(
        &self,
        py: Python<'_>,
        tool_name: Text,
        args: &Bound<'_, PyAny>,
        result: &Bound<'_, PyAny>,
        tool_call_id: Option<Text>,
    ) -> PyResult<ToolResultVerdict> {
        let call = ToolUse::new(
            tool_name.0,
            json(args, "the arguments")?,
            tool_call_id.map(|t| t.0),
        );
        let returned = if result.is_instance_of::<PyString>() {
            Value::String(text(result, "the result")?)
        } else {
            any_json(result, "the result")?
        };
        let reading = self
            .with(py, |door| {
                door.tool_result(None, call, &returned, ToolOutcome::Success)
            })
            .map_err(|stop| errors::stopped(py, &stop))?;
        Ok(ToolResultVerdict(reading))
    }

    /// Asks about the model call about to be made: the run's `prompt`,
    /// the `messages` sent this turn (dicts of `role`, one of system, user,
    /// assistant, tool, and `content`), and the 1-based `turn`. With
    /// `supported` (the patch fields `framework` can apply), a patch of
    /// any other field ends the run (`FailedClosed` naming its plugin,
    /// cause `unsupported-flow`) rather than be dropped.
    #[pyo3(signature = (prompt, messages, turn, *, supported = None, framework = None))]
    fn completion_call(
        &self,
        py: Python<'_>,
        prompt: Text,
        messages: &Bound<'_, PyAny>,
        turn: u32,
        supported: Option<Vec<String>>,
        framework: Option<String>,
    ) -> PyResult<RequestVerdict> {
        let history: Vec<Message> = pythonize::depythonize(messages).map_err(|e| {
            errors::invalid(
                py,
                format!(
                    "the messages are not a list of {{role, content}} dicts (of valid Unicode): {e}"
                ),
            )
        })?;
        let framework = framework.unwrap_or_else(|| "this framework".to_owned());
        self.with(py, |door| {
            let request = door.completion_call(None, prompt.0, history, turn)?;
            let Some(supported) = supported else {
                return Ok(request);
            };
            let supported: Vec<&str> = supported.iter().map(String::as_str).collect();
            match request.require_only(&framework, &supported) {
                Ok(()) => Ok(request),
                Err(failure) => Err(door.end(failure)),
            }
        })
        .map(RequestVerdict)
        .map_err(|stop| errors::stopped(py, &stop))
    }

    /// Ends the run with a failure the caller decided (`plugin`, `cause`,
    /// `detail`): a stop its framework forces, such as a guard it cannot
    /// install. Every later event raises it again, as a guard's own
    /// stop; a run already over keeps its own end. Returns the exception
    /// to raise.
    #[pyo3(signature = (detail, *, cause = "unsupported-flow", plugin = None))]
    fn end(
        &self,
        py: Python<'_>,
        detail: String,
        cause: &str,
        plugin: Option<String>,
    ) -> PyResult<PyErr> {
        let cause = Cause::from_name(cause).ok_or_else(|| {
            errors::invalid(
                py,
                format!("`{cause}` is not a cause a run fails closed with"),
            )
        })?;
        let failure = match plugin {
            Some(plugin) => FailClosed::new(&std::sync::Arc::from(plugin.as_str()), cause, detail),
            None => FailClosed::host(cause, detail),
        };
        let stop = self.with(py, |door| door.end(failure));
        Ok(errors::stopped(py, &stop))
    }

    /// For the benchmark (bench/python): `n` tool calls of `tool_name`
    /// with `args` (JSON text) decided by Rust's own loop, as `tool_call`
    /// decides each, the GIL released; the seconds they took.
    fn _time_tool_calls(&self, py: Python<'_>, tool_name: &str, args: &str, n: u32) -> f64 {
        self.with(py, |door| {
            let started = std::time::Instant::now();
            for _ in 0..n {
                let call = door.tool_call(None, ToolUse::new(tool_name, args, None));
                std::hint::black_box(call).ok();
            }
            started.elapsed().as_secs_f64()
        })
    }

    /// Ends the run now and gives its plugin instances back to the
    /// runtime. A run that had ended raises its end again on every later
    /// event; one that had not raises `FailedClosed`. (Dropping the last
    /// reference to the run does the same, when Python collects it.)
    fn close(&self, py: Python<'_>) {
        py.detach(|| self.0.close());
    }

    /// The run's id.
    #[getter]
    fn run_id(&self) -> &str {
        self.0.run_id()
    }

    /// The version of the stack the run is pinned to.
    #[getter]
    fn generation(&self) -> u64 {
        self.0.generation()
    }

    /// Whether the run has ended (or never started, or was closed).
    #[getter]
    fn is_over(&self) -> bool {
        self.0.is_over()
    }

    /// Nanoseconds the run's guards have taken so far, every answer's
    /// summed (the decision log's `latency_us`): the guards' own time,
    /// without hookbox's door or Python's.
    #[getter]
    fn guards_ns(&self) -> u64 {
        u64::try_from(self.0.guards_took().as_nanos()).unwrap_or(u64::MAX)
    }

    fn __repr__(&self) -> String {
        format!(
            "<hookbox.Run {} on generation {}{}>",
            self.run_id(),
            self.generation(),
            if self.is_over() { ", over" } else { "" }
        )
    }
}

/// What the stack decided about an event.
#[pyclass(frozen, module = "hookbox")]
pub struct Decision(CoreDecision, Option<String>);

#[pymethods]
impl Decision {
    /// The flow: continue, terminate, skip, rewrite-args, rewrite-result,
    /// patch-request, fail, retry or repair.
    #[getter]
    fn flow(&self) -> &'static str {
        self.0.flow.name()
    }

    /// The plugin that decided (None when every plugin continued).
    #[getter]
    fn plugin(&self) -> Option<&str> {
        self.0.plugin.as_deref()
    }

    /// A terminate's or a skip's reason.
    #[getter]
    fn reason(&self) -> Option<&str> {
        match &self.0.flow {
            Flow::Terminate(reason) | Flow::Skip(reason) => Some(reason),
            _ => None,
        }
    }

    /// A rewrite-args' arguments, JSON text.
    #[getter]
    fn args(&self) -> Option<&str> {
        match &self.0.flow {
            Flow::RewriteArgs(args) => Some(args),
            _ => None,
        }
    }

    /// A rewrite-result's text.
    #[getter]
    fn result(&self) -> Option<&str> {
        match &self.0.flow {
            Flow::RewriteResult(result) => Some(result),
            _ => None,
        }
    }

    /// A patch-request's patch, as a dict of the fields it sets.
    #[getter]
    fn patch<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        match &self.0.flow {
            Flow::PatchRequest(patch) => Ok(Some(pythonize::pythonize(py, patch)?)),
            _ => Ok(None),
        }
    }

    /// A retry's feedback to the model.
    #[getter]
    fn feedback(&self) -> Option<&str> {
        match &self.0.flow {
            Flow::Retry(feedback) => Some(feedback),
            _ => None,
        }
    }

    /// A repair's tool name.
    #[getter]
    fn tool_name(&self) -> Option<&str> {
        match &self.0.flow {
            Flow::Repair(tool) => Some(tool),
            _ => None,
        }
    }

    /// What shadow plugins would have done, where any did not continue: a
    /// list of dicts of `plugin` and `flow` (or `fail_closed`).
    #[getter]
    fn shadow<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(pythonize::pythonize(
            py,
            &hookbox::shadow_json(&self.0.shadow),
        )?)
    }

    /// For a text-delta or a stream-response-finish: the streamed text to
    /// show now, held back where a guard may still redact it.
    #[getter]
    fn show(&self) -> Option<&str> {
        self.1.as_deref()
    }

    /// The decision in its JSON form (docs/contract.md#json-forms), as a dict.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let mut json = hookbox::outcome_json(&Ok(self.0.clone()));
        if let (Some(show), Some(map)) = (&self.1, json.as_object_mut()) {
            map.insert("show".into(), show.clone().into());
        }
        Ok(pythonize::pythonize(py, &json)?)
    }

    fn __repr__(&self) -> String {
        format!(
            "<hookbox.Decision {}>",
            hookbox::outcome_json(&Ok(self.0.clone()))
        )
    }
}

/// What to do with a tool call.
#[pyclass(frozen, module = "hookbox")]
pub struct ToolCallVerdict(CallAnswer);

#[pymethods]
impl ToolCallVerdict {
    /// `run`, `skip` or `refuse`.
    #[getter]
    fn kind(&self) -> &'static str {
        self.0.kind
    }

    /// `run`: the arguments to run the tool with, JSON object text (a
    /// guard's rewrite, or what was asked in canonical form). `skip`: what
    /// the skipping guard saw.
    #[getter]
    fn args(&self) -> Option<&str> {
        self.0.args.as_deref()
    }

    /// `skip`: the answer the model gets instead of the tool's result.
    /// `refuse`: why the call did not run, for the model or the user.
    #[getter]
    fn reason(&self) -> Option<&str> {
        self.0.reason.as_deref()
    }

    /// The plugin that rewrote (`run`), skipped or refused the call.
    #[getter]
    fn by(&self) -> Option<&str> {
        self.0.by.as_deref()
    }

    /// Whether a guard rewrote the arguments.
    #[getter]
    fn rewritten(&self) -> bool {
        self.0.rewritten()
    }

    /// The arguments to run with, as a dict (`run` only).
    fn args_dict<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let Some(args) = self.0.args.as_deref().filter(|_| self.0.kind == "run") else {
            return Ok(None);
        };
        let value: serde_json::Value = serde_json::from_str(args)
            .map_err(|e| errors::invalid(py, format!("arguments are not JSON: {e}")))?;
        Ok(Some(pythonize::pythonize(py, &value)?))
    }

    fn __repr__(&self) -> String {
        format!(
            "<hookbox.ToolCallVerdict {}{}>",
            self.0.kind,
            self.0
                .by
                .as_ref()
                .map(|b| format!(" by {b}"))
                .unwrap_or_default()
        )
    }
}

/// What the model may read of a tool's result.
#[pyclass(frozen, module = "hookbox")]
pub struct ToolResultVerdict(Reading);

#[pymethods]
impl ToolResultVerdict {
    /// `keep` or `replace`.
    #[getter]
    fn kind(&self) -> &'static str {
        match self.0 {
            Reading::Keep => "keep",
            Reading::Replace { .. } => "replace",
        }
    }

    /// `replace`: what the model reads instead, as text (a result that was
    /// not text: the rewrite's JSON text).
    #[getter]
    fn text(&self) -> Option<String> {
        self.0.text()
    }

    /// `replace`: what the model reads instead, in the result's own shape:
    /// a str for a str, the same structure (list, dict) with the rewrite's
    /// values for anything else.
    #[getter]
    fn value<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        match &self.0 {
            Reading::Keep => Ok(None),
            Reading::Replace { with, .. } => Ok(Some(pythonize::pythonize(py, with)?)),
        }
    }

    /// The plugin that rewrote it.
    #[getter]
    fn by(&self) -> Option<&str> {
        match &self.0 {
            Reading::Keep => None,
            Reading::Replace { by, .. } => Some(by),
        }
    }

    /// `replace`: whether the rewrite fit the result's shape; when it did
    /// not, `value` is the result's structure with every value withheld.
    #[getter]
    fn fits(&self) -> bool {
        !matches!(self.0, Reading::Replace { fits: false, .. })
    }

    fn __repr__(&self) -> String {
        format!("<hookbox.ToolResultVerdict {}>", self.kind())
    }
}

/// What to change of the model call about to be made, for this turn only.
#[pyclass(frozen, module = "hookbox")]
pub struct RequestVerdict(Request);

#[pymethods]
impl RequestVerdict {
    /// `continue` or `patch`.
    #[getter]
    fn kind(&self) -> &'static str {
        if self.0.patch.is_some() {
            "patch"
        } else {
            "continue"
        }
    }

    /// The plugin whose patch it is (the first, when several merged).
    #[getter]
    fn by(&self) -> Option<&str> {
        self.0.by.as_deref()
    }

    /// The patch as a dict of the fields it sets (`preamble`,
    /// `temperature`, `max_tokens`, `tool_choice`, `active_tools`,
    /// `additional_params`, `extra_context`, `history`); empty for
    /// `continue`.
    #[getter]
    fn patch<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match &self.0.patch {
            Some(patch) => Ok(pythonize::pythonize(py, patch)?),
            None => Ok(PyDict::new(py).into_any()),
        }
    }

    /// The system text the model reads this turn, given the one it would
    /// have read (`system`, or None): the patch's preamble in its place if
    /// it sets one, then each extra-context document as a
    /// `<document id="...">` block. None when there is no text at all.
    #[pyo3(signature = (system = None))]
    fn system(&self, system: Option<String>) -> Option<String> {
        self.0.system(system)
    }

    /// Refuses the patch where a framework cannot apply all of it: raises
    /// `FailedClosed` naming its plugin (cause `unsupported-flow`) if it
    /// sets a field not in `supported`, rather than drop the field.
    fn require_only(
        &self,
        py: Python<'_>,
        framework: &str,
        supported: Vec<String>,
    ) -> PyResult<()> {
        let supported: Vec<&str> = supported.iter().map(String::as_str).collect();
        self.0
            .require_only(framework, &supported)
            .map_err(|failure| errors::failed_closed(py, &failure))
    }

    fn __repr__(&self) -> String {
        format!("<hookbox.RequestVerdict {}>", self.kind())
    }
}
