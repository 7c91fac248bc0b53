//! Deny tool calls by name and by argument pattern (config-driven).
//!
//! Secure by default: without a `deny_args` setting, arguments matching
//! [`DEFAULT_DENY_ARGS`] are denied.

use hookbox_sdk::{EventKind, Flow, Hook, HookContext, StepEvent, config, glob_match};

struct DenyTools;

/// Denied argument patterns when `deny_args` is not set: destructive or
/// remote-code commands and credential files.
const DEFAULT_DENY_ARGS: &[&str] = &[
    "*rm -rf*",
    "*rm -fr*",
    "*mkfs*",
    "*dd if=*",
    "*| sh*",
    "*| bash*",
    "*.ssh/*",
    "*/etc/shadow*",
];

impl Hook for DenyTools {
    fn subscriptions() -> Vec<EventKind> {
        vec![EventKind::ToolCall]
    }

    fn on_event(_ctx: &HookContext, event: StepEvent) -> Flow {
        let StepEvent::ToolCall(call) = event else {
            return Flow::Continue;
        };
        let allow = config::list("allow");
        if !allow.is_empty() && !allow.iter().any(|p| glob_match(p, &call.tool_name)) {
            return deny(&call.tool_name, "it is not on the allow-list");
        }
        if config::list("deny")
            .iter()
            .any(|p| glob_match(p, &call.tool_name))
        {
            return deny(&call.tool_name, "it is on the deny-list");
        }
        let deny_args = match config::get("deny_args") {
            Some(_) => config::list("deny_args"),
            None => DEFAULT_DENY_ARGS.iter().map(|p| p.to_string()).collect(),
        };
        if let Some(p) = deny_args.iter().find(|p| glob_match(p, &call.args)) {
            return deny(
                &call.tool_name,
                &format!("its arguments match the denied pattern `{p}`"),
            );
        }
        Flow::Continue
    }
}

fn deny(tool: &str, why: &str) -> Flow {
    Flow::skip(format!(
        "Not executed: the `{tool}` call was denied by policy because {why}. Do not retry it."
    ))
}

hookbox_sdk::hook!(DenyTools);
