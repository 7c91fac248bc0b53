//! Hook decisions as `tracing` spans, shaped by the OpenTelemetry GenAI
//! guardrail convention (`apply_guardrail`, in development status there), so
//! a binary that exports spans (`hookbox run` and `serve` do, to OTLP) shows
//! each decision inside its run.
//!
//! Every dispatch that reaches a hook opens one span, at `DEBUG` level with
//! the target `hookbox::trace`: nothing is built unless a subscriber asks for
//! that target. Its attributes:
//!
//! | attribute | value |
//! |---|---|
//! | span name (`otel.name`) | `apply_guardrail {target}`, e.g. `apply_guardrail tool_call` |
//! | `gen_ai.operation.name` | `apply_guardrail` |
//! | `gen_ai.conversation.id` | the run id |
//! | `gen_ai.security.target.type` | [`target_type`] of the event |
//! | `gen_ai.security.decision.type` | [`decision_type`] of the flow; `deny` when the run fails closed |
//! | `gen_ai.guardian.name` | the plugin that decided (none when all continued) |
//! | `gen_ai.security.decision.reason` | the flow's [`Flow::reason`], only when content capture is on |
//! | `hookbox.event`, `hookbox.flow` | the event kind and flow names (`fail-closed` for a failure) |
//! | `hookbox.cause`, `error.type` | the fail-closed cause (`trap`, `deadline`, ...) |
//! | status | error, with the failure's message, when the run fails closed |
//!
//! Content (a guard's reasons here; messages, tool arguments and results in
//! the runner) is recorded only after [`set_capture_content`]`(true)`: the
//! binaries turn it on from `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`
//! ([`capture_setting`]).

use std::sync::atomic::{AtomicBool, Ordering};

use crate::decision::Outcome;
use crate::error::FailClosed;
use crate::event::{EventKind, HookContext};
use crate::flow::Flow;

static CAPTURE_CONTENT: AtomicBool = AtomicBool::new(false);

/// Whether spans may carry content: message text, tool arguments and
/// results, guards' reasons. Off unless turned on.
pub fn capture_content() -> bool {
    CAPTURE_CONTENT.load(Ordering::Relaxed)
}

/// Turns content capture on or off for the process.
pub fn set_capture_content(on: bool) {
    CAPTURE_CONTENT.store(on, Ordering::Relaxed);
}

/// What a value of `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`
/// asks for: `true`, `SPAN_ONLY` and `SPAN_AND_EVENT` (any case) capture
/// content on spans; anything else, or no value, does not.
pub fn capture_setting(value: Option<&str>) -> bool {
    value.is_some_and(|v| {
        let v = v.trim();
        ["true", "span_only", "span_and_event"]
            .iter()
            .any(|on| v.eq_ignore_ascii_case(on))
    })
}

/// The convention's `gen_ai.security.decision.type` for a flow: `allow`
/// (continue), `deny` (terminate, skip, fail, retry: what was asked for does
/// not happen as asked) or `modify` (rewrite-args, rewrite-result,
/// patch-request, repair).
pub fn decision_type(flow: &Flow) -> &'static str {
    match flow {
        Flow::Continue => "allow",
        Flow::Terminate(_) | Flow::Skip(_) | Flow::Fail | Flow::Retry(_) => "deny",
        Flow::RewriteArgs(_) | Flow::RewriteResult(_) | Flow::PatchRequest(_) | Flow::Repair(_) => {
            "modify"
        }
    }
}

/// The convention's `gen_ai.security.target.type` for an event: what the
/// guard looks at. `llm_input` (the request), `llm_output` (the answer, whole
/// or streamed), `tool_call` (a call, whole, streamed or invalid) and, beyond
/// the convention's list, `tool_result`.
pub fn target_type(kind: EventKind) -> &'static str {
    match kind {
        EventKind::CompletionCall => "llm_input",
        EventKind::CompletionResponse
        | EventKind::ModelTurnFinished
        | EventKind::TextDelta
        | EventKind::StreamResponseFinish => "llm_output",
        EventKind::ToolCall | EventKind::ToolCallDelta | EventKind::InvalidToolCall => "tool_call",
        EventKind::ToolResult => "tool_result",
    }
}

