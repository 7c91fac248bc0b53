//! Globs in time linear in the text.
//!
//! A pattern is literal segments between `*`s. The first segment must match
//! at the start, the last at the end, and each one between is found at its
//! leftmost place after the one before (leftmost is always right: a later
//! place leaves the rest less room). A segment without `?` is a substring
//! search ([`crate::text`], SIMD where the guest has it), so such patterns
//! take O(text + pattern) time; a segment with `?` is tried at the places its
//! first literal byte occurs, O(text × segment) at worst.

use memchr::memmem;

/// Whether `text` matches `pattern`, where `*` matches any run of characters
/// (including none) and `?` any one character. Everything else is literal.
///
/// ```
/// use hookbox_sdk::glob_match;
/// assert!(glob_match("*rm -rf*", "sudo rm -rf /"));
/// assert!(glob_match("read_?ile", "read_file"));
/// assert!(!glob_match("read_*", "write_file"));
/// ```
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let (p, t) = (pattern.as_bytes(), text.as_bytes());
    let Some(first_star) = memchr::memchr(b'*', p) else {
        return prefix(p, t) == Some(t.len());
    };
    let last_star = memchr::memrchr(b'*', p).unwrap_or(first_star);
    let (head, tail) = (&p[..first_star], &p[last_star + 1..]);
    let Some(mut at) = prefix(head, t) else {
        return false;
    };
    let Some(tail_at) = suffix(tail, &t[at..]).map(|start| at + start) else {
        return false;
    };
    let middle = p.get(first_star + 1..last_star).unwrap_or_default();
    for segment in middle.split(|&b| b == b'*').filter(|s| !s.is_empty()) {
        match leftmost(segment, &t[at..tail_at]) {
            Some(end) => at += end,
            None => return false,
        }
    }
    true
}

/// The length of one UTF-8 character starting with `lead`.
fn char_len(lead: u8) -> usize {
    match lead {
        0xF0.. => 4,
        0xE0.. => 3,
        0xC0.. => 2,
        _ => 1,
    }
}

/// How many bytes of `text` the segment matches at its start, if it does.
fn prefix(segment: &[u8], text: &[u8]) -> Option<usize> {
    if !segment.contains(&b'?') {
        return text.starts_with(segment).then_some(segment.len());
    }
    let mut at = 0;
    for &b in segment {
        #[cfg(test)]
        tests::WORK.with(|w| w.set(w.get() + 1));
        let lead = *text.get(at)?;
        if b == b'?' {
            at += char_len(lead);
        } else if b == lead {
            at += 1;
        } else {
            return None;
        }
    }
    (at <= text.len()).then_some(at)
}

/// Where in `text` the segment matches at its end, if it does.
fn suffix(segment: &[u8], text: &[u8]) -> Option<usize> {
    if !segment.contains(&b'?') {
        return text.ends_with(segment).then(|| text.len() - segment.len());
    }
    let mut end = text.len();
    for &b in segment.iter().rev() {
        if b == b'?' {
            // Back over one character: its continuation bytes, then its lead.
            end = end.checked_sub(1)?;
            while end > 0 && text[end] & 0xC0 == 0x80 {
                end -= 1;
            }
        } else {
            end = end.checked_sub(1)?;
            if text[end] != b {
                return None;
            }
        }
    }
    Some(end)
}

