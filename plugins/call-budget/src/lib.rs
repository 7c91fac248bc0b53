//! A tool-call budget per run: past `max_calls`, the run is terminated.

use hookbox_sdk::{EventKind, Flow, Hook, HookContext, StepEvent, config, scratchpad};

struct CallBudget;

impl Hook for CallBudget {
    fn subscriptions() -> Vec<EventKind> {
        vec![EventKind::ToolCall]
    }

    fn on_event(_ctx: &HookContext, _event: StepEvent) -> Flow {
        let max: u64 = config::get("max_calls")
            .and_then(|v| v.parse().ok())
            .unwrap_or(5);
        let calls = scratchpad::increment("calls", 1);
        if calls > max {
            Flow::terminate(format!(
                "tool-call budget exhausted: {calls} calls in this run, the limit is {max}"
            ))
        } else {
            Flow::Continue
        }
    }
}

hookbox_sdk::hook!(CallBudget);
