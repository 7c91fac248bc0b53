//! `hookbox.Run`: one agent run's guards, and what they decided.
//!
//! | method | asks the stack about | answers | raises |
//! |---|---|---|---|
//! | `send(event)` | any event, in the JSON form of DESIGN.md §6 (a dict, or its JSON text) | a `Decision` (a terminate too: the run is then over) | `FailedClosed`; `InvalidEvent` for input that is no event |
//! | `tool_call(name, args)` | a tool-call | `ToolCallVerdict`: `run` (with the arguments to run with), `skip` (answer the reason instead), `refuse` (a rewrite no client takes: do not run it, the run goes on) | `FailedClosed`, `Terminated` |
//! | `tool_result(name, args, result)` | a tool-result | `ToolResultVerdict`: `keep`, or `replace` with the text | `FailedClosed`, `Terminated` |
//! | `completion_call(prompt, messages, turn)` | a completion-call | `RequestVerdict`: `continue`, or `patch` (its fields, and the system text it makes) | `FailedClosed`, `Terminated` |
//!
//! Once a run has ended (a fail-closed, a terminate), every later event
//! gets that end again: the same exception.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use hookbox::watch::Snapshot;
use hookbox::{
    CompletionCall, Decision as CoreDecision, FailClosed, Flow, Message, RequestPatch, StepEvent,
    Stopped, ToolCall, ToolResult,
};
use hookbox_adapter::Door;
use hookbox_adapter::verdict::{self, Call, Output};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use crate::errors;

/// One agent run's guards, pinned to the stack version it started on.
#[pyclass(frozen, module = "hookbox")]
pub struct Run {
    door: Door,
    generation: u64,
    /// Numbers the tool calls that come without an id of their own.
    next_call: AtomicU64,
}

impl Run {
    pub fn open(snapshot: &Snapshot, run_id: String) -> Run {
        Run {
            door: Door::open(&snapshot.stack, run_id),
            generation: snapshot.generation,
            next_call: AtomicU64::new(0),
        }
    }

    /// Asks about `event` with the GIL released; the run's end, if it
    /// ends, as the exception it raises.
    fn settle(&self, py: Python<'_>, event: &StepEvent) -> PyResult<CoreDecision> {
        let kind = event.kind();
        let outcome = py.detach(|| self.door.decide(None, event));
        Stopped::settle(outcome, kind).map_err(|stop| errors::stopped(py, &stop))
    }

    fn call_id(&self, tool_call_id: &Option<String>) -> String {
        tool_call_id
            .clone()
            .unwrap_or_else(|| format!("call-{}", self.next_call.fetch_add(1, Ordering::Relaxed)))
    }
}

/// `value` (a dict or JSON text) as JSON text in the one canonical form.
fn json_text(py: Python<'_>, value: &Bound<'_, PyAny>, what: &str) -> PyResult<Option<String>> {
    if let Ok(text) = value.cast::<PyString>() {
        return Ok(hookbox::json::canonical(text.to_str()?));
    }
    let value: serde_json::Value = pythonize::depythonize(value)
        .map_err(|e| errors::invalid(py, format!("{what} cannot be written as JSON: {e}")))?;
    Ok(Some(value.to_string()))
}

