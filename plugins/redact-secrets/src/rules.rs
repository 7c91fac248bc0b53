//! gitleaks' rules (`rules/gitleaks.toml`, turned into data by `build.rs`),
//! run as gitleaks runs them: a rule is tried only where one of its
//! keywords occurs, its secret is its secret group (or its first non-empty
//! group), a secret no more random than the rule's entropy threshold is
//! not one, and neither is one an allowlist (the rule's or the global one)
//! lets through.
//!
//! Regexes are compiled on first use (most results wake few rules) and run
//! with the `regex` crate, in time linear in the text. A rule is tried on
//! a window around each keyword it has in the text, not the whole text: a
//! 2 MiB result that names `token` once costs one window of that rule.

use std::sync::OnceLock;

use aho_corasick::AhoCorasick;
use regex::bytes::{Regex, RegexBuilder, RegexSet, RegexSetBuilder};

use crate::scan::{Found, Span};

/// One gitleaks rule.
pub(crate) struct Rule {
    pub(crate) id: &'static str,
    regex: &'static str,
    /// Places in [`KEYWORDS`]; none: the rule is tried everywhere.
    keywords: &'static [usize],
    /// A secret must have more Shannon entropy than this (0: any).
    entropy: f64,
    /// The capture group that is the secret (0: the first non-empty one).
    group: usize,
    allowlists: &'static [Allow],
}

/// What an allowlist's regexes are checked against.
#[derive(Clone, Copy)]
pub(crate) enum Target {
    Secret,
    Match,
    Line,
}

/// A gitleaks allowlist: a finding it matches is not a secret.
pub(crate) struct Allow {
    /// Its place among all allowlists, for its compiled regexes.
    index: usize,
    target: Target,
    regexes: &'static [&'static str],
    /// Lower case; a secret containing one is allowed.
    stopwords: &'static [&'static str],
    /// Every part must hold (gitleaks' `condition = "AND"`), not any.
    all: bool,
    /// It needs a path or a commit to hold too: never for a tool result.
    never: bool,
}

include!(concat!(env!("OUT_DIR"), "/gitleaks.rs"));

/// How far around a keyword a rule looks, each way.
const WINDOW: usize = 4096;

/// Every finding of gitleaks' rules in `text`.
pub(crate) fn find(text: &str, found: &mut Vec<Found>) {
    let bytes = text.as_bytes();
    // (rule, window) pairs, merged per rule below.
    let mut windows: Vec<(usize, Span)> = Vec::new();
    for (rule, r) in RULES.iter().enumerate() {
        if r.keywords.is_empty() {
            windows.push((rule, (0, bytes.len())));
        }
    }
    let (automaton, rules_of) = keywords();
    for hit in automaton.find_overlapping_iter(bytes) {
        let around = (
            hit.start().saturating_sub(WINDOW),
            (hit.end() + WINDOW).min(bytes.len()),
        );
        for &rule in &rules_of[hit.pattern().as_usize()] {
            windows.push((rule, around));
        }
    }
    windows.sort_unstable();
    let mut merged: Option<(usize, Span)> = None;
    for (rule, (start, end)) in windows {
        match &mut merged {
            Some((r, (_, last_end))) if *r == rule && start <= *last_end => {
                *last_end = (*last_end).max(end);
            }
            _ => {
                if let Some((r, window)) = merged.take() {
                    run(r, text, window, found);
                }
                merged = Some((rule, (start, end)));
            }
        }
    }
    if let Some((r, window)) = merged {
        run(r, text, window, found);
    }
}

/// The keyword automaton (ASCII case ignored) and, for each keyword, the
/// rules it wakes.
fn keywords() -> &'static (AhoCorasick, Vec<Vec<usize>>) {
    static KEYWORDS_OF: OnceLock<(AhoCorasick, Vec<Vec<usize>>)> = OnceLock::new();
    KEYWORDS_OF.get_or_init(|| {
        let automaton = AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .build(KEYWORDS)
            .expect("gitleaks' keywords build an automaton");
        let mut rules_of = vec![Vec::new(); KEYWORDS.len()];
        for (rule, r) in RULES.iter().enumerate() {
            for &keyword in r.keywords {
                rules_of[keyword].push(rule);
            }
        }
        (automaton, rules_of)
    })
}

/// Builds all a scan may use (the keyword automaton, every rule's regex
/// and allowlist, each with its search cache) now instead of on first use:
/// a pre-initialised build keeps them in the memory every run starts from.
pub(crate) fn prepare() {
    keywords();
    for (rule, r) in RULES.iter().enumerate() {
        compiled(rule).is_match(b"");
        for allow in r.allowlists.iter().chain([&GLOBAL]) {
            allow_set(allow).is_match(b"");
            stopwords(allow).is_match(b"");
        }
    }
}

