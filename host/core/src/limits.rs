//! Resource limits for guests, with safe defaults, and their enforcement in
//! the store (memory and table growth).

use std::fmt;
use std::time::Duration;

use crate::error::Cause;

/// Per-plugin limits. Every field has a safe default; override per plugin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Wall-clock budget for one call into the guest (instantiation, or one
    /// event). Enforced by epoch interruption.
    pub deadline: Duration,
    /// Linear memory, in bytes, across the guest's memories.
    pub memory_bytes: usize,
    /// Elements across the guest's tables.
    pub table_elements: usize,
    /// Bytes of text in one answer (a flow, a subscription list, a message to
    /// a host import).
    pub answer_bytes: usize,
    /// Bytes a guest may log in one run (log import and stdout/stderr).
    pub log_bytes_per_run: usize,
    /// Longer log messages are truncated to this many bytes.
    pub log_message_bytes: usize,
    /// Bytes of keys and values a guest may keep in its scratchpad; each
    /// entry counts 64 bytes more.
    pub scratchpad_bytes: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            deadline: Duration::from_millis(100),
            memory_bytes: 64 << 20,
            table_elements: 20_000,
            answer_bytes: 1 << 20,
            log_bytes_per_run: 256 << 10,
            log_message_bytes: 4 << 10,
            scratchpad_bytes: 1 << 20,
        }
    }
}

/// A limit a guest ran into; raised as a trap from the limiter or a host
/// import, and matched by type when the host classifies the failure.
#[derive(Debug)]
pub(crate) struct LimitExceeded {
    pub cause: Cause,
    pub detail: String,
}

impl LimitExceeded {
    pub fn new(cause: Cause, detail: impl Into<String>) -> LimitExceeded {
        LimitExceeded {
            cause,
            detail: detail.into(),
        }
    }
}

impl fmt::Display for LimitExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.detail)
    }
}

impl std::error::Error for LimitExceeded {}

/// The store's resource limiter: refuses growth past the plugin's limits
/// with a typed error, so the failure is a [`Cause::Memory`] and not whatever
/// the guest makes of a failed `memory.grow`.
pub(crate) struct Limiter {
    pub memory_bytes: usize,
    pub table_elements: usize,
}

impl wasmtime::ResourceLimiter for Limiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _max: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.memory_bytes {
            return Err(wasmtime::Error::new(LimitExceeded::new(
                Cause::Memory,
                format!(
                    "linear memory would grow from {current} to {desired} bytes, past the limit of {} bytes",
                    self.memory_bytes
                ),
            )));
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        _max: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.table_elements {
            return Err(wasmtime::Error::new(LimitExceeded::new(
                Cause::Memory,
                format!(
                    "a table would grow from {current} to {desired} elements, past the limit of {}",
                    self.table_elements
                ),
            )));
        }
        Ok(true)
    }
}
