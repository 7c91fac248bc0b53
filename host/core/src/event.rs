//! Step events and their context: the input of every hook.
//!
//! These types are both the native Rust API and the wire types: they derive
//! the component model's `Lower`/`Lift` (field names as in `wit/hook.wit`)
//! and serde (the JSON forms, docs/contract.md#json-forms), so an event crosses into a
//! guest without a conversion or a JSON round trip.

use serde::{Deserialize, Serialize};
use wasmtime::component::{ComponentType, Lift, Lower};

use crate::json::json_text;

impl StepEvent {
    /// The tool a tool-call, tool-result or invalid-tool-call is about; what
    /// tool matchers ([`crate::matcher`]) scope. `None` for other kinds.
    pub fn tool_name(&self) -> Option<&str> {
        match self {
            StepEvent::ToolCall(e) => Some(&e.tool_name),
            StepEvent::ToolResult(e) => Some(&e.tool_name),
            StepEvent::InvalidToolCall(e) => Some(&e.tool_name),
            _ => None,
        }
    }

    /// Bytes of text the event carries (its prompts, contents, arguments,
    /// results, deltas): what lowering it into a guest copies.
    pub fn payload_len(&self) -> usize {
        let messages = |m: &[Message]| m.iter().map(|m| m.content.len()).sum::<usize>();
        match self {
            StepEvent::CompletionCall(e) => e.prompt.len() + messages(&e.history),
            StepEvent::CompletionResponse(e) => e.prompt.len() + e.response.content.len(),
            StepEvent::ModelTurnFinished(e) => e.content.len(),
            StepEvent::InvalidToolCall(e) => {
                e.tool_name.len() + e.args.as_ref().map_or(0, String::len)
            }
            StepEvent::ToolCall(e) => e.tool_name.len() + e.args.len(),
            StepEvent::ToolResult(e) => {
                e.tool_name.len() + e.args.len() + e.result.len() + e.extensions.len()
            }
            StepEvent::TextDelta(e) => e.delta.len() + e.aggregated.len(),
            StepEvent::ToolCallDelta(e) => e.delta.len(),
            StepEvent::StreamResponseFinish(e) => e.prompt.len() + e.response.content.len(),
        }
    }
}

/// Where in the run a step happens.
#[derive(
    Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ComponentType, Lift, Lower,
)]
#[component(record)]
pub struct HookContext {
    /// Unique per run.
    #[component(name = "run-id")]
    pub run_id: String,
    /// 1-based model-call index; 0 before the first model call.
    pub turn: u32,
    /// Whether the model is streaming this turn.
    #[component(name = "is-streaming")]
    pub is_streaming: bool,
    /// The agent's name, when the embedder gives one.
    #[component(name = "agent-name")]
    pub agent_name: Option<String>,
}

