//! WASM plugins: a [`Plugin`] is compiled, validated and pre-linked once; a
//! `PluginInstance` is a fresh store and instance for one run.
//!
//! Every call into a guest runs under the plugin's [`Limits`]: a deadline
//! on the epoch (counting the calling thread's CPU time, see
//! [`crate::clock`]), a resource limiter on memory and tables, and a cap on the bytes
//! the host copies out of the guest (wasmtime's hostcall fuel, plus a check of
//! the lifted answer). Any failure is classified into a typed
//! [`FailClosed`] naming the plugin and the cause; the instance is then
//! dropped and never entered again.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use wasmtime::component::{Component, ComponentExportIndex, Func, InstancePre, TypedFunc};
use wasmtime::{Store, Trap};

use crate::clock::{CallClock, Deadline};
use crate::engine::Runtime;
use crate::error::{Cause, FailClosed, LoadError, LoadPhase};
use crate::event::{EventKind, EventKinds, HookContext, StepEvent};
use crate::flow::Flow;
use crate::inspect::{PluginInfo, WIT_VERSION, describe, link_failure, world_hint};
use crate::limits::{LimitExceeded, Limits};
use crate::state::PluginState;

/// How to load one plugin.
#[derive(Clone, Debug, Default)]
pub struct PluginOptions {
    /// Limits; `None` takes the runtime's defaults.
    pub limits: Option<Limits>,
    /// Key/value settings the guest reads through its `config` import.
    pub config: BTreeMap<String, String>,
}

/// A compiled, validated plugin. Shared by every run (`Arc<Plugin>`).
pub struct Plugin {
    name: Arc<str>,
    runtime: Runtime,
    pre: InstancePre<PluginState>,
    on_event: ComponentExportIndex,
    subscriptions_export: ComponentExportIndex,
    subscriptions: EventKinds,
    limits: Limits,
    deadline_ticks: u64,
    config: Arc<BTreeMap<String, String>>,
    info: PluginInfo,
}

impl std::fmt::Debug for Plugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plugin")
            .field("name", &self.name)
            .field("subscriptions", &self.subscriptions)
            .finish()
    }
}

type OnEvent<'a> = TypedFunc<(&'a HookContext, &'a StepEvent), (Flow,)>;

