//! The one mapping of the stack's answer about a tool call, or its result,
//! to what a door does next. Each door then writes the verdict in its
//! client's own terms (a rig `DispatchAction`, an MCP response, an agent's
//! hook reply), and only that.
//!
//! | the stack answered a tool-call with | [`tool_call`] |
//! |---|---|
//! | a stop: fail-closed, terminate, or the run's end replayed | [`Call::Stop`] with it |
//! | continue | [`Call::Run`] with the arguments the guards saw |
//! | rewrite-args to a JSON object | [`Call::Run`] with the rewrite, `rewritten_by` the plugin |
//! | rewrite-args to other JSON (no client takes it, docs/architecture.md#rewrites-keep-the-clients-shapes) | [`Call::Refuse`]: the call does not run, the run goes on |
//! | skip | [`Call::Skip`] with the reason and the arguments the skipping guard saw |
//!
//! | the stack answered a tool-result with | [`tool_result`] |
//! |---|---|
//! | a stop | [`Output::Stop`] with it |
//! | continue | [`Output::Keep`] |
//! | rewrite-result | [`Output::Replace`] with the text, `by` the plugin |
//!
//! | what the model may read of a result ([`reading`], in the result's own shape, [`crate::shape`]) | [`Reading`] |
//! |---|---|
//! | keep | [`Reading::Keep`] |
//! | a rewrite of text, or one that fits the structure of other JSON | [`Reading::Replace`] with it |
//! | a rewrite that does not fit the structure | [`Reading::Replace`] with the structure, every value withheld and the reason told |
//!
//! | a door's client reads one system text, and a patch-request adds documents | [`with_context`] |
//! |---|---|
//! | no documents (or none left after the patch) | the system text as it was |
//! | documents | the system text (if any), then each document as a `<document id="...">` block, a blank line between |
//!
//! The core checks every answer against its event's rule first, so no
//! other flow reaches either function; one that did would be a host bug,
//! and stops the run naming [`hookbox::HOST`] rather than proceed.

use std::sync::Arc;

use hookbox::{Cause, Decision, Document, EventKind, FailClosed, Flow, RequestPatch, Stopped};
use serde_json::Value;

/// What a door does with a tool call.
#[derive(Clone, Debug, PartialEq)]
pub enum Call {
    /// Run the tool with `args`, JSON object text in the one canonical
    /// form.
    Run {
        /// The arguments to run with.
        args: String,
        /// The plugin whose rewrite `args` is, if one rewrote them.
        rewritten_by: Option<Arc<str>>,
    },
    /// Do not run it: the reason is the call's answer.
    Skip {
        /// The skipping guard's reason.
        reason: String,
        /// The arguments it saw (an earlier guard's rewrite, if any).
        args: String,
        /// The plugin that skipped it.
        by: Arc<str>,
    },
    /// Do not run it; the run goes on. A guard rewrote the arguments into
    /// something that is not a JSON object.
    Refuse {
        /// The plugin that did.
        by: Arc<str>,
        /// Why, in a sentence a model or a user reads.
        why: String,
    },
    /// End the run.
    Stop(Stopped),
}

/// What a door does with a tool's result.
#[derive(Clone, Debug, PartialEq)]
pub enum Output {
    /// Pass it on as it came.
    Keep,
    /// Pass this on instead (the client's shape is the door's to keep).
    Replace {
        /// The rewritten result.
        text: String,
        /// The plugin that rewrote it.
        by: Arc<str>,
    },
    /// End the run.
    Stop(Stopped),
}

/// The verdict on a tool call whose arguments the guards saw as `asked`
/// (canonical JSON text), from its settled outcome
/// ([`Stopped::settle`]); see the table above.
pub fn tool_call(settled: Result<Decision, Stopped>, asked: String) -> Call {
    let decision = match settled {
        Ok(decision) => decision,
        Err(stop) => return Call::Stop(stop),
    };
    let by = decision.by();
    match decision.flow {
        Flow::Continue => Call::Run {
            args: asked,
            rewritten_by: None,
        },
        Flow::RewriteArgs(args) => match rewritten_args(&args, &by) {
            Ok(_) => Call::Run {
                args,
                rewritten_by: Some(by),
            },
            Err(why) => Call::Refuse { by, why },
        },
        Flow::Skip(reason) => Call::Skip {
            reason,
            args: decision.rewritten.unwrap_or(asked),
            by,
        },
        Flow::Terminate(reason) => Call::Stop(Stopped::Terminated {
            plugin: by.to_string(),
            event: EventKind::ToolCall,
            reason,
        }),
        other => Call::Stop(unhonoured(&other, EventKind::ToolCall)),
    }
}

