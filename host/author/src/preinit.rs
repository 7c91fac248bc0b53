//! Pre-initialising a guard at build time: its start-up is run once and the
//! memory it leaves becomes the memory every run's fresh instance starts
//! from, as Wizer does (and as componentize-js does for JavaScript guards).
//!
//! A core module asks for it by exporting [`INIT_EXPORT`]
//! (`hookbox_sdk::pre_initialize!`). The module is instrumented by
//! [`wasmtime_wizer`], instantiated once here with every import trapping
//! (the start-up may not call the host: it has no run, no settings, no
//! scratchpad), bounded in fuel and memory as a guest is, its start-up
//! called, and rewritten with the instance's memory and globals as its
//! initial state. The result is an ordinary module: each run still gets a
//! fresh instance of it, and nothing one run does is seen by the next.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use wasmtime::{Config, Engine, Linker, Module, Store, StoreLimits, StoreLimitsBuilder, Val};
use wasmtime_wizer::{InstanceState, SnapshotVal, Wizer};

/// The export a module names its start-up with (Wizer's own name).
pub const INIT_EXPORT: &str = "wizer-initialize";

/// The most memory the start-up may leave: a guest's default memory limit,
/// which every run of the snapshot starts with.
const MAX_MEMORY: usize = 64 << 20;

/// The most wasm instructions (roughly) the start-up may run: far more
/// than compiling a few hundred regexes takes, far less than forever.
const MAX_FUEL: u64 = 50_000_000_000;

/// Whether `module` (a core module) exports [`INIT_EXPORT`].
pub fn asks_for_it(module: &[u8]) -> bool {
    wasmparser::Parser::new(0)
        .parse_all(module)
        .filter_map(Result::ok)
        .any(|payload| match payload {
            wasmparser::Payload::ExportSection(exports) => exports
                .into_iter()
                .filter_map(Result::ok)
                .any(|e| e.name == INIT_EXPORT && e.kind == wasmparser::ExternalKind::Func),
            _ => false,
        })
}

/// `module` with its start-up run: the same module but for its initial
/// memory and globals, which are what [`INIT_EXPORT`] left, and without
/// that export.
///
/// # Errors
/// What stopped it, in words for the guard's author: the start-up called
/// the host, trapped, ran out of fuel or memory, or the module is of a
/// kind Wizer cannot snapshot (imported memories, tables it writes).
pub fn pre_initialize(module: &[u8]) -> Result<Vec<u8>, String> {
    pre_initialize_within(module, MAX_FUEL)
}

fn pre_initialize_within(module: &[u8], fuel: u64) -> Result<Vec<u8>, String> {
    let wizer = Wizer::new();
    let (cx, instrumented) = wizer
        .instrument(module)
        .map_err(|e| format!("the module cannot be snapshot: {e:#}"))?;
    let mut config = Config::new();
    config.consume_fuel(true);
    let engine = Engine::new(&config).map_err(|e| format!("{e:#}"))?;
    let compiled = Module::new(&engine, &instrumented)
        .map_err(|e| format!("compiling the instrumented module: {e:#}"))?;
    let limits = StoreLimitsBuilder::new().memory_size(MAX_MEMORY).build();
    let mut store = Store::new(&engine, limits);
    store.limiter(|limits| limits);
    store.set_fuel(fuel).map_err(|e| format!("{e:#}"))?;
    let mut linker = Linker::new(&engine);
    linker
        .define_unknown_imports_as_traps(&compiled)
        .map_err(|e| format!("{e:#}"))?;
    let instance = linker
        .instantiate(&mut store, &compiled)
        .map_err(|e| format!("instantiating it: {e:#}"))?;
    for name in ["_initialize", INIT_EXPORT] {
        let Ok(start) = instance.get_typed_func::<(), ()>(&mut store, name) else {
            if name == INIT_EXPORT {
                return Err(format!(
                    "`{INIT_EXPORT}` is not a function of no arguments and no results"
                ));
            }
            continue;
        };
        start.call(&mut store, ()).map_err(|e| {
            let why = format!("{e:#}");
            if why.contains("unknown import") {
                format!("`{name}` called the host, which a start-up may not do (it runs at build time, with no run, settings or scratchpad): {why}")
            } else if why.contains("fuel") {
                format!("`{name}` ran more than {fuel} instructions: does it loop?")
            } else {
                format!("`{name}` failed: {why}")
            }
        })?;
    }
    let mut state = Snapshot {
        store: &mut store,
        instance,
    };
    ready(wizer.snapshot(&cx, &mut state))
        .ok_or("the snapshot did not finish")?
        .map_err(|e| format!("taking the snapshot: {e:#}"))
}

