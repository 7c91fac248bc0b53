//! The rules of the contract, as data: which flows each event honours and how
//! a stack combines its hooks' flows.
//!
//! | event | honours | composition |
//! |---|---|---|
//! | completion-call | continue, patch-request, terminate | accumulate: patches merge in order; terminate stops and discards the patch |
//! | completion-response | continue, terminate | first non-continue wins |
//! | model-turn-finished | continue, terminate | first non-continue wins |
//! | invalid-tool-call | fail, retry, repair, skip, terminate (continue passes; a stack that ends on continue means fail) | first non-continue wins |
//! | tool-call | continue, rewrite-args, skip, terminate | chain: rewrites thread into the next hook; skip / terminate end the chain and keep the rewrite |
//! | tool-result | continue, rewrite-result, terminate | chain on the model-visible result |
//! | text-delta | continue, rewrite-result, terminate | chain on the text so far (`aggregated`): a rewrite is what the client shows of it; the door holds back the tail a rewrite could still reach |
//! | tool-call-delta | continue, terminate | first non-continue wins |
//! | stream-response-finish | continue, terminate | first non-continue wins |
//!
//! A hook answering with a flow its event does not honour ends the run
//! fail-closed ([`crate::Cause::UnsupportedFlow`]).

use crate::event::EventKind;
use crate::flow::Flow;

/// How a stack combines its hooks' flows for one event kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Composition {
    /// Every hook is asked; patch-request patches merge in registration order.
    Accumulate,
    /// Rewrites thread into the next hook's event; skip / terminate end the chain.
    Chain,
    /// The first hook that does not continue decides; later hooks are not asked.
    FirstNonContinue,
}

impl EventKind {
    /// Whether a hook may answer this event with `flow`.
    pub fn honours(self, flow: &Flow) -> bool {
        use EventKind as E;
        match flow {
            Flow::Continue | Flow::Terminate(_) => true,
            Flow::PatchRequest(_) => self == E::CompletionCall,
            Flow::RewriteArgs(_) => self == E::ToolCall,
            Flow::RewriteResult(_) => matches!(self, E::ToolResult | E::TextDelta),
            Flow::Skip(_) => matches!(self, E::ToolCall | E::InvalidToolCall),
            Flow::Fail | Flow::Retry(_) | Flow::Repair(_) => self == E::InvalidToolCall,
        }
    }

    /// How a stack combines flows for this kind.
    pub fn composition(self) -> Composition {
        match self {
            EventKind::CompletionCall => Composition::Accumulate,
            EventKind::ToolCall | EventKind::ToolResult | EventKind::TextDelta => {
                Composition::Chain
            }
            _ => Composition::FirstNonContinue,
        }
    }

    /// The net flow when every hook continued.
    pub fn default_flow(self) -> Flow {
        match self {
            EventKind::InvalidToolCall => Flow::Fail,
            _ => Flow::Continue,
        }
    }
}

/// The names of the flows `kind` honours, in WIT order.
pub fn flows_honoured_by(kind: EventKind) -> impl Iterator<Item = &'static str> {
    every_flow()
        .into_iter()
        .filter(move |flow| kind.honours(flow))
        .map(|flow| flow.name())
}

/// One flow of each case, with empty payloads.
pub(crate) fn every_flow() -> [Flow; 9] {
    [
        Flow::Continue,
        Flow::Terminate(String::new()),
        Flow::Skip(String::new()),
        Flow::RewriteArgs(String::new()),
        Flow::RewriteResult(String::new()),
        Flow::PatchRequest(crate::flow::RequestPatch::default()),
        Flow::Fail,
        Flow::Retry(String::new()),
        Flow::Repair(String::new()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use EventKind as E;

    fn honoured(kind: EventKind) -> Vec<&'static str> {
        flows_honoured_by(kind).collect()
    }

    #[test]
    fn completion_call_honours_continue_patch_request_terminate() {
        assert_eq!(
            honoured(E::CompletionCall),
            ["continue", "terminate", "patch-request"]
        );
    }

    #[test]
    fn completion_response_honours_continue_terminate() {
        assert_eq!(honoured(E::CompletionResponse), ["continue", "terminate"]);
    }

    #[test]
    fn model_turn_finished_honours_continue_terminate() {
        assert_eq!(honoured(E::ModelTurnFinished), ["continue", "terminate"]);
    }

    #[test]
    fn invalid_tool_call_honours_fail_retry_repair_skip_terminate_and_defaults_to_fail() {
        assert_eq!(
            honoured(E::InvalidToolCall),
            ["continue", "terminate", "skip", "fail", "retry", "repair"]
        );
        assert_eq!(E::InvalidToolCall.default_flow(), Flow::Fail);
    }

    #[test]
    fn tool_call_honours_continue_rewrite_args_skip_terminate() {
        assert_eq!(
            honoured(E::ToolCall),
            ["continue", "terminate", "skip", "rewrite-args"]
        );
    }

    #[test]
    fn tool_result_honours_continue_rewrite_result_terminate() {
        assert_eq!(
            honoured(E::ToolResult),
            ["continue", "terminate", "rewrite-result"]
        );
    }

    #[test]
    fn text_delta_honours_continue_rewrite_result_terminate() {
        assert_eq!(
            honoured(E::TextDelta),
            ["continue", "terminate", "rewrite-result"]
        );
    }

    #[test]
    fn tool_call_deltas_and_the_stream_finish_honour_continue_terminate() {
        for kind in [E::ToolCallDelta, E::StreamResponseFinish] {
            assert_eq!(honoured(kind), ["continue", "terminate"], "{kind}");
        }
    }

    #[test]
    fn each_event_has_the_composition_of_the_design() {
        for kind in EventKind::ALL {
            let expected = match kind {
                E::CompletionCall => Composition::Accumulate,
                E::ToolCall | E::ToolResult | E::TextDelta => Composition::Chain,
                _ => Composition::FirstNonContinue,
            };
            assert_eq!(kind.composition(), expected, "{kind}");
            if kind != E::InvalidToolCall {
                assert_eq!(kind.default_flow(), Flow::Continue, "{kind}");
            }
        }
    }
}
