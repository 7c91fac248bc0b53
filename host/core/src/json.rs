//! Serde helpers for the JSON forms: fields that carry JSON as text.
//!
//! WIT carries tool arguments, extensions and additional params as JSON
//! *text*. Their JSON form is that text as a string; when reading, a JSON
//! value in its place is accepted too and kept as compact text, so hand-written
//! event files can say `"args": {"path": "a.txt"}`.

/// `#[serde(with = "json_text")]` for a `String` holding JSON text.
pub(crate) mod json_text {
    use serde::{Deserialize, Deserializer, Serializer};
    use serde_json::Value;

    /// Writes the JSON text as a string.
    pub fn serialize<S: Serializer>(text: &str, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(text)
    }

    /// Reads a string as is, and any other JSON value as compact text.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
        Ok(match Value::deserialize(d)? {
            Value::String(text) => super::canonical(&text).unwrap_or(text),
            other => other.to_string(),
        })
    }

    /// `{}`: the default for an absent field holding a JSON object.
    pub fn empty_object() -> String {
        "{}".to_owned()
    }

    /// The same for `Option<String>`.
    pub mod option {
        use serde::{Deserialize, Deserializer, Serializer};
        use serde_json::Value;

        /// Writes the JSON text as a string, or `None` as null.
        pub fn serialize<S: Serializer>(text: &Option<String>, s: S) -> Result<S::Ok, S::Error> {
            match text {
                Some(text) => s.serialize_some(text),
                None => s.serialize_none(),
            }
        }

        /// Reads null as `None`, a string as is, and any other value as compact text.
        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
            Ok(match Option::<Value>::deserialize(d)? {
                None | Some(Value::Null) => None,
                Some(Value::String(text)) => Some(crate::json::canonical(&text).unwrap_or(text)),
                Some(other) => Some(other.to_string()),
            })
        }
    }
}

/// `text` in the one canonical JSON form every guard and tool sees: parsed
/// and written back compact, escapes decoded (`"rm \u002drf"` is
/// `"rm -rf"`), duplicate keys collapsed to the last; `None` when it is not
/// JSON (or nests deeper than 128 levels).
///
/// One pass that copies what is already canonical and rewrites only what is
/// not (blanks, escapes, non-integer numbers); a document with a duplicate
/// key, or anything unusual, takes the slow path through a `Value`, which
/// defines the form.
pub fn canonical(text: &str) -> Option<String> {
    let mut fast = Canonical {
        text,
        bytes: text.as_bytes(),
        at: 0,
        out: Vec::with_capacity(text.len()),
    };
    match fast.document() {
        Some(()) => String::from_utf8(fast.out).ok(),
        None => slow_canonical(text),
    }
}

/// The first index from `at` of a byte a string token must look at: `"`,
/// `\\` or a control character; eight bytes at a time.
fn plain_run(bytes: &[u8], mut at: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let has_zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    while let Some(chunk) = bytes.get(at..at + 8) {
        let v = u64::from_le_bytes(chunk.try_into().unwrap_or_default());
        let special = has_zero(v ^ (ONES * u64::from(b'"')))
            | has_zero(v ^ (ONES * u64::from(b'\\')))
            | (v.wrapping_sub(ONES * 0x20) & !v & HIGH);
        if special != 0 {
            break;
        }
        at += 8;
    }
    at
}

fn slow_canonical(text: &str) -> Option<String> {
    serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .map(|value| value.to_string())
}

/// The fast path of [`canonical`]: `None` means "take the slow path" (which
/// also decides whether the text is JSON at all).
struct Canonical<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
    out: Vec<u8>,
}

impl<'a> Canonical<'a> {
    /// Nesting past this goes the slow way (serde's limit is 128).
    const MAX_DEPTH: usize = 100;

    fn document(&mut self) -> Option<()> {
        self.blank();
        self.value(0)?;
        self.blank();
        (self.at == self.bytes.len()).then_some(())
    }

