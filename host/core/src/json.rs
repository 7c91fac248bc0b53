//! Serde helpers for the JSON forms: fields that carry JSON as text.
//!
//! WIT carries tool arguments, extensions and additional params as JSON
//! *text*. Their JSON form is that text as a string; when reading, a JSON
//! value in its place is accepted too and kept as compact text, so hand-written
//! event files can say `"args": {"path": "a.txt"}`.

/// `#[serde(with = "json_text")]` for a `String` holding JSON text.
pub mod json_text {
    use serde::{Deserialize, Deserializer, Serializer};
    use serde_json::Value;

    /// Writes the JSON text as a string.
    pub fn serialize<S: Serializer>(text: &str, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(text)
    }

    /// Reads a string as is, and any other JSON value as compact text.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
        Ok(match Value::deserialize(d)? {
            Value::String(text) => super::canonical(&text).unwrap_or(text),
            other => other.to_string(),
        })
    }

    /// `{}`: the default for an absent field holding a JSON object.
    pub fn empty_object() -> String {
        "{}".to_owned()
    }

    /// The same for `Option<String>`.
    pub mod option {
        use serde::{Deserialize, Deserializer, Serializer};
        use serde_json::Value;

        /// Writes the JSON text as a string, or `None` as null.
        pub fn serialize<S: Serializer>(text: &Option<String>, s: S) -> Result<S::Ok, S::Error> {
            match text {
                Some(text) => s.serialize_some(text),
                None => s.serialize_none(),
            }
        }

        /// Reads null as `None`, a string as is, and any other value as compact text.
        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
            Ok(match Option::<Value>::deserialize(d)? {
                None | Some(Value::Null) => None,
                Some(Value::String(text)) => Some(crate::json::canonical(&text).unwrap_or(text)),
                Some(other) => Some(other.to_string()),
            })
        }
    }
}

/// `text` in the one canonical JSON form every guard and tool sees: parsed
/// and written back compact, escapes decoded (`"rm \u002drf"` is
/// `"rm -rf"`), duplicate keys collapsed to the last; `None` when it is not
/// JSON (or nests deeper than 128 levels).
pub fn canonical(text: &str) -> Option<String> {
    serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .map(|value| value.to_string())
}

/// Whether `text` is well-formed JSON, without building a value.
pub fn is_json(text: &str) -> bool {
    serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok()
}

/// Whether `text` is a JSON object.
pub fn is_json_object(text: &str) -> bool {
    text.trim_start().starts_with('{') && is_json(text)
}
