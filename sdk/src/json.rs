//! Structured tool output: a tool's result is often a JSON document (a file
//! read nests its text under `file.content`, a shell command has `stdout`
//! and `stderr`). [`map_strings`] lets a guard work on every string value
//! of such a document as text, and hands back the document in the same
//! shape: the agent can put it back in place of the tool's output.

/// Applies `f` to every string value of the JSON document `text` (not to
/// object keys) and returns the document with each string `f` changed
/// replaced, everything else byte for byte as it was. `f` returns `None` to
/// leave a string as it is.
///
/// Returns `None` when `text` is not one well-formed JSON value. No
/// allocation but the output; linear in the length of `text`.
///
/// ```
/// use hookbox_sdk::json::map_strings;
/// let read = r#"{"type":"text","file":{"content":"A=1\nKEY=s3cret\n","numLines":2}}"#;
/// let redacted = map_strings(read, |s| s.contains("s3cret").then(|| s.replace("s3cret", "[REDACTED]")));
/// assert_eq!(
///     redacted.as_deref(),
///     Some(r#"{"type":"text","file":{"content":"A=1\nKEY=[REDACTED]\n","numLines":2}}"#)
/// );
/// assert_eq!(map_strings("not json", |_| None), None);
/// ```
pub fn map_strings(text: &str, mut f: impl FnMut(&str) -> Option<String>) -> Option<String> {
    map_members(text, |_, value| f(value))
}

/// [`map_strings`], with each string's member name: `Some(key)` for a
/// string that is the value of an object's member `key`, `None` for one in
/// an array or the document itself.
///
/// ```
/// use hookbox_sdk::json::map_members;
/// let out = map_members(r#"{"password": "b", "tags": ["password"]}"#, |key, _| {
///     (key == Some("password")).then(|| "[REDACTED]".to_string())
/// });
/// assert_eq!(out.as_deref(), Some(r#"{"password": "[REDACTED]", "tags": ["password"]}"#));
/// ```
pub fn map_members(
    text: &str,
    mut f: impl FnMut(Option<&str>, &str) -> Option<String>,
) -> Option<String> {
    map_nodes(text, |key, node| match node {
        Node::String(value) => f(key, value),
        _ => None,
    })
}