    fn blank(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.at) {
            self.at += 1;
        }
    }

    fn expect(&mut self, byte: u8) -> Option<()> {
        (self.bytes.get(self.at) == Some(&byte)).then(|| {
            self.at += 1;
            self.out.push(byte);
        })
    }

    fn value(&mut self, depth: usize) -> Option<()> {
        if depth > Self::MAX_DEPTH {
            return None;
        }
        match *self.bytes.get(self.at)? {
            b'{' => self.object(depth),
            b'[' => {
                self.expect(b'[')?;
                self.blank();
                if self.expect(b']').is_some() {
                    return Some(());
                }
                loop {
                    self.blank();
                    self.value(depth + 1)?;
                    self.blank();
                    if self.expect(b']').is_some() {
                        return Some(());
                    }
                    self.expect(b',')?;
                }
            }
            b'"' => self.string().map(drop),
            b't' => self.literal("true"),
            b'f' => self.literal("false"),
            b'n' => self.literal("null"),
            _ => self.number(),
        }
    }

    fn object(&mut self, depth: usize) -> Option<()> {
        self.expect(b'{')?;
        self.blank();
        if self.expect(b'}').is_some() {
            return Some(());
        }
        let mut keys: Vec<&'a str> = Vec::new();
        loop {
            self.blank();
            // A key written with escapes, or twice: the slow path.
            let key = self.string()?;
            if key.contains('\\') || keys.contains(&key) {
                return None;
            }
            keys.push(key);
            self.blank();
            self.expect(b':')?;
            self.blank();
            self.value(depth + 1)?;
            self.blank();
            if self.expect(b'}').is_some() {
                return Some(());
            }
            self.expect(b',')?;
        }
    }

    fn literal(&mut self, word: &str) -> Option<()> {
        self.bytes[self.at..].starts_with(word.as_bytes()).then(|| {
            self.at += word.len();
            self.out.extend_from_slice(word.as_bytes());
        })
    }

    /// A string token, written canonically; returns its raw text (between
    /// the quotes) as it was in the input.
    fn string(&mut self) -> Option<&'a str> {
        let text: &'a str = self.text;
        let start = self.at;
        if self.bytes.get(start) != Some(&b'"') {
            return None;
        }
        let mut end = start + 1;
        let mut escaped = false;
        loop {
            end = plain_run(self.bytes, end);
            match *self.bytes.get(end)? {
                b'"' => break,
                b'\\' => {
                    escaped = true;
                    end += 2;
                }
                byte if byte < 0x20 => return None,
                _ => end += 1,
            }
        }
        let token = text.get(start..=end)?;
        if escaped {
            // Decoded and encoded by serde_json itself: its form, exactly.
            let decoded: String = serde_json::from_str(token).ok()?;
            serde_json::to_writer(&mut self.out, &decoded).ok()?;
        } else {
            self.out.extend_from_slice(token.as_bytes());
        }
        self.at = end + 1;
        text.get(start + 1..end)
    }

    fn number(&mut self) -> Option<()> {
        let start = self.at;
        while let Some(b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') = self.bytes.get(self.at) {
            self.at += 1;
        }
        let token = &self.text[start..self.at];
        let digits = token.strip_prefix('-').unwrap_or(token);
        let plain_integer = !digits.is_empty()
            && digits.len() <= 18
            && digits.bytes().all(|b| b.is_ascii_digit())
            && (digits == "0" || !digits.starts_with('0'))
            && token != "-0";
        if plain_integer {
            self.out.extend_from_slice(token.as_bytes());
            return Some(());
        }
        let number: serde_json::Number = serde_json::from_str(token).ok()?;
        serde_json::to_writer(&mut self.out, &number).ok()
    }
}

/// Whether `text` is well-formed JSON, without building a value.
pub fn is_json(text: &str) -> bool {
    serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok()
}

/// Whether `text` is a JSON object.
pub fn is_json_object(text: &str) -> bool {
    text.trim_start().starts_with('{') && is_json(text)
}

/// `args`, a guard's rewrite of a call's arguments, as the object every
/// agent and protocol needs
/// (docs/architecture.md#rewrites-keep-the-clients-shapes); `None` when it
/// is anything else, which each door refuses in its own terms.
pub fn args_object(args: &str) -> Option<serde_json::Value> {
    serde_json::from_str::<serde_json::Value>(args)
        .ok()
        .filter(serde_json::Value::is_object)
}