macro_rules! event_kinds {
    ($($(#[$doc:meta])* $variant:ident = $wit:literal,)*) => {
        /// The kinds of step a hook can subscribe to.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, ComponentType, Lift, Lower)]
        #[component(enum)]
        #[repr(u8)]
        #[serde(rename_all = "kebab-case")]
        pub enum EventKind {
            $($(#[$doc])* #[component(name = $wit)] $variant,)*
        }

        impl EventKind {
            /// Every kind, in WIT order.
            pub const ALL: [EventKind; 9] = [$(EventKind::$variant,)*];

            /// The kebab-case name used by WIT, JSON and the CLI.
            pub fn name(self) -> &'static str {
                match self { $(EventKind::$variant => $wit,)* }
            }
        }

        impl StepEvent {
            /// Which kind of step this is.
            pub fn kind(&self) -> EventKind {
                match self { $(StepEvent::$variant(_) => EventKind::$variant,)* }
            }
        }
    };
}

event_kinds! {
    /// Before each model call: the request about to be sent.
    CompletionCall = "completion-call",
    /// After each model call: what the model answered.
    CompletionResponse = "completion-response",
    /// After each model call: the turn's answer text and usage.
    ModelTurnFinished = "model-turn-finished",
    /// The model called a tool that is unknown or not allowed this turn.
    InvalidToolCall = "invalid-tool-call",
    /// The model called a tool; asked before the tool runs.
    ToolCall = "tool-call",
    /// A tool's result, before the model sees it.
    ToolResult = "tool-result",
    /// A chunk of streamed answer text.
    TextDelta = "text-delta",
    /// A chunk of a streamed tool call.
    ToolCallDelta = "tool-call-delta",
    /// A streamed answer has finished.
    StreamResponseFinish = "stream-response-finish",
}

impl std::fmt::Display for EventKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A set of [`EventKind`]s, as one bit per kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct EventKinds(u16);

impl EventKinds {
    /// The empty set.
    pub const NONE: EventKinds = EventKinds(0);
    /// Every kind.
    pub const ALL: EventKinds = EventKinds((1 << EventKind::ALL.len()) - 1);

    /// Whether `kind` is in the set.
    pub const fn contains(self, kind: EventKind) -> bool {
        self.0 & (1 << kind as u16) != 0
    }
    /// This set with `kind` added.
    pub const fn with(self, kind: EventKind) -> EventKinds {
        EventKinds(self.0 | (1 << kind as u16))
    }
    /// The kinds in either set.
    pub const fn union(self, other: EventKinds) -> EventKinds {
        EventKinds(self.0 | other.0)
    }
    /// The kinds in the set, in WIT order.
    pub fn iter(self) -> impl Iterator<Item = EventKind> {
        EventKind::ALL
            .into_iter()
            .filter(move |k| self.contains(*k))
    }
}

impl FromIterator<EventKind> for EventKinds {
    fn from_iter<I: IntoIterator<Item = EventKind>>(iter: I) -> Self {
        iter.into_iter().fold(EventKinds::NONE, EventKinds::with)
    }
}

/// Who wrote a message.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ComponentType, Lift, Lower,
)]
#[component(enum)]
#[repr(u8)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// The system prompt.
    #[component(name = "system")]
    System,
    /// The user.
    #[component(name = "user")]
    User,
    /// The model.
    #[component(name = "assistant")]
    Assistant,
    /// A tool's result.
    #[component(name = "tool")]
    Tool,
}

/// One message of the conversation.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ComponentType, Lift, Lower)]
#[component(record)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// The message text.
    pub content: String,
}

/// Token counts of one model call.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ComponentType, Lift, Lower,
)]
#[component(record)]
pub struct Usage {
    /// Tokens sent to the model.
    #[component(name = "input-tokens")]
    pub input_tokens: u64,
    /// Tokens the model generated.
    #[component(name = "output-tokens")]
    pub output_tokens: u64,
}

/// What the model answered.
#[derive(
    Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ComponentType, Lift, Lower,
)]
#[component(record)]
pub struct ModelResponse {
    /// The answer text.
    pub content: String,
    /// Token usage, when the provider reports it.
    #[serde(default)]
    pub usage: Option<Usage>,
}

/// Which tools the model may or must call this turn.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ComponentType, Lift, Lower)]
#[component(variant)]
#[serde(rename_all = "kebab-case")]
pub enum ToolChoice {
    /// The model decides whether to call a tool.
    #[component(name = "auto")]
    Auto,
    /// The model must not call a tool.
    #[component(name = "none")]
    None,
    /// The model must call some tool.
    #[component(name = "required")]
    Required,
    /// The model must call one of these tools.
    #[component(name = "specific")]
    Specific(Vec<String>),
}

/// Why a tool failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ComponentType, Lift, Lower)]
#[component(enum)]
#[repr(u8)]
#[serde(rename_all = "kebab-case")]
pub enum ToolErrorKind {
    /// The tool ran out of time.
    #[component(name = "timeout")]
    Timeout,
    /// There is no such tool.
    #[component(name = "not-found")]
    NotFound,
    /// The arguments were not valid for the tool.
    #[component(name = "invalid-args")]
    InvalidArgs,
    /// The tool failed while running.
    #[component(name = "execution")]
    Execution,
    /// Any other failure.
    #[component(name = "other")]
    Other,
}

/// How a tool failed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ComponentType, Lift, Lower)]
#[component(record)]
pub struct ToolError {
    /// The kind of failure.
    pub kind: ToolErrorKind,
    /// What went wrong.
    pub message: String,
}

/// What really happened when the tool was (or was not) run.
#[derive(
    Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ComponentType, Lift, Lower,
)]
#[component(variant)]
#[serde(rename_all = "kebab-case")]
pub enum ToolOutcome {
    /// The tool ran and succeeded.
    #[default]
    #[component(name = "success")]
    Success,
    /// The tool ran and failed.
    #[component(name = "error")]
    Error(ToolError),
    /// The tool was not run, for this reason.
    #[component(name = "skipped")]
    Skipped(String),
    /// A hook refused the call, for this reason.
    #[component(name = "denied")]
    Denied(String),
}

