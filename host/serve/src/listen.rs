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
        let Ok(permit) = open.clone().try_acquire_owned() else {
            tokio::spawn(shed(stream, max_connections));
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
            tokio::spawn(shed(stream, max_connections));
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

/// Answers a connection past the limit with 503 and closes it.
async fn shed(mut stream: TcpStream, max: usize) {
    let response = busy(&format!(
        "the server has {max} connections open, the most it keeps; retry shortly"
    ));
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        stream.write_all(response.as_bytes()).await?;
        stream.shutdown().await
    })
    .await;
}

/// The same for a connection no thread can serve, from a thread with no
/// runtime: a blocking write of at most a second.
pub(crate) fn shed_blocking(stream: std::net::TcpStream, why: &str) {
    use std::io::Write;
    let response = busy(why);
    let _ = stream
        .set_nonblocking(false)
        .and_then(|()| stream.set_write_timeout(Some(Duration::from_secs(1))))
        .and_then(|()| (&stream).write_all(response.as_bytes()))
        .and_then(|()| stream.shutdown(std::net::Shutdown::Both));
}

/// A whole 503 response, `connection: close`, with `why` as its error.
fn busy(why: &str) -> String {
    let body = serde_json::json!({ "error": why }).to_string();
    format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
}
