//! A tool's result in its client's own shape: guards read it as text, and
//! a rewrite goes back as the same structure with other values, or the
//! result is withheld in that structure (docs/architecture.md#rewrites-keep-the-clients-shapes).
//!
//! | the client's result | guards read | a rewrite goes back as |
//! |---|---|---|
//! | text (a JSON string) | the text | the rewritten text |
//! | any other JSON: a list, records, content blocks, an object | its compact JSON text | the same structure with the rewrite's values ([`reshape`]); a rewrite that does not fit: the structure with every value withheld ([`withhold`]) |

use serde_json::Value;

/// A tool's output as guards read it: a string as itself, anything else as
/// its compact JSON text.
pub fn result_text(output: &Value) -> String {
    match output {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// `rewritten` (a guard's rewrite of [`result_text`]`(original)`) put back
/// into the shape of `original`: a string for a string; for JSON, the same
/// structure (the same keys, arrays of the same length, each value of the
/// same type) with other values.
///
/// # Errors
/// Why the rewrite does not fit the shape.
pub fn reshape(original: &Value, rewritten: &str) -> Result<Value, String> {
    if original.is_string() {
        return Ok(Value::String(rewritten.to_owned()));
    }
    let value: Value = serde_json::from_str(rewritten)
        .map_err(|e| format!("the rewritten result is not JSON ({e}), and the tool's output is"))?;
    same_structure(original, &value, "")?;
    Ok(value)
}

fn same_structure(a: &Value, b: &Value, at: &str) -> Result<(), String> {
    let here = if at.is_empty() { "the output" } else { at };
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            if a.len() != b.len() || a.keys().any(|k| !b.contains_key(k)) {
                return Err(format!("{here} must keep the same fields"));
            }
            a.iter()
                .try_for_each(|(k, v)| same_structure(v, &b[k], &format!("{at}.{k}")))
        }
        (Value::Array(a), Value::Array(b)) => {
            if a.len() != b.len() {
                return Err(format!("{here} must keep its {} items", a.len()));
            }
            a.iter()
                .zip(b)
                .enumerate()
                .try_for_each(|(i, (a, b))| same_structure(a, b, &format!("{at}[{i}]")))
        }
        (Value::String(_), Value::String(_))
        | (Value::Number(_), Value::Number(_))
        | (Value::Bool(_), Value::Bool(_))
        | (Value::Null, Value::Null) => Ok(()),
        _ => Err(format!("{here} changed type")),
    }
}

/// `original` with its content withheld: every string becomes `notice`
/// but the value of a `type` field (`"text"`, `"create"`: an enumerated
/// value a tool's schema may require, never content), numbers become 0.
/// The structure stays, so the agent accepts it in place of the output;
/// nothing of the output is left.
pub fn withhold(original: &Value, notice: &str) -> Value {
    withhold_at(original, notice, false)
}

fn withhold_at(value: &Value, notice: &str, is_type_field: bool) -> Value {
    match value {
        Value::String(s) if is_type_field && is_identifier(s) => value.clone(),
        Value::String(_) => Value::String(notice.to_owned()),
        Value::Number(_) => Value::from(0),
        Value::Array(items) => items
            .iter()
            .map(|v| withhold_at(v, notice, false))
            .collect(),
        Value::Object(fields) => fields
            .iter()
            .map(|(k, v)| (k.clone(), withhold_at(v, notice, k == "type")))
            .collect(),
        Value::Bool(_) | Value::Null => value.clone(),
    }
}

/// A word of lowercase ASCII letters, `_` or `-`, at most 16 bytes.
fn is_identifier(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 16
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b == b'_' || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_redaction_of_string_values_fits_the_shape() {
        let read = json!({"type": "text", "file": {"filePath": "/p/.env", "content": "A=1\nKEY=s3cret\n", "numLines": 2}});
        let redacted = r#"{"type":"text","file":{"filePath":"/p/.env","content":"A=1\nKEY=[REDACTED]\n","numLines":2}}"#;
        let back = reshape(&read, redacted).unwrap();
        assert_eq!(back["file"]["content"], "A=1\nKEY=[REDACTED]\n");
    }

    #[test]
    fn a_rewrite_that_changes_the_structure_does_not_fit() {
        let bash = json!({"stdout": "x", "stderr": "", "interrupted": false, "isImage": false});
        assert!(reshape(&bash, "withheld").is_err());
        assert!(reshape(&bash, r#"{"stdout":"x"}"#).is_err());
        assert!(
            reshape(
                &bash,
                r#"{"stdout":1,"stderr":"","interrupted":false,"isImage":false}"#
            )
            .is_err()
        );
        assert!(reshape(&json!([1, 2]), "[1]").is_err());
        assert_eq!(reshape(&json!("plain"), "new").unwrap(), json!("new"));
    }

    #[test]
    fn a_short_secret_is_withheld_too() {
        let bash = json!({"stdout": "hunter2", "stderr": "123456", "interrupted": false, "isImage": false});
        assert_eq!(
            withhold(&bash, "[withheld]"),
            json!({"stdout": "[withheld]", "stderr": "[withheld]", "interrupted": false, "isImage": false})
        );
        let typed = json!({"type": "s3cr3t-but-not-a-word-1", "file": {"type": "text"}});
        assert_eq!(
            withhold(&typed, "x"),
            json!({"type": "x", "file": {"type": "text"}})
        );
    }

    #[test]
    fn withholding_keeps_the_structure_and_nothing_of_the_content() {
        let read = json!({"type": "text", "file": {"filePath": "/p/.env", "content": "KEY=s3cret", "numLines": 1}});
        let held = withhold(&read, "[withheld]");
        assert_eq!(
            held,
            json!({"type": "text", "file": {"filePath": "[withheld]", "content": "[withheld]", "numLines": 0}})
        );
    }
}