/// Before each model call: the request about to be sent.
#[derive(
    Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ComponentType, Lift, Lower,
)]
#[component(record)]
#[serde(deny_unknown_fields)]
pub struct CompletionCall {
    /// The run's prompt.
    pub prompt: String,
    /// The messages to be sent this turn.
    #[serde(default)]
    pub history: Vec<Message>,
    /// 1-based index of the model call about to be made.
    #[serde(default)]
    pub turn: u32,
}

/// After each model call: what the model answered.
#[derive(
    Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ComponentType, Lift, Lower,
)]
#[component(record)]
#[serde(deny_unknown_fields)]
pub struct CompletionResponse {
    /// The run's prompt.
    #[serde(default)]
    pub prompt: String,
    /// What the model answered.
    pub response: ModelResponse,
}

/// After each model call: the turn's answer text and usage.
#[derive(
    Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ComponentType, Lift, Lower,
)]
#[component(record)]
#[serde(deny_unknown_fields)]
pub struct ModelTurnFinished {
    /// 1-based index of the model call that finished.
    #[serde(default)]
    pub turn: u32,
    /// The answer text of the turn.
    pub content: String,
    /// Token usage of the turn, when the provider reports it.
    #[serde(default)]
    pub usage: Option<Usage>,
}

/// The model called a tool that is unknown or not allowed this turn.
#[derive(
    Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ComponentType, Lift, Lower,
)]
#[component(record)]
#[serde(deny_unknown_fields)]
pub struct InvalidToolCall {
    /// The tool name the model used.
    #[component(name = "tool-name")]
    pub tool_name: String,
    /// The model's id for the call, if it gave one.
    #[component(name = "tool-call-id")]
    #[serde(default)]
    pub tool_call_id: Option<String>,
    /// The host's id for the call, if it assigned one.
    #[component(name = "internal-call-id")]
    #[serde(default)]
    pub internal_call_id: Option<String>,
    /// JSON text, when the model emitted arguments.
    #[serde(default, with = "json_text::option")]
    pub args: Option<String>,
    /// Every tool the agent has.
    #[component(name = "available-tools")]
    #[serde(default)]
    pub available_tools: Vec<String>,
    /// The tools allowed this turn.
    #[component(name = "allowed-tools")]
    #[serde(default)]
    pub allowed_tools: Vec<String>,
    /// The tool choice in force this turn.
    #[component(name = "tool-choice")]
    #[serde(default)]
    pub tool_choice: Option<ToolChoice>,
}

/// The model called a tool; asked before the tool runs.
#[derive(
    Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ComponentType, Lift, Lower,
)]
#[component(record)]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    /// The tool to run.
    #[component(name = "tool-name")]
    pub tool_name: String,
    /// The model's id for the call, if it gave one.
    #[component(name = "tool-call-id")]
    #[serde(default)]
    pub tool_call_id: Option<String>,
    /// The host's id for the call.
    #[component(name = "internal-call-id")]
    #[serde(default)]
    pub internal_call_id: String,
    /// JSON text (the JSON form also accepts a JSON value here).
    #[serde(with = "json_text")]
    pub args: String,
}

/// A tool's result, before the model sees it.
#[derive(
    Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ComponentType, Lift, Lower,
)]
#[component(record)]
#[serde(deny_unknown_fields)]
pub struct ToolResult {
    /// The tool that was called.
    #[component(name = "tool-name")]
    pub tool_name: String,
    /// The model's id for the call, if it gave one.
    #[component(name = "tool-call-id")]
    #[serde(default)]
    pub tool_call_id: Option<String>,
    /// The host's id for the call.
    #[component(name = "internal-call-id")]
    #[serde(default)]
    pub internal_call_id: String,
    /// JSON text: the arguments the tool ran with.
    #[serde(default = "json_text::empty_object", with = "json_text")]
    pub args: String,
    /// What the model will see.
    pub result: String,
    /// What really happened; hooks cannot rewrite it.
    #[serde(default)]
    pub outcome: ToolOutcome,
    /// JSON text: tool-specific extras; hooks cannot rewrite them.
    #[serde(default = "json_text::empty_object", with = "json_text")]
    pub extensions: String,
}

