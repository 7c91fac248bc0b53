//! Text helpers for spans, events and messages.

/// `text` cut to at most `max` bytes on a character boundary, marked `…`.
pub fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}
