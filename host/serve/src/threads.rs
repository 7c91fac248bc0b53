//! Connection threads: each connection is served, start to end, on a
//! thread of its own with a single-threaded tokio runtime, and its events
//! are decided right there.
//!
//! An HTTP/1.1 connection has one request in flight at a time, so a
//! decision that blocks its thread (a guest running to its deadline) holds
//! up nobody but the client waiting for that answer: other connections
//! are on other threads, and the accept loop on the server's own runtime.
//! Handing each event from an async worker to a blocking pool and back
//! cost two cross-thread wake-ups per event, a third of serve's CPU per
//! event (BENCHMARKS.md, the floors of `hookbox serve`); here the only
//! wake-up is the socket's.
//!
//! Threads outlive their connection: one that finds no connection to take
//! for [`IDLE`] ends, and [`ConnectionThreads::close`] ends them all (a
//! connection in the middle of a request answers it first) and waits, a
//! while, for them to let go of the server: its runs then end with the
//! server, their spans exported before the process exits.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::sync::{OwnedSemaphorePermit, watch};

/// How long a thread with no connection waits for one before it ends.
pub(crate) const IDLE: Duration = Duration::from_secs(10);

/// How long [`ConnectionThreads::close`] waits for busy threads: longer
/// than a guest's default deadline, short enough not to hold a stop up.
const CLOSE_WAIT: Duration = Duration::from_secs(2);

/// One accepted connection and the slot it holds among the open ones.
type Connection = (std::net::TcpStream, OwnedSemaphorePermit);

/// The threads serving connections, and the connections waiting for one.
#[derive(Clone)]
pub(crate) struct ConnectionThreads {
    shared: Arc<Shared>,
    live: Arc<Live>,
}

/// How many threads are running, apart from [`Shared`] (which a thread lets
/// go of before it counts itself out).
#[derive(Default)]
struct Live {
    threads: Mutex<usize>,
    ended: Condvar,
}

impl Live {
    fn count(&self) -> MutexGuard<'_, usize> {
        self.threads.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Counts a thread out when it ends, however it ends.
struct Running(Arc<Live>);

impl Drop for Running {
    fn drop(&mut self) {
        *self.0.count() -= 1;
        self.0.ended.notify_all();
    }
}

struct Shared {
    queue: Mutex<Queue>,
    /// A connection is waiting, or the threads are to end.
    wake: Condvar,
    http: hyper::server::conn::http1::Builder,
    router: Router,
    /// The server's own runtime, where a connection this thread cannot
    /// serve is turned away.
    server: tokio::runtime::Handle,
    /// Turns `true` when the server stops: connections finish the request
    /// they are in and close.
    closing: watch::Sender<bool>,
}

#[derive(Default)]
struct Queue {
    waiting: VecDeque<Connection>,
    /// Threads waiting for a connection.
    idle: usize,
    /// Threads started that have not yet looked for one: they will take a
    /// waiting connection as an idle thread would.
    starting: usize,
    closed: bool,
}

impl ConnectionThreads {
    /// Threads that serve `router`, with a deadline of `header_timeout` for
    /// each request's headers. Must be called inside the server's runtime.
    pub fn new(router: Router, header_timeout: Duration) -> ConnectionThreads {
        let mut http = hyper::server::conn::http1::Builder::new();
        // The timer is what makes the header deadline work (hyper ignores it
        // without one); it also covers a kept-alive connection's next request.
        http.timer(TokioTimer::new())
            .header_read_timeout(header_timeout)
            .keep_alive(true);
        ConnectionThreads {
            shared: Arc::new(Shared {
                queue: Mutex::default(),
                wake: Condvar::new(),
                http,
                router,
                server: tokio::runtime::Handle::current(),
                closing: watch::Sender::new(false),
            }),
            live: Arc::default(),
        }
    }

