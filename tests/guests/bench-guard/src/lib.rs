//! The benchmarks' guard as a hookbox component.

use hookbox_bench_guard::{Verdict, decide};
use hookbox_sdk::{EventKind, Flow, Hook, HookContext, StepEvent};

struct BenchGuard;

impl Hook for BenchGuard {
    fn subscriptions() -> Vec<EventKind> {
        vec![EventKind::ToolCall]
    }

    fn on_event(_ctx: &HookContext, event: StepEvent) -> Flow {
        let StepEvent::ToolCall(call) = event else {
            return Flow::Continue;
        };
        match decide(&call.args) {
            Verdict::Continue => Flow::Continue,
            Verdict::Skip(reason) => Flow::skip(reason),
            Verdict::RewriteArgs(args) => Flow::rewrite_args(args),
        }
    }
}

hookbox_sdk::hook!(BenchGuard);