impl Plugin {
    /// Reads, compiles and validates the plugin at `path`; its name is the
    /// file stem.
    ///
    /// # Errors
    /// [`LoadError`] in the `read` phase when the file cannot be read,
    /// otherwise as [`Plugin::from_bytes`].
    pub fn from_file(
        runtime: &Runtime,
        path: &Path,
        options: PluginOptions,
    ) -> Result<Plugin, LoadError> {
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "plugin".into());
        let read_error = |e: std::io::Error| {
            LoadError::new(
                &name,
                LoadPhase::Read,
                format!("cannot read {}: {e}", path.display()),
            )
        };
        let size = std::fs::metadata(path).map_err(read_error)?.len();
        let max = runtime.config().max_plugin_bytes;
        if size > max as u64 {
            return Err(too_big(&name, size, max));
        }
        let bytes = std::fs::read(path).map_err(read_error)?;
        Plugin::from_bytes(runtime, &name, &bytes, options)
    }

    /// Compiles and validates a component (the binary format): it must be a
    /// component of the `hookbox:hook/hook` world, import nothing hookbox
    /// does not provide, start within its deadline and answer
    /// `subscriptions`.
    ///
    /// # Errors
    /// [`LoadError`] naming the phase that failed.
    pub fn from_bytes(
        runtime: &Runtime,
        name: &str,
        bytes: &[u8],
        options: PluginOptions,
    ) -> Result<Plugin, LoadError> {
        Plugin::from_digested(runtime, name, (bytes, None), options)
    }

    /// [`Plugin::from_bytes`], given the bytes' sha256 when the caller
    /// computed it already (a directory load does, for pins and status),
    /// so that the compile cache does not hash them again.
    pub(crate) fn from_digested(
        runtime: &Runtime,
        name: &str,
        (bytes, sha256): (&[u8], Option<&str>),
        options: PluginOptions,
    ) -> Result<Plugin, LoadError> {
        let load_error = |phase, reason: String| LoadError::new(name, phase, reason);
        let max = runtime.config().max_plugin_bytes;
        if bytes.len() > max {
            return Err(too_big(name, bytes.len() as u64, max));
        }
        if !bytes.starts_with(b"\0asm") {
            return Err(load_error(
                LoadPhase::Compile,
                "not a WebAssembly binary (it does not start with `\\0asm`): a plugin is a component, built with `hookbox new` and `hookbox build` as docs/guards.md says".into(),
            ));
        }
        if is_core_module(bytes) {
            return Err(load_error(
                LoadPhase::Compile,
                "this is a core WebAssembly module, not a component; build it for wasm32-wasip2 \
                 or encode it with `wasm-tools component new`"
                    .into(),
            ));
        }
        let component = runtime
            .compile(bytes, sha256)
            .map_err(|(phase, reason)| load_error(phase, reason))?;
        let info = describe(&component, runtime, bytes);
        check_declared(runtime, &component)
            .map_err(|reason| load_error(LoadPhase::Limits, reason))?;

        let pre = runtime
            .linker()
            .instantiate_pre(&component)
            .map_err(|e| load_error(LoadPhase::Link, link_failure(&info, &format!("{e:#}"))))?;

        let export = |func: &str| {
            component.get_export_index(None, func).ok_or_else(|| {
                load_error(
                    LoadPhase::World,
                    format!("does not export `{func}`; {}", world_hint(&info)),
                )
            })
        };
        let on_event = export("on-event")?;
        let subscriptions_export = export("subscriptions")?;

        let plugin = Plugin {
            name: Arc::from(name),
            runtime: runtime.clone(),
            pre,
            on_event,
            subscriptions_export,
            subscriptions: EventKinds::NONE,
            deadline_ticks: 0,
            limits: Limits::default(),
            config: Arc::default(),
            info,
        };
        plugin.with_options(options)
    }

    /// The same compiled plugin with other settings or limits, without
    /// compiling it again: the guest is started once more, within the new
    /// limits, to ask for its subscriptions (they may depend on its config).
    ///
    /// # Errors
    /// [`LoadError`] as [`Plugin::from_bytes`], in its `instantiate` and
    /// `world` phases.
    pub fn with_options(&self, options: PluginOptions) -> Result<Plugin, LoadError> {
        let runtime = &self.runtime;
        let load_error = |phase, reason: String| LoadError::new(&*self.name, phase, reason);
        let mut limits = options
            .limits
            .unwrap_or_else(|| runtime.config().default_limits.clone());
        limits.memory_bytes = limits.memory_bytes.min(runtime.config().max_memory_bytes);
        let mut plugin = Plugin {
            name: self.name.clone(),
            runtime: runtime.clone(),
            pre: self.pre.clone(),
            on_event: self.on_event,
            subscriptions_export: self.subscriptions_export,
            subscriptions: EventKinds::NONE,
            deadline_ticks: runtime.deadline_ticks(limits.deadline),
            limits,
            config: Arc::new(options.config),
            info: self.info.clone(),
        };

        // Start it once: prove it instantiates within its limits, that
        // `on-event` has the contract's type, and ask for its subscriptions.
        // It takes an instance kept for loading: live runs cannot starve it.
        let _slot = runtime.load_slot();
        let mut probe = plugin.instantiate("", BTreeMap::new()).map_err(|e| {
            load_error(
                LoadPhase::Instantiate,
                format!("{} ({})", e.detail, e.cause),
            )
        })?;
        let store = &mut probe.store;
        let typed = |item: Option<Func>| {
            item.ok_or_else(|| load_error(LoadPhase::World, "missing export".into()))
        };
        typed(Some(probe.on_event))?
            .typed::<(&HookContext, &StepEvent), (Flow,)>(&*store)
            .map_err(|e| {
                load_error(
                    LoadPhase::World,
                    format!(
                        "`on-event` does not match the contract ({e:#}); it was built against another version of the world: regenerate the bindings from this host's wit/hook.wit (hookbox:hook@{WIT_VERSION})"
                    ),
                )
            })?;
        let subscriptions = typed(
            probe
                .instance
                .get_func(&mut *store, plugin.subscriptions_export),
        )?
        .typed::<(), (Vec<EventKind>,)>(&*store)
        .map_err(|e| {
            load_error(
                LoadPhase::World,
                format!(
                        "`subscriptions` does not match the contract ({e:#}); it was built against another version of the world: regenerate the bindings from this host's wit/hook.wit (hookbox:hook@{WIT_VERSION})"
                    ),
            )
        })?;
        plugin.arm(store);
        let (kinds,) = subscriptions.call(&mut *store, ()).map_err(|e| {
            let failure = classify(&plugin.name, &plugin.limits, Cause::Trap, e);
            load_error(
                LoadPhase::Instantiate,
                format!(
                    "`subscriptions` failed: {} ({})",
                    failure.detail, failure.cause
                ),
            )
        })?;
        plugin.subscriptions = kinds.into_iter().collect();
        Ok(plugin)
    }

    /// The plugin's name (its file stem, or the manifest's).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The runtime it was compiled on.
    pub(crate) fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    pub(crate) fn name_arc(&self) -> &Arc<str> {
        &self.name
    }

    /// The event kinds this plugin is dispatched.
    pub fn subscriptions(&self) -> EventKinds {
        self.subscriptions
    }

    /// The limits every call into it runs under.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The settings its `config` import reads.
    pub fn config(&self) -> &BTreeMap<String, String> {
        &self.config
    }

    /// What the component is: size, producers, imports, exports.
    pub fn info(&self) -> &PluginInfo {
        &self.info
    }

    /// A fresh instance in a fresh store, for one run; its scratchpad holds
    /// `seed`.
    pub(crate) fn instantiate(
        &self,
        run_id: &str,
        seed: BTreeMap<String, String>,
    ) -> Result<PluginInstance, FailClosed> {
        let limits = (&self.limits, self.runtime.counts());
        let state =
            PluginState::new(&self.name, run_id, &self.config, limits, seed).map_err(|used| {
                FailClosed::new(
                    &self.name,
                    Cause::Limit,
                    format!(
                        "its saved scratchpad holds {used} bytes, past its quota of {} bytes",
                        self.limits.scratchpad_bytes
                    ),
                )
            })?;
        let mut store = Store::new(self.runtime.engine(), state);
        store.limiter(|state| state.limiter());
        match self.runtime.config().epoch_tick {
            // A manual epoch (tests) counts ticks, nothing else.
            None => store.epoch_deadline_trap(),
            Some(tick) => {
                let deadline = Deadline {
                    budget: self.limits.deadline,
                    tick,
                };
                store.epoch_deadline_callback(move |store| deadline.check(&store.data().call));
            }
        }
        store.set_hostcall_fuel(self.limits.answer_bytes);
        self.arm(&mut store);
        let instance = self
            .pre
            .instantiate(&mut store)
            .map_err(|e| classify(&self.name, &self.limits, Cause::Load, e))?;
        let on_event = instance
            .get_func(&mut store, self.on_event)
            .ok_or_else(|| {
                FailClosed::new(
                    &self.name,
                    Cause::Load,
                    "`on-event` is missing from the instance",
                )
            })?;
        Ok(PluginInstance {
            store,
            instance,
            on_event,
        })
    }

    /// Starts the deadline of one call into the guest, from now.
    fn arm(&self, store: &mut Store<PluginState>) {
        store.data_mut().call = CallClock::start();
        store.set_epoch_deadline(self.deadline_ticks);
    }

    /// Calls `on-event` on `instance`, under the plugin's limits.
    pub(crate) fn call(
        &self,
        instance: &mut PluginInstance,
        ctx: &HookContext,
        event: &StepEvent,
    ) -> Result<Flow, FailClosed> {
        let store = &mut instance.store;
        // SAFETY: `Plugin::from_bytes` type-checked `on-event` of this very
        // component against exactly these parameter and result types.
        let on_event: OnEvent<'_> = unsafe { TypedFunc::new_unchecked(instance.on_event) };
        self.arm(store);
        let result = on_event.call(&mut *store, (ctx, event));
        if store.data_mut().drain_output() {
            return Err(FailClosed::new(
                &self.name,
                Cause::Limit,
                format!(
                    "wrote more than its log budget of {} bytes to stdout or stderr in one run (each line counts {} bytes more than it prints)",
                    self.limits.log_bytes_per_run,
                    crate::state::LOG_LINE_COST
                ),
            ));
        }
        match result {
            Ok((flow,)) if flow.payload_len() > self.limits.answer_bytes => Err(FailClosed::new(
                &self.name,
                Cause::Oversized,
                format!(
                    "answered with {} bytes of text, past the limit of {} bytes",
                    flow.payload_len(),
                    self.limits.answer_bytes
                ),
            )),
            Ok((flow,)) => Ok(flow),
            Err(e) => Err(classify(&self.name, &self.limits, Cause::Trap, e)),
        }
    }
}

