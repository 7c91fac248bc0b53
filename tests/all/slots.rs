//! Limits that hold per plugin and per runtime: every memory and table of a
//! plugin's instance counts against its limit; runs are admitted by
//! instance slots (refused up front with `Busy`, never failed half-way);
//! loading never waits on live runs; compiling has a deadline.

use std::sync::Arc;
use std::time::Duration;

use hookbox::watch::DirWatcher;
use hookbox::{Cause, Flow, LoadError, LoadPhase, Plugin, PluginOptions, Runtime, RuntimeConfig};

use super::directory::{put, scratch_dir};
use super::support::*;
use super::wat;
use hookbox_tests::guests;

fn small_runtime(max_instances: u32) -> Runtime {
    Runtime::new(RuntimeConfig {
        max_instances,
        ..Default::default()
    })
    .unwrap()
}

fn load(runtime: &Runtime, path: &str, name: &str) -> Arc<Plugin> {
    let options = PluginOptions {
        config: [("name".to_string(), name.to_string())].into(),
        ..Default::default()
    };
    Arc::new(Plugin::from_file(runtime, path.as_ref(), options).unwrap())
}

#[test]
fn a_plugins_memories_count_together_against_its_memory_limit() {
    // Two memories, each grown to about 33 MiB: each is far under the 64
    // MiB limit, together they are past it.
    let bytes = wat::hook(
        "(drop (memory.grow (i32.const 520)))
         (drop (memory.grow $second (i32.const 520)))
         (i32.const 3072)",
        "(memory $second 1)",
    );
    let guest = Arc::new(
        Plugin::from_bytes(runtime(), "two-memories", &bytes, PluginOptions::default()).unwrap(),
    );
    let failure = once(&stack(&[guest]), &tool_call("any", "{}")).unwrap_err();
    assert_eq!(
        (&*failure.plugin, failure.cause),
        ("two-memories", Cause::Memory)
    );
    assert!(
        failure.detail.contains("across all its memories"),
        "{failure}"
    );
}

#[test]
fn a_plugins_tables_count_together_against_its_table_limit() {
    let bytes = wat::hook(
        "(drop (table.grow $a (ref.null func) (i32.const 15000)))
         (drop (table.grow $b (ref.null func) (i32.const 15000)))
         (i32.const 3072)",
        "(table $a 1 funcref) (table $b 1 funcref)",
    );
    let guest = Arc::new(
        Plugin::from_bytes(runtime(), "two-tables", &bytes, PluginOptions::default()).unwrap(),
    );
    let failure = once(&stack(&[guest]), &tool_call("any", "{}")).unwrap_err();
    assert_eq!(
        (&*failure.plugin, failure.cause),
        ("two-tables", Cause::Memory)
    );
    assert!(
        failure.detail.contains("across all its tables"),
        "{failure}"
    );
}

#[test]
fn a_plugin_declaring_more_memories_than_a_plugin_may_create_is_refused_at_load() {
    let bytes = wat::hook("(i32.const 3072)", "(memory 1) (memory 1)");
    let error = Plugin::from_bytes(runtime(), "hoarder", &bytes, PluginOptions::default())
        .expect_err("three memories, two allowed");
    assert_eq!(
        (error.plugin.as_str(), error.phase),
        ("hoarder", LoadPhase::Limits)
    );
    assert!(error.reason.contains("max_memories_per_plugin"), "{error}");

    // The same from three instances of a module with one memory each.
    let bytes = wat::parse(
        "(component
           (core module $m (memory 1))
           (core instance (instantiate $m))
           (core instance (instantiate $m))
           (core instance (instantiate $m)))",
    );
    let error = Plugin::from_bytes(runtime(), "hoarder", &bytes, PluginOptions::default())
        .expect_err("three memories, two allowed");
    assert_eq!(error.phase, LoadPhase::Limits, "{error}");
    assert!(error.reason.contains("3 Wasm linear memories"), "{error}");

    // Without the pool, hookbox's own check says the same.
    let on_demand = Runtime::new(RuntimeConfig {
        pooling: false,
        ..Default::default()
    })
    .unwrap();
    let error = Plugin::from_bytes(&on_demand, "hoarder", &bytes, PluginOptions::default())
        .expect_err("three memories, two allowed");
    assert_eq!(error.phase, LoadPhase::Limits, "{error}");
    assert!(error.reason.contains("declares 3 memories"), "{error}");
}

