//! Flows: what a hook wants done, and the request patches they carry.
//!
//! Like events, these are both the native API and the wire types. The JSON
//! form is tagged by `flow` with payload fields named as in WIT:
//! `{"flow":"skip","reason":"..."}`, `{"flow":"rewrite-args","args":"{...}"}`.

use serde::{Deserialize, Serialize};
use wasmtime::component::{ComponentType, Lift, Lower};

use crate::event::{Message, ToolChoice};
use crate::json::json_text;

/// A control-flow action returned by a hook.
///
/// Each event honours a subset of flows (see [`crate::rules`]); any other
/// answer ends the run fail-closed. [`Flow::Continue`] is always the way to
/// do nothing.
#[derive(Clone, Debug, PartialEq, ComponentType, Lift, Lower, Serialize, Deserialize)]
#[component(variant)]
#[serde(into = "FlowJson", from = "FlowJson")]
pub enum Flow {
    /// Proceed normally.
    #[component(name = "continue")]
    Continue,
    /// End the run, surfacing the reason.
    #[component(name = "terminate")]
    Terminate(String),
    /// tool-call: return the reason to the model instead of running the tool.
    /// invalid-tool-call: record the reason as the call's result.
    #[component(name = "skip")]
    Skip(String),
    /// tool-call: run the tool with these arguments (JSON text).
    #[component(name = "rewrite-args")]
    RewriteArgs(String),
    /// tool-result: the model sees this instead of the tool's result.
    #[component(name = "rewrite-result")]
    RewriteResult(String),
    /// completion-call: patch this turn's request.
    #[component(name = "patch-request")]
    PatchRequest(RequestPatch),
    /// invalid-tool-call: fail the run (the default).
    #[component(name = "fail")]
    Fail,
    /// invalid-tool-call: re-prompt the model with this feedback.
    #[component(name = "retry")]
    Retry(String),
    /// invalid-tool-call: use this tool name instead (re-validated).
    #[component(name = "repair")]
    Repair(String),
}

impl Flow {
    /// [`Flow::Terminate`] with this reason.
    pub fn terminate(reason: impl Into<String>) -> Flow {
        Flow::Terminate(reason.into())
    }
    /// [`Flow::Skip`] with this reason.
    pub fn skip(reason: impl Into<String>) -> Flow {
        Flow::Skip(reason.into())
    }
    /// [`Flow::RewriteArgs`] with these arguments (JSON text).
    pub fn rewrite_args(args: impl Into<String>) -> Flow {
        Flow::RewriteArgs(args.into())
    }
    /// [`Flow::RewriteResult`] with this result.
    pub fn rewrite_result(result: impl Into<String>) -> Flow {
        Flow::RewriteResult(result.into())
    }
    /// [`Flow::Retry`] with this feedback.
    pub fn retry(feedback: impl Into<String>) -> Flow {
        Flow::Retry(feedback.into())
    }
    /// [`Flow::Repair`] with this tool name.
    pub fn repair(tool_name: impl Into<String>) -> Flow {
        Flow::Repair(tool_name.into())
    }

    /// The kebab-case case name used by WIT, JSON and the CLI.
    pub fn name(&self) -> &'static str {
        match self {
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

    /// What the flow says, for a person: a terminate's or skip's reason, a
    /// retry's feedback, a repair's tool name. Never rewritten content.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Flow::Terminate(text) | Flow::Skip(text) | Flow::Retry(text) | Flow::Repair(text) => {
                Some(text)
            }
            _ => None,
        }
    }

    /// Whether this is [`Flow::Continue`].
    pub fn is_continue(&self) -> bool {
        matches!(self, Flow::Continue)
    }

    /// Bytes of text this flow carries: what a guest made the host copy.
    pub fn payload_len(&self) -> usize {
        match self {
            Flow::Continue | Flow::Fail => 0,
            Flow::Terminate(s)
            | Flow::Skip(s)
            | Flow::RewriteArgs(s)
            | Flow::RewriteResult(s)
            | Flow::Retry(s)
            | Flow::Repair(s) => s.len(),
            Flow::PatchRequest(p) => p.payload_len(),
        }
    }
}

