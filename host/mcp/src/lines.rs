//! Newline-delimited messages, read with a bound on their length: a peer
//! cannot make the proxy hold an endless line.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// What reading the next line gave.
#[derive(Debug)]
pub(crate) enum Read {
    /// A line, without its `\n` (and `\r`).
    Line(String),
    /// The stream ended (a last line without `\n` is still a line).
    End,
    /// A line longer than the limit; it was skipped to its end.
    TooLong(usize),
    /// A line that is not UTF-8.
    NotUtf8,
    /// The stream failed.
    Failed(std::io::Error),
}

pub(crate) struct LineReader<R> {
    reader: R,
    max: usize,
}

impl<R: AsyncBufRead + Unpin> LineReader<R> {
    pub fn new(reader: R, max: usize) -> LineReader<R> {
        LineReader { reader, max }
    }

    /// The next non-empty line.
    pub async fn next(&mut self) -> Read {
        loop {
            match self.line().await {
                Read::Line(line) if line.trim().is_empty() => continue,
                other => return other,
            }
        }
    }

    async fn line(&mut self) -> Read {
        let mut line = Vec::new();
        let mut too_long = false;
        loop {
            let available = match self.reader.fill_buf().await {
                Ok(available) => available,
                Err(e) => return Read::Failed(e),
            };
            if available.is_empty() {
                if line.is_empty() && !too_long {
                    return Read::End;
                }
                break;
            }
            let (chunk, done) = match available.iter().position(|&b| b == b'\n') {
                Some(at) => (&available[..at], at + 1),
                None => (available, available.len()),
            };
            let ends = done > chunk.len();
            if !too_long {
                if line.len() + chunk.len() > self.max {
                    too_long = true;
                    line = Vec::new();
                } else {
                    line.extend_from_slice(chunk);
                }
            }
            self.reader.consume(done);
            if ends {
                break;
            }
        }
        if too_long {
            return Read::TooLong(self.max);
        }
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        // A bare CR ends a line for many readers (Python's text streams,
        // Node's readline): one line here would be several there, and a
        // message could hide inside another. In JSON a CR outside a string
        // is only whitespace (inside one it must be escaped), so a space
        // reads the same to every reader.
        for byte in &mut line {
            if *byte == b'\r' {
                *byte = b' ';
            }
        }
        match String::from_utf8(line) {
            Ok(line) => Read::Line(line),
            Err(_) => Read::NotUtf8,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn all(input: &[u8], max: usize) -> Vec<String> {
        let mut reader = LineReader::new(input, max);
        let mut out = Vec::new();
        loop {
            match reader.next().await {
                Read::Line(line) => out.push(line),
                Read::End => return out,
                Read::TooLong(_) => out.push("<too long>".into()),
                Read::NotUtf8 => out.push("<not utf-8>".into()),
                Read::Failed(e) => panic!("{e}"),
            }
        }
    }

    #[tokio::test]
    async fn lines_are_split_bounded_and_checked() {
        let input = b"{\"a\":1}\r\n\n{\"b\":2}\n0123456789abcdef\n\xff\n{\"c\":\r3}";
        assert_eq!(
            all(input, 12).await,
            [
                "{\"a\":1}",
                "{\"b\":2}",
                "<too long>",
                "<not utf-8>",
                "{\"c\": 3}"
            ]
        );
    }
}
