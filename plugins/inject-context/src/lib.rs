//! Inject context documents into the model request (patch-request).
//!
//! Config: `doc.<id>` = the document's text (any number); `turns` = `first`
//! (default: only the first model call) or `every`.

use hookbox_sdk::{Document, EventKind, Flow, Hook, HookContext, RequestPatch, StepEvent, config};

struct InjectContext;

const DEFAULT_DOC: &str = "House rules: work only inside the workspace; never print credentials; \
                           prefer small, reviewable changes.";

impl Hook for InjectContext {
    fn subscriptions() -> Vec<EventKind> {
        vec![EventKind::CompletionCall]
    }

    fn on_event(ctx: &HookContext, _event: StepEvent) -> Flow {
        if config::get_or("turns", "first") == "first" && ctx.turn > 1 {
            return Flow::Continue;
        }
        let mut docs: Vec<Document> = config::entries()
            .into_iter()
            .filter_map(|(key, text)| {
                Some(Document {
                    id: key.strip_prefix("doc.")?.to_owned(),
                    text,
                })
            })
            .collect();
        if docs.is_empty() {
            docs.push(Document {
                id: "house-rules".into(),
                text: DEFAULT_DOC.into(),
            });
        }
        Flow::patch(RequestPatch {
            extra_context: Some(docs),
            ..Default::default()
        })
    }
}

hookbox_sdk::hook!(InjectContext);
