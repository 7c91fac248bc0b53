//! Resource limits for guests, with safe defaults, and their enforcement in
//! the store (memory and table growth).

use std::fmt;
use std::time::Duration;

use crate::error::Cause;

/// Per-plugin limits. Every field has a safe default; override per plugin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Budget for one call into the guest (instantiation, or one event), in
    /// the CPU time of the thread that makes the call: a guest on a busy
    /// host is not failed closed for time it spent waiting for a core. The
    /// call's wall time is bounded too, at ten times this. Enforced by epoch
    /// interruption.
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

/// The store's resource limiter: one per plugin instance, counting every
/// memory and every table of the instance (a component holds several core
/// modules, each may define its own) against the plugin's limits, and
/// capping how many of each it may create. Growth past a limit is refused
/// with a typed error, so the failure is a [`Cause::Memory`] (or
/// [`Cause::Limit`] for a count) and not whatever the guest makes of a
/// failed `memory.grow`.
pub(crate) struct Limiter {
    memory_bytes: usize,
    table_elements: usize,
    max_memories: usize,
    max_tables: usize,
    max_core_instances: usize,
    /// Bytes of all the instance's memories so far.
    memory_used: usize,
    /// Elements of all its tables so far.
    tables_used: usize,
}

/// How many memories, tables and core instances one plugin instance may
/// create at most (the runtime's per-plugin caps).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Counts {
    pub memories: usize,
    pub tables: usize,
    pub core_instances: usize,
}

impl Limiter {
    pub fn new(limits: &Limits, counts: Counts) -> Limiter {
        Limiter {
            memory_bytes: limits.memory_bytes,
            table_elements: limits.table_elements,
            max_memories: counts.memories,
            max_tables: counts.tables,
            max_core_instances: counts.core_instances,
            memory_used: 0,
            tables_used: 0,
        }
    }
}

impl wasmtime::ResourceLimiter for Limiter {
    // Called for a memory's initial size too (with `current` 0), so the
    // sum covers every memory from its creation. A growth wasmtime fails
    // after this allowed it (the system is out of memory) stays counted:
    // the count errs high, never low.
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        max: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let growth = desired.saturating_sub(current);
        let total = self.memory_used.saturating_add(growth);
        if total > self.memory_bytes {
            return Err(wasmtime::Error::new(LimitExceeded::new(
                Cause::Memory,
                format!(
                    "linear memory would grow from {current} to {desired} bytes, {total} bytes across all its memories, past the limit of {} bytes",
                    self.memory_bytes
                ),
            )));
        }
        if max.is_some_and(|max| desired > max) {
            return Ok(false); // past the memory's own maximum: `memory.grow` answers -1
        }
        self.memory_used = total;
        Ok(true)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        max: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let growth = desired.saturating_sub(current);
        let total = self.tables_used.saturating_add(growth);
        if total > self.table_elements {
            return Err(wasmtime::Error::new(LimitExceeded::new(
                Cause::Memory,
                format!(
                    "a table would grow from {current} to {desired} elements, {total} across all its tables, past the limit of {}",
                    self.table_elements
                ),
            )));
        }
        if max.is_some_and(|max| desired > max) {
            return Ok(false);
        }
        self.tables_used = total;
        Ok(true)
    }

    fn memories(&self) -> usize {
        self.max_memories
    }

    fn tables(&self) -> usize {
        self.max_tables
    }

    fn instances(&self) -> usize {
        self.max_core_instances
    }
}