/// A context document injected into the request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ComponentType, Lift, Lower)]
#[component(record)]
pub struct Document {
    /// Names the document.
    pub id: String,
    /// The document's content.
    pub text: String,
}

/// A partial change to one turn's model request; unset fields inherit.
///
/// Patches from several hooks merge in registration order with
/// [`RequestPatch::merge`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ComponentType, Lift, Lower)]
#[component(record)]
#[serde(deny_unknown_fields)]
pub struct RequestPatch {
    /// Replaces the preamble (the system prompt).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preamble: Option<String>,
    /// The sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// The most tokens the model may generate.
    #[component(name = "max-tokens")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Which tools the model may or must call.
    #[component(name = "tool-choice")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// An allow-list narrowing the tools advertised this turn.
    #[component(name = "active-tools")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_tools: Option<Vec<String>>,
    /// JSON object text, shallow-merged onto the provider parameters.
    #[component(name = "additional-params")]
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "json_text::option"
    )]
    pub additional_params: Option<String>,
    /// Context documents added to the request.
    #[component(name = "extra-context")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra_context: Option<Vec<Document>>,
    /// Replaces the history sent this turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<Vec<Message>>,
}

/// A field that two patches both set, where the later one won.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conflict(pub &'static str);

impl RequestPatch {
    /// Merges `later` onto `self` (earlier ⊕ later), returning the fields
    /// both set where the later value replaced the earlier one:
    ///
    /// | field | rule |
    /// |---|---|
    /// | extra-context | appends |
    /// | additional-params | shallow object merge, later key wins |
    /// | preamble, temperature, max-tokens, tool-choice, history | last writer wins; a conflict |
    /// | active-tools | set intersection: allow-lists only ever narrow |
    ///
    /// `additional-params` must hold JSON objects (hooks' patches are
    /// validated before they are merged); text that is not an object is
    /// replaced as a whole.
    pub fn merge(&mut self, later: RequestPatch) -> Vec<Conflict> {
        let mut conflicts = Vec::new();
        last_writer(
            &mut self.preamble,
            later.preamble,
            "preamble",
            &mut conflicts,
        );
        last_writer(
            &mut self.temperature,
            later.temperature,
            "temperature",
            &mut conflicts,
        );
        last_writer(
            &mut self.max_tokens,
            later.max_tokens,
            "max-tokens",
            &mut conflicts,
        );
        last_writer(
            &mut self.tool_choice,
            later.tool_choice,
            "tool-choice",
            &mut conflicts,
        );
        last_writer(&mut self.history, later.history, "history", &mut conflicts);
        if let Some(later) = later.extra_context {
            self.extra_context
                .get_or_insert_with(Vec::new)
                .extend(later);
        }
        self.active_tools = match (self.active_tools.take(), later.active_tools) {
            (Some(earlier), Some(later)) => {
                Some(earlier.into_iter().filter(|t| later.contains(t)).collect())
            }
            (earlier, later) => earlier.or(later),
        };
        self.additional_params = match (self.additional_params.take(), later.additional_params) {
            (Some(earlier), Some(later)) => Some(merge_objects(&earlier, &later)),
            (earlier, later) => earlier.or(later),
        };
        conflicts
    }

    fn payload_len(&self) -> usize {
        let strings = |v: &Option<Vec<String>>| v.iter().flatten().map(String::len).sum::<usize>();
        self.preamble.as_ref().map_or(0, String::len)
            + strings(&self.active_tools)
            + self.additional_params.as_ref().map_or(0, String::len)
            + self
                .extra_context
                .iter()
                .flatten()
                .map(|d| d.id.len() + d.text.len())
                .sum::<usize>()
            + self
                .history
                .iter()
                .flatten()
                .map(|m| m.content.len())
                .sum::<usize>()
            + match &self.tool_choice {
                Some(ToolChoice::Specific(tools)) => tools.iter().map(String::len).sum(),
                _ => 0,
            }
    }
}