/// `args`, `by`'s rewrite of a call's arguments, as the JSON object every
/// client takes (docs/architecture.md#rewrites-keep-the-clients-shapes).
///
/// # Errors
/// The sentence refusing the call, for a model or a user to read, when the
/// rewrite is other JSON. [`tool_call`] answers it as [`Call::Refuse`];
/// a door that maps the flow itself (an agent's hook reply) says it in its
/// own terms.
pub fn rewritten_args(args: &str, by: &str) -> Result<Value, String> {
    hookbox::json::args_object(args).ok_or_else(|| {
        format!(
            "hookbox: `{by}` rewrote the arguments into something that is not a JSON object; the call is refused"
        )
    })
}

/// `system`, a model request's system text, with a patch-request's
/// `documents` appended; see the table above.
pub fn with_context(system: Option<String>, documents: Option<Vec<Document>>) -> Option<String> {
    let Some(documents) = documents.filter(|d| !d.is_empty()) else {
        return system;
    };
    let mut text = system.unwrap_or_default();
    for doc in documents {
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        text.push_str(&format!(
            "<document id=\"{}\">\n{}\n</document>",
            doc.id, doc.text
        ));
    }
    Some(text)
}

/// What the model may read of a tool's result.
#[derive(Clone, Debug, PartialEq)]
pub enum Reading {
    /// The result as it came.
    Keep,
    /// This instead, in the result's own shape.
    Replace {
        /// The rewrite: a JSON string for a text result, the result's
        /// structure for other JSON.
        with: Value,
        /// The plugin that rewrote it.
        by: Arc<str>,
        /// Whether the rewrite fit the result's shape; when it did not,
        /// `with` is the result withheld.
        fits: bool,
    },
}

impl Reading {
    /// The replacement as text: a string as itself, other JSON as its
    /// compact text.
    pub fn text(&self) -> Option<String> {
        match self {
            Reading::Keep => None,
            Reading::Replace { with, .. } => Some(crate::shape::result_text(with)),
        }
    }
}

/// What the model may read of `returned`, a tool's result, from the
/// settled outcome of asking about it; see the table above.
///
/// # Errors
/// The stop, when the run ends.
pub fn reading(settled: Result<Decision, Stopped>, returned: &Value) -> Result<Reading, Stopped> {
    match tool_result(settled) {
        Output::Stop(stop) => Err(stop),
        Output::Keep => Ok(Reading::Keep),
        Output::Replace { text, by } => Ok(match crate::shape::reshape(returned, &text) {
            Ok(with) => Reading::Replace {
                with,
                by,
                fits: true,
            },
            Err(why) => Reading::Replace {
                with: crate::shape::withhold(
                    returned,
                    &format!(
                        "hookbox: `{by}` rewrote this tool's result in a way that does not fit its shape ({why}); the result is withheld"
                    ),
                ),
                by,
                fits: false,
            },
        }),
    }
}

/// The verdict on a tool's result, from its settled outcome; see the
/// table above.
pub fn tool_result(settled: Result<Decision, Stopped>) -> Output {
    let decision = match settled {
        Ok(decision) => decision,
        Err(stop) => return Output::Stop(stop),
    };
    let by = decision.by();
    match decision.flow {
        Flow::Continue => Output::Keep,
        Flow::RewriteResult(text) => Output::Replace { text, by },
        Flow::Terminate(reason) => Output::Stop(Stopped::Terminated {
            plugin: by.to_string(),
            event: EventKind::ToolResult,
            reason,
        }),
        other => Output::Stop(unhonoured(&other, EventKind::ToolResult)),
    }
}

/// What to change of the model call about to be made, for that call only.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    /// The patch; `None`: make the call as it is.
    pub patch: Option<RequestPatch>,
    /// The plugin whose patch it is.
    pub by: Option<Arc<str>>,
}

