//! Jail file-path arguments to a directory: every path argument is resolved
//! against the jail and rewritten so it cannot leave it.

use hookbox_sdk::{EventKind, Flow, Hook, HookContext, StepEvent, config};
use serde_json::Value;

struct PathJail;

impl Hook for PathJail {
    fn subscriptions() -> Vec<EventKind> {
        vec![EventKind::ToolCall]
    }

    fn on_event(_ctx: &HookContext, event: StepEvent) -> Flow {
        let StepEvent::ToolCall(call) = event else {
            return Flow::Continue;
        };
        // `root = "."`: paths stay relative to the agent's working
        // directory and only those that would leave it are rewritten.
        let root = config::get_or("root", "/workspace");
        let mut fields = config::list("fields");
        if fields.is_empty() {
            fields = vec!["path".into()];
        }
        let Ok(Value::Object(mut args)) = serde_json::from_str::<Value>(&call.args) else {
            return Flow::Continue;
        };
        let mut changed = false;
        for field in &fields {
            if let Some(Value::String(path)) = args.get_mut(field) {
                let jailed = jail(&root, path);
                if jailed != *path {
                    *path = jailed;
                    changed = true;
                }
            }
        }
        if changed {
            Flow::rewrite_args(Value::Object(args).to_string())
        } else {
            Flow::Continue
        }
    }
}

/// Resolves `path` lexically inside `root`: relative paths start at the
/// root, `..` never climbs above it, absolute paths outside it are re-rooted.
fn jail(root: &str, path: &str) -> String {
    let root = root.trim_end_matches('/');
    let inside = path
        .strip_prefix(root)
        .filter(|rest| rest.is_empty() || rest.starts_with('/'))
        .unwrap_or(path);
    let mut parts: Vec<&str> = Vec::new();
    for part in inside.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            part => parts.push(part),
        }
    }
    if root == "." {
        return if parts.is_empty() {
            ".".to_owned()
        } else {
            parts.join("/")
        };
    }
    match (parts.is_empty(), root.is_empty()) {
        (true, true) => "/".to_owned(),
        (true, false) => root.to_owned(),
        (false, _) => format!("{root}/{}", parts.join("/")),
    }
}

hookbox_sdk::hook!(PathJail);