fn last_writer<T>(
    earlier: &mut Option<T>,
    later: Option<T>,
    field: &'static str,
    conflicts: &mut Vec<Conflict>,
) {
    if let Some(later) = later {
        if earlier.is_some() {
            conflicts.push(Conflict(field));
        }
        *earlier = Some(later);
    }
}

fn merge_objects(earlier: &str, later: &str) -> String {
    use serde_json::{Map, Value};
    let parse = |text: &str| serde_json::from_str::<Map<String, Value>>(text).ok();
    match (parse(earlier), parse(later)) {
        (Some(mut merged), Some(later)) => {
            merged.extend(later);
            Value::Object(merged).to_string()
        }
        _ => later.to_owned(),
    }
}

/// The JSON shape of [`Flow`]: struct variants, so the payload has a name.
#[derive(Serialize, Deserialize)]
#[serde(tag = "flow", rename_all = "kebab-case", deny_unknown_fields)]
enum FlowJson {
    Continue,
    Terminate {
        reason: String,
    },
    Skip {
        reason: String,
    },
    RewriteArgs {
        #[serde(with = "json_text")]
        args: String,
    },
    RewriteResult {
        result: String,
    },
    PatchRequest {
        patch: RequestPatch,
    },
    Fail,
    Retry {
        feedback: String,
    },
    Repair {
        tool_name: String,
    },
}

impl From<Flow> for FlowJson {
    fn from(flow: Flow) -> FlowJson {
        match flow {
            Flow::Continue => FlowJson::Continue,
            Flow::Terminate(reason) => FlowJson::Terminate { reason },
            Flow::Skip(reason) => FlowJson::Skip { reason },
            Flow::RewriteArgs(args) => FlowJson::RewriteArgs { args },
            Flow::RewriteResult(result) => FlowJson::RewriteResult { result },
            Flow::PatchRequest(patch) => FlowJson::PatchRequest { patch },
            Flow::Fail => FlowJson::Fail,
            Flow::Retry(feedback) => FlowJson::Retry { feedback },
            Flow::Repair(tool_name) => FlowJson::Repair { tool_name },
        }
    }
}