impl Request {
    /// The system text the model reads this call, given the one it would
    /// have read: the patch's preamble in its place if it sets one, then
    /// each extra-context document ([`with_context`]).
    pub fn system(&self, system: Option<String>) -> Option<String> {
        let Some(patch) = &self.patch else {
            return system;
        };
        with_context(
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

/// The stop for a flow the core should have refused.
fn unhonoured(flow: &Flow, event: EventKind) -> Stopped {
    Stopped::FailedClosed(FailClosed::host(
        Cause::UnsupportedFlow,
        format!("a `{}` reached the door of a `{event}` event", flow.name()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn by(plugin: &str, flow: Flow) -> Result<Decision, Stopped> {
        Ok(Decision {
            plugin: Some(Arc::from(plugin)),
            ..Decision::new(flow)
        })
    }

    fn terminated(event: EventKind) -> Stopped {
        Stopped::Terminated {
            plugin: "g".into(),
            event,
            reason: "no".into(),
        }
    }

    const ASKED: &str = r#"{"path":"/etc/passwd"}"#;

    // One test per row of the tool-call table.

    #[test]
    fn call_a_stop_stops() {
        let stop = Stopped::FailedClosed(FailClosed::host(Cause::Trap, "x"));
        assert_eq!(tool_call(Err(stop.clone()), ASKED.into()), Call::Stop(stop));
        assert_eq!(
            tool_call(by("g", Flow::Terminate("no".into())), ASKED.into()),
            Call::Stop(terminated(EventKind::ToolCall))
        );
    }

    #[test]
    fn call_continue_runs_what_the_guards_saw() {
        assert_eq!(
            tool_call(Ok(Decision::new(Flow::Continue)), ASKED.into()),
            Call::Run {
                args: ASKED.into(),
                rewritten_by: None
            }
        );
    }

    #[test]
    fn call_rewrite_args_to_an_object_runs_the_rewrite() {
        let jailed = r#"{"path":"/jail/etc/passwd"}"#;
        assert_eq!(
            tool_call(by("jail", Flow::RewriteArgs(jailed.into())), ASKED.into()),
            Call::Run {
                args: jailed.into(),
                rewritten_by: Some(Arc::from("jail"))
            }
        );
    }

    #[test]
    fn call_rewrite_args_to_other_json_is_refused() {
        for rewrite in ["[1]", "\"text\"", "3", "null"] {
            let verdict = tool_call(by("odd", Flow::RewriteArgs(rewrite.into())), ASKED.into());
            let Call::Refuse { by, why } = verdict else {
                panic!("{rewrite}: {verdict:?}");
            };
            assert_eq!(&*by, "odd");
            assert!(
                why.contains("`odd`") && why.contains("not a JSON object"),
                "{why}"
            );
        }
    }

    #[test]
    fn call_skip_answers_with_the_reason_and_the_arguments_it_saw() {
        let seen = r#"{"path":"/jail/etc/passwd"}"#;
        let skipped = Ok(Decision {
            plugin: Some(Arc::from("deny")),
            rewritten: Some(seen.into()),
            ..Decision::new(Flow::Skip("denied".into()))
        });
        assert_eq!(
            tool_call(skipped, ASKED.into()),
            Call::Skip {
                reason: "denied".into(),
                args: seen.into(),
                by: Arc::from("deny")
            }
        );
    }

    #[test]
    fn call_a_flow_the_core_refuses_stops_naming_the_host() {
        let Call::Stop(stop) = tool_call(by("g", Flow::Retry("x".into())), ASKED.into()) else {
            panic!("not a stop");
        };
        assert_eq!(stop.plugin(), hookbox::HOST);
    }

    // One test per row of the tool-result table.

    #[test]
    fn result_a_stop_stops() {
        assert_eq!(
            tool_result(by("g", Flow::Terminate("no".into()))),
            Output::Stop(terminated(EventKind::ToolResult))
        );
    }

    #[test]
    fn result_continue_keeps_it() {
        assert_eq!(tool_result(Ok(Decision::new(Flow::Continue))), Output::Keep);
    }

    #[test]
    fn result_rewrite_result_replaces_it() {
        assert_eq!(
            tool_result(by("redact", Flow::RewriteResult("[redacted]".into()))),
            Output::Replace {
                text: "[redacted]".into(),
                by: Arc::from("redact")
            }
        );
    }

    #[test]
    fn rewritten_args_is_the_object_or_the_refusal() {
        assert_eq!(
            rewritten_args(r#"{"a":1}"#, "g"),
            Ok(serde_json::json!({"a": 1}))
        );
        let why = rewritten_args("[1]", "g").unwrap_err();
        assert!(
            why.contains("`g`") && why.contains("not a JSON object"),
            "{why}"
        );
    }

    // One test per row of the context table.

    fn doc(id: &str, text: &str) -> Document {
        Document {
            id: id.into(),
            text: text.into(),
        }
    }

    #[test]
    fn context_without_documents_keeps_the_system_text() {
        assert_eq!(
            with_context(Some("be brief".into()), None),
            Some("be brief".into())
        );
        assert_eq!(
            with_context(Some("be brief".into()), Some(vec![])),
            Some("be brief".into())
        );
        assert_eq!(with_context(None, Some(vec![])), None);
    }

    #[test]
    fn context_documents_follow_the_system_text() {
        let docs = Some(vec![doc("a", "one"), doc("b", "two")]);
        assert_eq!(
            with_context(Some("be brief".into()), docs.clone()).as_deref(),
            Some(
                "be brief\n\n<document id=\"a\">\none\n</document>\n\n<document id=\"b\">\ntwo\n</document>"
            )
        );
        assert_eq!(
            with_context(None, docs).as_deref(),
            Some("<document id=\"a\">\none\n</document>\n\n<document id=\"b\">\ntwo\n</document>")
        );
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