/// The instance's state, read for the snapshot.
struct Snapshot<'a> {
    store: &'a mut Store<StoreLimits>,
    instance: wasmtime::Instance,
}

impl InstanceState for Snapshot<'_> {
    // Wizer asks only for the globals and memories its instrumentation
    // exported, by the names it gave them: a missing one is its bug.
    async fn global_get(&mut self, name: &str, _: wasmparser::ValType) -> SnapshotVal {
        let global = self
            .instance
            .get_global(&mut *self.store, name)
            .expect("wizer's instrumentation exports each global it reads");
        match global.get(&mut *self.store) {
            Val::I32(x) => SnapshotVal::I32(x),
            Val::I64(x) => SnapshotVal::I64(x),
            Val::F32(x) => SnapshotVal::F32(x),
            Val::F64(x) => SnapshotVal::F64(x),
            Val::V128(x) => SnapshotVal::V128(x.as_u128()),
            other => panic!("wizer read a global of a reference type: {other:?}"),
        }
    }

    async fn memory_contents(&mut self, name: &str, contents: impl FnOnce(&[u8]) + Send) {
        let memory = self
            .instance
            .get_memory(&mut *self.store, name)
            .expect("wizer's instrumentation exports each memory it reads");
        contents(memory.data(&*self.store));
    }
}

/// The output of a future that never waits (the snapshot's reads are
/// synchronous here), or `None` if it did.
fn ready<F: Future>(future: F) -> Option<F::Output> {
    match pin!(future).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(output) => Some(output),
        Poll::Pending => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A start-up that writes memory and a global, and an `on-event` that
    /// reads them.
    const GUARD: &str = r#"(module
        (import "host" "log" (func $log (param i32)))
        (memory (export "memory") 1)
        (global $ready (mut i32) (i32.const 0))
        (func (export "wizer-initialize")
            (i32.store (i32.const 64) (i32.const 42))
            (global.set $ready (i32.const 1)))
        (func (export "read") (result i32)
            (i32.add (i32.load (i32.const 64)) (global.get $ready)))
        (func (export "logs") (call $log (i32.const 1))))"#;

    fn run(module: &[u8], export: &str) -> i32 {
        let engine = Engine::default();
        let module = Module::new(&engine, module).unwrap();
        let mut store = Store::new(&engine, ());
        let mut linker = Linker::new(&engine);
        linker.func_wrap("host", "log", |_: i32| {}).unwrap();
        let instance = linker.instantiate(&mut store, &module).unwrap();
        let read = instance
            .get_typed_func::<(), i32>(&mut store, export)
            .unwrap();
        read.call(&mut store, ()).unwrap()
    }

    #[test]
    fn the_start_up_runs_once_and_its_state_is_where_every_instance_starts() {
        let module = wat::parse_str(GUARD).unwrap();
        assert!(asks_for_it(&module));
        assert_eq!(run(&module, "read"), 0, "before: nothing is set up");
        let snapshot = pre_initialize(&module).unwrap();
        assert_eq!(run(&snapshot, "read"), 43);
        assert_eq!(
            run(&snapshot, "read"),
            43,
            "a second instance starts the same"
        );
        assert!(
            !asks_for_it(&snapshot),
            "the start-up is not exported any more"
        );
    }

    #[test]
    fn a_module_that_names_no_start_up_is_not_asked() {
        let module =
            wat::parse_str(r#"(module (func (export "read") (result i32) (i32.const 0)))"#)
                .unwrap();
        assert!(!asks_for_it(&module));
    }

    #[test]
    fn a_start_up_that_calls_the_host_fails_the_build_saying_so() {
        let module = wat::parse_str(GUARD.replace(
            "(global.set $ready (i32.const 1)))",
            "(global.set $ready (i32.const 1)) (call $log (i32.const 0)))",
        ))
        .unwrap();
        let error = pre_initialize(&module).unwrap_err();
        assert!(error.contains("called the host"), "{error}");
    }

    #[test]
    fn a_start_up_that_never_ends_is_stopped() {
        let module = wat::parse_str(
            r#"(module (memory 1) (func (export "wizer-initialize") (loop $l (br $l))))"#,
        )
        .unwrap();
        let error = pre_initialize_within(&module, 1_000_000).unwrap_err();
        assert!(error.contains("does it loop"), "{error}");
    }

    #[test]
    fn a_start_up_that_traps_fails_the_build_saying_so() {
        let module =
            wat::parse_str(r#"(module (memory 1) (func (export "wizer-initialize") unreachable))"#)
                .unwrap();
        let error = pre_initialize(&module).unwrap_err();
        assert!(error.contains("`wizer-initialize` failed"), "{error}");
    }
}
