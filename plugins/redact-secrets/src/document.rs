//! Where in a tool result a secret can sit, keeping the result's shape
//! (docs/architecture.md#rewrites-keep-the-clients-shapes: the agent puts a
//! rewritten document back in place of the
//! tool's output):
//!
//! | where | redacted |
//! |---|---|
//! | plain text | each secret in it ([`crate::scan`]) |
//! | a JSON document (the result, or a string in one: an MCP result's `content[].text`, an API body) | value by value, to any depth, JSON inside strings too (to [`MAX_NESTED`] levels), its layout kept byte for byte |
//! | a member named like a secret (`"password"`, `"api_key"`) | its whole value, whatever its type (a number, an object), as `"[REDACTED]"`; `null`, booleans, empty strings and containers, and placeholders stay |
//! | a member gitleaks finds a secret in when its name is written beside its value (`"key": "sk-live-..."`, [`scan::is_secret_member`]) | its value, as `"[REDACTED]"` |
//! | an object member's name with a secret in it, or that looks random ([`scan::looks_random`]) | the name, as `"[REDACTED KEY n]"` (numbered, so names stay distinct) |
//! | a `value` (`Value`) member after a `name` (`Name`, `key`, `Key`) member naming a secret: a Kubernetes or ECS `env` entry `{"name": "DB_PASSWORD", "value": ...}`, an SSM parameter `{"Name": "/prod/db/password", "Value": ...}` (its path's last part) | the value, as a secret name's |
//! | an array's string after one that is a flag naming a secret (`["--db-password", "..."]`, a command's argv) | that string |

use std::collections::HashMap;

use hookbox_sdk::json::{Node, map_nodes};

use crate::scan;

/// JSON inside a string inside a JSON document ... is read this deep.
pub(crate) const MAX_NESTED: usize = 4;

/// Strings this long at most are remembered within a document.
const SHORT: usize = 128;

/// `text` with its secrets redacted, or `None` when it has none.
pub(crate) fn redact(text: &str, emails: bool) -> Option<String> {
    redact_nested(text, emails, 0)
}

fn redact_nested(text: &str, emails: bool, depth: usize) -> Option<String> {
    // A string of JSON text encoded again is a JSON string.
    let json = text.trim_start().starts_with(['{', '[', '"']);
    if json
        && depth <= MAX_NESTED
        && let Some(redacted) = document(text, emails, depth)
    {
        return redacted;
    }
    scan::redact(text, emails)
}

/// The redacted document (`Some(None)`: nothing in it), or `None` when
/// `text` is not one.
fn document(text: &str, emails: bool, depth: usize) -> Option<Option<String>> {
    let mut changed = false;
    let mut keys = 0;
    // A document repeats its member names (and often short values, such as
    // an enum's): each is looked at once.
    let mut secret_keys: HashMap<String, bool> = HashMap::new();
    let mut secret_names: HashMap<String, bool> = HashMap::new();
    let mut keyword_names: HashMap<String, bool> = HashMap::new();
    let mut short_values: HashMap<String, Option<String>> = HashMap::new();
    // A secret's name given as a sibling's value (`"name": "DB_PASSWORD"`)
    // makes the next `value` member a secret's; a flag naming a secret
    // in an array makes the next string one.
    let mut named_by_sibling = false;
    let mut after_flag = false;
    let out = map_nodes(text, |member, node| {
        let flagged = std::mem::take(&mut after_flag);
        let valued = member.is_some_and(|name| VALUE_MEMBERS.contains(&name));
        let by_sibling = valued && std::mem::take(&mut named_by_sibling);
        if let (Some(name), Node::String(s)) = (member, &node)
            && NAME_MEMBERS.contains(&name)
        {
            named_by_sibling = names_a_secret(s);
        }
        if let (None, Node::String(s)) = (member, &node) {
            after_flag = is_secret_flag(s);
        }
        let secret_named = by_sibling
            || (flagged
                && member.is_none()
                && matches!(node, Node::String(s) if !s.starts_with('-')))
            || member.is_some_and(|name| remembered(&mut secret_names, name, scan::is_secret_name));
        let keyword_named = member
            .is_some_and(|name| remembered(&mut keyword_names, name, scan::may_name_a_secret));
        let new = match node {
            Node::Key(name) => {
                let secret = remembered(&mut secret_keys, name, |name| {
                    scan::looks_random(name) || scan::redact(name, emails).is_some()
                });
                secret.then(|| {
                    keys += 1;
                    format!("[REDACTED KEY {keys}]")
                })
            }
            Node::Scalar(s) if secret_named && !matches!(s, "null" | "true" | "false") => {
                Some("[REDACTED]".to_owned())
            }
            Node::Container if secret_named => Some("[REDACTED]".to_owned()),
            Node::String(s) if secret_named => (!s.trim().is_empty()
                && !scan::is_placeholder(s)
                && member.is_none_or(|name| scan::may_be_secret(name, s)))
            .then(|| "[REDACTED]".to_owned()),
            Node::String(s)
                if member.is_some_and(is_auth_name)
                    && scan::is_encoded_credentials(s.as_bytes()) =>
            {
                Some("[REDACTED]".to_owned())
            }
            Node::String(s)
                if keyword_named && member.is_some_and(|name| scan::is_secret_member(name, s)) =>
            {
                Some("[REDACTED]".to_owned())
            }
            Node::String(s) if s.len() <= SHORT => remembered(&mut short_values, s, |s| {
                redact_nested(s, emails, depth + 1)
            }),
            Node::String(s) => redact_nested(s, emails, depth + 1),
            _ => None,
        };
        changed |= new.is_some();
        new
    })?;
    Some(changed.then_some(out))
}