/// A plugin's instance for one run: never shared, never reused after a
/// failure, dropped with the run.
pub(crate) struct PluginInstance {
    store: Store<PluginState>,
    instance: wasmtime::component::Instance,
    /// Its `on-event`, looked up once.
    on_event: wasmtime::component::Func,
}

impl PluginInstance {
    /// What the guest keeps in its scratchpad so far this run, by key.
    pub(crate) fn scratchpad(&self) -> BTreeMap<String, String> {
        self.store.data().scratchpad()
    }
}

/// Turns a wasmtime failure into a typed diagnostic. Typed errors first
/// (our limits, wasmtime traps); what is left is a value the canonical ABI
/// could not lift, or (at instantiation) a link or pool failure.
pub(crate) fn classify(
    plugin: &Arc<str>,
    limits: &Limits,
    fallback: Cause,
    error: wasmtime::Error,
) -> FailClosed {
    if let Some(limit) = error
        .chain()
        .find_map(|e| e.downcast_ref::<LimitExceeded>())
    {
        return FailClosed::new(plugin, limit.cause, limit.detail.clone());
    }
    if let Some(trap) = error.chain().find_map(|e| e.downcast_ref::<Trap>()) {
        return match trap {
            Trap::Interrupt => FailClosed::new(
                plugin,
                Cause::Deadline,
                format!("still running after its deadline of {:?}", limits.deadline),
            ),
            Trap::StackOverflow => {
                FailClosed::new(plugin, Cause::Stack, "exhausted its wasm stack")
            }
            other => FailClosed::new(plugin, Cause::Trap, format!("trapped: {other}")),
        };
    }
    let message = format!("{error:#}");
    // wasmtime 48 does not export its hostcall-fuel error type; its message
    // is pinned by the oversized-answer tests.
    if message.contains("fuel allocated for hostcalls") {
        return FailClosed::new(
            plugin,
            Cause::Oversized,
            format!(
                "made the host copy more than {} bytes in one call",
                limits.answer_bytes
            ),
        );
    }
    if message.contains("resource limit exceeded") {
        return FailClosed::new(
            plugin,
            Cause::Limit,
            format!(
                "creates more memories, tables or module instances than a plugin may (RuntimeConfig::max_*_per_plugin): {message}"
            ),
        );
    }
    if message.contains("concurrent") && message.contains("limit") {
        return FailClosed::new(
            plugin,
            Cause::Limit,
            format!("no instance slot is free: {message}"),
        );
    }
    FailClosed::new(plugin, fallback, message)
}

