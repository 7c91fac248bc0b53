//! The subset of JSON Schema the tools' arguments use.

use serde_json::Value;

/// Checks arguments against the subset of JSON Schema tools here use: an
/// object with typed `properties`, `required`, and `additionalProperties`.
pub fn check_args(schema: &Value, args: &Value) -> Result<(), String> {
    let Some(object) = args.as_object() else {
        return Err("arguments must be a JSON object".into());
    };
    let properties = schema.get("properties").and_then(Value::as_object);
    for required in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if !object.contains_key(required) {
            return Err(format!("missing required argument `{required}`"));
        }
    }
    let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
    for (key, value) in object {
        match properties.and_then(|p| p.get(key)) {
            Some(property) => {
                if let Some(expected) = property.get("type").and_then(Value::as_str)
                    && !has_type(value, expected)
                {
                    return Err(format!("argument `{key}` must be of type {expected}"));
                }
            }
            None if closed => return Err(format!("unknown argument `{key}`")),
            None => {}
        }
    }
    Ok(())
}

fn has_type(value: &Value, expected: &str) -> bool {
    match expected {
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "null" => value.is_null(),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arguments_are_checked_against_the_schema() {
        let schema = json!({"type": "object", "properties": {"path": {"type": "string"}, "n": {"type": "integer"}}, "required": ["path"], "additionalProperties": false});
        assert!(check_args(&schema, &json!({"path": "a", "n": 2})).is_ok());
        assert!(
            check_args(&schema, &json!({}))
                .unwrap_err()
                .contains("missing required")
        );
        assert!(
            check_args(&schema, &json!({"path": 1}))
                .unwrap_err()
                .contains("type string")
        );
        assert!(
            check_args(&schema, &json!({"path": "a", "x": 1}))
                .unwrap_err()
                .contains("unknown")
        );
        assert!(
            check_args(&schema, &json!([1]))
                .unwrap_err()
                .contains("object")
        );
    }
}
