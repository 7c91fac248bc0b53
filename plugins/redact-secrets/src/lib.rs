//! Redact secrets and e-mail addresses from tool results before the model
//! sees them, and from the text a model streams before the user does, with gitleaks' rule set and the shapes tool output has:
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
        vec![EventKind::ToolResult, EventKind::TextDelta]
    }

    fn on_event(_ctx: &HookContext, event: StepEvent) -> Flow {
        // A tool's result, or the text the model has streamed so far (its
        // door shows only what a later delta cannot change:
        // docs/contract.md#streamed-text).
        let text = match event {
            StepEvent::ToolResult(result) => result.result,
            StepEvent::TextDelta(delta) => delta.aggregated,
            _ => return Flow::Continue,
        };
        let emails = config::get_or("emails", "true") == "true";
        match document::redact(&text, emails) {
            Some(redacted) if redacted != text => Flow::rewrite_result(redacted),
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
