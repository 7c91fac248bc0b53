//! Tool output in the agent's own shape: the adapter layer's rule
//! ([`hookbox_adapter::shape`]), and finding a field in an input too large
//! to parse.

pub use hookbox_adapter::shape::{reshape, result_text, withhold};

/// Where in `input` the value of the top-level field `field` is a string,
/// found without parsing the whole document (for inputs too large to
/// parse): the first `"field":"VALUE"` (blanks allowed around the colon).
pub fn peek_string_field(input: &[u8], field: &str) -> Option<String> {
    let needle = format!("\"{field}\"");
    let text = String::from_utf8_lossy(input);
    let at = text.find(&needle)? + needle.len();
    let rest = text[at..].trim_start().strip_prefix(':')?.trim_start();
    let rest = rest.strip_prefix('"')?;
    let end = rest.find('"')?;
    Some(rest[..end].to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_field_is_found_in_a_document_too_large_to_parse() {
        let input = br#"{"session_id": "s", "hook_event_name" : "PreToolUse", "tool_input": {"content": "...."#;
        assert_eq!(
            peek_string_field(input, "hook_event_name").as_deref(),
            Some("PreToolUse")
        );
        assert_eq!(peek_string_field(b"{}", "hook_event_name"), None);
    }
}
