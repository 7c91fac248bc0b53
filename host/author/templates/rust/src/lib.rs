//! {{name}}: a hookbox guard. It skips calls to the tools its `deny`
//! setting names (comma-separated; default `shell`) and lets every other
//! call through. `hookbox test` runs the cases in `cases/`.

use hookbox_sdk::{EventKind, Flow, Hook, HookContext, StepEvent, config, log};

struct Guard;

impl Hook for Guard {
    fn subscriptions() -> Vec<EventKind> {
        vec![EventKind::ToolCall]
    }

    fn on_event(_ctx: &HookContext, event: StepEvent) -> Flow {
        let StepEvent::ToolCall(call) = event else {
            return Flow::Continue;
        };
        let deny = config::get_or("deny", "shell");
        if deny.split(',').any(|name| name.trim() == call.tool_name) {
            log::warn(&format!("denied a call to `{}`", call.tool_name));
            return Flow::skip(format!("`{}` is denied by policy", call.tool_name));
        }
        Flow::Continue
    }
}

hookbox_sdk::hook!(Guard);