/// The span name for `kind`'s target, without building a string.
fn span_name(kind: EventKind) -> &'static str {
    match target_type(kind) {
        "llm_input" => "apply_guardrail llm_input",
        "llm_output" => "apply_guardrail llm_output",
        "tool_call" => "apply_guardrail tool_call",
        _ => "apply_guardrail tool_result",
    }
}

/// The span of one decision about a `kind` event in the run of `ctx`;
/// disabled (and free) unless a subscriber wants `hookbox::trace`.
pub(crate) fn decision_span(kind: EventKind, ctx: &HookContext) -> tracing::Span {
    tracing::debug_span!(
        target: "hookbox::trace",
        "apply_guardrail",
        otel.name = span_name(kind),
        otel.kind = "internal",
        gen_ai.operation.name = "apply_guardrail",
        gen_ai.conversation.id = ctx.run_id.as_str(),
        gen_ai.security.target.type = target_type(kind),
        gen_ai.security.decision.type = tracing::field::Empty,
        gen_ai.security.decision.reason = tracing::field::Empty,
        gen_ai.guardian.name = tracing::field::Empty,
        hookbox.event = kind.name(),
        hookbox.flow = tracing::field::Empty,
        hookbox.cause = tracing::field::Empty,
        error.type = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
        otel.status_description = tracing::field::Empty,
    )
}

/// Records how the decision came out on its span.
pub(crate) fn record(span: &tracing::Span, outcome: &Outcome) {
    if span.is_disabled() {
        return;
    }
    match outcome {
        Ok(decision) => {
            span.record(
                "gen_ai.security.decision.type",
                decision_type(&decision.flow),
            );
            span.record("hookbox.flow", decision.flow.name());
            if let Some(plugin) = &decision.plugin {
                span.record("gen_ai.guardian.name", &**plugin);
            }
            if capture_content()
                && let Some(reason) = decision.flow.reason()
            {
                span.record("gen_ai.security.decision.reason", reason);
            }
        }
        Err(failure) => record_failure(span, failure),
    }
}

fn record_failure(span: &tracing::Span, failure: &FailClosed) {
    span.record("gen_ai.security.decision.type", "deny");
    span.record("hookbox.flow", "fail-closed");
    span.record("gen_ai.guardian.name", &*failure.plugin);
    span.record("hookbox.cause", failure.cause.name());
    span.record("error.type", failure.cause.name());
    span.record("otel.status_code", "error");
    span.record("otel.status_description", failure.to_string().as_str());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_capture_takes_the_conventions_values_only() {
        for on in ["true", "TRUE", "SPAN_ONLY", "span_and_event", " true "] {
            assert!(capture_setting(Some(on)), "{on}");
        }
        for off in ["false", "NO_CONTENT", "EVENT_ONLY", "1", "yes", ""] {
            assert!(!capture_setting(Some(off)), "{off}");
        }
        assert!(!capture_setting(None));
    }

    #[test]
    fn every_flow_has_a_decision_type_and_every_kind_a_target() {
        let flows = [
            (Flow::Continue, "allow"),
            (Flow::terminate("r"), "deny"),
            (Flow::skip("r"), "deny"),
            (Flow::Fail, "deny"),
            (Flow::retry("r"), "deny"),
            (Flow::rewrite_args("{}"), "modify"),
            (Flow::rewrite_result("x"), "modify"),
            (Flow::PatchRequest(Default::default()), "modify"),
            (Flow::repair("t"), "modify"),
        ];
        for (flow, expected) in flows {
            assert_eq!(decision_type(&flow), expected, "{}", flow.name());
        }
        for kind in EventKind::ALL {
            assert_eq!(
                span_name(kind),
                format!("apply_guardrail {}", target_type(kind)),
                "{kind}"
            );
        }
    }
}
