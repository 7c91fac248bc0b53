//! Redact secrets and e-mail addresses from tool results before the model
//! sees them. A result that is a JSON document (a tool's structured output)
//! is redacted string by string and keeps its shape.

use hookbox_sdk::{EventKind, Flow, Hook, HookContext, StepEvent, config, json};

struct RedactSecrets;

/// Prefixes of well-known credential formats.
const TOKEN_PREFIXES: [&str; 7] = [
    "sk-",
    "ghp_",
    "gho_",
    "github_pat_",
    "AKIA",
    "xoxb-",
    "xoxp-",
];
/// `NAME=value` / `NAME: value` where NAME (an identifier; `-` counts as
/// `_`) ends with one of these.
const SECRET_NAMES: [&str; 9] = [
    "SECRET",
    "SECRET_KEY",
    "ACCESS_KEY",
    "PASSWORD",
    "PASSWD",
    "TOKEN",
    "API_KEY",
    "APIKEY",
    "PRIVATE_KEY",
];

impl Hook for RedactSecrets {
    fn subscriptions() -> Vec<EventKind> {
        vec![EventKind::ToolResult]
    }

    fn on_event(_ctx: &HookContext, event: StepEvent) -> Flow {
        let StepEvent::ToolResult(result) = event else {
            return Flow::Continue;
        };
        let emails = config::get_or("emails", "true") == "true";
        let text = &result.result;
        let structured = text.trim_start().starts_with(['{', '[']);
        let redacted = structured
            .then(|| {
                json::map_members(text, |key, value| {
                    // A member named like a secret: its whole value goes.
                    if key.is_some_and(is_secret_name) && !value.trim().is_empty() {
                        return Some("[REDACTED]".to_owned());
                    }
                    let redacted = redact(value, emails);
                    (redacted != value).then_some(redacted)
                })
            })
            .flatten()
            .unwrap_or_else(|| redact(text, emails));
        if redacted == *text {
            Flow::Continue
        } else {
            Flow::rewrite_result(redacted)
        }
    }
}

fn redact(text: &str, emails: bool) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_key_block = false;
    for line in text.split_inclusive('\n') {
        if line.contains("-----BEGIN") && line.contains("PRIVATE KEY") {
            in_key_block = true;
            out.push_str("[REDACTED PRIVATE KEY]\n");
        }
        if in_key_block {
            in_key_block = !line.contains("-----END");
            continue;
        }
        out.push_str(&redact_line(line, emails));
    }
    out
}

fn redact_line(line: &str, emails: bool) -> String {
    // NAME=value and NAME: value assignments of secret-looking names.
    if let Some(sep) = line.find(['=', ':']) {
        let name = line[..sep].trim();
        let name = name
            .strip_prefix("export ")
            .map_or(name, str::trim_start)
            .trim_matches(['"', '\'']);
        if is_secret_name(name) && !line[sep + 1..].trim().is_empty() {
            let end = if line.ends_with('\n') { "\n" } else { "" };
            return format!("{}[REDACTED]{end}", &line[..=sep]);
        }
    }
    line.split_inclusive(is_separator)
        .map(|word| {
            let token = word.trim_end_matches(is_separator);
            let tail = &word[token.len()..];
            if TOKEN_PREFIXES
                .iter()
                .any(|p| token.starts_with(p) && token.len() >= p.len() + 8)
            {
                format!("[REDACTED]{tail}")
            } else if emails && is_email(token) {
                format!("[REDACTED EMAIL]{tail}")
            } else {
                word.to_owned()
            }
        })
        .collect()
}

/// An identifier (ASCII letters, digits, `_`, `-`, `.`) whose uppercase
/// form, `-` read as `_`, ends with one of [`SECRET_NAMES`].
fn is_secret_name(name: &str) -> bool {
    let identifier = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c));
    let name = name.to_ascii_uppercase().replace('-', "_");
    identifier && SECRET_NAMES.iter().any(|s| name.ends_with(s))
}

fn is_separator(c: char) -> bool {
    c.is_whitespace() || matches!(c, '"' | '\'' | ',' | '=' | ':')
}

fn is_email(token: &str) -> bool {
    let token = token.trim_matches(|c: char| matches!(c, '<' | '>' | '(' | ')' | '.' | ';'));
    let Some((local, domain)) = token.split_once('@') else {
        return false;
    };
    let ok = |c: char| c.is_ascii_alphanumeric() || "._%+-".contains(c);
    !local.is_empty()
        && local.chars().all(ok)
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && domain
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-')
}

hookbox_sdk::hook!(RedactSecrets);
