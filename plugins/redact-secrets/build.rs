//! Turns gitleaks' rule set (`rules/gitleaks.toml`, MIT, vendored as
//! published) into Rust data for the guest: each rule's regex, keywords,
//! entropy threshold, secret group and allowlists, and the global
//! allowlist. Every regex is compiled here with the guest's settings, so a
//! rule the `regex` crate cannot run fails the build, not a guard.
//!
//! Rules that only apply to files of some path (`path = ...`) are left
//! out: a tool result has no path.

use std::fmt::Write as _;
use std::path::PathBuf;

use toml::{Table, Value};

fn main() {
    let source = "rules/gitleaks.toml";
    println!("cargo:rerun-if-changed={source}");
    let text = std::fs::read_to_string(source).expect("rules/gitleaks.toml is vendored here");
    let config: Table = toml::from_str(&text).expect("gitleaks.toml is TOML");

    let mut out = String::new();
    writeln!(
        out,
        "/// The compiled size a rule's regex may take.\npub(crate) const SIZE_LIMIT: usize = {SIZE_LIMIT};"
    )
    .unwrap();
    let global = config
        .get("allowlist")
        .and_then(Value::as_table)
        .expect("gitleaks.toml has a global [allowlist]");
    writeln!(out, "/// gitleaks' global allowlist.").unwrap();
    let mut allowlists = 0;
    writeln!(
        out,
        "pub(crate) static GLOBAL: Allow = {};",
        allow(global, &mut allowlists)
    )
    .unwrap();

    let mut rules = Vec::new();
    let mut keywords_seen: Vec<String> = Vec::new();
    let mut widened = 0;
    for rule in config
        .get("rules")
        .and_then(Value::as_array)
        .expect("gitleaks.toml has [[rules]]")
    {
        let rule = rule.as_table().expect("a rule is a table");
        let id = string(rule, "id").expect("a rule has an id");
        let (Some(regex), None) = (string(rule, "regex"), rule.get("path")) else {
            continue;
        };
        let regex = go_to_rust(&regex);
        let regex = if regex.contains(GITLEAKS_TERMINATOR) {
            widened += 1;
            regex.replace(GITLEAKS_TERMINATOR, TERMINATOR)
        } else {
            regex
        };
        check(&id, &regex);
        // Each keyword as its place in KEYWORDS.
        let keywords: Vec<usize> = strings(rule, "keywords")
            .into_iter()
            .map(|k| {
                let k = k.to_ascii_lowercase();
                keywords_seen
                    .iter()
                    .position(|s| *s == k)
                    .unwrap_or_else(|| {
                        keywords_seen.push(k);
                        keywords_seen.len() - 1
                    })
            })
            .collect();
        let entropy = rule
            .get("entropy")
            .and_then(|e| e.as_float().or(e.as_integer().map(|i| i as f64)))
            .unwrap_or(0.0);
        let group = rule
            .get("secretGroup")
            .and_then(Value::as_integer)
            .unwrap_or(0);
        let allowlists: Vec<String> = rule
            .get("allowlists")
            .and_then(Value::as_array)
            .map(|lists| {
                lists
                    .iter()
                    .filter_map(Value::as_table)
                    .map(|table| allow(table, &mut allowlists))
                    .collect()
            })
            .unwrap_or_default();
        rules.push(format!(
            "Rule {{ id: {id:?}, regex: {regex:?}, keywords: &{keywords:?}, entropy: {entropy:?}, group: {group}, allowlists: &[{}] }}",
            allowlists.join(", ")
        ));
    }
    assert!(
        widened > 100,
        "gitleaks' token terminator is {GITLEAKS_TERMINATOR} in most rules ({widened} here): check TERMINATOR"
    );
    writeln!(
        out,
        "/// How many rules there are.\npub(crate) const RULE_COUNT: usize = {};\n/// gitleaks' rules that apply to text of no path.\npub(crate) static RULES: [Rule; RULE_COUNT] = [\n    {},\n];",
        rules.len(),
        rules.join(",\n    ")
    )
    .unwrap();
    writeln!(
        out,
        "/// Every rule's keywords, lower case.\npub(crate) static KEYWORDS: [&str; {}] = {keywords_seen:?};\n/// How many allowlists there are.\npub(crate) const ALLOWLISTS: usize = {allowlists};",
        keywords_seen.len()
    )
    .unwrap();
    let path = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("gitleaks.rs");
    std::fs::write(path, out).unwrap();
}

/// gitleaks ends most token rules with the characters it expects after a
/// token in source: a quote, a backtick, a space, `;`, an escaped line end
/// or the end. Prose and markup end tokens otherwise (`(TOKEN)`, `TOKEN,`,
/// `TOKEN.`, `<code>TOKEN</code>`), so here a token ends at any character
/// no token has: one that is not a letter, a digit or one of `_-+/=`.
const GITLEAKS_TERMINATOR: &str = r#"(?:[\x60'"\s;]|\\[nr]|$)"#;
const TERMINATOR: &str = r#"(?:[^0-9A-Za-z_+/=-]|\\[nr]|$)"#;

