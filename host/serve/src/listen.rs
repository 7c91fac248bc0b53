//! The accept loop: HTTP/1 connections, each handed to a connection thread
//! of its own ([`crate::threads`]), at most `max_connections` at once; one
//! more is answered 503 and closed at once, so a flood of slow or half-open
//! connections sheds load instead of starving every client.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

use crate::threads::ConnectionThreads;

/// Accepts connections on `listener` for `threads` to serve, at most
/// `max_connections` at once, until accepting fails for good.
pub(crate) async fn serve(
    listener: TcpListener,
    threads: ConnectionThreads,
    max_connections: usize,
) -> std::io::Result<()> {
    let open = Arc::new(Semaphore::new(max_connections));
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) if is_transient(&e) => {
                // Out of file descriptors, a connection reset before it was
                // accepted ...: wait a moment rather than spin or stop.
                tracing::warn!("accepting a connection failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
            Err(e) => return Err(e),
        };
        let full = || {
            format!(
                "the server has {max_connections} connections open, the most it keeps; retry shortly"
            )
        };
        let Ok(permit) = open.clone().try_acquire_owned() else {
            tokio::spawn(shed(stream, full()));
            continue;
        };
        let stream = match stream.into_std() {
            Ok(stream) => stream,
            Err(e) => {
                tracing::debug!("a connection cannot be served: {e}");
                continue;
            }
        };
        if let Err((stream, _)) = threads.serve((stream, permit))
            && let Ok(stream) = TcpStream::from_std(stream)
        {
            // No thread to serve it on: as full as past the limit.
            tokio::spawn(shed(stream, full()));
        }
    }
}

fn is_transient(error: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        error.kind(),
        ConnectionAborted | ConnectionReset | Interrupted | WouldBlock
    ) || error
        .raw_os_error()
        .is_some_and(|code| code == 23 || code == 24) // ENFILE, EMFILE
}

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
