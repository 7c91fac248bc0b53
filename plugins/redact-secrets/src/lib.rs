//! Redact secrets and e-mail addresses from tool results before the model
//! sees them, with gitleaks' rule set and the shapes tool output has:
//! plain text anywhere on a line, command lines, JSON at any depth (JSON
//! inside strings too), object keys, values under secret names. A result
//! keeps its shape.

mod document;
mod rules;
mod scan;

use hookbox_sdk::{EventKind, Flow, Hook, HookContext, StepEvent, config};

struct RedactSecrets;

impl Hook for RedactSecrets {
    fn subscriptions() -> Vec<EventKind> {
        vec![EventKind::ToolResult]
    }

    fn on_event(_ctx: &HookContext, event: StepEvent) -> Flow {
        let StepEvent::ToolResult(result) = event else {
            return Flow::Continue;
        };
        let emails = config::get_or("emails", "true") == "true";
        match document::redact(&result.result, emails) {
            Some(redacted) if redacted != result.result => Flow::rewrite_result(redacted),
            _ => Flow::Continue,
        }
    }
}

hookbox_sdk::hook!(RedactSecrets);

/// Everything the scanner builds (gitleaks' keyword automaton, its 200-odd
/// regexes, the shapes), built once when the guard is built: `hookbox
/// build` runs this and keeps the memory it leaves, so a run starts with
/// them instead of building them (milliseconds) in every fresh instance.
fn prepare() {
    scan::prepare();
}

hookbox_sdk::pre_initialize!(prepare);