/// A part of a JSON document [`map_nodes`] shows its function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Node<'a> {
    /// An object member's name, decoded.
    Key(&'a str),
    /// A string value, decoded.
    String(&'a str),
    /// A number, `true`, `false` or `null`, as written.
    Scalar(&'a str),
    /// An object or an array, before its contents are shown (a
    /// replacement stands for all of it, and its contents are not shown).
    Container,
}

/// Shows `f` every part of the JSON document `text` (object names, strings,
/// other scalars, and objects and arrays before their contents), each with
/// the name of the member it is the value of (`None` in an array, for the
/// document itself, and for a [`Node::Key`]), and returns the document with
/// each part `f` answered `Some(s)` for replaced by the JSON string `s`;
/// everything else byte for byte as it was.
///
/// Returns `None` when `text` is not one well-formed JSON value, or nests
/// deeper than 128. No allocation but the output and each decoded string;
/// linear in the length of `text`.
///
/// ```
/// use hookbox_sdk::json::{Node, map_nodes};
/// let out = map_nodes(r#"{"pin": 1234, "ghp_x": {"a": [1]}, "n": 5}"#, |key, node| match (key, node) {
///     (_, Node::Key(k)) if k.starts_with("ghp_") => Some("[KEY]".into()),
///     (Some("pin"), _) => Some("[REDACTED]".into()),
///     (_, Node::Container) => None,
///     _ => None,
/// });
/// assert_eq!(out.as_deref(), Some(r#"{"pin": "[REDACTED]", "[KEY]": {"a": [1]}, "n": 5}"#));
/// ```
pub fn map_nodes(
    text: &str,
    mut f: impl FnMut(Option<&str>, Node<'_>) -> Option<String>,
) -> Option<String> {
    let mut parser = Parser {
        bytes: text.as_bytes(),
        at: 0,
        out: String::with_capacity(text.len()),
        copied: 0,
        text,
    };
    parser.blank();
    parser.value(&mut f as &mut Visit<'_>, 0, None)?;
    parser.blank();
    if parser.at != parser.bytes.len() {
        return None;
    }
    parser.out.push_str(&text[parser.copied..]);
    Some(parser.out)
}

/// What [`map_nodes`] calls for each part.
type Visit<'f> = dyn FnMut(Option<&str>, Node<'_>) -> Option<String> + 'f;

/// Deeper nesting than this is refused (a guest's stack is small).
const MAX_DEPTH: usize = 128;

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
    out: String,
    /// Input up to here is already in `out`.
    copied: usize,
}

impl Parser<'_> {
    fn blank(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.at) {
            self.at += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.bytes.get(self.at) == Some(&byte)).then(|| self.at += 1)
    }

    /// Writes `new` as a JSON string in place of the input from `start` to
    /// here.
    fn replace(&mut self, start: usize, new: &str) {
        self.out.push_str(&self.text[self.copied..start]);
        encode(new, &mut self.out);
        self.copied = self.at;
    }

    fn value(&mut self, f: &mut Visit<'_>, depth: usize, key: Option<&str>) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        let start = self.at;
        match *self.bytes.get(self.at)? {
            open @ (b'{' | b'[') => {
                let replaced = f(key, Node::Container);
                // Read through, to check it and find its end, showing its
                // contents only when it stays.
                let mut skip = |_: Option<&str>, _: Node<'_>| None;
                let inner: &mut Visit<'_> = if replaced.is_some() {
                    &mut skip
                } else {
                    &mut *f
                };
                if open == b'{' {
                    self.object(inner, depth)?;
                } else {
                    self.array(inner, depth)?;
                }
                if let Some(new) = replaced {
                    // What the contents' replacements wrote goes too: there
                    // were none (`inner` answered `None`).
                    self.replace(start, &new);
                }
                Some(())
            }
            b'"' => {
                let decoded = self.string()?;
                if let Some(new) = f(key, Node::String(&decoded)) {
                    self.replace(start, &new);
                }
                Some(())
            }
            b't' => self.scalar(f, key, |p| p.literal("true")),
            b'f' => self.scalar(f, key, |p| p.literal("false")),
            b'n' => self.scalar(f, key, |p| p.literal("null")),
            _ => self.scalar(f, key, Self::number),
        }
    }

    fn object(&mut self, f: &mut Visit<'_>, depth: usize) -> Option<()> {
        self.at += 1;
        self.blank();
        if self.eat(b'}').is_some() {
            return Some(());
        }
        loop {
            self.blank();
            let start = self.at;
            let key = self.string()?;
            if let Some(new) = f(None, Node::Key(&key)) {
                self.replace(start, &new);
            }
            self.blank();
            self.eat(b':')?;
            self.blank();
            self.value(f, depth + 1, Some(&key))?;
            self.blank();
            if self.eat(b'}').is_some() {
                return Some(());
            }
            self.eat(b',')?;
        }
    }

    fn array(&mut self, f: &mut Visit<'_>, depth: usize) -> Option<()> {
        self.at += 1;
        self.blank();
        if self.eat(b']').is_some() {
            return Some(());
        }
        loop {
            self.blank();
            self.value(f, depth + 1, None)?;
            self.blank();
            if self.eat(b']').is_some() {
                return Some(());
            }
            self.eat(b',')?;
        }
    }

    fn scalar(
        &mut self,
        f: &mut Visit<'_>,
        key: Option<&str>,
        read: impl FnOnce(&mut Self) -> Option<()>,
    ) -> Option<()> {
        let start = self.at;
        read(self)?;
        let text = self.text;
        if let Some(new) = f(key, Node::Scalar(&text[start..self.at])) {
            self.replace(start, &new);
        }
        Some(())
    }

    fn literal(&mut self, word: &str) -> Option<()> {
        self.bytes[self.at..]
            .starts_with(word.as_bytes())
            .then(|| self.at += word.len())
    }

    fn number(&mut self) -> Option<()> {
        let start = self.at;
        self.eat(b'-');
        let digits = |p: &mut Self| {
            let from = p.at;
            while p.bytes.get(p.at).is_some_and(u8::is_ascii_digit) {
                p.at += 1;
            }
            p.at > from
        };
        if self.eat(b'0').is_none() && !digits(self) {
            return None;
        }
        if self.eat(b'.').is_some() && !digits(self) {
            return None;
        }
        if let Some(b'e' | b'E') = self.bytes.get(self.at) {
            self.at += 1;
            if let Some(b'+' | b'-') = self.bytes.get(self.at) {
                self.at += 1;
            }
            if !digits(self) {
                return None;
            }
        }
        (self.at > start).then_some(())
    }

    /// A string token, decoded.
    fn string(&mut self) -> Option<String> {
        self.eat(b'"')?;
        let mut decoded = String::new();
        loop {
            let run = self.at;
            while let Some(&b) = self.bytes.get(self.at) {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.at += 1;
            }
            decoded.push_str(&self.text[run..self.at]);
            match self.bytes.get(self.at)? {
                b'"' => {
                    self.at += 1;
                    return Some(decoded);
                }
                b'\\' => {
                    self.at += 1;
                    let escaped = *self.bytes.get(self.at)?;
                    self.at += 1;
                    decoded.push(match escaped {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => self.unicode_escape()?,
                        _ => return None,
                    });
                }
                _ => return None, // a raw control character
            }
        }
    }

    /// After `\u`: four hex digits, or a surrogate pair's two escapes.
    fn unicode_escape(&mut self) -> Option<char> {
        let first = self.hex4()?;
        if !(0xD800..0xDC00).contains(&first) {
            return char::from_u32(first);
        }
        self.eat(b'\\')?;
        self.eat(b'u')?;
        let second = self.hex4()?;
        if !(0xDC00..0xE000).contains(&second) {
            return None;
        }
        char::from_u32(0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00))
    }

    fn hex4(&mut self) -> Option<u32> {
        let digits = self.text.get(self.at..self.at + 4)?;
        let value = u32::from_str_radix(digits, 16).ok()?;
        self.at += 4;
        Some(value)
    }
}

