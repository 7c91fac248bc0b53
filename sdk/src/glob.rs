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
    // Bytes, not chars: no allocation. Literals compare byte by byte (UTF-8
    // is self-synchronising); `?` and backtracking step whole characters.
    let (p, t) = (pattern.as_bytes(), text.as_bytes());
    let char_len = |at: usize| {
        1 + t[at + 1..]
            .iter()
            .take_while(|&&b| b & 0xC0 == 0x80)
            .count()
    };
    // Greedy matching with one backtrack point: linear in practice, and never
    // exponential on hostile patterns.
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
    }

    #[test]
    fn hostile_patterns_stay_fast() {
        let text = "a".repeat(10_000);
        assert!(!glob_match(&"*a".repeat(50).replace("a*a", "a*b"), &text));
    }
}
