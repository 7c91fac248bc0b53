//! The runtime: one wasmtime engine, its linker and the epoch ticker.
//!
//! Lifecycle: [`Runtime`] (once) → [`Plugin`](crate::Plugin) (compiled once,
//! validated, pre-linked) → a fresh instance per plugin per run.

use std::sync::Arc;
use std::sync::mpsc::RecvTimeoutError;
use std::time::Duration;

use wasmtime::component::{Component, Linker};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

use crate::cache::{CacheStats, CompileCache};
use crate::error::{Busy, Error, LoadPhase};
use crate::limits::{Counts, Limits};
use crate::slots::{LOAD_SLOTS, LoadSlot, LoadSlots, Reservation, RunSlots};
use crate::state::PluginState;

/// How the runtime is built. The defaults suit a host running many short
/// runs of small guests.
#[derive(Clone, Debug)]
pub struct RuntimeConfig {
    /// How often the epoch advances. Deadlines are counted in ticks of this
    /// period. `None` means the epoch only advances when
    /// [`Runtime::advance_epoch`] is called, with one tick counting as 1 ms:
    /// tests use it to make timeouts independent of the wall clock.
    pub epoch_tick: Option<Duration>,
    /// Maximum wasm stack, in bytes, for every guest (an engine-wide limit).
    pub max_wasm_stack: usize,
    /// Use the pooling instance allocator (fast instantiation, bounded
    /// virtual memory). Off: memories are mapped on demand.
    pub pooling: bool,
    /// How many plugin instances may be live at once across all runs: a run
    /// reserves one per plugin of its stack when it starts, and a run that
    /// does not fit is refused with [`crate::Busy`]. With pooling, the pool
    /// holds this many instances (and a few more for loading).
    pub max_instances: u32,
    /// Memories one plugin instance may create (a component may hold
    /// several core modules, each with its own memory); a plugin declaring
    /// more is refused when it loads. Its memory limit
    /// ([`Limits::memory_bytes`]) counts all of them together.
    pub max_memories_per_plugin: u32,
    /// Tables one plugin instance may create; as for memories. Its table
    /// limit ([`Limits::table_elements`]) counts all of them together.
    pub max_tables_per_plugin: u32,
    /// Core module instances one plugin instance may create (a Python
    /// guard is a few dozen).
    pub max_core_instances_per_plugin: u32,
    /// The longest compilation of one plugin. Past it, loading the plugin
    /// fails (phase `limits`) naming it, and what it was doing is left to
    /// finish on its own thread: a compile bomb delays nothing else.
    pub max_compile_time: Duration,
    /// The largest memory any plugin may be allowed ([`Limits::memory_bytes`]
    /// above this is clamped).
    pub max_memory_bytes: usize,
    /// Limits for plugins that do not set their own.
    pub default_limits: Limits,
    /// The largest plugin file accepted, in bytes (a JavaScript or Python
    /// guard is 12–18 MiB); a larger one is refused before it is read.
    pub max_plugin_bytes: usize,
    /// With pooling, on Linux: how many bytes of each memory and table the
    /// pool keeps mapped when a run ends. Only the pages the run touched are
    /// reset (to the module's initial contents, found with the kernel's
    /// `PAGEMAP_SCAN` where it has it, else by `memset` of this many bytes),
    /// so the next run on the slot starts without page faults; nothing of
    /// the last run remains. 0: every page is returned to the kernel and
    /// faulted in again by the next run. Costs idle memory: up to this much
    /// per slot a run has used.
    pub keep_resident_bytes: usize,
    /// Where compiled components are cached (see [`crate::cache`]); `None`
    /// compiles every time. [`crate::cache::default_dir`] is the usual place.
    pub cache_dir: Option<std::path::PathBuf>,
}

impl Default for RuntimeConfig {
    fn default() -> RuntimeConfig {
        RuntimeConfig {
            epoch_tick: Some(Duration::from_millis(1)),
            max_wasm_stack: 512 << 10,
            pooling: true,
            max_instances: 1000,
            max_memories_per_plugin: 2,
            max_tables_per_plugin: 16,
            max_core_instances_per_plugin: 128,
            max_compile_time: Duration::from_secs(60),
            max_memory_bytes: 1 << 30,
            default_limits: Limits::default(),
            max_plugin_bytes: 128 << 20,
            keep_resident_bytes: 1 << 20,
            cache_dir: None,
        }
    }
}

/// The hookbox runtime: compiles plugins and runs their instances.
///
/// Cheap to clone; clones share the engine.
#[derive(Clone)]
pub struct Runtime {
    inner: Arc<RuntimeInner>,
}

struct RuntimeInner {
    engine: Engine,
    linker: Linker<PluginState>,
    config: RuntimeConfig,
    cache: Option<CompileCache>,
    run_slots: Arc<RunSlots>,
    load_slots: LoadSlots,
}

