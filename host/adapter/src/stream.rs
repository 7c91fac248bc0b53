//! Streamed text held back where a guard may still rewrite it
//! (docs/contract.md#streamed-text).
//!
//! A guard sees a text-delta with the text streamed so far and may answer
//! with that whole text rewritten (a secret split across deltas, redacted
//! once it is whole). [`Held`] keeps what the client has been shown a
//! prefix of the newest rewrite: it shows only what lies before the tail a
//! later delta could still make part of a secret, and says so when a
//! rewrite reaches text already shown.
//!
//! | step | shown |
//! |---|---|
//! | a delta, the text so far decided (rewritten or not) | what lies before the held tail and was not shown yet |
//! | the held tail | the word being written (from the last whitespace), and at least [`HOLD`] characters |
//! | a rewrite that changes text already shown | nothing: [`Reached`], the door ends the run |
//! | the end of the text | the rest of the newest rewrite |

/// How many characters are held back behind the newest, at the least: more
/// than a phone number, a card or an IBAN written with spaces.
pub const HOLD: usize = 64;

/// One streamed text: what arrived, the newest decision on it, and what
/// of that the client has been shown.
#[derive(Debug, Default)]
pub struct Held {
    /// The text as it arrived.
    raw: String,
    /// The text so far as the guards last had it read.
    decided: String,
    /// The part of `decided` shown: always a prefix of it.
    shown: String,
}

/// A rewrite changed text the client had already been shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reached {
    /// What had been shown.
    pub shown: String,
}

impl Held {
    /// A delta arrived: the text so far, to ask the guards about.
    pub fn push(&mut self, delta: &str) -> &str {
        self.raw.push_str(delta);
        &self.raw
    }

    /// The text so far as the guards decided it (`None`: as it arrived):
    /// what to show now.
    ///
    /// # Errors
    /// [`Reached`] when the decision changes text already shown.
    pub fn decided(&mut self, rewritten: Option<String>) -> Result<String, Reached> {
        let decided = rewritten.unwrap_or_else(|| self.raw.clone());
        if !decided.starts_with(&self.shown) {
            return Err(Reached {
                shown: self.shown.clone(),
            });
        }
        let cut = hold_from(&decided).max(self.shown.len());
        let show = decided[self.shown.len()..cut].to_owned();
        self.shown.push_str(&show);
        self.decided = decided;
        Ok(show)
    }

    /// The text ended: the rest of the newest decision, and a fresh start
    /// for the next text.
    pub fn done(&mut self) -> String {
        let rest = self.decided[self.shown.len()..].to_owned();
        *self = Held::default();
        rest
    }

    /// Whether no text is being held.
    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }
}

/// Where the held tail of `text` starts: at the last word's first byte, or
/// [`HOLD`] characters before the end, whichever is earlier.
fn hold_from(text: &str) -> usize {
    let word = text
        .char_indices()
        .rev()
        .find(|(_, c)| c.is_whitespace())
        .map_or(0, |(at, c)| at + c.len_utf8());
    let window = text
        .char_indices()
        .rev()
        .nth(HOLD - 1)
        .map_or(0, |(at, _)| at);
    word.min(window)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Streams `deltas`, each decided by `guard` (the text so far to its
    /// rewrite, if any): what the client is shown, delta by delta, then at
    /// the end.
    fn stream(
        deltas: &[&str],
        guard: impl Fn(&str) -> Option<String>,
    ) -> Result<Vec<String>, Reached> {
        let mut held = Held::default();
        let mut shown = Vec::new();
        for delta in deltas {
            let so_far = held.push(delta).to_owned();
            shown.push(held.decided(guard(&so_far))?);
        }
        shown.push(held.done());
        Ok(shown)
    }

    fn redact(text: &str) -> Option<String> {
        text.contains("sk-live-4f9a8b7c6d5e")
            .then(|| text.replace("sk-live-4f9a8b7c6d5e", "[REDACTED]"))
    }

    /// One row per line of the table above.
    #[test]
    fn a_secret_split_across_deltas_is_never_shown() {
        let shown = stream(
            &["Your key is sk-live-4f9a", "8b7c6d5e and ", "nothing else."],
            redact,
        )
        .unwrap();
        assert_eq!(shown.concat(), "Your key is [REDACTED] and nothing else.");
        assert!(shown.iter().all(|s| !s.contains("sk-live")), "{shown:?}");
    }

    #[test]
    fn the_word_being_written_and_a_window_are_held() {
        let long = "word ".repeat(30);
        let shown = stream(&[&long, "tail"], |_| None).unwrap();
        // The first delta ends in a space: the window holds the last 64.
        assert_eq!(shown[0].len(), long.len() - HOLD);
        assert_eq!(shown.concat(), format!("{long}tail"));
        let shown = stream(&["a".repeat(200).as_str()], |_| None).unwrap();
        assert_eq!(shown[0], "", "one long word is held whole");
    }

    #[test]
    fn a_rewrite_of_text_already_shown_is_refused() {
        let long = "x ".repeat(100);
        let reached = stream(&[&long, "more"], |text| {
            text.ends_with("more").then(|| "changed".to_owned())
        })
        .unwrap_err();
        assert!(long.starts_with(&reached.shown) && !reached.shown.is_empty());
    }

    #[test]
    fn multi_byte_text_is_cut_on_characters() {
        let text = "é".repeat(100) + " ü";
        let shown = stream(&[&text], |_| None).unwrap();
        assert_eq!(shown.concat(), text);
    }

    /// Deltas of random text, each decided by a guard that redacts one word
    /// wherever it is whole: what is shown is always what the guard last
    /// decided, never the word, and nothing panics on multi-byte text.
    #[test]
    fn no_stream_of_words_and_characters_breaks_it() {
        const PIECES: [&str; 10] = [
            "sec", "ret", " ", "a", "é", "😀", "\n", "secret", "x ", "  ",
        ];
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..5_000 {
            let mut deltas = Vec::new();
            for _ in 0..8 {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                deltas.push(PIECES[(state % PIECES.len() as u64) as usize]);
            }
            let guard = |text: &str| {
                text.contains("secret")
                    .then(|| text.replace("secret", "[R]"))
            };
            if let Ok(shown) = stream(&deltas, guard) {
                let text = shown.concat();
                assert!(!text.contains("secret"), "{deltas:?}: {text:?}");
                assert_eq!(text, deltas.concat().replace("secret", "[R]"));
            }
        }
    }
}