/// Rule `rule`'s findings in `text[window]`.
fn run(rule: usize, text: &str, (start, end): Span, found: &mut Vec<Found>) {
    let r = &RULES[rule];
    let regex = compiled(rule);
    let bytes = &text.as_bytes()[start..end];
    for captures in regex.captures_iter(bytes) {
        let whole = captures.get(0).expect("group 0 is the match");
        let secret = if r.group > 0 {
            captures.get(r.group)
        } else {
            (1..captures.len())
                .filter_map(|g| captures.get(g))
                .find(|g| !g.is_empty())
        }
        .unwrap_or(whole);
        let secret_text = trim_newlines(secret.as_bytes());
        if secret_text.is_empty() || (r.entropy > 0.0 && entropy(secret_text) <= r.entropy) {
            continue;
        }
        let line = line_around(text.as_bytes(), start + whole.start(), start + whole.end());
        let finding = Finding {
            secret: secret_text,
            matched: trim_newlines(whole.as_bytes()),
            line,
        };
        if allowed(&GLOBAL, &finding) || r.allowlists.iter().any(|a| allowed(a, &finding)) {
            continue;
        }
        // The generic rule's name is one that ends like a secret's and
        // names none (`nextPageToken=...`).
        if r.id == "generic-api-key" {
            let before = &bytes[whole.start()..secret.start()];
            let operator = |b: &u8| b.is_ascii_whitespace() || b"'\"=:>,|?`".contains(b);
            let name = &before[..before
                .iter()
                .rposition(|b| !operator(b))
                .map_or(0, |p| p + 1)];
            let from = name
                .iter()
                .rposition(|&b| !(b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-')))
                .map_or(0, |p| p + 1);
            if std::str::from_utf8(&name[from..]).is_ok_and(crate::scan::names_no_secret) {
                continue;
            }
            // Code the rule reads as a key and its value: an argument with
            // its default (`key, default=None`), a call
            // (`private_key = Ed25519PrivateKey.generate()`).
            let inner = secret_text.trim_ascii_end();
            let assignment = inner
                .iter()
                .position(|&b| b == b'=')
                .is_some_and(|eq| inner[eq..].iter().any(|&b| b != b'='));
            let end = secret_text.as_ptr() as usize - text.as_ptr() as usize + secret_text.len();
            if assignment || text.as_bytes().get(end) == Some(&b'(') {
                continue;
            }
        }
        // Where the trimmed secret lies in the text.
        let from = secret_text.as_ptr() as usize - text.as_ptr() as usize;
        found.push(Found::secret((from, from + secret_text.len())));
    }
}

/// Whether gitleaks' global allowlist lets `secret` through (a
/// placeholder such as `${VAR}`, `true`, `****`).
pub(crate) fn globally_allowed(secret: &[u8]) -> bool {
    allowed(
        &GLOBAL,
        &Finding {
            secret,
            matched: secret,
            line: secret,
        },
    )
}

/// What an allowlist is checked against.
struct Finding<'a> {
    secret: &'a [u8],
    matched: &'a [u8],
    line: &'a [u8],
}

/// Whether `allow` lets `finding` through, as gitleaks decides it.
fn allowed(allow: &Allow, finding: &Finding<'_>) -> bool {
    if allow.never {
        return false;
    }
    let target = match allow.target {
        Target::Secret => finding.secret,
        Target::Match => finding.matched,
        Target::Line => finding.line,
    };
    let by_regex = !allow.regexes.is_empty() && allow_set(allow).is_match(target);
    let by_stopword = !allow.stopwords.is_empty()
        && stopwords(allow)
            .find_overlapping_iter(finding.secret)
            .any(|m| stands_as_word(finding.secret, m.start(), m.len()));
    if allow.all {
        (allow.regexes.is_empty() || by_regex) && (allow.stopwords.is_empty() || by_stopword)
    } else {
        by_regex || by_stopword
    }
}

/// Whether `secret[at..at + len]` is a word of `secret`, not letters
/// inside a longer run: cased as a word is (`crud`, `CRUD`, `Crud`) and
/// bounded by the ends, by characters of another kind (a digit, a sign) or
/// by a change to a capital (`myCrudKey`). gitleaks drops a finding whose
/// secret holds a stop word anywhere, so random secrets go (`crud` is in
/// the lower-cased base64 of `-----BEGIN`, four letters are in about half
/// of long random strings); a stop word only says "placeholder" where it
/// stands as a word (`my_crud_key`).
fn stands_as_word(secret: &[u8], at: usize, len: usize) -> bool {
    let word = &secret[at..at + len];
    let (first, last) = (word[0], word[len - 1]);
    let cased = !word.iter().any(u8::is_ascii_uppercase)
        || !word.iter().any(u8::is_ascii_lowercase)
        || (first.is_ascii_uppercase() && !word[1..].iter().any(u8::is_ascii_uppercase));
    let kind = |b: u8| {
        if b.is_ascii_alphabetic() {
            0
        } else if b.is_ascii_digit() {
            1
        } else {
            2
        }
    };
    let before = at == 0 || {
        let b = secret[at - 1];
        kind(b) != kind(first) || (b.is_ascii_lowercase() && first.is_ascii_uppercase())
    };
    let after = at + len == secret.len() || {
        let b = secret[at + len];
        kind(b) != kind(last) || (last.is_ascii_lowercase() && b.is_ascii_uppercase())
    };
    cased && before && after
}

/// A gitleaks regex as the guest runs it: bytes, ASCII classes (as Go's
/// `regexp`), never past [`SIZE_LIMIT`]. `build.rs` compiled each one the
/// same way, so this cannot fail.
fn compile(regex: &str) -> Regex {
    RegexBuilder::new(regex)
        .unicode(false)
        .size_limit(SIZE_LIMIT)
        .build()
        .expect("build.rs compiled every rule")
}

fn compiled(rule: usize) -> &'static Regex {
    static COMPILED: [OnceLock<Regex>; RULE_COUNT] = [const { OnceLock::new() }; RULE_COUNT];
    COMPILED[rule].get_or_init(|| compile(RULES[rule].regex))
}

