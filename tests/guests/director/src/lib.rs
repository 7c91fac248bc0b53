//! A test guest steered by its config: for each event kind it has a key
//! for, it answers that flow; for the rest it is not subscribed.
//!
//! - `<kind> = "<case>[:<payload>]"`, e.g. `tool-call = "skip:no shell"`;
//!   `patch-request` takes its patch from `patch.*` keys instead.
//! - `<kind>.when = "<text>"`: only when the event's text (tool name and
//!   arguments, result, prompt, delta ...) contains it.
//! - `<kind>.turn = "<n>"`: only at that turn.
//! - `patch.preamble`, `patch.temperature`, `patch.max-tokens`,
//!   `patch.tool-choice` (`auto|none|required|a,b`), `patch.active-tools`
//!   (`a,b`), `patch.additional-params` (JSON text), `patch.extra-context`
//!   (`id=text`), `patch.history` (`role:text|role:text`).

use hookbox_sdk::{
    Document, EventKind, Flow, Hook, HookContext, Message, RequestPatch, Role, StepEvent,
    ToolChoice, config,
};

struct Director;

impl Hook for Director {
    fn subscriptions() -> Vec<EventKind> {
        EventKind::ALL
            .into_iter()
            .filter(|k| config::get(k.name()).is_some())
            .collect()
    }

    fn on_event(ctx: &HookContext, event: StepEvent) -> Flow {
        let kind = event.kind().name();
        let Some(spec) = config::get(kind) else {
            return Flow::Continue;
        };
        if let Some(needle) = config::get(&format!("{kind}.when"))
            && !text(&event).contains(&needle)
        {
            return Flow::Continue;
        }
        if let Some(turn) = config::get(&format!("{kind}.turn"))
            && turn != ctx.turn.to_string()
        {
            return Flow::Continue;
        }
        let (case, payload) = spec.split_once(':').unwrap_or((&spec, ""));
        let payload = payload.to_owned();
        match case {
            "continue" => Flow::Continue,
            "terminate" => Flow::Terminate(payload),
            "skip" => Flow::Skip(payload),
            "rewrite-args" => Flow::RewriteArgs(payload),
            "rewrite-result" => Flow::RewriteResult(payload),
            "patch-request" => Flow::PatchRequest(patch()),
            "fail" => Flow::Fail,
            "retry" => Flow::Retry(payload),
            "repair" => Flow::Repair(payload),
            other => Flow::Terminate(format!("director: unknown flow `{other}`")),
        }
    }
}

fn patch() -> RequestPatch {
    let get = |key: &str| config::get(&format!("patch.{key}"));
    let list = |text: String| text.split(',').map(str::to_owned).collect::<Vec<_>>();
    RequestPatch {
        preamble: get("preamble"),
        temperature: get("temperature").and_then(|t| t.parse().ok()),
        max_tokens: get("max-tokens").and_then(|t| t.parse().ok()),
        tool_choice: get("tool-choice").map(|c| match c.as_str() {
            "auto" => ToolChoice::Auto,
            "none" => ToolChoice::None,
            "required" => ToolChoice::Required,
            _ => ToolChoice::Specific(list(c)),
        }),
        active_tools: get("active-tools").map(list),
        additional_params: get("additional-params"),
        extra_context: get("extra-context").map(|doc| {
            let (id, text) = doc.split_once('=').unwrap_or(("doc", &doc));
            vec![Document {
                id: id.into(),
                text: text.into(),
            }]
        }),
        history: get("history").map(|h| {
            h.split('|')
                .map(|m| {
                    let (role, content) = m.split_once(':').unwrap_or(("user", m));
                    let role = match role {
                        "system" => Role::System,
                        "assistant" => Role::Assistant,
                        "tool" => Role::Tool,
                        _ => Role::User,
                    };
                    Message {
                        role,
                        content: content.into(),
                    }
                })
                .collect()
        }),
    }
}

fn text(event: &StepEvent) -> String {
    match event {
        StepEvent::CompletionCall(e) => e.prompt.clone(),
        StepEvent::CompletionResponse(e) => e.response.content.clone(),
        StepEvent::ModelTurnFinished(e) => e.content.clone(),
        StepEvent::InvalidToolCall(e) => e.tool_name.clone(),
        StepEvent::ToolCall(e) => format!("{} {}", e.tool_name, e.args),
        StepEvent::ToolResult(e) => format!("{} {}", e.tool_name, e.result),
        StepEvent::TextDelta(e) => e.aggregated.clone(),
        StepEvent::ToolCallDelta(e) => e.delta.clone(),
        StepEvent::StreamResponseFinish(e) => e.response.content.clone(),
    }
}

hookbox_sdk::hook!(Director);
