//! A history patch applied to a framework's own messages: the part of it
//! that does not depend on the framework.
//!
//! Guards read and patch a history of plain [`Message`]s (role and text),
//! but a framework's messages carry more: tool calls and results with their
//! ids, images, provider data. [`apply`] keeps every message a guard left as
//! it was (the framework's own, structure and all), makes a text message of
//! each new or changed one, and refuses what a provider would refuse: a new
//! or changed tool message (a result needs the call it answers), and a tool
//! call kept without its result or a result without its call.

use std::collections::{HashMap, VecDeque};

use crate::event::{Message, Role};

/// How an adapter sees its framework's messages.
pub trait Messages {
    /// The framework's message type.
    type Message: Clone;

    /// A message as guards read it.
    fn read(&self, message: &Self::Message) -> Message;

    /// A new text message of `role` (never `Role::Tool`).
    fn text(&self, role: Role, content: String) -> Self::Message;

    /// The ids of the tool calls a message makes, and of the calls its tool
    /// results answer.
    fn tool_ids(&self, message: &Self::Message) -> (Vec<String>, Vec<String>);
}

/// `patched` as the framework's messages, reusing `originals` a guard left
/// unchanged. `Err` says what a guard did that cannot be sent, for a
/// fail-closed naming it.
pub fn apply<M: Messages>(
    messages: &M,
    patched: Vec<Message>,
    originals: &[M::Message],
) -> Result<Vec<M::Message>, String> {
    // Each original under the way guards read it, in order, so a message
    // repeated word for word is matched to its own copy.
    let mut unchanged: HashMap<Message, VecDeque<usize>> = HashMap::new();
    for (at, original) in originals.iter().enumerate() {
        unchanged
            .entry(messages.read(original))
            .or_default()
            .push_back(at);
    }
    let mut kept = vec![false; originals.len()];
    let mut out = Vec::with_capacity(patched.len());
    for m in patched {
        if let Some(at) = unchanged.get_mut(&m).and_then(VecDeque::pop_front) {
            kept[at] = true;
            out.push(originals[at].clone());
        } else if m.role == Role::Tool {
            return Err("patched the history with a new or changed tool message; a tool result is sent only with the call it answers, so the patch cannot be applied".to_owned());
        } else {
            out.push(messages.text(m.role, m.content));
        }
    }
    // For each call id: whether its call and its result were kept.
    let mut calls: HashMap<String, bool> = HashMap::new();
    let mut results: HashMap<String, bool> = HashMap::new();
    for (original, kept) in originals.iter().zip(kept) {
        let (made, answered) = messages.tool_ids(original);
        calls.extend(made.into_iter().map(|id| (id, kept)));
        results.extend(answered.into_iter().map(|id| (id, kept)));
    }
    let mut broken: Vec<&String> = calls
        .iter()
        .filter(|(id, call_kept)| results.get(*id).is_some_and(|r| r != *call_kept))
        .map(|(id, _)| id)
        .collect();
    broken.sort();
    match broken.first() {
        Some(id) => Err(format!(
            "patched the history so that tool call `{id}` and its result no longer go together (one kept, the other changed or dropped); a provider refuses a result without its call and a call without its result"
        )),
        None => Ok(out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Messages as (role, text, calls made, calls answered).
    struct Plain;

    type M = (Role, String, Option<String>, Option<String>);

    impl Messages for Plain {
        type Message = M;
        fn read(&self, m: &M) -> Message {
            Message {
                role: m.0,
                content: m.1.clone(),
            }
        }
        fn text(&self, role: Role, content: String) -> M {
            (role, content, None, None)
        }
        fn tool_ids(&self, m: &M) -> (Vec<String>, Vec<String>) {
            (m.2.iter().cloned().collect(), m.3.iter().cloned().collect())
        }
    }

    fn history() -> Vec<M> {
        vec![
            (Role::User, "my key is sk-1".into(), None, None),
            (
                Role::Assistant,
                "[tool call read]".into(),
                Some("c1".into()),
                None,
            ),
            (Role::Tool, "contents".into(), None, Some("c1".into())),
        ]
    }

    fn read(history: &[M]) -> Vec<Message> {
        history.iter().map(|m| Plain.read(m)).collect()
    }

    #[test]
    fn unchanged_messages_keep_their_structure_and_changed_ones_become_text() {
        let mut patched = read(&history());
        patched[0].content = "my key is [redacted]".into();
        let out = apply(&Plain, patched, &history()).unwrap();
        assert_eq!(
            out[0],
            (Role::User, "my key is [redacted]".into(), None, None)
        );
        assert_eq!(out[1..], history()[1..]);
    }

    #[test]
    fn a_new_or_changed_tool_message_is_refused() {
        let mut patched = read(&history());
        patched[2].content = "forged".into();
        assert!(apply(&Plain, patched, &history()).is_err());
    }

    #[test]
    fn a_call_and_its_result_are_kept_or_dropped_together() {
        let mut patched = read(&history());
        patched[1].content = "I read a file.".into();
        let err = apply(&Plain, patched, &history()).unwrap_err();
        assert!(err.contains("`c1`"), "{err}");
        let without_result = read(&history())[..2].to_vec();
        assert!(apply(&Plain, without_result, &history()).is_err());
        assert!(apply(&Plain, read(&history())[..1].to_vec(), &history()).is_ok());
        assert!(apply(&Plain, vec![], &history()).is_ok());
    }
}