#[pymethods]
impl Run {
    /// Asks the run's guards about `event`: a dict in the JSON form of
    /// DESIGN.md §6 (`{"event": "tool-call", "tool_name": ..., "args": ...}`,
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
        match py.detach(|| self.door.decide(None, &event)) {
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
        let Some(asked) = json_text(py, args, "the arguments")?.filter(|a| a.starts_with('{'))
        else {
            // No guard can check what is not a JSON object: it does not run.
            return Ok(ToolCallVerdict::of(Call::Refuse {
                by: Arc::from(hookbox::HOST),
                why: format!(
                    "the arguments of `{tool_name}` are not a JSON object, so no guard could check them; the call did not run"
                ),
            }));
        };
        let event = StepEvent::ToolCall(ToolCall {
            tool_name,
            internal_call_id: self.call_id(&tool_call_id),
            tool_call_id,
            args: asked.clone(),
        });
        let decision = self.settle(py, &event)?;
        match verdict::tool_call(Ok(decision), asked) {
            Call::Stop(stop) => Err(errors::stopped(py, &stop)),
            call => Ok(ToolCallVerdict::of(call)),
        }
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
        let args = json_text(py, args, "the arguments")?.unwrap_or_else(|| "{}".to_owned());
        let event = StepEvent::ToolResult(ToolResult {
            tool_name,
            internal_call_id: self.call_id(&tool_call_id),
            tool_call_id,
            args,
            result,
            ..ToolResult::default()
        });
        let decision = self.settle(py, &event)?;
        match verdict::tool_result(Ok(decision)) {
            Output::Stop(stop) => Err(errors::stopped(py, &stop)),
            Output::Keep => Ok(ToolResultVerdict {
                text: None,
                by: None,
            }),
            Output::Replace { text, by } => Ok(ToolResultVerdict {
                text: Some(text),
                by: Some(by.to_string()),
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
        let event = StepEvent::CompletionCall(CompletionCall {
            prompt,
            history,
            turn,
        });
        let decision = self.settle(py, &event)?;
        let by = decision.by().to_string();
        Ok(match decision.flow {
            Flow::PatchRequest(patch) => RequestVerdict {
                patch: Some(patch),
                by: Some(by),
            },
            _ => RequestVerdict {
                patch: None,
                by: None,
            },
        })
    }

    /// For the benchmark (bench/python): `n` tool calls of `tool_name`
    /// with `args` (JSON text) decided by Rust's own loop, as
    /// [`Run::tool_call`] decides each (canonical form, the stack, the
    /// verdict), the GIL released; the seconds they took.
    fn _time_tool_calls(&self, py: Python<'_>, tool_name: &str, args: &str, n: u32) -> f64 {
        py.detach(|| {
            let started = std::time::Instant::now();
            for i in 0..n {
                let Some(asked) = hookbox::json::canonical(args) else {
                    break;
                };
                let event = StepEvent::ToolCall(ToolCall {
                    tool_name: tool_name.to_owned(),
                    internal_call_id: format!("call-{i}"),
                    tool_call_id: None,
                    args: asked.clone(),
                });
                let outcome = self.door.decide(None, &event);
                std::hint::black_box(verdict::tool_call(
                    Stopped::settle(outcome, hookbox::EventKind::ToolCall),
                    asked,
                ));
            }
            started.elapsed().as_secs_f64()
        })
    }

    /// The run's id.
    #[getter]
    fn run_id(&self) -> &str {
        self.door.run_id()
    }

    /// The version of the stack the run is pinned to.
    #[getter]
    fn generation(&self) -> u64 {
        self.generation
    }

    /// Whether the run has ended (or never started).
    #[getter]
    fn is_over(&self) -> bool {
        self.door.is_over()
    }

    fn __repr__(&self) -> String {
        format!(
            "<hookbox.Run {} on generation {}{}>",
            self.door.run_id(),
            self.generation,
            if self.door.is_over() { ", over" } else { "" }
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
        flow_name(&self.0.flow)
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

    /// The decision in its JSON form (DESIGN.md §6), as a dict.
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

fn flow_name(flow: &Flow) -> &'static str {
    match flow {
        Flow::Continue => "continue",
        Flow::Terminate(_) => "terminate",
        Flow::Skip(_) => "skip",
        Flow::RewriteArgs(_) => "rewrite-args",
        Flow::RewriteResult(_) => "rewrite-result",
        Flow::PatchRequest(_) => "patch-request",
        Flow::Fail => "fail",
        Flow::Retry(_) => "retry",
        Flow::Repair(_) => "repair",
    }
}

/// What to do with a tool call.
#[pyclass(frozen, module = "hookbox", get_all)]
pub struct ToolCallVerdict {
    /// `run`, `skip` or `refuse`.
    kind: &'static str,
    /// `run`: the arguments to run the tool with, JSON object text (a
    /// guard's rewrite, or what was asked in canonical form). `skip`: what
    /// the skipping guard saw.
    args: Option<String>,
    /// `skip`: the answer the model gets instead of the tool's result.
    /// `refuse`: why the call did not run, for the model or the user.
    reason: Option<String>,
    /// The plugin that rewrote (`run`), skipped or refused the call.
    by: Option<String>,
}

impl ToolCallVerdict {
    fn of(call: Call) -> ToolCallVerdict {
        match call {
            Call::Run { args, rewritten_by } => ToolCallVerdict {
                kind: "run",
                args: Some(args),
                reason: None,
                by: rewritten_by.map(|by| by.to_string()),
            },
            Call::Skip { reason, args, by } => ToolCallVerdict {
                kind: "skip",
                args: Some(args),
                reason: Some(reason),
                by: Some(by.to_string()),
            },
            Call::Refuse { by, why } => ToolCallVerdict {
                kind: "refuse",
                args: None,
                reason: Some(why),
                by: Some(by.to_string()),
            },
            // `Run::tool_call` raises a stop instead.
            Call::Stop(stop) => ToolCallVerdict {
                kind: "refuse",
                args: None,
                reason: Some(stop.reason()),
                by: Some(hookbox::HOST.to_owned()),
            },
        }
    }
}

#[pymethods]
impl ToolCallVerdict {
    /// Whether a guard rewrote the arguments.
    #[getter]
    fn rewritten(&self) -> bool {
        self.kind == "run" && self.by.is_some()
    }

    /// The arguments to run with, as a dict (`run` only).
    fn args_dict<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let Some(args) = self.args.as_deref().filter(|_| self.kind == "run") else {
            return Ok(None);
        };
        let value: serde_json::Value = serde_json::from_str(args)
            .map_err(|e| errors::invalid(py, format!("arguments are not JSON: {e}")))?;
        Ok(Some(pythonize::pythonize(py, &value)?))
    }

    fn __repr__(&self) -> String {
        format!(
            "<hookbox.ToolCallVerdict {}{}>",
            self.kind,
            self.by
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
pub struct RequestVerdict {
    patch: Option<RequestPatch>,
    by: Option<String>,
}

#[pymethods]
impl RequestVerdict {
    /// `continue` or `patch`.
    #[getter]
    fn kind(&self) -> &'static str {
        if self.patch.is_some() {
            "patch"
        } else {
            "continue"
        }
    }

    /// The plugin whose patch it is (the first, when several merged).
    #[getter]
    fn by(&self) -> Option<&str> {
        self.by.as_deref()
    }

    /// The patch as a dict of the fields it sets (`preamble`,
    /// `temperature`, `max_tokens`, `tool_choice`, `active_tools`,
    /// `additional_params`, `extra_context`, `history`); empty for
    /// `continue`.
    #[getter]
    fn patch<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match &self.patch {
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
        let Some(patch) = &self.patch else {
            return system;
        };
        let base = patch.preamble.clone().or(system);
        verdict::with_context(base, patch.extra_context.clone())
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
        let Some(patch) = &self.patch else {
            return Ok(());
        };
        let value = serde_json::to_value(patch).unwrap_or_default();
        let unsupported: Vec<&str> = value
            .as_object()
            .into_iter()
            .flat_map(|fields| fields.keys())
            .map(String::as_str)
            .filter(|field| !supported.iter().any(|s| s == field))
            .collect();
        if unsupported.is_empty() {
            return Ok(());
        }
        let by: Arc<str> = Arc::from(self.by.as_deref().unwrap_or(hookbox::HOST));
        let failure = FailClosed::new(
            &by,
            hookbox::Cause::UnsupportedFlow,
            format!(
                "patched the model request's {}, which {framework} cannot apply to a model call (it can apply {})",
                unsupported.join(", "),
                supported.join(", ")
            ),
        );
        Err(errors::failed_closed(py, &failure))
    }

    fn __repr__(&self) -> String {
        format!("<hookbox.RequestVerdict {}>", self.kind())
    }
}
