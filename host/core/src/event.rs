//! Step events and their context: the input of every hook.
//!
//! These types are both the native Rust API and the wire types: they derive
//! the component model's `Lower`/`Lift` (field names as in `wit/hook.wit`)
//! and serde (the JSON forms in the README), so an event crosses into a
//! guest without a conversion or a JSON round trip.

use serde::{Deserialize, Serialize};
use wasmtime::component::{ComponentType, Lift, Lower};

use crate::json::json_text;

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
    #[component(name = "is-streaming")]
    pub is_streaming: bool,
    #[component(name = "agent-name")]
    pub agent_name: Option<String>,
}

macro_rules! event_kinds {
    ($($variant:ident = $wit:literal,)*) => {
        /// The kinds of step a hook can subscribe to.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, ComponentType, Lift, Lower)]
        #[component(enum)]
        #[repr(u8)]
        #[serde(rename_all = "kebab-case")]
        pub enum EventKind {
            $(#[component(name = $wit)] $variant,)*
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
    CompletionCall = "completion-call",
    CompletionResponse = "completion-response",
    ModelTurnFinished = "model-turn-finished",
    InvalidToolCall = "invalid-tool-call",
    ToolCall = "tool-call",
    ToolResult = "tool-result",
    TextDelta = "text-delta",
    ToolCallDelta = "tool-call-delta",
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
    pub const NONE: EventKinds = EventKinds(0);
    pub const ALL: EventKinds = EventKinds((1 << EventKind::ALL.len()) - 1);

    pub const fn contains(self, kind: EventKind) -> bool {
        self.0 & (1 << kind as u16) != 0
    }
    pub const fn with(self, kind: EventKind) -> EventKinds {
        EventKinds(self.0 | (1 << kind as u16))
    }
    pub const fn union(self, other: EventKinds) -> EventKinds {
        EventKinds(self.0 | other.0)
    }
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

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ComponentType, Lift, Lower)]
#[component(enum)]
#[repr(u8)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    #[component(name = "system")]
    System,
    #[component(name = "user")]
    User,
    #[component(name = "assistant")]
    Assistant,
    #[component(name = "tool")]
    Tool,
}

/// One message of the conversation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ComponentType, Lift, Lower)]
#[component(record)]
pub struct Message {
    pub role: Role,
    pub content: String,
}

#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ComponentType, Lift, Lower,
)]
#[component(record)]
pub struct Usage {
    #[component(name = "input-tokens")]
    pub input_tokens: u64,
    #[component(name = "output-tokens")]
    pub output_tokens: u64,
}

/// What the model answered.
#[derive(
    Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ComponentType, Lift, Lower,
)]
#[component(record)]
pub struct ModelResponse {
    pub content: String,
    #[serde(default)]
    pub usage: Option<Usage>,
}

/// Which tools the model may or must call this turn.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ComponentType, Lift, Lower)]
#[component(variant)]
#[serde(rename_all = "kebab-case")]
pub enum ToolChoice {
    #[component(name = "auto")]
    Auto,
    #[component(name = "none")]
    None,
    #[component(name = "required")]
    Required,
    /// The model must call one of these tools.
    #[component(name = "specific")]
    Specific(Vec<String>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ComponentType, Lift, Lower)]
#[component(enum)]
#[repr(u8)]
#[serde(rename_all = "kebab-case")]
pub enum ToolErrorKind {
    #[component(name = "timeout")]
    Timeout,
    #[component(name = "not-found")]
    NotFound,
    #[component(name = "invalid-args")]
    InvalidArgs,
    #[component(name = "execution")]
    Execution,
    #[component(name = "other")]
    Other,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ComponentType, Lift, Lower)]
#[component(record)]
pub struct ToolError {
    pub kind: ToolErrorKind,
    pub message: String,
}

/// What really happened when the tool was (or was not) run.
#[derive(
    Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ComponentType, Lift, Lower,
)]
#[component(variant)]
#[serde(rename_all = "kebab-case")]
pub enum ToolOutcome {
    #[default]
    #[component(name = "success")]
    Success,
    #[component(name = "error")]
    Error(ToolError),
    #[component(name = "skipped")]
    Skipped(String),
    #[component(name = "denied")]
    Denied(String),
}