/// `text` as a JSON string token.
fn encode(text: &str, out: &mut String) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.push_str("\\u00");
                out.push(HEX[(c as usize) >> 4] as char);
                out.push(HEX[(c as usize) & 0xF] as char);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::{Node, map_nodes, map_strings};

    fn upper(text: &str) -> Option<String> {
        map_strings(text, |s| Some(s.to_uppercase()))
    }

    #[test]
    fn values_change_and_keys_numbers_and_layout_do_not() {
        assert_eq!(
            upper("{ \"a\" : \"x\", \"n\": -1.5e3, \"l\": [true, null, \"y\"] }").as_deref(),
            Some("{ \"a\" : \"X\", \"n\": -1.5e3, \"l\": [true, null, \"Y\"] }")
        );
        assert_eq!(upper("\"top\"").as_deref(), Some("\"TOP\""));
        assert_eq!(upper("[]").as_deref(), Some("[]"));
    }

    #[test]
    fn escapes_are_decoded_for_the_guard_and_encoded_back() {
        let mut seen = Vec::new();
        let out = map_strings(r#"["a\u002db", "\ud83d\ude00\n\"q\""]"#, |s| {
            seen.push(s.to_owned());
            Some(format!("{s}\u{1}"))
        });
        assert_eq!(seen, ["a-b", "😀\n\"q\""]);
        assert_eq!(out.as_deref(), Some(r#"["a-b\u0001", "😀\n\"q\"\u0001"]"#));
    }

    #[test]
    fn what_is_not_one_json_value_is_refused() {
        for bad in [
            "",
            "{",
            "{\"a\"}",
            "[1,]",
            "[1 2]",
            "\"open",
            "01",
            "1.",
            "tru",
            "{} {}",
            "\"\t\"",
            "\"\\x\"",
            "\"\\ud800\"",
            "-",
        ] {
            assert_eq!(map_strings(bad, |_| None), None, "{bad:?}");
        }
        let deep = "[".repeat(200) + &"]".repeat(200);
        assert_eq!(map_strings(&deep, |_| None), None);
    }

    #[test]
    fn untouched_documents_come_back_byte_for_byte() {
        let text = "{\"k\": \"v\\u0041\",\n \"x\": [1, 2]}";
        assert_eq!(map_strings(text, |_| None).as_deref(), Some(text));
    }

    #[test]
    fn keys_scalars_and_containers_can_be_replaced_and_the_rest_stays() {
        let text = r#"{"a": {"b": [1, "x"]}, "k1": true, "n": null, "s": "v", "l": [2.5e1]}"#;
        let mut seen = Vec::new();
        let out = map_nodes(text, |key, node| {
            seen.push(format!("{key:?} {node:?}"));
            match (key, node) {
                (Some("a"), Node::Container) => Some("A".into()),
                (None, Node::Key("k1")) => Some("K".into()),
                (Some("n"), Node::Scalar("null")) => Some("N".into()),
                (None, Node::Scalar("2.5e1")) => Some("L".into()),
                _ => None,
            }
        });
        assert_eq!(
            out.as_deref(),
            Some(r#"{"a": "A", "K": true, "n": "N", "s": "v", "l": ["L"]}"#)
        );
        // A replaced container's contents are not shown.
        assert!(!seen.iter().any(|s| s.contains("\"b\"")), "{seen:?}");
        assert!(
            seen.contains(&r#"Some("k1") Scalar("true")"#.to_owned()),
            "{seen:?}"
        );
        // A malformed container is refused, replaced or not.
        assert_eq!(
            map_nodes(r#"{"a": {"b" 1}}"#, |_, _| Some("x".into())),
            None
        );
    }
}