impl From<FlowJson> for Flow {
    fn from(flow: FlowJson) -> Flow {
        match flow {
            FlowJson::Continue => Flow::Continue,
            FlowJson::Terminate { reason } => Flow::Terminate(reason),
            FlowJson::Skip { reason } => Flow::Skip(reason),
            FlowJson::RewriteArgs { args } => Flow::RewriteArgs(args),
            FlowJson::RewriteResult { result } => Flow::RewriteResult(result),
            FlowJson::PatchRequest { patch } => Flow::PatchRequest(patch),
            FlowJson::Fail => Flow::Fail,
            FlowJson::Retry { feedback } => Flow::Retry(feedback),
            FlowJson::Repair { tool_name } => Flow::Repair(tool_name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools(names: &[&str]) -> Option<Vec<String>> {
        Some(names.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn every_flow_has_the_json_form_of_the_design() {
        let cases = [
            (Flow::Continue, r#"{"flow":"continue"}"#),
            (Flow::terminate("r"), r#"{"flow":"terminate","reason":"r"}"#),
            (Flow::skip("r"), r#"{"flow":"skip","reason":"r"}"#),
            (
                Flow::rewrite_args("{}"),
                r#"{"flow":"rewrite-args","args":"{}"}"#,
            ),
            (
                Flow::rewrite_result("x"),
                r#"{"flow":"rewrite-result","result":"x"}"#,
            ),
            (
                Flow::PatchRequest(RequestPatch {
                    temperature: Some(0.2),
                    active_tools: tools(&["search"]),
                    ..Default::default()
                }),
                r#"{"flow":"patch-request","patch":{"temperature":0.2,"active_tools":["search"]}}"#,
            ),
            (Flow::Fail, r#"{"flow":"fail"}"#),
            (Flow::retry("f"), r#"{"flow":"retry","feedback":"f"}"#),
            (Flow::repair("t"), r#"{"flow":"repair","tool_name":"t"}"#),
        ];
        for (flow, json) in cases {
            assert_eq!(serde_json::to_string(&flow).unwrap(), json);
            assert_eq!(serde_json::from_str::<Flow>(json).unwrap(), flow);
        }
    }

    #[test]
    fn extra_context_appends() {
        let doc = |id: &str| Document {
            id: id.into(),
            text: String::new(),
        };
        let mut a = RequestPatch {
            extra_context: Some(vec![doc("a")]),
            ..Default::default()
        };
        let conflicts = a.merge(RequestPatch {
            extra_context: Some(vec![doc("b")]),
            ..Default::default()
        });
        assert_eq!(a.extra_context, Some(vec![doc("a"), doc("b")]));
        assert!(conflicts.is_empty());
    }

    #[test]
    fn additional_params_merge_shallowly_and_the_later_key_wins() {
        let mut a = RequestPatch {
            additional_params: Some(r#"{"a":1,"b":{"x":1}}"#.into()),
            ..Default::default()
        };
        a.merge(RequestPatch {
            additional_params: Some(r#"{"b":{"y":2},"c":3}"#.into()),
            ..Default::default()
        });
        let merged: serde_json::Value =
            serde_json::from_str(a.additional_params.as_deref().unwrap()).unwrap();
        assert_eq!(merged, serde_json::json!({"a":1,"b":{"y":2},"c":3}));
    }

    #[test]
    fn scalar_fields_take_the_last_writer_and_report_the_conflict() {
        let mut a = RequestPatch {
            preamble: Some("first".into()),
            temperature: Some(0.9),
            max_tokens: Some(10),
            tool_choice: Some(ToolChoice::Auto),
            history: Some(vec![]),
            ..Default::default()
        };
        let conflicts = a.merge(RequestPatch {
            preamble: Some("second".into()),
            temperature: Some(0.1),
            max_tokens: Some(20),
            tool_choice: Some(ToolChoice::Required),
            history: Some(vec![Message {
                role: crate::event::Role::User,
                content: "hi".into(),
            }]),
            ..Default::default()
        });
        assert_eq!(a.preamble.as_deref(), Some("second"));
        assert_eq!(a.temperature, Some(0.1));
        assert_eq!(a.max_tokens, Some(20));
        assert_eq!(a.tool_choice, Some(ToolChoice::Required));
        assert_eq!(a.history.as_ref().map(Vec::len), Some(1));
        let names: Vec<_> = conflicts.iter().map(|c| c.0).collect();
        assert_eq!(
            names,
            [
                "preamble",
                "temperature",
                "max-tokens",
                "tool-choice",
                "history"
            ]
        );
    }

    #[test]
    fn a_field_set_by_one_side_only_is_not_a_conflict() {
        let mut a = RequestPatch {
            preamble: Some("p".into()),
            ..Default::default()
        };
        assert!(
            a.merge(RequestPatch {
                temperature: Some(0.5),
                ..Default::default()
            })
            .is_empty()
        );
        assert_eq!(
            (a.preamble.as_deref(), a.temperature),
            (Some("p"), Some(0.5))
        );
    }

    #[test]
    fn active_tools_intersect() {
        let mut a = RequestPatch {
            active_tools: tools(&["read", "write", "search"]),
            ..Default::default()
        };
        a.merge(RequestPatch {
            active_tools: tools(&["search", "read", "shell"]),
            ..Default::default()
        });
        assert_eq!(a.active_tools, tools(&["read", "search"]));
        a.merge(RequestPatch::default());
        assert_eq!(
            a.active_tools,
            tools(&["read", "search"]),
            "an unset allow-list does not widen"
        );
    }
}
