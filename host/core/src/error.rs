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
    /// The JSON and CLI name (`"unsupported-flow"`).
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

    /// Every cause.
    pub const ALL: [Cause; 9] = [
        Cause::Trap,
        Cause::Deadline,
        Cause::Memory,
        Cause::Stack,
        Cause::Oversized,
        Cause::UnsupportedFlow,
        Cause::InvalidJson,
        Cause::Load,
        Cause::Limit,
    ];

    /// The cause named `name` (as [`Cause::name`] writes it).
    pub fn from_name(name: &str) -> Option<Cause> {
        Cause::ALL.into_iter().find(|cause| cause.name() == name)
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
    /// The plugin (or native hook) that misbehaved.
    pub plugin: Arc<str>,
    /// What it did.
    pub cause: Cause,
    /// What exactly happened, for a person.
    pub detail: String,
}

/// How hookbox names itself where a plugin's name goes: a failure or a
/// decision of the host's own (a run refused for want of instance slots, a
/// guard call that did not finish, a default no plugin made).
pub const HOST: &str = "hookbox";

impl FailClosed {
    /// A failure of `plugin`.
    pub fn new(plugin: &Arc<str>, cause: Cause, detail: impl Into<String>) -> FailClosed {
        FailClosed {
            plugin: plugin.clone(),
            cause,
            detail: detail.into(),
        }
    }

    /// A failure of the host's own, named [`HOST`].
    pub fn host(cause: Cause, detail: impl Into<String>) -> FailClosed {
        FailClosed::new(&Arc::from(HOST), cause, detail)
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

/// A run that does not fit: the plugin instances it needs would take more
/// slots than the runtime has free ([`crate::RuntimeConfig::max_instances`]).
/// Nothing ran; retry when runs have ended. A server answers it with 503.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "busy: this run needs {needed} plugin instances and {in_use} of the {capacity} instance slots are held by live runs; retry when runs end, or raise the limit (RuntimeConfig::max_instances, `hookbox serve --max-instances`)"
)]
pub struct Busy {
    /// Slots the run needs (one per plugin of its stack).
    pub needed: usize,
    /// Slots live runs hold.
    pub in_use: usize,
    /// All the slots there are.
    pub capacity: usize,
}

/// Errors from setting up hookbox: building the runtime, loading plugins
/// and plugin directories.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// wasmtime refused the configuration, or the epoch ticker did not start.
    #[error("cannot configure the WebAssembly engine: {0}")]
    Engine(String),
    /// A plugin could not be read, compiled, linked or started.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// A plugin directory (or its manifest) could not be read or watched.
    #[error("plugin directory {path}: {reason}")]
    Directory {
        /// The directory.
        path: String,
        /// What is wrong, and what to do.
        reason: String,
    },
    /// A run failed closed where an error was expected.
    #[error(transparent)]
    FailClosed(#[from] FailClosed),
}

/// A plugin that could not be loaded: which, in which phase, and why. The
/// same value is the error of [`Plugin::from_bytes`](crate::Plugin::from_bytes)
/// and the status of a refused plugin in a directory.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("plugin `{plugin}` failed to load ({phase}): {reason}")]
pub struct LoadError {
    /// The plugin's name.
    pub plugin: String,
    /// Where loading stopped.
    pub phase: LoadPhase,
    /// What is wrong, and what to do.
    pub reason: String,
}

impl LoadError {
    /// A load error of `plugin` in `phase`.
    pub fn new(
        plugin: impl Into<String>,
        phase: LoadPhase,
        reason: impl Into<String>,
    ) -> LoadError {
        LoadError {
            plugin: plugin.into(),
            phase,
            reason: reason.into(),
        }
    }
}

/// Where loading a plugin failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LoadPhase {
    /// The file could not be read (missing, outside the directory, not a
    /// regular `.wasm` file).
    Read,
    /// Not a WebAssembly component (a core module, a corrupt file, ...).
    Compile,
    /// Imports something hookbox does not provide.
    Link,
    /// Does not export the `hookbox:hook/hook` world's functions.
    World,
    /// Trapped or timed out while starting, or answering `subscriptions`.
    Instantiate,
    /// Declares more than a plugin may ever use (memories, tables), or took
    /// longer to compile than the runtime allows.
    Limits,
    /// Its bytes are not the ones the manifest pins (`sha256`).
    Pin,
    /// A plugin from a registry (`source`) is not in the directory's store
    /// as pulled, fails a digest check (a tampered blob), or lacks a
    /// signature by a key its `trust` names.
    Provenance,
}

impl fmt::Display for LoadPhase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LoadPhase::Read => "read",
            LoadPhase::Compile => "compile",
            LoadPhase::Link => "link",
            LoadPhase::World => "world",
            LoadPhase::Instantiate => "instantiate",
            LoadPhase::Limits => "limits",
            LoadPhase::Pin => "pin",
            LoadPhase::Provenance => "provenance",
        })
    }
}
