//! Write a hookbox hook in Rust: implement [`Hook`], add one [`hook!`] line,
//! build for `wasm32-unknown-unknown` and encode the result as a component.
//!
//! ```
//! use hookbox_sdk::{EventKind, Flow, Hook, HookContext, StepEvent};
//!
//! struct NoShell;
//!
//! impl Hook for NoShell {
//!     fn subscriptions() -> Vec<EventKind> {
//!         vec![EventKind::ToolCall]
//!     }
//!     fn on_event(_ctx: &HookContext, event: StepEvent) -> Flow {
//!         match event {
//!             StepEvent::ToolCall(call) if call.tool_name == "shell" => {
//!                 Flow::skip("Not executed: the shell is disabled here. Do not retry.")
//!             }
//!             _ => Flow::Continue,
//!         }
//!     }
//! }
//!
//! hookbox_sdk::hook!(NoShell);
//! # fn main() {}
//! ```
//!
//! The guest reads its settings with [`config`], keeps run-scoped state in
//! [`scratchpad`] and logs with [`log`]: the only capabilities it has.

#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "wit",
        world: "hook",
        pub_export_macro: true,
        export_macro_name: "__export_hook",
        default_bindings_module: "hookbox_sdk::bindings",
    });
}

pub use bindings::hookbox::hook::types::{
    CompletionCall, CompletionResponse, Document, EventKind, Flow, HookContext, InvalidToolCall,
    LogLevel, Message, ModelResponse, ModelTurnFinished, RequestPatch, Role, StepEvent,
    StreamResponseFinish, TextDelta, ToolCall, ToolCallDelta, ToolChoice, ToolError, ToolErrorKind,
    ToolOutcome, ToolResult, Usage,
};

#[cfg(feature = "initial-heap")]
pub mod alloc;
mod glob;
pub mod json;
pub mod shell;
pub mod text;
pub use glob::glob_match;

/// A hook. Implement `on_event`; list the kinds you handle in
/// `subscriptions` so the host never calls you for the others.
pub trait Hook {
    /// The event kinds to dispatch to this hook; all by default.
    fn subscriptions() -> Vec<EventKind> {
        EventKind::ALL.to_vec()
    }

    /// Decides what to do at one step of the run.
    fn on_event(ctx: &HookContext, event: StepEvent) -> Flow;
}

/// Exports a [`Hook`] implementation as the component's `hook` world.
#[macro_export]
macro_rules! hook {
    ($hook:ty) => {
        #[doc(hidden)]
        struct __HookboxExport;

        impl $crate::bindings::Guest for __HookboxExport {
            fn subscriptions() -> ::std::vec::Vec<$crate::EventKind> {
                <$hook as $crate::Hook>::subscriptions()
            }
            fn on_event(ctx: $crate::HookContext, event: $crate::StepEvent) -> $crate::Flow {
                <$hook as $crate::Hook>::on_event(&ctx, event)
            }
        }

        $crate::bindings::__export_hook!(__HookboxExport with_types_in $crate::bindings);
        $crate::__global_allocator!();
    };
}

/// Names the guard's start-up, for `hookbox build` to run once when it
/// builds the guard: the memory it leaves is the memory every run's fresh
/// instance starts from (a snapshot, as Wizer takes one), so work every run
/// would do first (compiling regexes, building tables) is done once.
///
/// The function runs before any event, with no host: it may not read its
/// settings or scratchpad, log, or call anything else the host provides
/// (the build fails, naming the call). A guard built without `hookbox
/// build` (plain `cargo build` and `wasm-tools component new`) ignores it
/// and builds what it needs on first use, as before.
///
/// ```ignore
/// fn prepare() {
///     std::sync::LazyLock::force(&PATTERNS);
/// }
/// hookbox_sdk::pre_initialize!(prepare);
/// ```
#[macro_export]
macro_rules! pre_initialize {
    ($init:path) => {
        #[doc(hidden)]
        #[cfg(target_arch = "wasm32")]
        #[unsafe(export_name = "wizer-initialize")]
        pub extern "C" fn __hookbox_pre_initialize() {
            $crate::__start_up!($init);
        }
        // Natively (a guard's unit tests) the function is still used.
        #[cfg(not(target_arch = "wasm32"))]
        const _: fn() = $init;
    };
}

/// With the `initial-heap` feature: [`alloc::InitialHeap`] as the guest's
/// global allocator.
#[cfg(feature = "initial-heap")]
#[doc(hidden)]
#[macro_export]
macro_rules! __global_allocator {
    () => {
        #[cfg(all(
            target_arch = "wasm32",
            target_os = "unknown",
            not(target_feature = "atomics")
        ))]
        #[global_allocator]
        static __HOOKBOX_ALLOCATOR: $crate::alloc::InitialHeap = $crate::alloc::InitialHeap::new();
    };
}