/// Members that name what a sibling `value` member holds.
const NAME_MEMBERS: [&str; 4] = ["name", "Name", "key", "Key"];
/// Members that hold what a sibling [`NAME_MEMBERS`] member names.
const VALUE_MEMBERS: [&str; 2] = ["value", "Value"];

/// Whether `name` (an env variable's, a parameter path's last part) names
/// a secret.
fn names_a_secret(name: &str) -> bool {
    let last = name.rsplit(['/', ':']).next().unwrap_or(name);
    (!last.is_empty() && scan::is_secret_name(last))
        || CREDENTIAL_HEADERS
            .iter()
            .any(|header| header.eq_ignore_ascii_case(name))
}

/// HTTP headers whose whole value is a credential, as a HAR file or a
/// logged request lists them (`{"name": "Cookie", "value": "..."}`).
const CREDENTIAL_HEADERS: [&str; 4] = [
    "cookie",
    "set-cookie",
    "authorization",
    "proxy-authorization",
];

/// A member that holds `user:password` in base64 (a Docker config's
/// `auth`, `.npmrc`'s `_auth` as JSON).
fn is_auth_name(name: &str) -> bool {
    // Bytes: the name's last four need not be whole characters.
    name.as_bytes()
        .get(name.len().saturating_sub(4)..)
        .is_some_and(|end| end.eq_ignore_ascii_case(b"auth"))
}

/// Whether `arg` is a command-line flag naming a secret (`--db-password`,
/// `-token`), whose value is the next argument.
fn is_secret_flag(arg: &str) -> bool {
    let name = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-'));
    name.is_some_and(|name| !name.contains('=') && scan::is_secret_name(name))
}

