//! Text from a model, a guest or a file is printed only after this: control
//! characters (escape sequences that retitle or clear a terminal, carriage
//! returns that overwrite a line) are shown escaped. Line breaks and tabs
//! stay.

use std::borrow::Cow;

/// `text` safe to print to a terminal.
pub(crate) fn safe(text: &str) -> Cow<'_, str> {
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if unsafe_char(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

fn unsafe_char(c: char) -> bool {
    c.is_control() && c != '\n' && c != '\t'
}

/// `println!` of text made [`safe`], that does not panic when stdout is
/// closed (`| head`).
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let text = format!($($arg)*);
        let _ = writeln!(std::io::stdout().lock(), "{}", $crate::terminal::safe(&text));
    }};
}

/// `eprintln!` of text made [`safe`].
macro_rules! tell {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let text = format!($($arg)*);
        let _ = writeln!(std::io::stderr().lock(), "{}", $crate::terminal::safe(&text));
    }};
}

pub(crate) use {say, tell};

#[cfg(test)]
mod tests {
    use super::safe;

    #[test]
    fn escape_sequences_are_shown_not_obeyed() {
        assert_eq!(safe("plain\ntext\t!"), "plain\ntext\t!");
        assert_eq!(
            safe("\u{1b}]0;pwned\u{7}\u{1b}[2J\r"),
            "\\u{1b}]0;pwned\\u{7}\\u{1b}[2J\\u{d}"
        );
    }
}
