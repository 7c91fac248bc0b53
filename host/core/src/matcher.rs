//! Tool matchers: which tools a plugin cares about, by name or glob, as
//! agents' hook configs scope their hooks (`matcher = "Bash|Write"`).
//!
//! A plugin scoped to tools (`tools = ["shell", "net_*"]` in the manifest)
//! is asked about tool-call, tool-result and invalid-tool-call events only
//! for the tools it names; every other kind reaches it as its subscriptions
//! say. An event whose tool no plugin of a stack matches is answered
//! without entering any guest.
//!
//! Patterns: `*` matches any run of characters, `?` one character, the
//! rest is literal and case-sensitive. Matching is linear in the name for
//! exact names (a hash lookup) and at most name × pattern for globs.

use std::collections::HashSet;

/// A set of tool-name patterns.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolMatcher {
    exact: HashSet<String>,
    globs: Vec<String>,
}

impl ToolMatcher {
    /// The matcher of `patterns`.
    pub fn new<I: IntoIterator<Item = S>, S: Into<String>>(patterns: I) -> ToolMatcher {
        let mut matcher = ToolMatcher::default();
        for pattern in patterns {
            matcher.add(pattern.into());
        }
        matcher
    }

    fn add(&mut self, pattern: String) {
        if pattern.contains(['*', '?']) {
            if !self.globs.contains(&pattern) {
                self.globs.push(pattern);
            }
        } else {
            self.exact.insert(pattern);
        }
    }

    /// Whether `tool` is one of the tools.
    pub fn matches(&self, tool: &str) -> bool {
        self.exact.contains(tool) || self.globs.iter().any(|g| glob(g, tool))
    }

    /// Both sets of tools: what either matches.
    pub fn union(&self, other: &ToolMatcher) -> ToolMatcher {
        let mut union = self.clone();
        for pattern in other.exact.iter().chain(&other.globs) {
            union.add(pattern.clone());
        }
        union
    }
}

/// `*` any run, `?` one character, the rest literal: greedy with one
/// backtrack point, so never exponential; on bytes, allocating nothing (it
/// runs for every tool event of a scoped stack).
fn glob(pattern: &str, text: &str) -> bool {
    let (p, t) = (pattern.as_bytes(), text.as_bytes());
    // The length of the character of `text` at byte `at` (a boundary).
    let char_len = |at: usize| text[at..].chars().next().map_or(1, char::len_utf8);
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        match p.get(pi) {
            Some(b'*') => {
                star = Some((pi, ti));
                pi += 1;
            }
            Some(b'?') => {
                pi += 1;
                ti += char_len(ti);
            }
            Some(&c) if c == t[ti] => {
                pi += 1;
                ti += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    let next = st + char_len(st);
                    pi = sp + 1;
                    ti = next;
                    star = Some((sp, next));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_globs_match_tools_case_sensitively() {
        let m = ToolMatcher::new(["shell", "net_*", "read_?ile", "mcp__*__write*"]);
        for yes in [
            "shell",
            "net_fetch",
            "net_",
            "read_file",
            "mcp__fs__write_file",
        ] {
            assert!(m.matches(yes), "{yes}");
        }
        for no in [
            "Shell",
            "shell2",
            "xnet_fetch",
            "read_ile",
            "mcp__fs__read",
            "",
        ] {
            assert!(!m.matches(no), "{no}");
        }
        assert!(ToolMatcher::new(["*"]).matches(""));
        assert!(ToolMatcher::new(["é?"]).matches("éé"));
    }

    #[test]
    fn a_union_matches_what_either_matches() {
        let u = ToolMatcher::new(["a"]).union(&ToolMatcher::new(["b*"]));
        assert!(u.matches("a") && u.matches("bc") && !u.matches("c"));
    }

    #[test]
    fn a_hostile_glob_is_not_exponential() {
        let pattern = format!("{}b", "*a".repeat(30));
        let name = "a".repeat(2000);
        assert!(!glob(&pattern, &name));
    }
}
