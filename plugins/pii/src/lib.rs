//! Redact personal data from tool results before the model sees them, and
//! from the text a model streams before the user does:
//! e-mail addresses, phone numbers, payment cards, IBANs, national IDs and
//! IP addresses ([`find`]), each replaced by its label or, where the
//! operator asks, by a value of the same shape. A JSON result keeps its
//! layout: each string in it is redacted in place.

pub mod find;

use find::{Entity, Found};
use hookbox_sdk::json::{self, Node};
use hookbox_sdk::{EventKind, Flow, Hook, HookContext, StepEvent, config};

struct Pii;

impl Hook for Pii {
    fn subscriptions() -> Vec<EventKind> {
        vec![EventKind::ToolResult, EventKind::TextDelta]
    }

    fn on_event(_ctx: &HookContext, event: StepEvent) -> Flow {
        static POLICY: std::sync::OnceLock<Policy> = std::sync::OnceLock::new();
        let policy = POLICY.get_or_init(Policy::from_config);
        let redacted = match event {
            StepEvent::ToolResult(result) => policy.redact_document(&result.result),
            // The text the model has streamed so far: its door shows only
            // what a later delta cannot change (docs/contract.md#streamed-text).
            StepEvent::TextDelta(delta) => policy.redact(&delta.aggregated),
            _ => None,
        };
        match redacted {
            Some(redacted) => Flow::rewrite_result(redacted),
            None => Flow::Continue,
        }
    }
}

hookbox_sdk::hook!(Pii);

/// The operator's settings.
#[derive(Debug, Clone)]
pub struct Policy {
    /// The entities redacted.
    entities: Vec<Entity>,
    /// The entities rewritten by shape rather than by label.
    shaped: Vec<Entity>,
    /// How many letters and digits a shaped card or IBAN keeps at its end.
    keep_last: usize,
}

impl Default for Policy {
    fn default() -> Self {
        Policy::new(&Entity::ALL, &[], 0)
    }
}

impl Policy {
    fn from_config() -> Policy {
        let entities: Vec<Entity> = match config::list("entities") {
            names if names.is_empty() => Entity::ALL.to_vec(),
            names => names.iter().filter_map(|n| Entity::named(n)).collect(),
        };
        let shaped: Vec<Entity> = config::list("shape")
            .iter()
            .filter_map(|n| Entity::named(n))
            .collect();
        let keep_last = config::get("keep_last")
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0);
        Policy::new(&entities, &shaped, keep_last)
    }

    /// A policy: the entities redacted, the ones of those rewritten by
    /// shape, and what a shaped card or IBAN keeps at its end.
    pub fn new(entities: &[Entity], shaped: &[Entity], keep_last: usize) -> Policy {
        Policy {
            entities: entities.to_vec(),
            shaped: shaped.to_vec(),
            keep_last,
        }
    }

    /// The personal data `text` holds that this policy redacts.
    pub fn find(&self, text: &str) -> Vec<Found> {
        let mut found = find::find(text);
        found.retain(|f| self.entities.contains(&f.entity));
        found
    }

    /// `text` redacted, or `None` when it holds nothing to redact.
    pub fn redact(&self, text: &str) -> Option<String> {
        let found = self.find(text);
        if found.is_empty() {
            return None;
        }
        let mut out = String::with_capacity(text.len());
        let mut copied = 0;
        for f in found {
            out.push_str(&text[copied..f.start]);
            let value = &text[f.start..f.end];
            if self.shaped.contains(&f.entity) {
                let keep = if matches!(f.entity, Entity::Card | Entity::Iban) {
                    self.keep_last
                } else {
                    0
                };
                out.push_str(&shaped(value, keep));
            } else {
                out.push_str(f.entity.label());
            }
            copied = f.end;
        }
        out.push_str(&text[copied..]);
        Some(out)
    }

    /// A tool's result redacted: a JSON document value by value, its
    /// layout kept (a number that is a card or a phone number becomes the
    /// string of its label); other text as text.
    pub fn redact_document(&self, text: &str) -> Option<String> {
        if text.trim_start().starts_with(['{', '[', '"'])
            && let Some(out) = json::map_nodes(text, |_, node| match node {
                Node::String(s) => self.redact(s),
                Node::Scalar(n) if n.bytes().all(|c| c.is_ascii_digit()) => {
                    self.redact(n).filter(|_| {
                        self.find(n)
                            .first()
                            .is_some_and(|f| f.start == 0 && f.end == n.len())
                    })
                }
                _ => None,
            })
        {
            return (out != text).then_some(out);
        }
        self.redact(text)
    }
}

/// `value` with its shape kept: each digit `0`, each letter `x` or `X`,
/// everything else as it is, but the last `keep` letters and digits.
fn shaped(value: &str, keep: usize) -> String {
    let alnum = value.chars().filter(char::is_ascii_alphanumeric).count();
    let mut seen = 0;
    value
        .chars()
        .map(|c| {
            if !c.is_ascii_alphanumeric() {
                return c;
            }
            seen += 1;
            if seen > alnum.saturating_sub(keep) {
                c
            } else if c.is_ascii_digit() {
                '0'
            } else if c.is_ascii_uppercase() {
                'X'
            } else {
                'x'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_entity_is_replaced_by_its_label() {
        let p = Policy::default();
        assert_eq!(
            p.redact("Ada <ada@example.com>, +1 (555) 123-4567, card 4111-1111-1111-1111, IBAN DE89370400440532013000, SSN 570-08-5341, from 203.0.113.9.").as_deref(),
            Some("Ada <[REDACTED EMAIL]>, [REDACTED PHONE], card [REDACTED CARD], IBAN [REDACTED IBAN], SSN [REDACTED NATIONAL ID], from [REDACTED IP].")
        );
        assert_eq!(p.redact("nothing personal here, build 1.2.3"), None);
    }

    #[test]
    fn entities_are_chosen_and_shaped_per_entity() {
        let p = Policy::new(&[Entity::Card, Entity::Email], &[Entity::Card], 4);
        assert_eq!(
            p.redact("4111 1111 1111 1111 / ada@example.com / 570-08-5341")
                .as_deref(),
            Some("0000 0000 0000 1111 / [REDACTED EMAIL] / 570-08-5341")
        );
        let p = Policy::new(&Entity::ALL, &[Entity::Email, Entity::Iban], 2);
        assert_eq!(
            p.redact("Ada.L@Example.com GB82 WEST 1234 5698 7654 32")
                .as_deref(),
            Some("Xxx.X@Xxxxxxx.xxx XX00 XXXX 0000 0000 0000 32")
        );
    }

    #[test]
    fn a_json_result_keeps_its_layout() {
        let p = Policy::default();
        assert_eq!(
            p.redact_document(
                r#"{"rows": [{"email": "ada@example.com", "n": 4111111111111111}], "note": "ok"}"#
            )
            .as_deref(),
            Some(
                r#"{"rows": [{"email": "[REDACTED EMAIL]", "n": "[REDACTED CARD]"}], "note": "ok"}"#
            )
        );
        assert_eq!(p.redact_document(r#"{"note": "ok"}"#), None);
    }
}