/// An allowlist, as Rust: what it is checked against, its regexes and
/// stop words, and whether all of its parts must hold. One that needs a
/// path or a commit to hold as well can never hold for a tool result.
fn allow(table: &Table, count: &mut usize) -> String {
    let target = match string(table, "regexTarget").as_deref() {
        Some("match") => "Target::Match",
        Some("line") => "Target::Line",
        _ => "Target::Secret",
    };
    let regexes: Vec<String> = strings(table, "regexes")
        .iter()
        .map(|r| go_to_rust(r))
        .collect();
    for regex in &regexes {
        check("an allowlist", regex);
    }
    let stopwords: Vec<String> = strings(table, "stopwords")
        .into_iter()
        .map(|w| w.to_ascii_lowercase())
        .collect();
    let all = string(table, "condition").as_deref() == Some("AND");
    let elsewhere = table.contains_key("paths") || table.contains_key("commits");
    // Under OR a path or commit is one more way to allow: without one, the
    // regexes and stop words still allow. Under AND it is one more thing
    // that must hold, and never does here.
    let never = all && elsewhere;
    let index = *count;
    *count += 1;
    format!(
        "Allow {{ index: {index}, target: {target}, regexes: &{regexes:?}, stopwords: &{stopwords:?}, all: {all}, never: {never} }}"
    )
}

fn string(table: &Table, key: &str) -> Option<String> {
    table.get(key).and_then(Value::as_str).map(str::to_owned)
}

fn strings(table: &Table, key: &str) -> Vec<String> {
    table
        .get(key)
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// A Go `regexp` pattern in the `regex` crate's syntax, which is the same
/// (both are RE2's) but for one thing: Go reads a `{` that does not open a
/// repetition (`{2}`, `{2,}`, `{2,5}`) as a literal, `regex` refuses it.
fn go_to_rust(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len());
    let mut chars = pattern.char_indices().peekable();
    let mut in_class = false;
    while let Some((at, c)) = chars.next() {
        match c {
            '\\' => {
                out.push(c);
                if let Some((_, next)) = chars.next() {
                    out.push(next);
                }
                continue;
            }
            '[' if !in_class => {
                in_class = true;
                out.push(c);
                // A `]` (or `^]`) first in a class is a literal.
                if let Some(&(_, '^')) = chars.peek() {
                    out.push('^');
                    chars.next();
                }
                if let Some(&(_, ']')) = chars.peek() {
                    out.push_str("\\]");
                    chars.next();
                }
                continue;
            }
            '[' if in_class && pattern[at..].starts_with("[:") => {
                // A POSIX class such as [:alnum:] inside a class.
                let end = pattern[at..].find(":]").map_or(at + 1, |e| at + e + 2);
                out.push_str(&pattern[at..end]);
                while chars.peek().is_some_and(|&(i, _)| i < end) {
                    chars.next();
                }
                continue;
            }
            // Go reads any other `[` in a class as a literal; `regex`
            // would open a nested class.
            '[' if in_class => {
                out.push_str("\\[");
                continue;
            }
            ']' if in_class => in_class = false,
            '{' if !in_class && !opens_repetition(&pattern[at..]) => {
                out.push_str("\\{");
                continue;
            }
            '}' if !in_class && !closes_repetition(&out) => {
                out.push_str("\\}");
                continue;
            }
            _ => {}
        }
        out.push(c);
    }
    out
}

/// Whether `rest` (from a `{`) is `{n}`, `{n,}` or `{n,m}`.
fn opens_repetition(rest: &str) -> bool {
    let Some(end) = rest.find('}') else {
        return false;
    };
    let inside = &rest[1..end];
    let (low, high) = inside.split_once(',').unwrap_or((inside, "0"));
    !low.is_empty()
        && low.bytes().all(|b| b.is_ascii_digit())
        && high.bytes().all(|b| b.is_ascii_digit())
}

/// Whether the pattern so far ends inside a repetition `{n`, `{n,` or `{n,m`.
fn closes_repetition(so_far: &str) -> bool {
    let Some(open) = so_far.rfind('{') else {
        return false;
    };
    let inside = &so_far[open + 1..];
    !so_far[..open].ends_with('\\')
        && !inside.is_empty()
        && inside.bytes().all(|b| b.is_ascii_digit() || b == b',')
}

/// Compiles `regex` as the guest does (`src/rules.rs`).
fn check(what: &str, regex: &str) {
    if let Err(e) = regex::bytes::RegexBuilder::new(regex)
        .unicode(false)
        .size_limit(SIZE_LIMIT)
        .build()
    {
        panic!("gitleaks rule {what}: its regex does not compile: {e}");
    }
}

/// The compiled size a rule's regex may take (written out for the guest).
const SIZE_LIMIT: usize = 32 << 20;
