//! The crate's errors: [`Error`] for setting things up, [`FailClosed`] for a
//! run that a hook or the host ended.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// Why the host ended a run. The JSON name is the kebab-case form
/// (`"unsupported-flow"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Cause {
    /// The guest trapped: a panic, `unreachable`, an out-of-bounds access,
    /// or an answer the canonical ABI cannot lift (bad UTF-8, bad tag).
    Trap,
    /// The guest ran past its per-call deadline.
    Deadline,
    /// The guest asked for more linear memory, or more table elements, than
    /// its limit.
    Memory,
    /// The guest exhausted its wasm stack.
    Stack,
    /// The guest's answer (or a message to a host import) is larger than
    /// its answer limit.
    Oversized,
    /// The flow is not one the event honours.
    UnsupportedFlow,
    /// A rewrite-args (or additional-params) that is not JSON.
    InvalidJson,
    /// The plugin could not be loaded, linked or instantiated.
    Load,
    /// Another quota ran out: log volume, scratchpad size, instance pool.
    Limit,
}

impl Cause {
    pub fn name(self) -> &'static str {
        match self {
            Cause::Trap => "trap",
            Cause::Deadline => "deadline",
            Cause::Memory => "memory",
            Cause::Stack => "stack",
            Cause::Oversized => "oversized",
            Cause::UnsupportedFlow => "unsupported-flow",
            Cause::InvalidJson => "invalid-json",
            Cause::Load => "load",
            Cause::Limit => "limit",
        }
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The host ended the run: a hook misbehaved. Names the plugin and the cause.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FailClosed {
    pub plugin: Arc<str>,
    pub cause: Cause,
    /// What exactly happened, for a person.
    pub detail: String,
}

impl FailClosed {
    pub fn new(plugin: &Arc<str>, cause: Cause, detail: impl Into<String>) -> FailClosed {
        FailClosed {
            plugin: plugin.clone(),
            cause,
            detail: detail.into(),
        }
    }
}

impl fmt::Display for FailClosed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "plugin `{}` failed closed ({}): {}",
            self.plugin, self.cause, self.detail
        )
    }
}

impl std::error::Error for FailClosed {}

/// Errors from setting up hookbox (building the runtime, loading plugins,
/// configuring a runner) and from the models it calls.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error("cannot configure the WebAssembly engine: {0}")]
    Engine(String),
    #[error("cannot read plugin `{plugin}` from {path}: {source}")]
    Read {
        plugin: String,
        path: String,
        source: std::io::Error,
    },
    #[error("plugin `{plugin}` failed to load ({phase}): {reason}")]
    Load {
        plugin: String,
        phase: LoadPhase,
        reason: String,
    },
    #[error("plugin directory {path}: {reason}")]
    Directory { path: String, reason: String },
    #[error(transparent)]
    FailClosed(#[from] FailClosed),
    /// A model call failed: unreachable server, HTTP error, bad answer.
    #[error("model `{model}`: {reason}")]
    Model { model: String, reason: String },
    /// The runner was set up wrong: a bad scripted-model file, a workspace
    /// that does not exist, a tool defined twice.
    #[error("{0}")]
    Setup(String),
}

/// Where loading a plugin failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoadPhase {
    /// Not a WebAssembly component (a core module, a corrupt file, ...).
    Compile,
    /// Imports something hookbox does not provide.
    Link,
    /// Does not export the `hookbox:hook/hook` world's functions.
    World,
    /// Trapped or timed out while starting, or answering `subscriptions`.
    Instantiate,
}

impl fmt::Display for LoadPhase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LoadPhase::Compile => "compile",
            LoadPhase::Link => "link",
            LoadPhase::World => "world",
            LoadPhase::Instantiate => "instantiate",
        })
    }
}