#[derive(
    Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ComponentType, Lift, Lower,
)]
#[component(record)]
#[serde(deny_unknown_fields)]
pub struct CompletionCall {
    pub prompt: String,
    #[serde(default)]
    pub history: Vec<Message>,
    #[serde(default)]
    pub turn: u32,
}

#[derive(
    Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ComponentType, Lift, Lower,
)]
#[component(record)]
#[serde(deny_unknown_fields)]
pub struct CompletionResponse {
    #[serde(default)]
    pub prompt: String,
    pub response: ModelResponse,
}

#[derive(
    Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ComponentType, Lift, Lower,
)]
#[component(record)]
#[serde(deny_unknown_fields)]
pub struct ModelTurnFinished {
    #[serde(default)]
    pub turn: u32,
    pub content: String,
    #[serde(default)]
    pub usage: Option<Usage>,
}

#[derive(
    Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ComponentType, Lift, Lower,
)]
#[component(record)]
#[serde(deny_unknown_fields)]
pub struct InvalidToolCall {
    #[component(name = "tool-name")]
    pub tool_name: String,
    #[component(name = "tool-call-id")]
    #[serde(default)]
    pub tool_call_id: Option<String>,
    #[component(name = "internal-call-id")]
    #[serde(default)]
    pub internal_call_id: Option<String>,
    /// JSON text, when the model emitted arguments.
    #[serde(default, with = "json_text::option")]
    pub args: Option<String>,
    #[component(name = "available-tools")]
    #[serde(default)]
    pub available_tools: Vec<String>,
    #[component(name = "allowed-tools")]
    #[serde(default)]
    pub allowed_tools: Vec<String>,
    #[component(name = "tool-choice")]
    #[serde(default)]
    pub tool_choice: Option<ToolChoice>,
}

#[derive(
    Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ComponentType, Lift, Lower,
)]
#[component(record)]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    #[component(name = "tool-name")]
    pub tool_name: String,
    #[component(name = "tool-call-id")]
    #[serde(default)]
    pub tool_call_id: Option<String>,
    #[component(name = "internal-call-id")]
    #[serde(default)]
    pub internal_call_id: String,
    /// JSON text (the JSON form also accepts a JSON value here).
    #[serde(with = "json_text")]
    pub args: String,
}

#[derive(
    Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ComponentType, Lift, Lower,
)]
#[component(record)]
#[serde(deny_unknown_fields)]
pub struct ToolResult {
    #[component(name = "tool-name")]
    pub tool_name: String,
    #[component(name = "tool-call-id")]
    #[serde(default)]
    pub tool_call_id: Option<String>,
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

#[derive(
    Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ComponentType, Lift, Lower,
)]
#[component(record)]
#[serde(deny_unknown_fields)]
pub struct TextDelta {
    pub delta: String,
    #[serde(default)]
    pub aggregated: String,
}

#[derive(
    Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ComponentType, Lift, Lower,
)]
#[component(record)]
#[serde(deny_unknown_fields)]
pub struct ToolCallDelta {
    #[component(name = "tool-call-id")]
    #[serde(default)]
    pub tool_call_id: String,
    #[component(name = "internal-call-id")]
    #[serde(default)]
    pub internal_call_id: String,
    #[component(name = "tool-name")]
    #[serde(default)]
    pub tool_name: Option<String>,
    pub delta: String,
}

#[derive(
    Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ComponentType, Lift, Lower,
)]
#[component(record)]
#[serde(deny_unknown_fields)]
pub struct StreamResponseFinish {
    #[serde(default)]
    pub prompt: String,
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
    #[component(name = "completion-call")]
    CompletionCall(CompletionCall),
    #[component(name = "completion-response")]
    CompletionResponse(CompletionResponse),
    #[component(name = "model-turn-finished")]
    ModelTurnFinished(ModelTurnFinished),
    #[component(name = "invalid-tool-call")]
    InvalidToolCall(InvalidToolCall),
    #[component(name = "tool-call")]
    ToolCall(ToolCall),
    #[component(name = "tool-result")]
    ToolResult(ToolResult),
    #[component(name = "text-delta")]
    TextDelta(TextDelta),
    #[component(name = "tool-call-delta")]
    ToolCallDelta(ToolCallDelta),
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