/// The most address space the instance pool may reserve for memories. A
/// memory's slot is 4 GiB (and a guard) by default, so that no access needs
/// a bounds check; when that many slots would pass this budget, each slot
/// is cut to the largest memory a plugin may have, and compiled code checks
/// bounds instead.
const POOL_RESERVATION_BUDGET: u64 = 16 << 40;
const DEFAULT_MEMORY_SLOT: u64 = (4 << 30) + (32 << 20);

impl Runtime {
    /// Builds the engine and starts the epoch ticker (a thread that lives as
    /// long as the engine).
    ///
    /// # Errors
    /// [`Error::Engine`] when wasmtime rejects the configuration (for example
    /// a pool larger than the address space allows).
    pub fn new(config: RuntimeConfig) -> Result<Runtime, Error> {
        let engine_error = |e: wasmtime::Error| Error::Engine(format!("{e:#}"));
        let mut wasm = Config::new();
        wasm.wasm_component_model(true)
            .concurrency_support(false)
            .epoch_interruption(true)
            .max_wasm_stack(config.max_wasm_stack)
            // Proposals no hook needs stay off: less attack surface. (GC,
            // threads, stack switching and component-model async are not
            // even compiled into this build of wasmtime.)
            .wasm_memory64(false)
            .wasm_custom_page_sizes(false)
            .wasm_wide_arithmetic(false);
        if config.pooling {
            configure_pool(&mut wasm, &config)?;
        }
        let engine = Engine::new(&wasm).map_err(engine_error)?;
        let mut linker = Linker::new(&engine);
        crate::imports::add_to_linker(&mut linker).map_err(engine_error)?;
        if let Some(tick) = config.epoch_tick {
            start_ticker(&engine, tick)
                .map_err(|e| Error::Engine(format!("cannot start the epoch ticker thread: {e}")))?;
        }
        let cache =
            config
                .cache_dir
                .as_deref()
                .and_then(|dir| match CompileCache::open(dir, &engine) {
                    Ok(cache) => Some(cache),
                    Err(reason) => {
                        tracing::warn!("compile cache off: {reason}");
                        None
                    }
                });
        Ok(Runtime {
            inner: Arc::new(RuntimeInner {
                engine,
                linker,
                run_slots: RunSlots::new(config.max_instances as usize),
                load_slots: LoadSlots::default(),
                config,
                cache,
            }),
        })
    }

    /// Whether `other` is this runtime (or a clone of it).
    pub(crate) fn same(&self, other: &Runtime) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Instance slots held by live runs, and how many there are
    /// ([`RuntimeConfig::max_instances`]).
    pub fn instance_slots(&self) -> (usize, usize) {
        self.inner.run_slots.usage()
    }

    /// Reserves `needed` instance slots for a run.
    pub(crate) fn reserve(&self, needed: usize) -> Result<Reservation, Busy> {
        self.inner.run_slots.reserve(needed)
    }

    /// What one plugin instance may create at most.
    pub(crate) fn counts(&self) -> Counts {
        let config = &self.inner.config;
        Counts {
            memories: config.max_memories_per_plugin as usize,
            tables: config.max_tables_per_plugin as usize,
            core_instances: config.max_core_instances_per_plugin as usize,
        }
    }