/// An allowlist's stop words as one automaton (ASCII case ignored): the
/// generic rule's 1,500 are one pass over a secret, not one each.
fn stopwords(allow: &Allow) -> &'static AhoCorasick {
    static AUTOMATA: [OnceLock<AhoCorasick>; ALLOWLISTS] = [const { OnceLock::new() }; ALLOWLISTS];
    AUTOMATA[allow.index].get_or_init(|| {
        AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .build(allow.stopwords)
            .expect("stop words build an automaton")
    })
}

fn allow_set(allow: &Allow) -> &'static RegexSet {
    static SETS: [OnceLock<RegexSet>; ALLOWLISTS] = [const { OnceLock::new() }; ALLOWLISTS];
    SETS[allow.index].get_or_init(|| {
        RegexSetBuilder::new(allow.regexes)
            .unicode(false)
            .size_limit(SIZE_LIMIT)
            .build()
            .expect("build.rs compiled every allowlist")
    })
}

/// The secret as gitleaks compares it: without newlines at its ends.
fn trim_newlines(bytes: &[u8]) -> &[u8] {
    let start = bytes
        .iter()
        .position(|&b| b != b'\n')
        .unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|&b| b != b'\n')
        .map_or(start, |e| e + 1);
    &bytes[start..end]
}

/// The lines `start..end` lies on.
fn line_around(bytes: &[u8], start: usize, end: usize) -> &[u8] {
    let from = bytes[..start]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |p| p + 1);
    let to = bytes[end..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(bytes.len(), |p| end + p);
    &bytes[from..to]
}

/// Shannon entropy in bits per character, as gitleaks computes it (over
/// characters; a secret that is not UTF-8 over its bytes).
pub(crate) fn entropy(secret: &[u8]) -> f64 {
    let mut counts = std::collections::BTreeMap::<char, usize>::new();
    let text = String::from_utf8_lossy(secret);
    let mut total = 0usize;
    for c in text.chars() {
        *counts.entry(c).or_default() += 1;
        total += 1;
    }
    counts
        .values()
        .map(|&n| {
            let p = n as f64 / total as f64;
            -p * p.log2()
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_compiles_and_names_a_secret() {
        assert!(RULES.len() > 200, "{} rules", RULES.len());
        for (index, rule) in RULES.iter().enumerate() {
            let regex = compiled(index);
            assert!(rule.group < regex.captures_len(), "{}", rule.id);
        }
    }

    #[test]
    fn a_stop_word_counts_where_it_stands_as_a_word() {
        for (secret, word) in [
            ("my_crud_key1", "crud"),
            ("myCrudKey", "crud"),
            ("CRUD-2024", "crud"),
            ("x9example", "example"),
        ] {
            let at = secret.to_ascii_lowercase().find(word).unwrap();
            assert!(
                stands_as_word(secret.as_bytes(), at, word.len()),
                "{secret}"
            );
        }
        for (secret, word) in [
            ("LS0tLS1CRUdJTiBQUklWQVRF", "crud"),
            ("aB3xcrudQ9", "crud"),
            ("Zq8testingX", "test"),
        ] {
            let at = secret.to_ascii_lowercase().find(word).unwrap();
            assert!(
                !stands_as_word(secret.as_bytes(), at, word.len()),
                "{secret}"
            );
        }
    }

    #[test]
    fn entropy_is_gitleaks_entropy() {
        assert_eq!(entropy(b"aaaa"), 0.0);
        assert!((entropy(b"ab") - 1.0).abs() < 1e-9);
        assert!(entropy(b"ghp_R4nd0mT0k3nV4lu3xyzABCDEF012345") > 4.0);
    }
}
