//! The accept loop: HTTP/1 connections, each handed to a connection thread
//! of its own ([`crate::threads`]), at most `max_connections` at once; one
//! more is answered 503 and closed at once, so a flood of slow or half-open
//! connections sheds load instead of starving every client.

use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

use crate::shed::shed;
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