/// A chunk of streamed answer text.
#[derive(
    Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ComponentType, Lift, Lower,
)]
#[component(record)]
#[serde(deny_unknown_fields)]
pub struct TextDelta {
    /// The new text.
    pub delta: String,
    /// All the text streamed so far this turn, this delta included.
    #[serde(default)]
    pub aggregated: String,
}

/// A chunk of a streamed tool call.
#[derive(
    Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ComponentType, Lift, Lower,
)]
#[component(record)]
#[serde(deny_unknown_fields)]
pub struct ToolCallDelta {
    /// The model's id for the call.
    #[component(name = "tool-call-id")]
    #[serde(default)]
    pub tool_call_id: String,
    /// The host's id for the call.
    #[component(name = "internal-call-id")]
    #[serde(default)]
    pub internal_call_id: String,
    /// The tool's name, once the stream has given it.
    #[component(name = "tool-name")]
    #[serde(default)]
    pub tool_name: Option<String>,
    /// The new piece of the arguments' JSON text.
    pub delta: String,
}

/// A streamed answer has finished.
#[derive(
    Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ComponentType, Lift, Lower,
)]
#[component(record)]
#[serde(deny_unknown_fields)]
pub struct StreamResponseFinish {
    /// The run's prompt.
    #[serde(default)]
    pub prompt: String,
    /// The complete answer.
    pub response: ModelResponse,
}

/// An observable step of the agent loop.
///
/// JSON form: `{"event":"tool-call","tool_name":"shell","args":"{}"}`: the tag
/// is `event` with the kebab-case case name, fields are snake_case.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ComponentType, Lift, Lower)]
#[component(variant)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum StepEvent {
    /// Before each model call: the request about to be sent.
    #[component(name = "completion-call")]
    CompletionCall(CompletionCall),
    /// After each model call: what the model answered.
    #[component(name = "completion-response")]
    CompletionResponse(CompletionResponse),
    /// After each model call: the turn's answer text and usage.
    #[component(name = "model-turn-finished")]
    ModelTurnFinished(ModelTurnFinished),
    /// The model called a tool that is unknown or not allowed this turn.
    #[component(name = "invalid-tool-call")]
    InvalidToolCall(InvalidToolCall),
    /// The model called a tool; asked before the tool runs.
    #[component(name = "tool-call")]
    ToolCall(ToolCall),
    /// A tool's result, before the model sees it.
    #[component(name = "tool-result")]
    ToolResult(ToolResult),
    /// A chunk of streamed answer text.
    #[component(name = "text-delta")]
    TextDelta(TextDelta),
    /// A chunk of a streamed tool call.
    #[component(name = "tool-call-delta")]
    ToolCallDelta(ToolCallDelta),
    /// A streamed answer has finished.
    #[component(name = "stream-response-finish")]
    StreamResponseFinish(StreamResponseFinish),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_call_json_form_matches_the_design() {
        let line = r#"{"event":"tool-call","tool_name":"shell","tool_call_id":"c1","internal_call_id":"i1","args":"{\"cmd\":\"ls\"}"}"#;
        let event: StepEvent = serde_json::from_str(line).unwrap();
        let StepEvent::ToolCall(call) = &event else {
            panic!("{event:?}")
        };
        assert_eq!(call.args, r#"{"cmd":"ls"}"#);
        assert_eq!(serde_json::to_string(&event).unwrap(), line);
    }

    #[test]
    fn args_may_be_given_as_a_json_value() {
        let event: StepEvent = serde_json::from_str(
            r#"{"event":"tool-call","tool_name":"shell","args":{"cmd":"ls"}}"#,
        )
        .unwrap();
        let StepEvent::ToolCall(call) = event else {
            unreachable!()
        };
        assert_eq!(call.args, r#"{"cmd":"ls"}"#);
    }

    #[test]
    fn unknown_event_kinds_are_rejected() {
        let err = serde_json::from_str::<StepEvent>(r#"{"event":"tool-cal","tool_name":"x"}"#)
            .unwrap_err();
        assert!(err.to_string().contains("tool-cal"), "{err}");
    }

    #[test]
    fn event_kind_sets_hold_exactly_what_was_added() {
        let set: EventKinds = [EventKind::ToolCall, EventKind::TextDelta]
            .into_iter()
            .collect();
        assert!(set.contains(EventKind::ToolCall) && set.contains(EventKind::TextDelta));
        assert!(!set.contains(EventKind::ToolResult));
        assert_eq!(EventKinds::ALL.iter().count(), 9);
    }
}
