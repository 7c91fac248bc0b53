//! toolguard in Rust: denies tool calls by name and argument pattern, and
//! redacts secrets from tool results. The behaviour is specified in
//! `languages/README.md`; every other language's build must agree with this
//! one on `languages/conformance/`.

use hookbox_sdk::{
    EventKind, Flow, Hook, HookContext, StepEvent, ToolCall, config, log, scratchpad,
};

struct ToolGuard;

const DEFAULT_DENY_ARGS: &str = "*rm -rf*,*.ssh/*";
const DEFAULT_SECRET_PREFIXES: &str = "sk-,ghp_,AKIA,xoxb-";
const DEFAULT_SECRET_NAMES: &str = "PASSWORD,SECRET,TOKEN,API_KEY";

impl Hook for ToolGuard {
    fn subscriptions() -> Vec<EventKind> {
        vec![EventKind::ToolCall, EventKind::ToolResult]
    }

    fn on_event(_ctx: &HookContext, event: StepEvent) -> Flow {
        match event {
            StepEvent::ToolCall(call) => check_call(&call),
            StepEvent::ToolResult(result) => {
                let redacted = redact(&result.result);
                if redacted == result.result {
                    Flow::Continue
                } else {
                    Flow::rewrite_result(redacted)
                }
            }
            _ => Flow::Continue,
        }
    }
}

fn check_call(call: &ToolCall) -> Flow {
    let max_denials = match config::get("max_denials") {
        None => None,
        Some(value) => match parse_max(&value) {
            Some(max) => Some(max),
            None => {
                return Flow::terminate(format!(
                    "toolguard: `max_denials` must be a positive integer, got `{value}`"
                ));
            }
        },
    };
    let name = &call.tool_name;
    let reason = if setting("deny", "").iter().any(|p| matches(p, name)) {
        format!("toolguard: `{name}` is denied by policy")
    } else if let Some(p) = setting("deny_args", DEFAULT_DENY_ARGS)
        .iter()
        .find(|p| matches(p, &call.args))
    {
        format!("toolguard: the arguments of `{name}` match `{p}`")
    } else {
        return Flow::Continue;
    };
    let count = scratchpad::increment("denials", 1);
    log::warn(&reason);
    match max_denials {
        Some(max) if count >= max => Flow::terminate(format!(
            "toolguard: {count} tool calls denied in this run (max_denials is {max})"
        )),
        _ => Flow::skip(reason),
    }
}

/// 1 to 6 ASCII digits, at least 1.
fn parse_max(value: &str) -> Option<u64> {
    let digits = (1..=6).contains(&value.len()) && value.bytes().all(|b| b.is_ascii_digit());
    digits
        .then(|| value.parse().ok())
        .flatten()
        .filter(|&n| n >= 1)
}

/// A comma-separated setting, or its default when unset.
fn setting(key: &str, default: &str) -> Vec<String> {
    config::get(key)
        .as_deref()
        .unwrap_or(default)
        .split(',')
        .map(|item| item.trim_matches([' ', '\t']))
        .filter(|item| !item.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Whole-text match where `*` is any run of characters.
fn matches(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty(); // no `*` at all
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

fn redact(text: &str) -> String {
    let prefixes = setting("secret_prefixes", DEFAULT_SECRET_PREFIXES);
    let names: Vec<String> = setting("secret_names", DEFAULT_SECRET_NAMES)
        .iter()
        .map(|n| upper(n))
        .collect();
    text.split_inclusive('\n')
        .map(|line| {
            redact_assignment(line, &names).unwrap_or_else(|| redact_tokens(line, &prefixes))
        })
        .collect()
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// ASCII upper case, with `-` read as `_`.
fn upper(s: &str) -> String {
    s.to_ascii_uppercase().replace('-', "_")
}

/// The redacted line, if it is an assignment of a secret-looking name.
fn redact_assignment(line: &str, names: &[String]) -> Option<String> {
    let bytes = line.as_bytes();
    let blank = |b: u8| b == b' ' || b == b'\t';
    let mut i = bytes.iter().take_while(|&&b| blank(b)).count();
    if bytes[i..].starts_with(b"export") && bytes.get(i + 6).is_some_and(|&b| blank(b)) {
        i += 6;
        i += bytes[i..].iter().take_while(|&&b| blank(b)).count();
    }
    let quote = |b: Option<&u8>| matches!(b, Some(b'"' | b'\''));
    if quote(bytes.get(i)) {
        i += 1;
    }
    let start = i;
    i += bytes[i..].iter().take_while(|&&b| is_name_byte(b)).count();
    let name = &line[start..i];
    if name.is_empty() {
        return None;
    }
    if quote(bytes.get(i)) {
        i += 1;
    }
    i += bytes[i..].iter().take_while(|&&b| blank(b)).count();
    if !matches!(bytes.get(i), Some(b'=' | b':')) {
        return None;
    }
    let rest = line[i + 1..].trim_matches([' ', '\t', '\r', '\n']);
    let name = upper(name);
    if rest.is_empty() || !names.iter().any(|n| name.ends_with(n.as_str())) {
        return None;
    }
    let end = if line.ends_with('\n') { "\n" } else { "" };
    Some(format!("{}[REDACTED]{end}", &line[..=i]))
}

fn redact_tokens(line: &str, prefixes: &[String]) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while !rest.is_empty() {
        let token_len = rest.bytes().take_while(|&b| is_name_byte(b)).count();
        if token_len == 0 {
            let other = rest
                .char_indices()
                .find(|&(_, c)| c.is_ascii() && is_name_byte(c as u8))
                .map_or(rest.len(), |(at, _)| at);
            out.push_str(&rest[..other]);
            rest = &rest[other..];
            continue;
        }
        let token = &rest[..token_len];
        let secret = prefixes
            .iter()
            .any(|p| token.starts_with(p.as_str()) && token.len() >= p.len() + 8);
        out.push_str(if secret { "[REDACTED]" } else { token });
        rest = &rest[token_len..];
    }
    out
}

hookbox_sdk::hook!(ToolGuard);