/// Refuses a component that declares more memories or tables than a plugin
/// may create, or initial sizes past what its limits could ever allow.
fn check_declared(runtime: &Runtime, component: &Component) -> Result<(), String> {
    // `None`: it imports core modules, which the linker refuses anyway.
    let Some(needs) = component.resources_required() else {
        return Ok(());
    };
    let config = runtime.config();
    let too_many = |what: &str, declared: u32, most: u32, setting: &str| {
        format!(
            "declares {declared} {what}, more than the {most} a plugin may create (RuntimeConfig::{setting}); a guard built from one language toolchain has one or two"
        )
    };
    if needs.num_memories > config.max_memories_per_plugin {
        return Err(too_many(
            "memories",
            needs.num_memories,
            config.max_memories_per_plugin,
            "max_memories_per_plugin",
        ));
    }
    if needs.num_tables > config.max_tables_per_plugin {
        return Err(too_many(
            "tables",
            needs.num_tables,
            config.max_tables_per_plugin,
            "max_tables_per_plugin",
        ));
    }
    Ok(())
}

/// The refusal of a plugin file past the runtime's size bound.
pub(crate) fn too_big(name: &str, size: u64, max: usize) -> LoadError {
    LoadError::new(
        name,
        LoadPhase::Read,
        format!(
            "is {size} bytes, more than the {max} a plugin may be (RuntimeConfig::max_plugin_bytes)"
        ),
    )
}

/// Whether `bytes` is a core module rather than a component (both start
/// with `\0asm`; the version/layer word tells them apart).
fn is_core_module(bytes: &[u8]) -> bool {
    bytes.len() >= 8 && bytes[..4] == *b"\0asm" && bytes[4..8] == [1, 0, 0, 0]
}
