//! Repair misspelled tool names: an invalid tool call whose name is within a
//! small edit distance of an allowed tool is repaired to it; otherwise the
//! model is asked to retry, with the list of valid tools.

use hookbox_sdk::{EventKind, Flow, Hook, HookContext, StepEvent, config};

struct RepairTools;

impl Hook for RepairTools {
    fn subscriptions() -> Vec<EventKind> {
        vec![EventKind::InvalidToolCall]
    }

    fn on_event(_ctx: &HookContext, event: StepEvent) -> Flow {
        let StepEvent::InvalidToolCall(call) = event else {
            return Flow::Continue;
        };
        let max: usize = config::get("max_distance")
            .and_then(|v| v.parse().ok())
            .unwrap_or(2);
        let tools = if call.allowed_tools.is_empty() {
            &call.available_tools
        } else {
            &call.allowed_tools
        };
        let best = tools
            .iter()
            .map(|t| (distance(&call.tool_name, t), t))
            .min();
        match best {
            Some((d, tool)) if d <= max => Flow::repair(tool.clone()),
            _ => Flow::retry(format!(
                "`{}` is not a valid tool. Call one of: [{}].",
                call.tool_name,
                tools.join(", ")
            )),
        }
    }
}

/// Levenshtein distance, case-insensitive.
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.to_lowercase().chars().collect();
    let b: Vec<char> = b.to_lowercase().chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

hookbox_sdk::hook!(RepairTools);