#[cfg(test)]
mod tests {
    use super::{canonical, slow_canonical};

    /// A small deterministic generator of JSON texts in many spellings.
    struct Gen(u64);

    impl Gen {
        fn next(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }

        fn blank(&mut self) -> &'static str {
            ["", "", " ", "\n  ", "\t"][self.next(5) as usize]
        }

        fn string(&mut self) -> String {
            let pieces = [
                "a",
                "rm -rf",
                "\\u002d",
                "\\n",
                "\\\"",
                "\\\\",
                "\\/",
                "é",
                "\\u00e9",
                "\\ud83d\\ude00",
                "\\u0000",
                "\\t",
                "\\b",
                "k",
                "\\u007f",
            ];
            // Long enough for the eight-byte scan, with specials anywhere.
            let n = self.next(24);
            let body: String = (0..n)
                .map(|_| pieces[self.next(pieces.len() as u64) as usize])
                .collect();
            format!("\"{body}\"")
        }

        fn value(&mut self, depth: u32) -> String {
            let pick = if depth > 3 {
                self.next(4)
            } else {
                self.next(7)
            };
            match pick {
                0 => self.string(),
                1 => [
                    "0",
                    "-1",
                    "42",
                    "1.0",
                    "1e3",
                    "-0",
                    "1.50",
                    "123456789012345678901",
                    "0.1",
                    "-2E-2",
                ][self.next(10) as usize]
                    .to_owned(),
                2 => ["true", "false", "null"][self.next(3) as usize].to_owned(),
                3 => "{}".to_owned(),
                4 | 5 => {
                    let n = self.next(4);
                    let keys = ["\"a\"", "\"b\"", "\"\\u0061\"", "\"command\""];
                    let fields: Vec<String> = (0..n)
                        .map(|_| {
                            let key = keys[self.next(keys.len() as u64) as usize];
                            let (b1, b2) = (self.blank(), self.blank());
                            format!("{key}{b1}:{b2}{}", self.value(depth + 1))
                        })
                        .collect();
                    format!("{{{}}}", fields.join(&format!(",{}", self.blank())))
                }
                _ => {
                    let n = self.next(4);
                    let items: Vec<String> = (0..n).map(|_| self.value(depth + 1)).collect();
                    format!("[{}{}]", self.blank(), items.join(","))
                }
            }
        }
    }

    #[test]
    fn the_fast_path_writes_exactly_what_a_value_writes() {
        let mut g = Gen(0x9E37_79B9_7F4A_7C15);
        for _ in 0..20_000 {
            let text = format!("{}{}{}", g.blank(), g.value(0), g.blank());
            assert_eq!(canonical(&text), slow_canonical(&text), "{text}");
        }
    }

    #[test]
    fn the_canonical_form_is_a_fixed_point_for_numbers_too() {
        // Found by the `canonical_json` fuzz target: without exact float
        // parsing, the form of a huge integer changed when read again.
        for text in [
            "8888888888888888888888888888888888888888888888888888888",
            "8.88888888888889e+54",
            "0.1",
            "1e-7",
            "123456789.123456789e300",
        ] {
            let once = canonical(text).unwrap();
            assert_eq!(canonical(&once).as_deref(), Some(once.as_str()), "{text}");
        }
    }

    #[test]
    fn what_is_not_json_stays_refused() {
        for bad in [
            "",
            "{",
            "[1,]",
            "01",
            "1.",
            "\"\t\"",
            "{\"a\" 1}",
            "tru",
            "[] []",
            "\"\\ud800\"",
            "-",
            "1x",
            "{\"a\":}",
            "\"\\x\"",
        ] {
            assert_eq!(canonical(bad), None, "{bad:?}");
        }
        let deep = "[".repeat(200) + &"]".repeat(200);
        assert_eq!(canonical(&deep), None);
        assert_eq!(
            canonical(r#"{"command" : "rm \u002drf ~/", "n": 1.50}"#).as_deref(),
            Some(r#"{"command":"rm -rf ~/","n":1.5}"#)
        );
    }
}
