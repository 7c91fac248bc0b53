//! `hookbox.Run`: one agent run's guards, and what they decided.
//!
//! Each method is [`hookbox_adapter::Session`]'s, its values converted:
//!
//! | method | asks the stack about | answers | raises |
//! |---|---|---|---|
//! | `send(event)` | any event, in its JSON form (docs/contract.md#json-forms; a dict, or its JSON text) | a `Decision` (a terminate too: the run is then over) | `FailedClosed`; `InvalidEvent` for input that is no event |
//! | `tool_call(name, args)` | a tool-call | `ToolCallVerdict`: `run` (with the arguments to run with), `skip` (answer the reason instead), `refuse` (a rewrite no client takes: do not run it, the run goes on) | `FailedClosed`, `Terminated` |
//! | `tool_result(name, args, result)` | a tool-result | `ToolResultVerdict`: `keep`, or `replace` with the text | `FailedClosed`, `Terminated` |
//! | `completion_call(prompt, messages, turn)` | a completion-call | `RequestVerdict`: `continue`, or `patch` (its fields, and the system text it makes) | `FailedClosed`, `Terminated` |
//!
//! Once a run has ended (a fail-closed, a terminate), every later event
//! gets that end again: the same exception.

use hookbox::{Decision as CoreDecision, Flow, Message, StepEvent};
use hookbox_adapter::Session;
use hookbox_adapter::binding::{self, CallAnswer};
use hookbox_adapter::session::Request;
use hookbox_adapter::verdict::Output;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use crate::errors;

/// One agent run's guards, pinned to the stack version it started on.
#[pyclass(frozen, module = "hookbox")]
pub struct Run(pub binding::Run);

impl Run {
    /// `f` on the open session, the GIL released.
    ///
    /// # Errors
    /// `FailedClosed` naming the host, cause `limit`, once the run is
    /// closed.
    fn with<T: Send>(&self, py: Python<'_>, f: impl FnOnce(&Session) -> T + Send) -> PyResult<T> {
        py.detach(|| self.0.with(f))
            .map_err(|failure| errors::failed_closed(py, &failure))
    }
}

/// `value` (a dict, or JSON text) as JSON text.
fn json_text(py: Python<'_>, value: &Bound<'_, PyAny>, what: &str) -> PyResult<String> {
    if let Ok(text) = value.cast::<PyString>() {
        return Ok(text.to_str()?.to_owned());
    }
    let crate::finite::Finite(value) = pythonize::depythonize(value)
        .map_err(|e| errors::invalid(py, format!("{what} cannot be written as JSON: {e}")))?;
    Ok(value.to_string())
}

#[pymethods]
impl Run {
    /// Asks the run's guards about `event`: a dict in the JSON form of
    /// docs/contract.md#json-forms
    /// (`{"event": "tool-call", "tool_name": ..., "args": ...}`,
    /// a `hookbox.events` TypedDict), or its JSON text.
    fn send(&self, py: Python<'_>, event: &Bound<'_, PyAny>) -> PyResult<Decision> {
        let event: StepEvent = if let Ok(text) = event.cast::<PyString>() {
            serde_json::from_str(text.to_str()?).map_err(|e| {
                errors::invalid(py, format!("not an event in hookbox's JSON form: {e}"))
            })?
        } else {
            pythonize::depythonize(event).map_err(|e| {
                errors::invalid(py, format!("not an event in hookbox's JSON form: {e}"))
            })?
        };
        match self.with(py, |s| s.send(&event))? {
            Ok(decision) => Ok(Decision(decision)),
            Err(failure) => Err(errors::failed_closed(py, &failure)),
        }
    }

    /// Asks whether the tool `tool_name` may run with `args` (a dict, or
    /// JSON object text), before it runs.
    #[pyo3(signature = (tool_name, args, *, tool_call_id = None))]
    fn tool_call(
        &self,
        py: Python<'_>,
        tool_name: String,
        args: &Bound<'_, PyAny>,
        tool_call_id: Option<String>,
    ) -> PyResult<ToolCallVerdict> {
        let args = json_text(py, args, "the arguments")?;
        self.with(py, |s| s.tool_call(tool_name, &args, tool_call_id))?
            .map(|call| ToolCallVerdict(call.into()))
            .map_err(|stop| errors::stopped(py, &stop))
    }

    /// Asks what the model may read of the tool `tool_name`'s `result`
    /// (text), after it ran with `args`.
    #[pyo3(signature = (tool_name, args, result, *, tool_call_id = None))]
    fn tool_result(
        &self,
        py: Python<'_>,
        tool_name: String,
        args: &Bound<'_, PyAny>,
        result: String,
        tool_call_id: Option<String>,
    ) -> PyResult<ToolResultVerdict> {
        let args = json_text(py, args, "the arguments")?;
        let output = self.with(py, |s| {
            s.tool_result(tool_name, &args, result, tool_call_id)
        })?;
        match output.map_err(|stop| errors::stopped(py, &stop))? {
            Output::Replace { text, by } => Ok(ToolResultVerdict {
                text: Some(text),
                by: Some(by.to_string()),
            }),
            _ => Ok(ToolResultVerdict {
                text: None,
                by: None,
            }),
        }
    }

    /// Asks about the model call about to be made: the run's `prompt`,
    /// the `messages` sent this turn (dicts of `role`, one of system, user,
    /// assistant, tool, and `content`), and the 1-based `turn`.
    #[pyo3(signature = (prompt, messages, turn))]
    fn completion_call(
        &self,
        py: Python<'_>,
        prompt: String,
        messages: &Bound<'_, PyAny>,
        turn: u32,
    ) -> PyResult<RequestVerdict> {
        let history: Vec<Message> = pythonize::depythonize(messages).map_err(|e| {
            errors::invalid(
                py,
                format!("the messages are not a list of {{role, content}} dicts: {e}"),
            )
        })?;
        self.with(py, |s| s.completion_call(prompt, history, turn))?
            .map(RequestVerdict)
            .map_err(|stop| errors::stopped(py, &stop))
    }

    /// For the benchmark (bench/python): `n` tool calls of `tool_name`
    /// with `args` (JSON text) decided by Rust's own loop, as `tool_call`
    /// decides each, the GIL released; the seconds they took.
    fn _time_tool_calls(
        &self,
        py: Python<'_>,
        tool_name: &str,
        args: &str,
        n: u32,
    ) -> PyResult<f64> {
        self.with(py, |session| {
            let started = std::time::Instant::now();
            for _ in 0..n {
                let call = session.tool_call(tool_name.to_owned(), args, None);
                std::hint::black_box(call).ok();
            }
            started.elapsed().as_secs_f64()
        })
    }

    /// Ends the run now and gives its plugin instances back to the
    /// runtime; every later event raises `FailedClosed`. (Dropping the
    /// last reference to the run does the same, when Python collects it.)
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

    /// Whether the run has ended (or never started).
    #[getter]
    fn is_over(&self) -> bool {
        self.0.is_over()
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
pub struct Decision(CoreDecision);

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

    /// The decision in its JSON form (docs/contract.md#json-forms), as a dict.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let json = hookbox::outcome_json(&Ok(self.0.clone()));
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
#[pyclass(frozen, module = "hookbox", get_all)]
pub struct ToolResultVerdict {
    /// The text to pass on instead of the result; None to keep it.
    text: Option<String>,
    /// The plugin that rewrote it.
    by: Option<String>,
}

#[pymethods]
impl ToolResultVerdict {
    /// `keep` or `replace`.
    #[getter]
    fn kind(&self) -> &'static str {
        if self.text.is_some() {
            "replace"
        } else {
            "keep"
        }
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
