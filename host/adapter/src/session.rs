//! A guarded session for a language binding (Python, Node): the run, asked
//! in the terms every framework guard of that language shares, so a
//! binding converts values and raises its errors and keeps no rule of its
//! own.
//!
//! | a binding asks | [`Session`] answers |
//! |---|---|
//! | a tool call whose arguments are not JSON object text | [`Call::Refuse`] naming [`hookbox::HOST`]: no guard could check them, so the call does not run |
//! | a tool call | the stack's verdict ([`crate::verdict::tool_call`]): run (the arguments in canonical form, or a guard's rewrite), skip, refuse |
//! | a tool's result | keep, or replace ([`crate::verdict::tool_result`]) |
//! | a model call | continue, or a [`Request`] patch for this call only |
//! | any of these, once the run has ended | the stop ([`Stopped`]), again |
//!
//! A tool call without an id of its own gets one (`call-N`), so its result
//! can name it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use hookbox::{
    Cause, CompletionCall, Decision, FailClosed, Flow, HookStack, Message, RequestPatch, StepEvent,
    Stopped, ToolCall, ToolResult,
};

use crate::door::Door;
use crate::verdict::{self, Call, Output};

/// One run of a binding's client, pinned to the stack it started on.
pub struct Session {
    door: Door,
    generation: u64,
    next_call: AtomicU64,
}

/// What to change of the model call about to be made, for that call only.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    /// The patch; `None`: make the call as it is.
    pub patch: Option<RequestPatch>,
    /// The plugin whose patch it is.
    pub by: Option<Arc<str>>,
}

impl Session {
    /// Opens a run on `stack` (generation `generation` of its source); as
    /// [`Door::open`], a run that cannot have its instances fails every
    /// event closed, naming the host.
    pub fn open(stack: &HookStack, generation: u64, run_id: impl Into<String>) -> Session {
        Session {
            door: Door::open(stack, run_id),
            generation,
            next_call: AtomicU64::new(0),
        }
    }

    /// The run's door, for what this module does not ask.
    pub fn door(&self) -> &Door {
        &self.door
    }

    /// The generation of the stack the run is pinned to.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Asks about any event; the run keeps its own context.
    pub fn send(&self, event: &StepEvent) -> hookbox::Outcome {
        self.door.decide(None, event)
    }

    fn settle(&self, event: &StepEvent) -> Result<Decision, Stopped> {
        Stopped::settle(self.send(event), event.kind())
    }

    fn call_id(&self, tool_call_id: &Option<String>) -> String {
        tool_call_id
            .clone()
            .unwrap_or_else(|| format!("call-{}", self.next_call.fetch_add(1, Ordering::Relaxed)))
    }

    /// Whether the tool `tool_name` may run with `args` (JSON text); see
    /// the module's table.
    ///
    /// # Errors
    /// The stop, when the run ends (now or earlier).
    pub fn tool_call(
        &self,
        tool_name: String,
        args: &str,
        tool_call_id: Option<String>,
    ) -> Result<Call, Stopped> {
        let Some(asked) = hookbox::json::canonical(args).filter(|a| a.starts_with('{')) else {
            return Ok(Call::Refuse {
                by: Arc::from(hookbox::HOST),
                why: format!(
                    "the arguments of `{tool_name}` are not a JSON object, so no guard could check them; the call did not run"
                ),
            });
        };
        let event = StepEvent::ToolCall(ToolCall {
            tool_name,
            internal_call_id: self.call_id(&tool_call_id),
            tool_call_id,
            args: asked.clone(),
        });
        match verdict::tool_call(self.settle(&event), asked) {
            Call::Stop(stop) => Err(stop),
            call => Ok(call),
        }
    }

    /// What the model may read of the tool `tool_name`'s `result`, after it
    /// ran with `args` (JSON text; not JSON: `{}`).
    ///
    /// # Errors
    /// The stop, when the run ends.
    pub fn tool_result(
        &self,
        tool_name: String,
        args: &str,
        result: String,
        tool_call_id: Option<String>,
    ) -> Result<Output, Stopped> {
        let event = StepEvent::ToolResult(ToolResult {
            tool_name,
            internal_call_id: self.call_id(&tool_call_id),
            tool_call_id,
            args: hookbox::json::canonical(args).unwrap_or_else(|| "{}".to_owned()),
            result,
            ..ToolResult::default()
        });
        match verdict::tool_result(self.settle(&event)) {
            Output::Stop(stop) => Err(stop),
            output => Ok(output),
        }
    }