/// `decide(key)`, from `seen` when it was decided before.
fn remembered<V: Clone>(
    seen: &mut HashMap<String, V>,
    key: &str,
    decide: impl FnOnce(&str) -> V,
) -> V {
    if let Some(value) = seen.get(key) {
        return value.clone();
    }
    let value = decide(key);
    seen.insert(key.to_owned(), value.clone());
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redacted(text: &str) -> String {
        redact(text, true).unwrap_or_else(|| text.to_owned())
    }

    #[test]
    fn plain_text_is_scanned() {
        assert_eq!(redacted("DB_PASSWORD=hunter2"), "DB_PASSWORD=[REDACTED]");
    }

    #[test]
    fn json_inside_strings_is_redacted_in_place_to_a_depth() {
        let inner = r#"{"password": "hunter2", "ok": 1}"#;
        let mcp = serde_like(&serde_like(inner));
        let text = format!(r#"{{"content": [{{"type": "text", "text": {mcp}}}]}}"#);
        let out = redacted(&text);
        assert!(!out.contains("hunter2"), "{out}");
        assert!(out.contains(r#"\\\"ok\\\": 1"#), "{out}");
        // Past the depth a string is text: still scanned, as text.
        let token = "ghp_R4nd0mT0k3nV4lu3xyzABCDEF01234567890";
        let mut deep = format!(r#"{{"note": "{token}"}}"#);
        for _ in 0..MAX_NESTED + 2 {
            deep = format!("[{}]", serde_like(&deep));
        }
        let out = redacted(&deep);
        assert!(!out.contains(token), "{out}");
    }

    #[test]
    fn any_value_under_a_secret_name_goes_and_nothing_else_changes() {
        assert_eq!(
            redacted(
                r#"{"pin_password": 1234, "token": {"a": 1}, "password": null, "api_key": "", "n": 5}"#
            ),
            r#"{"pin_password": "[REDACTED]", "token": "[REDACTED]", "password": null, "api_key": "", "n": 5}"#
        );
    }

    #[test]
    fn a_secret_gitleaks_knows_by_its_member_s_name_goes() {
        assert_eq!(
            redacted(r#"{"key": "sk-live-0123456789abcdefghijklmnop", "keyboard": "us-intl-alt"}"#),
            r#"{"key": "[REDACTED]", "keyboard": "us-intl-alt"}"#
        );
    }

    #[test]
    fn a_key_with_a_secret_in_it_is_renamed() {
        assert_eq!(
            redacted(
                r#"{"ghp_R4nd0mT0k3nV4lu3xyzABCDEF01234567890": true, "b": {"glpat-Xk3v9QmZ7rT2wLp8NbYc": 1}}"#
            ),
            r#"{"[REDACTED KEY 1]": true, "b": {"[REDACTED KEY 2]": 1}}"#
        );
    }

    /// A secret whose name is a sibling's value, or the flag before it in
    /// an array: the value goes, its name and everything else stay.
    #[test]
    fn a_secret_named_by_a_sibling_or_a_flag_goes() {
        assert_eq!(
            redacted(
                r#"{"env": [{"name": "DB_PASSWORD", "value": "Xk9mQ2vLp8zR4w"}, {"name": "REGION", "value": "eu-west-1"}]}"#
            ),
            r#"{"env": [{"name": "DB_PASSWORD", "value": "[REDACTED]"}, {"name": "REGION", "value": "eu-west-1"}]}"#
        );
        assert_eq!(
            redacted(
                r#"{"Parameter": {"Name": "/prod/db/password", "Type": "SecureString", "Value": "Xk9mQ2vLp8zR4w"}}"#
            ),
            r#"{"Parameter": {"Name": "/prod/db/password", "Type": "SecureString", "Value": "[REDACTED]"}}"#
        );
        assert_eq!(
            redacted(r#"["mysql", "--db-password", "Xk9mQ2vLp8zR4w", "--host", "db.internal"]"#),
            r#"["mysql", "--db-password", "[REDACTED]", "--host", "db.internal"]"#
        );
        // A flag followed by another flag gives nothing away.
        assert_eq!(
            redacted(r#"["tool", "--token", "--verbose", "x"]"#),
            r#"["tool", "--token", "--verbose", "x"]"#
        );
    }

    /// `text` as a JSON string.
    /// A member name ending in a character of several bytes is read, not
    /// cut inside it (a panic would trap the guest and end the run).
    #[test]
    fn member_names_ending_in_wide_characters_are_read_whole() {
        assert_eq!(
            redacted(r#"{"clé": "x", "日本": "y"}"#),
            r#"{"clé": "x", "日本": "y"}"#
        );
        assert_eq!(
            redacted(r#"{"auth": "Y2k6OGxlT0k3XnFHUjNpNXk="}"#),
            r#"{"auth": "[REDACTED]"}"#
        );
    }

    fn serde_like(text: &str) -> String {
        let mut out = String::from("\"");
        for c in text.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                c => out.push(c),
            }
        }
        out.push('"');
        out
    }
}
