//! hookbox runs LLM-agent hooks and guardrails as sandboxed WebAssembly
//! components, and fails closed.
//!
//! An agent loop reaches an observable step ([`StepEvent`]) and asks a
//! [`HookStack`] what to do; every hook answers with a [`Flow`], and the stack
//! composes the answers by the event's rule ([`rules`], [`HookStack`]).
//! Whatever a guest does wrong ends the run with a [`FailClosed`] naming the
//! plugin and the [`Cause`].
//!
//! The types an embedder uses are at the root:
//!
//! | items | what |
//! |---|---|
//! | [`StepEvent`], [`HookContext`], [`EventKind`] and the event structs | step events and their context |
//! | [`Flow`], [`RequestPatch`] | flows and request patches, and how patches merge |
//! | [`HookStack`], [`Run`], [`Hook`], [`hook_fn`] | the stack, its runs, native hooks |
//! | [`Decision`], [`Outcome`], [`Observe`] | what a stack answers, and watching each hook's answer |
//! | [`Stopped`] | why the stack ended a run, as text a framework carries and back |
//! | [`Runtime`], [`Plugin`], [`PluginOptions`], [`Limits`] | the wasmtime runtime, compiled plugins, per-plugin limits |
//! | [`FailClosed`], [`Cause`], [`Error`], [`HOST`] | why a run failed closed, or setup failed |
//!
//! and the modules for the rest:
//!
//! | module | job |
//! |---|---|
//! | [`history`] | a history patch applied to a framework's own messages |
//! | [`rules`] | which flows each event honours, how each composes |
//! | [`audit`] | decision logs: a JSON line per decision, never stalling one |
//! | [`cache`] | the verified compile cache |
//! | [`manifest`] | `hookbox.toml`: order, config, limits, required-ness, mode, pins, tools |
//! | [`matcher`] | tool matchers: the tools a plugin is asked about |
//! | [`directory`] | loading a plugin directory safely |
//! | `watch` | hot reload with an atomic swap (feature `watch`, on by default) |
//! | [`mod@inspect`] | what a plugin is, without running it ([`inspect()`]) |
//! | [`trace`] | the decision spans (OpenTelemetry's GenAI conventions) |
//! | [`json`] | serde helpers for the JSON forms (JSON carried as text) |
//!
//! The public API is listed in `host/core/public-api.txt`, which CI
//! compares with what rustdoc finds (`cargo xtask public-api`).
//!
//! This crate is what an embedder compiles: wasmtime and serde-level
//! dependencies only. The layers above it are crates of their own, each
//! depending downwards: `hookbox-runner` (an agent tool loop, model clients,
//! workspace tools), `hookbox-agents` (the coding agents' hook protocols as
//! typed mappings), `hookbox-serve` (the HTTP sidecar) and `hookbox-cli`
//! (the `hookbox` binary).
//!
//! A guard loaded from its component, asked about a tool call:
//!
//! ```
//! use std::sync::Arc;
//! use hookbox::{Flow, HookStack, Plugin, PluginOptions, Runtime, RuntimeConfig, StepEvent, ToolCall};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let deny_tools_wasm = std::path::Path::new(hookbox_tests::guests::DENY_TOOLS);
//! let runtime = Runtime::new(RuntimeConfig::default())?;
//! let guard = Plugin::from_file(&runtime, deny_tools_wasm, PluginOptions::default())?;
//! let mut stack = HookStack::new();
//! stack.push_plugin(Arc::new(guard));
//!
//! // One run per session: fresh guest instances, nothing shared with others.
//! let mut run = stack.start_run("run-1");
//! let call = StepEvent::ToolCall(ToolCall {
//!     tool_name: "shell".into(),
//!     args: r#"{"cmd":"rm -rf ~/"}"#.into(),
//!     ..Default::default()
//! });
//! let decision = run.step(&call)?; // a misbehaving guard is an Err(FailClosed)
//! assert!(matches!(decision.flow, Flow::Skip(_)));
//! assert_eq!(decision.plugin.as_deref(), Some("deny-tools"));
//! # Ok(()) }
//! ```

pub mod audit;
pub mod cache;
mod clock;
mod decision;
pub mod directory;
mod engine;
mod error;
mod event;
mod flow;
pub mod history;
mod imports;
pub mod inspect;
pub mod json;
mod limits;
pub mod manifest;
pub mod matcher;
pub mod oci;
mod plugin;
pub mod rules;
mod safe_read;
mod slots;
mod stack;
mod state;
mod stopped;
pub mod trace;
#[cfg(feature = "watch")]
pub mod watch;

pub use decision::{Decided, Decision, Observe, Outcome, Shadowed, outcome_json, shadow_json};
pub use engine::{Runtime, RuntimeConfig};
pub use error::{Busy, Cause, Error, FailClosed, HOST, LoadError, LoadPhase};
pub use event::*;
pub use flow::{Conflict, Document, Flow, RequestPatch};
pub use inspect::{PluginInfo, inspect};
pub use limits::Limits;
pub use plugin::{Plugin, PluginOptions};
pub use stack::{FnHook, Hook, HookStack, Run, hook_fn};
pub use stopped::Stopped;