/// The end of the segment's leftmost match in `text`, if there is one.
fn leftmost(segment: &[u8], text: &[u8]) -> Option<usize> {
    let Some(question) = memchr::memchr(b'?', segment) else {
        return memmem::find(text, segment).map(|start| start + segment.len());
    };
    if question == 0 {
        // It starts with `?`: every character is a candidate.
        let mut start = 0;
        while start < text.len() {
            if let Some(len) = prefix(segment, &text[start..]) {
                return Some(start + len);
            }
            start += char_len(text[start]);
        }
        return None;
    }
    // Candidates are where its literal opening occurs, overlapping ones
    // included.
    let opening = memmem::Finder::new(&segment[..question]);
    let mut from = 0;
    while let Some(found) = opening.find(&text[from..]) {
        let start = from + found;
        if let Some(len) = prefix(segment, &text[start..]) {
            return Some(start + len);
        }
        from = start + char_len(text[start]);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn stars_match_any_run_and_question_marks_one_character() {
        assert!(glob_match("*", ""));
        assert!(glob_match("a*c", "abbbc"));
        assert!(glob_match("a*c", "ac"));
        assert!(!glob_match("a*c", "ab"));
        assert!(glob_match("?", "é"));
        assert!(!glob_match("?", ""));
        assert!(glob_match("*.env*", "cat .env.local"));
        assert!(!glob_match("a*a", "a"), "head and tail may not overlap");
        assert!(glob_match("a*?é", "aüé"));
        assert!(
            !glob_match("a*?é", "aé"),
            "`?` is one character, never none"
        );
        assert!(glob_match("*?", "ü"));
        assert!(glob_match("**a**", "bab"));
    }

    /// An independent oracle: the textbook table (does the pattern's first
    /// i characters match the text's first j?), quadratic and obviously
    /// right.
    fn reference(pattern: &str, text: &str) -> bool {
        let t: Vec<char> = text.chars().collect();
        let mut row = vec![false; t.len() + 1];
        row[0] = true;
        for c in pattern.chars() {
            let mut next = vec![false; t.len() + 1];
            if c == '*' {
                next[0] = row[0];
                for j in 1..=t.len() {
                    next[j] = row[j] || next[j - 1];
                }
            } else {
                for j in 1..=t.len() {
                    next[j] = row[j - 1] && (c == '?' || c == t[j - 1]);
                }
            }
            row = next;
        }
        row[t.len()]
    }

    /// A small deterministic generator (xorshift), so failures replay.
    struct Rng(u64);
    impl Rng {
        fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            from[(self.0 % from.len() as u64) as usize]
        }
    }

    #[test]
    fn agrees_with_the_textbook_table_on_random_patterns_and_texts() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let (pattern_atoms, text_atoms) = (["a", "b", "é", "?", "*", "ab"], ["a", "b", "é", "ab"]);
        for case in 0..200_000 {
            let pattern: String = (0..case % 7).map(|_| rng.pick(&pattern_atoms)).collect();
            let text: String = (0..case % 11).map(|_| rng.pick(&text_atoms)).collect();
            assert_eq!(
                glob_match(&pattern, &text),
                reference(&pattern, &text),
                "pattern {pattern:?}, text {text:?}"
            );
        }
    }

    thread_local! {
        /// Bytes compared outside `memchr` (whose searches are linear).
        pub(super) static WORK: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    fn work(pattern: &str, text: &str) -> usize {
        WORK.with(|w| w.set(0));
        assert!(!glob_match(pattern, text), "{pattern}");
        WORK.with(std::cell::Cell::get)
    }

    #[test]
    fn adversarial_patterns_and_texts_take_time_linear_in_the_text() {
        let hostile = [
            "*a?a?a?b*".to_owned(),
            "*a*a*a*a*b".to_owned(),
            "?*?*?*?*b".to_owned(),
            "*?a?a?a?a?c*".to_owned(),
            "*".to_owned() + &"a".repeat(40) + "b*",
            "*a".repeat(50).replace("a*a", "a*b"),
        ];
        for pattern in &hostile {
            let segments: usize = pattern.split('*').map(str::len).sum();
            let (small, large) = ("a".repeat(20_000), "a".repeat(40_000));
            let (w1, w2) = (work(pattern, &small), work(pattern, &large));
            assert!(
                w2 <= (segments + 1) * large.len(),
                "{pattern}: {w2} bytes compared for {} of text",
                large.len()
            );
            assert!(
                w2 <= 2 * w1 + 64,
                "{pattern}: twice the text took {w1} -> {w2}, more than twice the work"
            );
        }
    }
}
