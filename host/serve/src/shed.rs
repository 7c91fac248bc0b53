//! A connection turned away (the server is full, or cannot start another
//! thread): answered, saying why, and closed. The accept loop
//! ([`crate::listen`]) and the connection threads ([`crate::threads`])
//! both turn connections away.

use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

/// Answers a connection that is turned away, saying `why`, and closes it:
/// a 503, or for an agent's hook the agent's own block ([`turned_away`]).
pub(crate) async fn shed(mut stream: TcpStream, why: String) {
    use tokio::io::AsyncReadExt;
    let mut head = [0u8; 64];
    let mut read = 0;
    // Until the request line is in (it may come a few bytes at a time).
    let _ = tokio::time::timeout(HEAD_WAIT, async {
        while read < head.len() && !head[..read].contains(&b'\n') {
            match stream.read(&mut head[read..]).await {
                Ok(0) | Err(_) => break,
                Ok(n) => read += n,
            }
        }
    })
    .await;
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        stream
            .write_all(turned_away(&head[..read], &why).as_bytes())
            .await?;
        stream.shutdown().await?;
        // The rest of the request is read and dropped, so that closing does
        // not reset the connection under the client's writes and answer.
        let mut rest = [0u8; 4096];
        while stream.read(&mut rest).await? > 0 {}
        Ok::<_, std::io::Error>(())
    })
    .await;
}

/// How long a turned-away connection is given to show its request line.
const HEAD_WAIT: Duration = Duration::from_millis(200);

/// A whole response, `connection: close`, for a request turned away
/// before it was read, of which `head` is the start. An agent reads any
/// status but 2xx from its hook as "carry on", so a hook route gets a 200
/// with the agent's block; anything else a 503 with `why` as its error
/// (hookbox's OpenCode plugin blocks on any status but 2xx).
fn turned_away(head: &[u8], why: &str) -> String {
    use hookbox_agents::Protocol;
    let hook = head.starts_with(b"POST /claude-code/hook ")
        || head.starts_with(b"POST /claude-code/hook?");
    let (status, body) = if hook {
        let reply = hookbox_agents::claude_code::ClaudeCode::unreadable(
            b"",
            &format!("hookbox: blocked: {why}"),
        );
        ("200 OK", reply.http_body().to_string())
    } else {
        (
            "503 Service Unavailable\r\nretry-after: 1",
            serde_json::json!({ "error": why }).to_string(),
        )
    };
    format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
}
