//! Deny tool calls by name and by argument pattern (config-driven).

use hookbox_sdk::{config, glob_match, EventKind, Flow, Hook, HookContext, StepEvent};

struct DenyTools;

impl Hook for DenyTools {
    fn subscriptions() -> Vec<EventKind> {
        vec![EventKind::ToolCall]
    }

    fn on_event(_ctx: &HookContext, event: StepEvent) -> Flow {
        let StepEvent::ToolCall(call) = event else { return Flow::Continue };
        let allow = config::list("allow");
        if !allow.is_empty() && !allow.iter().any(|p| glob_match(p, &call.tool_name)) {
            return deny(&call.tool_name, "it is not on the allow-list");
        }
        if config::list("deny").iter().any(|p| glob_match(p, &call.tool_name)) {
            return deny(&call.tool_name, "it is on the deny-list");
        }
        if let Some(p) = config::list("deny_args").iter().find(|p| glob_match(p, &call.args)) {
            return deny(&call.tool_name, &format!("its arguments match the denied pattern `{p}`"));
        }
        Flow::Continue
    }
}

fn deny(tool: &str, why: &str) -> Flow {
    Flow::skip(format!("Not executed: the `{tool}` call was denied by policy because {why}. Do not retry it."))
}

hookbox_sdk::hook!(DenyTools);
