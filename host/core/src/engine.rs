//! The runtime: one wasmtime engine, its linker and the epoch ticker.
//!
//! Lifecycle: [`Runtime`] (once) → [`Plugin`](crate::Plugin) (compiled once,
//! validated, pre-linked) → a fresh instance per plugin per run.

use std::sync::Arc;
use std::time::Duration;

use wasmtime::component::{Component, Linker};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

use crate::cache::{CacheStats, CompileCache};
use crate::error::Error;
use crate::limits::Limits;
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
    /// With pooling: how many component instances may be live at once
    /// across all runs; one more fails that run closed ([`crate::Cause::Limit`]).
    pub max_instances: u32,
    /// The largest memory any plugin may be allowed ([`Limits::memory_bytes`]
    /// above this is clamped).
    pub max_memory_bytes: usize,
    /// Limits for plugins that do not set their own.
    pub default_limits: Limits,
    /// The largest plugin file accepted, in bytes (a JavaScript or Python
    /// guard is 12–18 MiB); a larger one is refused before it is read.
    pub max_plugin_bytes: usize,
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
            max_memory_bytes: 1 << 30,
            default_limits: Limits::default(),
            max_plugin_bytes: 128 << 20,
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
}

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
            let mut pool = PoolingAllocationConfig::default();
            let instances = config.max_instances.max(1);
            pool.total_component_instances(instances)
                .total_core_instances(instances.saturating_mul(4))
                .total_memories(instances.saturating_mul(2))
                .total_tables(instances.saturating_mul(4))
                .total_stacks(0)
                .max_memory_size(config.max_memory_bytes)
                .table_elements(100_000);
            wasm.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
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
                config,
                cache,
            }),
        })
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
    pub(crate) fn compile(&self, bytes: &[u8]) -> wasmtime::Result<Component> {
        let engine = &self.inner.engine;
        let Some(cache) = &self.inner.cache else {
            return Component::new(engine, bytes);
        };
        if let Some(component) = cache.load(engine, bytes) {
            return Ok(component);
        }
        let component = Component::new(engine, bytes)?;
        cache.store(bytes, &component);
        Ok(component)
    }
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