    /// What to change of the model call about to be made: the run's
    /// `prompt`, the `history` sent this turn, the 1-based `turn`.
    ///
    /// # Errors
    /// The stop, when the run ends.
    pub fn completion_call(
        &self,
        prompt: String,
        history: Vec<Message>,
        turn: u32,
    ) -> Result<Request, Stopped> {
        let event = StepEvent::CompletionCall(CompletionCall {
            prompt,
            history,
            turn,
        });
        let decision = self.settle(&event)?;
        let by = decision.by();
        Ok(match decision.flow {
            Flow::PatchRequest(patch) => Request {
                patch: Some(patch),
                by: Some(by),
            },
            _ => Request {
                patch: None,
                by: None,
            },
        })
    }
}

impl Request {
    /// The system text the model reads this call, given the one it would
    /// have read: the patch's preamble in its place if it sets one, then
    /// each extra-context document ([`verdict::with_context`]).
    pub fn system(&self, system: Option<String>) -> Option<String> {
        let Some(patch) = &self.patch else {
            return system;
        };
        verdict::with_context(
            patch.preamble.clone().or(system),
            patch.extra_context.clone(),
        )
    }

    /// The fields the patch sets, by their JSON names.
    pub fn fields(&self) -> Vec<String> {
        let value = self
            .patch
            .as_ref()
            .and_then(|patch| serde_json::to_value(patch).ok());
        match value {
            Some(serde_json::Value::Object(fields)) => fields.keys().cloned().collect(),
            _ => Vec::new(),
        }
    }

    /// Whether `framework` can apply the whole patch, given the fields it
    /// can apply to a model call.
    ///
    /// # Errors
    /// The failure to fail the run with (the patch's plugin, cause
    /// `unsupported-flow`), rather than drop a field.
    pub fn require_only(&self, framework: &str, supported: &[&str]) -> Result<(), FailClosed> {
        let unsupported: Vec<String> = self
            .fields()
            .into_iter()
            .filter(|field| !supported.contains(&field.as_str()))
            .collect();
        if unsupported.is_empty() {
            return Ok(());
        }
        let by = self.by.clone().unwrap_or_else(|| Arc::from(hookbox::HOST));
        Err(FailClosed::new(
            &by,
            Cause::UnsupportedFlow,
            format!(
                "patched the model request's {}, which {framework} cannot apply to a model call (it can apply {})",
                unsupported.join(", "),
                supported.join(", ")
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hookbox::{Document, hook_fn};

    fn session(flow: Flow) -> Session {
        let mut stack = HookStack::new();
        let answer = flow.clone();
        stack.push_hook(hook_fn("guard", move |_, _| answer.clone()));
        Session::open(&stack, 1, "t")
    }

    #[test]
    fn arguments_that_are_not_an_object_are_refused_by_the_host() {
        let s = session(Flow::Continue);
        for args in ["[1]", "nope", "3"] {
            let call = s.tool_call("t".into(), args, None).unwrap();
            assert!(
                matches!(call, Call::Refuse { ref by, .. } if &**by == hookbox::HOST),
                "{args}: {call:?}"
            );
        }
    }

    #[test]
    fn a_call_runs_with_its_arguments_in_canonical_form() {
        let call = session(Flow::Continue)
            .tool_call("t".into(), r#"{ "a" : "\u0062" }"#, None)
            .unwrap();
        assert_eq!(
            call,
            Call::Run {
                args: r#"{"a":"b"}"#.into(),
                rewritten_by: None
            }
        );
    }

    #[test]
    fn a_terminate_is_the_stop_of_every_later_ask() {
        let s = session(Flow::Terminate("no".into()));
        assert!(s.tool_call("t".into(), "{}", None).is_err());
        assert!(s.tool_result("t".into(), "{}", "r".into(), None).is_err());
        assert!(s.completion_call("p".into(), vec![], 1).is_err());
    }

    #[test]
    fn a_patch_makes_the_system_text_and_refuses_what_a_framework_cannot_apply() {
        let request = Request {
            patch: Some(RequestPatch {
                temperature: Some(0.2),
                extra_context: Some(vec![Document {
                    id: "rules".into(),
                    text: "Be kind.".into(),
                }]),
                ..RequestPatch::default()
            }),
            by: Some(Arc::from("g")),
        };
        assert_eq!(
            request.system(Some("You work.".into())).unwrap(),
            "You work.\n\n<document id=\"rules\">\nBe kind.\n</document>"
        );
        assert!(
            request
                .require_only("X", &["extra_context", "temperature"])
                .is_ok()
        );
        let refused = request.require_only("X", &["extra_context"]).unwrap_err();
        assert_eq!(
            (&*refused.plugin, refused.cause),
            ("g", Cause::UnsupportedFlow)
        );
        assert!(refused.detail.contains("temperature"), "{}", refused.detail);
    }
}
