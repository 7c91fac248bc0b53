//! Fast text search for guards: substring, any-of-bytes and line splitting,
//! in time linear in the text.
//!
//! These run on the `memchr` crate, which uses WebAssembly's 128-bit SIMD
//! when the guest is built with it (`-C target-feature=+simd128`; this
//! repository's `.cargo/config.toml` and `hookbox build` turn it on, and
//! wasmtime runs it). Without SIMD they still run in linear time, a word at a
//! time.
//!
//! ```
//! use hookbox_sdk::text;
//! assert!(text::contains("sudo rm -rf /", "rm -rf"));
//! assert_eq!(text::find_any_byte("a=b:c", b"=:"), Some(1));
//! assert_eq!(text::lines("a\r\nb\nc").collect::<Vec<_>>(), ["a", "b", "c"]);
//! ```

use memchr::memmem;

/// Where `needle` first occurs in `haystack` (a byte offset).
pub fn find(haystack: &str, needle: &str) -> Option<usize> {
    memmem::find(haystack.as_bytes(), needle.as_bytes())
}

/// Whether `needle` occurs in `haystack`.
pub fn contains(haystack: &str, needle: &str) -> bool {
    find(haystack, needle).is_some()
}

/// A needle to look for in many haystacks: built once (a guard's config),
/// searched with per event.
#[derive(Clone, Debug)]
pub struct Finder(memmem::Finder<'static>);

impl Finder {
    /// A searcher for `needle`.
    pub fn new(needle: &str) -> Finder {
        Finder(memmem::Finder::new(needle.as_bytes()).into_owned())
    }

    /// Where the needle first occurs in `haystack`.
    pub fn find(&self, haystack: &str) -> Option<usize> {
        self.0.find(haystack.as_bytes())
    }
}

/// Where the first of `bytes` occurs in `haystack`: one to three bytes
/// search with SIMD, more a byte at a time.
pub fn find_any_byte(haystack: &str, bytes: &[u8]) -> Option<usize> {
    let h = haystack.as_bytes();
    match *bytes {
        [] => None,
        [a] => memchr::memchr(a, h),
        [a, b] => memchr::memchr2(a, b, h),
        [a, b, c] => memchr::memchr3(a, b, c, h),
        _ => {
            let mut set = [false; 256];
            for &b in bytes {
                set[usize::from(b)] = true;
            }
            h.iter().position(|&b| set[usize::from(b)])
        }
    }
}

/// The lines of `text`, as [`str::lines`] gives them (`\n` or `\r\n`
/// ends a line; a last line without one counts), found with SIMD.
pub fn lines(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = Some(text).filter(|t| !t.is_empty());
    std::iter::from_fn(move || {
        let current = rest?;
        let line = match memchr::memchr(b'\n', current.as_bytes()) {
            Some(end) => {
                rest = Some(&current[end + 1..]).filter(|r| !r.is_empty());
                &current[..end]
            }
            None => {
                rest = None;
                current
            }
        };
        Some(line.strip_suffix('\r').unwrap_or(line))
    })
}

/// The Levenshtein distance between `a` and `b` (in characters), if it is
/// at most `max`: O(`max` × length) time, so a huge input against a short
/// name costs one pass to count its characters, not a table of both.
///
/// ```
/// use hookbox_sdk::text::edit_distance_within;
/// assert_eq!(edit_distance_within("raed_file", "read_file", 2), Some(2));
/// assert_eq!(edit_distance_within("shell", "read_file", 2), None);
/// ```
pub fn edit_distance_within(a: &str, b: &str, max: usize) -> Option<usize> {
    let (a_len, b_len) = (a.chars().count(), b.chars().count());
    if a_len.abs_diff(b_len) > max {
        return None;
    }
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    // Only cells within `max` of the diagonal can hold a distance of at most
    // `max`; every other cell counts as `max + 1`.
    let over = max + 1;
    let mut row: Vec<usize> = (0..=b.len()).map(|j| j.min(over)).collect();
    for i in 1..=a.len() {
        let lo = i.saturating_sub(max).max(1);
        let hi = (i + max).min(b.len());
        let mut diagonal = row[lo - 1];
        row[lo - 1] = if lo == 1 { i.min(over) } else { over };
        let mut best = row[lo - 1];
        for j in lo..=hi {
            let above = row[j];
            row[j] = (above + 1)
                .min(row[j - 1] + 1)
                .min(diagonal + usize::from(a[i - 1] != b[j - 1]))
                .min(over);
            diagonal = above;
            best = best.min(row[j]);
        }
        if hi < b.len() {
            row[hi + 1] = over;
        }
        if best > max {
            return None;
        }
    }
    Some(row[b.len()]).filter(|&d| d <= max)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn levenshtein(a: &str, b: &str) -> usize {
        let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
        let mut row: Vec<usize> = (0..=b.len()).collect();
        for (i, ca) in a.iter().enumerate() {
            let mut diagonal = row[0];
            row[0] = i + 1;
            for (j, cb) in b.iter().enumerate() {
                let above = row[j + 1];
                row[j + 1] = (above + 1)
                    .min(row[j] + 1)
                    .min(diagonal + usize::from(ca != cb));
                diagonal = above;
            }
        }
        row[b.len()]
    }

    #[test]
    fn bounded_edit_distance_is_the_full_one_within_its_bound() {
        let words = [
            "",
            "a",
            "ab",
            "ba",
            "abc",
            "acb",
            "read_file",
            "raed_file",
            "read",
            "é",
            "aé",
            "xyzzy",
            "shell",
            "shel",
            "hsell",
        ];
        for a in words {
            for b in words {
                for max in 0..5 {
                    let full = levenshtein(a, b);
                    assert_eq!(
                        edit_distance_within(a, b, max),
                        (full <= max).then_some(full),
                        "{a:?} {b:?} within {max}"
                    );
                }
            }
        }
        let huge = "x".repeat(2 << 20);
        assert_eq!(edit_distance_within(&huge, "read_file", 2), None);
    }

    #[test]
    fn lines_are_what_str_lines_gives() {
        for text in [
            "",
            "a",
            "a\n",
            "a\r\nb",
            "\n\n",
            "a\rb\n",
            "x\n\ny\r\n",
            "é\nü",
        ] {
            assert_eq!(
                lines(text).collect::<Vec<_>>(),
                text.lines().collect::<Vec<_>>(),
                "{text:?}"
            );
        }
    }

    #[test]
    fn searches_agree_with_the_standard_library() {
        let text = "the quick brown fox jumps over the lazy dog; déjà vu";
        for needle in ["", "the", "lazy", "dog;", "vu", "déjà", "cat", "x"] {
            assert_eq!(find(text, needle), text.find(needle), "{needle}");
            assert_eq!(
                Finder::new(needle).find(text),
                text.find(needle),
                "{needle}"
            );
        }
        for set in [&b""[..], b"q", b"zq", b"zqj", b"zqjx", b"#"] {
            assert_eq!(
                find_any_byte(text, set),
                text.bytes().position(|b| set.contains(&b)),
                "{set:?}"
            );
        }
    }
}