    /// Waits for one of the instances kept for loading.
    pub(crate) fn load_slot(&self) -> LoadSlot<'_> {
        self.inner.load_slots.take()
    }

    /// The wasmtime engine, for callers that compile components themselves.
    pub fn engine(&self) -> &Engine {
        &self.inner.engine
    }

    /// The linker with the host imports, for pre-linking a component.
    pub(crate) fn linker(&self) -> &Linker<PluginState> {
        &self.inner.linker
    }

    /// The settings it was built with.
    pub fn config(&self) -> &RuntimeConfig {
        &self.inner.config
    }

    /// Advances the epoch by one tick. Only needed with a manual epoch
    /// (`epoch_tick: None`); with a ticker it only shortens deadlines.
    pub fn advance_epoch(&self) {
        self.inner.engine.increment_epoch();
    }

    /// The number of epoch ticks that make up `deadline`, with one tick of
    /// slack so a guest always gets at least its full budget.
    pub(crate) fn deadline_ticks(&self, deadline: Duration) -> u64 {
        let tick = self
            .inner
            .config
            .epoch_tick
            .unwrap_or(Duration::from_millis(1));
        let ticks = deadline.as_nanos().div_ceil(tick.as_nanos().max(1));
        u64::try_from(ticks).unwrap_or(u64::MAX).saturating_add(1)
    }

    /// Compile-cache hits and misses, when the cache is on.
    pub fn cache_stats(&self) -> Option<CacheStats> {
        self.inner.cache.as_ref().map(CompileCache::stats)
    }

    /// Compiles `bytes` (a component, in the binary format), or loads its
    /// verified compiled form from the cache.
    ///
    /// # Errors
    /// The phase and reason: `compile` when it is not a valid component,
    /// `limits` when compiling took longer than
    /// [`RuntimeConfig::max_compile_time`].
    /// `sha256` is the bytes' digest when the caller has it already: the
    /// cache is keyed by it, and it is computed here only when missing.
    pub(crate) fn compile(
        &self,
        bytes: &[u8],
        sha256: Option<&str>,
    ) -> Result<Component, (LoadPhase, String)> {
        let Some(cache) = self.inner.cache.as_ref() else {
            return self.compile_bounded(bytes);
        };
        let computed;
        let sha256 = match sha256 {
            Some(digest) => digest,
            None => {
                computed = crate::cache::sha256_hex(bytes);
                &computed
            }
        };
        if let Some(component) = cache.load(&self.inner.engine, sha256) {
            return Ok(component);
        }
        let component = self.compile_bounded(bytes)?;
        cache.store(sha256, &component);
        Ok(component)
    }

    /// Compiles on a thread of its own, waiting at most
    /// [`RuntimeConfig::max_compile_time`]; past it the thread is left to
    /// finish and its result dropped (wasmtime cannot stop a compilation).
    fn compile_bounded(&self, bytes: &[u8]) -> Result<Component, (LoadPhase, String)> {
        let limit = self.inner.config.max_compile_time;
        let (send, receive) = std::sync::mpsc::sync_channel(1);
        let engine = self.inner.engine.clone();
        let bytes = bytes.to_vec();
        std::thread::Builder::new()
            .name("hookbox-compile".into())
            .spawn(move || {
                let _ = send.send(Component::new(&engine, &bytes));
            })
            .map_err(|e| {
                (
                    LoadPhase::Compile,
                    format!("cannot start a thread to compile it: {e}"),
                )
            })?;
        match receive.recv_timeout(limit) {
            Ok(Ok(component)) => Ok(component),
            // The pool's per-module caps are checked as it compiles.
            Ok(Err(e)) if format!("{e:#}").contains("pooling allocator") => Err((
                LoadPhase::Limits,
                format!(
                    "declares more memories or tables than a plugin may create (RuntimeConfig::max_memories_per_plugin, max_tables_per_plugin): {e:#}"
                ),
            )),
            Ok(Err(e)) => Err((LoadPhase::Compile, format!("{e:#}"))),
            Err(RecvTimeoutError::Timeout) => Err((
                LoadPhase::Limits,
                format!(
                    "took longer than {limit:?} to compile, the most a plugin may take (RuntimeConfig::max_compile_time); it is refused"
                ),
            )),
            Err(RecvTimeoutError::Disconnected) => Err((
                LoadPhase::Compile,
                "the compiler stopped without an answer".into(),
            )),
        }
    }
}

/// The instance pool: room for every run slot and the load slots, each
/// instance capped at the per-plugin counts, so the pool itself never runs
/// out (admission, in [`crate::slots`], refuses runs first).
fn configure_pool(wasm: &mut Config, config: &RuntimeConfig) -> Result<(), Error> {
    let instances = config.max_instances.max(1).saturating_add(LOAD_SLOTS);
    let memories = config.max_memories_per_plugin.max(1);
    let tables = config.max_tables_per_plugin.max(1);
    let core_instances = config.max_core_instances_per_plugin.max(1);
    let total_memories = instances.saturating_mul(memories);
    let largest = (config.max_memory_bytes as u64).next_multiple_of(64 << 10);
    if u64::from(total_memories) * DEFAULT_MEMORY_SLOT > POOL_RESERVATION_BUDGET {
        let slot = largest + (32 << 20);
        if u64::from(total_memories) * slot > POOL_RESERVATION_BUDGET {
            return Err(Error::Engine(format!(
                "{total_memories} memory slots of {} MiB would reserve more than {} TiB of address space; lower max_instances, max_memories_per_plugin or max_memory_bytes",
                slot >> 20,
                POOL_RESERVATION_BUDGET >> 40
            )));
        }
        wasm.memory_reservation(largest);
    }
    let mut pool = PoolingAllocationConfig::default();
    pool.total_component_instances(instances)
        .total_core_instances(instances.saturating_mul(core_instances))
        .total_memories(total_memories)
        .total_tables(instances.saturating_mul(tables))
        .max_core_instances_per_component(core_instances)
        .max_memories_per_component(memories)
        .max_tables_per_component(tables)
        .max_memories_per_module(memories)
        .max_tables_per_module(tables)
        .total_stacks(0)
        .max_memory_size(config.max_memory_bytes)
        .table_elements(100_000)
        .linear_memory_keep_resident(config.keep_resident_bytes)
        .table_keep_resident(config.keep_resident_bytes)
        .pagemap_scan(wasmtime::Enabled::Auto);
    wasm.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    Ok(())
}

/// Advances the engine's epoch every `tick` while the engine is alive.
fn start_ticker(engine: &Engine, tick: Duration) -> std::io::Result<()> {
    let weak = engine.weak();
    std::thread::Builder::new()
        .name("hookbox-epoch".into())
        .spawn(move || {
            loop {
                std::thread::sleep(tick);
                match weak.upgrade() {
                    Some(engine) => engine.increment_epoch(),
                    None => return,
                }
            }
        })?;
    Ok(())
}