/// With the `initial-heap` feature: runs allocate apart from what a
/// pre-initialised start-up built ([`alloc::start_up`]).
#[cfg(feature = "initial-heap")]
#[doc(hidden)]
#[macro_export]
macro_rules! __start_up {
    ($init:path) => {
        $crate::alloc::start_up($init)
    };
}

/// Without the `initial-heap` feature: the start-up alone.
#[cfg(not(feature = "initial-heap"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __start_up {
    ($init:path) => {
        $init()
    };
}

/// Without the `initial-heap` feature: the standard allocator.
#[cfg(not(feature = "initial-heap"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __global_allocator {
    () => {};
}

// `EventKind::ALL`, `EventKind::name`, `StepEvent::kind`, `Flow::name`,
// generated from the WIT by build.rs.
include!(concat!(env!("OUT_DIR"), "/names.rs"));

impl Flow {
    /// End the run, surfacing `reason`.
    pub fn terminate(reason: impl Into<String>) -> Flow {
        Flow::Terminate(reason.into())
    }

    /// Do not run the tool; the model gets `reason` as its result. It is a
    /// prompt: say the tool did not run, and whether to retry.
    pub fn skip(reason: impl Into<String>) -> Flow {
        Flow::Skip(reason.into())
    }

    /// Run the tool with these arguments (JSON text) instead.
    pub fn rewrite_args(args: impl Into<String>) -> Flow {
        Flow::RewriteArgs(args.into())
    }

    /// The model sees `result` instead of the tool's output.
    pub fn rewrite_result(result: impl Into<String>) -> Flow {
        Flow::RewriteResult(result.into())
    }

    /// Patch this turn's model request.
    pub fn patch(patch: RequestPatch) -> Flow {
        Flow::PatchRequest(patch)
    }

    /// Re-prompt the model with `feedback` (invalid tool calls).
    pub fn retry(feedback: impl Into<String>) -> Flow {
        Flow::Retry(feedback.into())
    }

    /// Use `tool_name` instead of the invalid one (re-validated by the host).
    pub fn repair(tool_name: impl Into<String>) -> Flow {
        Flow::Repair(tool_name.into())
    }
}

#[allow(
    clippy::derivable_impls,
    reason = "the type is generated by wit-bindgen, which cannot derive Default"
)]
impl Default for RequestPatch {
    fn default() -> RequestPatch {
        RequestPatch {
            preamble: None,
            temperature: None,
            max_tokens: None,
            tool_choice: None,
            active_tools: None,
            additional_params: None,
            extra_context: None,
            history: None,
        }
    }
}

/// The plugin's settings, from the host's manifest.
pub mod config {
    use crate::bindings::hookbox::hook::config as host;

    /// The value of `key`, if set.
    pub fn get(key: &str) -> Option<String> {
        host::get(key)
    }

    /// The value of `key`, or `default`.
    pub fn get_or(key: &str, default: &str) -> String {
        host::get(key).unwrap_or_else(|| default.to_owned())
    }

    /// A comma-separated setting as a list, trimmed, without empty items.
    pub fn list(key: &str) -> Vec<String> {
        host::get(key)
            .map(|v| {
                v.split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Every setting, sorted by key.
    pub fn entries() -> Vec<(String, String)> {
        host::entries()
    }
}

/// Run-scoped key/value storage, private to this plugin. Going past the
/// quota ends the run.
pub mod scratchpad {
    pub use crate::bindings::hookbox::hook::scratchpad::{get, remove, set};

    /// Adds `by` to the counter at `key` (0 when unset) and returns it.
    ///
    /// A value there that is not a counter (a store that lost or garbled
    /// it, a key the plugin also used for something else) is not read as
    /// 0, which would let a budget start again: the counter is spent
    /// (`u64::MAX`, logged as an error), so a limit checked against it
    /// holds.
    pub fn increment(key: &str, by: u64) -> u64 {
        let now = match get(key) {
            None => 0,
            Some(value) => value.parse::<u64>().unwrap_or_else(|_| {
                crate::log::error(&format!(
                    "the counter `{key}` holds something that is not a count; it is taken as spent"
                ));
                u64::MAX
            }),
        };
        let next = now.saturating_add(by);
        set(key, &next.to_string());
        next
    }
}

/// Logging into the host's log, under the plugin's name.
pub mod log {
    use crate::bindings::{hookbox::hook::types::LogLevel, log};

    /// Logs at trace level (the finest; off unless the host asks for it).
    pub fn trace(message: &str) {
        log(LogLevel::Trace, message)
    }
    /// Logs at debug level.
    pub fn debug(message: &str) {
        log(LogLevel::Debug, message)
    }
    /// Logs at info level.
    pub fn info(message: &str) {
        log(LogLevel::Info, message)
    }
    /// Logs at warn level.
    pub fn warn(message: &str) {
        log(LogLevel::Warn, message)
    }
    /// Logs at error level.
    pub fn error(message: &str) {
        log(LogLevel::Error, message)
    }
}
