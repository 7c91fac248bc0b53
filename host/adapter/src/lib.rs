//! What every door of hookbox into an agent loop shares
//! (docs/architecture.md#boundary-rules),
//! so that each door keeps only the mapping into its client's terms:
//!
//! - [`Door`]: the one entry. A client session's run, asked in the
//!   client's raw values (a tool call, a tool result of any shape, a model
//!   call): it builds the event with one argument policy and one
//!   result-shape rule ([`shape`]), settles, answers the verdict or the
//!   stop, and remembers the run's end once, for every later event;
//! - [`verdict`]: the one mapping of the stack's answer about a tool call
//!   or its result to run / run with these arguments / answer this instead
//!   / stop, with the argument shape check ([`verdict::rewritten_args`],
//!   which the agents' hook protocols use too), and a patch-request's extra
//!   context as the model reads it ([`verdict::with_context`]);
//! - [`gate`]: who may reach a hookbox server over HTTP (tokens, and no
//!   browser: a foreign `Origin` or `Host` is refused);
//! - [`binding`]: the stack and run a language binding (Python, Node)
//!   wraps, so it keeps no rule of its own;
//! - asking from an async loop (feature `tokio`, on by default) without
//!   holding up its executor, the caller's span and subscriber carried.
//!
//! It is a crate above the core, not a module of it: the core (`hookbox`)
//! has no async runtime (docs/architecture.md#layers), and embedders who
//! only run stacks never compile this. The synchronous doors (the agents' hook protocols,
//! `hookbox serve`'s runs) use it without the `tokio` feature.
//!
//! A guard call is synchronous and may run up to its plugins' deadlines, so
//! it must not hold up the executor, and the decision's span
//! (`apply_guardrail`) must be a child of the caller's, recorded by the
//! caller's subscriber, wherever the call runs.
//!
//! | how the caller waits | function | where the guard runs |
//! |---|---|---|
//! | an async hook that must stay cheap (rig, llm-stack) | [`off_executor`] | on a multi-threaded runtime in place, the worker's other tasks handed off (`block_in_place`, no thread hop: the hop costs about 50 µs a call on 2 cores, BENCHMARKS.md); on a current-thread runtime on the blocking pool; outside tokio in place |
//! | an async loop whose own timeout must be able to give up on a call in flight (the runner), or a pump that must keep serving its other branch (MCP) | [`on_blocking_pool`] | always on tokio's blocking pool |
//! | a synchronous callback called from inside a runtime (llm-stack's) | [`blocking_here`] | in place, handed off as [`off_executor`] does where it can |
//!
//! The stop a decision means is the core's: [`hookbox::Stopped::of`] and
//! [`hookbox::Stopped::settle`]; the host's own name is [`hookbox::HOST`].

pub mod binding;
mod door;
pub mod gate;
pub mod shape;
pub mod stream;
pub mod verdict;

pub use door::{Args, Door, Tap, ToolUse, completion_event};

#[cfg(feature = "tokio")]
mod asking;
#[cfg(feature = "tokio")]
pub use asking::{blocking_here, off_executor, on_blocking_pool, unfinished};
#[cfg(feature = "tokio")]
pub use door::Asking;
