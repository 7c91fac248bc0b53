//! Repair misspelled tool names: an invalid tool call whose name is within a
//! small edit distance of an allowed tool is repaired to it; otherwise the
//! model is asked to retry, with the list of valid tools.

use hookbox_sdk::{EventKind, Flow, Hook, HookContext, StepEvent, config, text};

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
        // Case-insensitive; the bounded distance rejects a name far longer
        // or shorter than a tool without comparing them.
        let name = call.tool_name.to_lowercase();
        let best = tools
            .iter()
            .filter_map(|t| {
                Some((
                    text::edit_distance_within(&name, &t.to_lowercase(), max)?,
                    t,
                ))
            })
            .min();
        match best {
            Some((_, tool)) => Flow::repair(tool.clone()),
            None => Flow::retry(format!(
                "`{}` is not a valid tool. Call one of: [{}].",
                shown(&call.tool_name),
                tools.join(", ")
            )),
        }
    }
}

/// At most 200 bytes of a name the model made up, for its feedback.
fn shown(name: &str) -> &str {
    let mut end = name.len().min(200);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    &name[..end]
}

hookbox_sdk::hook!(RepairTools);
