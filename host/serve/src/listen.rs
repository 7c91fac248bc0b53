//! The accept loop: HTTP/1 connections with a deadline for a request's
//! headers, at most `max_connections` at once; one more is answered 503 and
//! closed at once, so a flood of slow or half-open connections sheds load
//! instead of starving every client.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

/// How connections are bounded.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ConnectionLimits {
    pub max_connections: usize,
    pub header_timeout: Duration,
}

/// Serves `router` on `listener` until accepting fails for good.
pub(crate) async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ConnectionLimits,
) -> std::io::Result<()> {
    let open = Arc::new(Semaphore::new(limits.max_connections));
    let mut http = hyper::server::conn::http1::Builder::new();
    // The timer is what makes the header deadline work (hyper ignores it
    // without one); it also covers a kept-alive connection's next request.
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .keep_alive(true);
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
            tokio::spawn(shed(stream, limits.max_connections));
            continue;
        };
        let connection = http.serve_connection(
            TokioIo::new(stream),
            TowerToHyperService::new(router.clone()),
        );
        tokio::spawn(async move {
            let _permit = permit;
            if let Err(e) = connection.await {
                tracing::debug!("connection ended: {e}");
            }
        });
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
    let body = format!(
        "{{\"error\":\"the server has {max} connections open, the most it keeps; retry shortly\"}}"
    );
    let response = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        stream.write_all(response.as_bytes()).await?;
        stream.shutdown().await
    })
    .await;
}
