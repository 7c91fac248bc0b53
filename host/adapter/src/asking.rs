//! Asking a stack from an async loop without holding up its executor; see
//! the crate's table.

use hookbox::{Cause, FailClosed, Outcome};
use tokio::runtime::{Handle, RuntimeFlavor};

/// Asks `ask` (a guard call) without holding up the async executor; see
/// the crate's table.
pub async fn off_executor(ask: impl FnOnce() -> Outcome + Send + 'static) -> Outcome {
    match Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(ask)
        }
        Ok(_) => on_blocking_pool(tracing::Span::current(), ask)
            .await
            .unwrap_or_else(|why| Err(unfinished(&why))),
        Err(_) => ask(),
    }
}

/// Runs `ask` on tokio's blocking pool inside `span` (the run's or the
/// caller's) and the caller's tracing subscriber (a thread's own, as in
/// tests, included).
///
/// # Errors
/// Why the call did not finish (it panicked, or the runtime is shutting
/// down).
pub async fn on_blocking_pool<T: Send + 'static>(
    span: tracing::Span,
    ask: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    let subscriber = tracing::dispatcher::get_default(Clone::clone);
    tokio::task::spawn_blocking(move || {
        tracing::dispatcher::with_default(&subscriber, || span.in_scope(ask))
    })
    .await
    .map_err(|e| e.to_string())
}

/// Runs `ask` in place from a synchronous callback: on a multi-threaded
/// runtime the worker's other tasks are handed off first.
pub fn blocking_here<T>(ask: impl FnOnce() -> T) -> T {
    let multi_thread =
        Handle::try_current().is_ok_and(|h| h.runtime_flavor() == RuntimeFlavor::MultiThread);
    if multi_thread {
        tokio::task::block_in_place(ask)
    } else {
        ask()
    }
}

/// The host's failure for a guard call that did not finish.
pub fn unfinished(why: &str) -> FailClosed {
    FailClosed::host(Cause::Trap, format!("the guard call did not finish: {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use hookbox::{Decision, Flow};
    use std::sync::{Arc, Mutex};

    /// The names of the spans open around a call, as the caller's
    /// subscriber records them.
    fn spans_around(call: impl FnOnce()) -> Vec<String> {
        use tracing_subscriber::layer::{Context, SubscriberExt};
        struct Names(Arc<Mutex<Vec<String>>>);
        impl<S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>>
            tracing_subscriber::Layer<S> for Names
        {
            fn on_event(&self, event: &tracing::Event<'_>, ctx: Context<'_, S>) {
                let names = ctx
                    .event_scope(event)
                    .map(|scope| scope.map(|s| s.name().to_owned()).collect::<Vec<_>>())
                    .unwrap_or_default();
                self.0.lock().unwrap().extend(names);
            }
        }
        let seen = Arc::new(Mutex::new(Vec::new()));
        let subscriber = tracing_subscriber::registry().with(Names(seen.clone()));
        tracing::subscriber::with_default(subscriber, call);
        seen.lock().unwrap().clone()
    }

    fn decided() -> Outcome {
        tracing::info!("deciding");
        Ok(Decision::new(Flow::Continue))
    }

    #[test]
    fn every_way_of_asking_keeps_the_callers_span_and_subscriber() {
        for flavor in ["current", "multi"] {
            let names = spans_around(|| {
                let runtime = match flavor {
                    "current" => tokio::runtime::Builder::new_current_thread().build(),
                    _ => tokio::runtime::Builder::new_multi_thread()
                        .worker_threads(2)
                        .build(),
                }
                .unwrap();
                let span = tracing::info_span!("caller");
                let _entered = span.enter();
                runtime.block_on(async {
                    off_executor(decided).await.unwrap();
                    on_blocking_pool(tracing::Span::current(), decided)
                        .await
                        .unwrap()
                        .unwrap();
                    blocking_here(decided).unwrap();
                });
            });
            assert_eq!(names, ["caller"; 3], "{flavor}");
        }
    }

    #[test]
    fn a_call_that_panics_on_the_pool_is_the_hosts_failure() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let failure = runtime
            .block_on(off_executor(|| panic!("a guard call that panics")))
            .unwrap_err();
        assert_eq!(&*failure.plugin, hookbox::HOST);
        assert_eq!(failure.cause, Cause::Trap);
    }
}