    /// Serves `connection` on an idle thread, or on a new one.
    ///
    /// # Errors
    /// The connection back when no thread can be started for it (the
    /// system's limit on threads).
    pub fn serve(&self, connection: Connection) -> Result<(), Connection> {
        let mut queue = self.shared.lock();
        if queue.closed {
            return Ok(()); // dropped: the server has stopped
        }
        queue.waiting.push_back(connection);
        if queue.idle + queue.starting >= queue.waiting.len() {
            drop(queue);
            self.shared.wake.notify_one();
            return Ok(());
        }
        queue.starting += 1;
        // Counted live before the queue is let go: a `close` from here on
        // waits for this thread.
        *self.live.count() += 1;
        drop(queue);
        let shared = self.shared.clone();
        let running = Running(self.live.clone());
        let started = std::thread::Builder::new()
            .name("hookbox-serve".into())
            .spawn(move || {
                shared.thread();
                drop(running); // after `shared`, which `thread` consumed
            });
        match started {
            Ok(_) => Ok(()),
            Err(e) => {
                // The closure, and with it `running`, is dropped: counted out.
                tracing::warn!("starting a connection thread failed: {e}");
                // Take one back (this one or another waiting: they are alike).
                let mut queue = self.shared.lock();
                queue.starting -= 1;
                queue.waiting.pop_back().map_or(Ok(()), Err)
            }
        }
    }

    /// Ends every thread: idle ones at once, busy ones once their
    /// connection has answered the request it is in. Waiting connections
    /// are closed. Returns when every thread has ended, or after
    /// [`CLOSE_WAIT`] (a client still sending a request's body).
    pub fn close(&self) {
        let mut queue = self.shared.lock();
        queue.closed = true;
        queue.waiting.clear();
        drop(queue);
        self.shared.closing.send_replace(true);
        self.shared.wake.notify_all();
        let live = self.live.count();
        let (left, _) = self
            .live
            .ended
            .wait_timeout_while(live, CLOSE_WAIT, |threads| *threads > 0)
            .unwrap_or_else(|p| p.into_inner());
        if *left > 0 {
            tracing::warn!(
                threads = *left,
                "connections still being served when the server stopped"
            );
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        // Nothing panics while holding it; a poisoned queue is still whole.
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// One thread: connections one after another until it idles out or the
    /// server stops.
    fn thread(self: Arc<Shared>) {
        let runtime = match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(runtime) => runtime,
            Err(e) => {
                // Out of file descriptors, most likely (a runtime holds
                // three): answer the connection this thread was started
                // for rather than leave it unserved.
                tracing::warn!("a connection thread cannot start its runtime: {e}");
                let mut queue = self.lock();
                queue.starting -= 1;
                let waiting = queue.waiting.pop_front();
                drop(queue);
                if let Some((stream, _permit)) = waiting {
                    let _entered = self.server.enter();
                    if let Ok(stream) = tokio::net::TcpStream::from_std(stream) {
                        self.server.spawn(crate::shed::shed(
                            stream,
                            "the server cannot serve another connection now (out of threads or file descriptors); retry shortly".into(),
                        ));
                    }
                }
                return;
            }
        };
        let mut starting = true;
        while let Some((stream, permit)) = self.next(&mut starting) {
            runtime.block_on(self.connection(stream));
            drop(permit);
        }
    }

    /// The next connection, or `None` when this thread is to end.
    /// `starting` is cleared on the first call: from then on the thread is
    /// counted as idle while it waits.
    fn next(&self, starting: &mut bool) -> Option<Connection> {
        let mut queue = self.lock();
        if std::mem::take(starting) {
            queue.starting -= 1;
        }
        loop {
            if queue.closed {
                return None;
            }
            if let Some(connection) = queue.waiting.pop_front() {
                return Some(connection);
            }
            queue.idle += 1;
            let (again, waited) = self
                .wake
                .wait_timeout(queue, IDLE)
                .unwrap_or_else(|p| p.into_inner());
            queue = again;
            queue.idle -= 1;
            if waited.timed_out() && queue.waiting.is_empty() {
                return None;
            }
        }
    }

    async fn connection(&self, stream: std::net::TcpStream) {
        let stream = match tokio::net::TcpStream::from_std(stream) {
            Ok(stream) => stream,
            Err(e) => {
                tracing::debug!("a connection cannot be served: {e}");
                return;
            }
        };
        let mut closing = self.closing.subscribe();
        let connection = self.http.serve_connection(
            TokioIo::new(stream),
            TowerToHyperService::new(self.router.clone()),
        );
        let mut connection = std::pin::pin!(connection);
        let ended = tokio::select! {
            ended = connection.as_mut() => ended,
            _ = closing.wait_for(|closing| *closing) => {
                connection.as_mut().graceful_shutdown();
                connection.await
            }
        };
        if let Err(e) = ended {
            tracing::debug!("connection ended: {e}");
        }
    }
}