#[test]
fn runs_are_admitted_by_instance_slots_and_give_them_back() {
    let runtime = small_runtime(3);
    let two = stack(&[
        load(&runtime, guests::PUPPET, "a"),
        load(&runtime, guests::PUPPET, "b"),
    ]);
    let first = two.try_start_run("first").expect("2 of 3 slots");
    assert_eq!(runtime.instance_slots(), (2, 3));
    let busy = two
        .try_start_run("second")
        .err()
        .expect("2 more do not fit");
    assert_eq!((busy.needed, busy.in_use, busy.capacity), (2, 2, 3));
    assert!(busy.to_string().contains("max_instances"), "{busy}");

    // start_run cannot refuse: the run is over before it began, naming the
    // host, and no guest was started.
    let mut refused = two.start_run("refused");
    let failure = dispatch(&mut refused, &tool_call("a:flow:skip:x", "{}")).unwrap_err();
    assert_eq!((&*failure.plugin, failure.cause), ("hookbox", Cause::Limit));

    drop(first);
    assert_eq!(runtime.instance_slots(), (0, 3));
    let mut second = two.try_start_run("second").expect("the slots came back");
    assert_eq!(
        decided(dispatch(&mut second, &tool_call("b:flow:skip:x", "{}"))).flow,
        Flow::skip("x")
    );
}

#[test]
fn a_full_runtime_still_loads_and_reloads_plugins() {
    // Every slot held by a live run whose guests are started: loading
    // starts a plugin once too, on instances kept for loading.
    let runtime = small_runtime(1);
    let dir = scratch_dir("slots-reload");
    put(&dir, "guard.wasm", guests::PUPPET);
    let manifest = |deny: &str| {
        let text = format!(
            "[[plugin]]\nfile = \"guard.wasm\"\n[plugin.config]\nname = \"guard\"\nversion = \"{deny}\"\n"
        );
        std::fs::write(dir.join("hookbox.toml"), text).unwrap();
    };
    manifest("nothing");
    let watcher = DirWatcher::start(&runtime, &dir, Duration::from_millis(50)).unwrap();
    let mut holder = watcher.snapshot().stack.start_run("holder");
    holder.instantiate_all().expect("the only slot");
    assert_eq!(runtime.instance_slots(), (1, 1));

    manifest("shell");
    let report = watcher.reload_now();
    assert!(report.errors.is_empty(), "{report:?}");
    drop(holder);
    let version = decided(once(
        &watcher.snapshot().stack,
        &tool_call("guard:version", "{}"),
    ));
    assert_eq!(
        version.flow,
        Flow::skip("shell"),
        "the tightened policy is live"
    );
}

#[test]
fn a_reload_that_could_pass_is_retried_without_a_change_and_shown_meanwhile() {
    let dir = scratch_dir("slots-retry");
    put(&dir, "guard.wasm", guests::PUPPET);
    // An optional plugin whose file is not there yet: a read failure, which
    // a retry may get past.
    std::fs::write(
        dir.join("hookbox.toml"),
        "[[plugin]]\nfile = \"guard.wasm\"\n[[plugin]]\nfile = \"late.wasm\"\nrequired = false\n",
    )
    .unwrap();
    let watcher = DirWatcher::start(runtime(), &dir, Duration::from_millis(50)).unwrap();
    let late = |watcher: &DirWatcher| {
        let snapshot = watcher.snapshot();
        let status = snapshot.plugins.iter().find(|p| p.name == "late").cloned();
        status.expect("late is listed").result.err()
    };
    assert!(matches!(
        late(&watcher),
        Some(LoadError {
            phase: LoadPhase::Read,
            ..
        })
    ));
    let generation = watcher.snapshot().generation;

    let retried = watcher
        .next_report(Duration::from_secs(10))
        .expect("retried with no change to the directory");
    assert!(retried.worth_retrying(), "{retried:?}");
    assert_eq!(
        watcher.snapshot().generation,
        generation,
        "a retry that changes nothing keeps the generation (sessions keep their runs)"
    );

    put(&dir, "late.wasm", guests::PUPPET);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while late(&watcher).is_some() {
        assert!(
            std::time::Instant::now() < deadline,
            "late.wasm never loaded"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(watcher.snapshot().generation > generation);
}

#[test]
fn a_plugin_that_takes_too_long_to_compile_is_refused_naming_it() {
    let runtime = Runtime::new(RuntimeConfig {
        max_compile_time: Duration::from_nanos(1),
        cache_dir: None,
        ..Default::default()
    })
    .unwrap();
    let error = Plugin::from_file(
        &runtime,
        guests::DENY_TOOLS.as_ref(),
        PluginOptions::default(),
    )
    .expect_err("no component compiles in a nanosecond");
    assert_eq!(
        (error.plugin.as_str(), error.phase),
        ("deny-tools", LoadPhase::Limits)
    );
    assert!(error.reason.contains("max_compile_time"), "{error}");
}

#[test]
fn a_pool_too_large_for_the_address_space_is_refused_with_what_to_lower() {
    let error = Runtime::new(RuntimeConfig {
        max_instances: 4_000_000,
        ..Default::default()
    })
    .err()
    .expect("millions of 1 GiB memory slots do not fit");
    assert!(error.to_string().contains("lower max_instances"), "{error}");
}
