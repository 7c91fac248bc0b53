//! `cargo bench -p hookbox-bench`: every contestant in one process, so the
//! ratios hold on a noisy machine; at the end, the table of BENCHMARKS.md
//! (medians and ratios) is printed and written to
//! `target/criterion/hookbox-report.md`.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput};
use hookbox::{HookStack, Plugin, PluginOptions, Runtime, RuntimeConfig, StepEvent, TextDelta};
#[cfg(feature = "extism")]
use hookbox_bench::ExtismStack;
use hookbox_bench::{Answer, RawCalls, context, native_stack, tool_call, wasm_stack};
use opentelemetry_sdk::trace::SdkTracerProvider;

const SIZES: [(usize, &str); 2] = [(1024, "1KiB"), (64 * 1024, "64KiB")];
const STACKS: [usize; 2] = [1, 8];

fn per_event(c: &mut Criterion, runtime: &Runtime, plugin: &Arc<Plugin>) {
    let ctx = context();
    let mut group = c.benchmark_group("per_event");
    for answer in Answer::ALL {
        for n in STACKS {
            for (bytes, size) in SIZES {
                let event = tool_call(bytes, answer);
                let param = format!("{}/{n}/{size}", answer.name());

                let native = native_stack(n);
                let mut run = native.start_run("bench");
                group.bench_function(BenchmarkId::new("native", &param), |b| {
                    b.iter(|| black_box(run.dispatch(&ctx, &event)))
                });

                let stack = wasm_stack(plugin, n);
                let mut run = stack.start_run("bench");
                run.instantiate_all().expect("instances");
                group.bench_function(BenchmarkId::new("hookbox", &param), |b| {
                    b.iter(|| black_box(run.dispatch(&ctx, &event)))
                });

                let mut raw = RawCalls::new(runtime, n).expect("raw instances");
                group.bench_function(BenchmarkId::new("raw-wasmtime", &param), |b| {
                    b.iter(|| black_box(raw.call(&ctx, &event).expect("raw call")))
                });

                #[cfg(feature = "extism")]
                {
                    let mut extism = ExtismStack::new(n).expect("extism plugins");
                    group.bench_function(BenchmarkId::new("extism", &param), |b| {
                        b.iter(|| black_box(extism.call(&event).expect("extism call")))
                    });
                }
            }
        }
    }
    group.finish();

    let program = PathBuf::from(env!("CARGO_BIN_EXE_subprocess-guard"));
    let mut group = c.benchmark_group("per_event");
    group.sample_size(10);
    for n in STACKS {
        let event = tool_call(1024, Answer::Continue);
        group.bench_function(
            BenchmarkId::new("subprocess", format!("continue/{n}/1KiB")),
            |b| {
                b.iter(|| {
                    black_box(hookbox_bench::subprocess_chain(&program, n, &event).expect("hook"))
                })
            },
        );
    }
    group.finish();
}

fn instantiation(c: &mut Criterion, runtime: &Runtime, plugin: &Arc<Plugin>) {
    let mut group = c.benchmark_group("instantiate");
    for n in STACKS {
        let stack = wasm_stack(plugin, n);
        group.bench_function(BenchmarkId::new("run", n), |b| {
            b.iter(|| {
                let mut run = stack.start_run("r");
                run.instantiate_all().expect("instances");
                black_box(run)
            })
        });
    }
    let wasi = Arc::new(
        Plugin::from_file(
            runtime,
            hookbox_tests::guests::WASI_PROBE.as_ref(),
            PluginOptions::default(),
        )
        .expect("wasi-probe"),
    );
    let stack = wasm_stack(&wasi, 1);
    group.bench_function(BenchmarkId::new("run-wasip2", 1), |b| {
        b.iter(|| {
            let mut run = stack.start_run("r");
            run.instantiate_all().expect("instance");
            black_box(run)
        })
    });
    // A run's first event: instantiation, and the first call into fresh
    // memory.
    let stack = wasm_stack(plugin, 1);
    let ctx = context();
    let event = tool_call(1024, Answer::Continue);
    group.bench_function(BenchmarkId::new("first-event", 1), |b| {
        b.iter(|| {
            let mut run = stack.start_run("r");
            black_box(run.dispatch(&ctx, &event).expect("flow"));
            black_box(run)
        })
    });
    // The same in pools that keep other amounts of each memory resident:
    // none (every page returned to the kernel when a run ends, so each
    // first call faults them in), and more than the default.
    for (keep, name) in [
        (0, "first-event-pages-returned"),
        (4 << 20, "first-event-keep-4MiB"),
        (16 << 20, "first-event-keep-16MiB"),
    ] {
        let pool = Runtime::new(RuntimeConfig {
            keep_resident_bytes: keep,
            ..RuntimeConfig::default()
        })
        .expect("runtime");
        let plugin = hookbox_bench::plugin(&pool).expect("bench guard");
        let stack = wasm_stack(&plugin, 1);
        group.bench_function(BenchmarkId::new(name, 1), |b| {
            b.iter(|| {
                let mut run = stack.start_run("r");
                black_box(run.dispatch(&ctx, &event).expect("flow"));
                black_box(run)
            })
        });
    }
    group.finish();

    // A kind nobody subscribed to: the stack is not even walked.
    let mut group = c.benchmark_group("unsubscribed");
    let stack = wasm_stack(plugin, 8);
    let mut run = stack.start_run("r");
    let delta = StepEvent::TextDelta(TextDelta::default());
    group.bench_function("hookbox-8", |b| {
        b.iter(|| black_box(run.dispatch(&ctx, &delta)))
    });
    let empty = HookStack::new();
    let mut run = empty.start_run("r");
    group.bench_function("empty-stack", |b| {
        b.iter(|| black_box(run.dispatch(&ctx, &delta)))
    });
    // Eight guards, each scoped to another tool (`tools = [...]` in the
    // manifest), and a call to a ninth: answered without entering a guest.
    let mut scoped = HookStack::new();
    for i in 0..8 {
        let tools =
            hookbox::matcher::ToolMatcher::new([format!("tool_{i}"), format!("mcp__{i}__*")]);
        scoped.push_scoped(plugin.clone(), tools, false);
    }
    let mut run = scoped.start_run("r");
    let other = tool_call(1024, Answer::Continue);
    group.bench_function("scoped-8-other-tool", |b| {
        b.iter(|| black_box(run.dispatch(&ctx, &other)))
    });
    group.finish();
}

/// What watching decisions costs per event, against the same stack with
/// nothing watching, all in this process: 8 plugins, 1 KiB, all continue.
/// The decision log writes every decision (to a sink that keeps nothing);
/// traces build every span through the OpenTelemetry layer `hookbox run`
/// and `serve` install, once with no exporter behind it and once exporting
/// over OTLP/HTTP to a receiver on this machine.
fn observability(c: &mut Criterion, plugin: &Arc<Plugin>) {
    use tracing_subscriber::layer::SubscriberExt;
    let ctx = context();
    let event = tool_call(1024, Answer::Continue);
    let stack = wasm_stack(plugin, 8);
    let mut group = c.benchmark_group("observability");
    let mut bench = |name: &str, log: bool, traces: Option<&SdkTracerProvider>| {
        let mut run = stack.start_run(name);
        run.instantiate_all().expect("instances");
        if log {
            let log = hookbox::audit::DecisionLog::to_writer(std::io::sink()).all();
            run.observe(Arc::new(log).for_run(1, Default::default()));
        }
        let subscriber = traces.map(|provider| {
            tracing_subscriber::registry().with(hookbox_cli::telemetry::otel_layer(provider))
        });
        let dispatch = subscriber.map_or_else(tracing::Dispatch::none, tracing::Dispatch::new);
        tracing::dispatcher::with_default(&dispatch, || {
            // A run's root span, as `hookbox serve` opens per run.
            let root = tracing::info_span!("hookbox.run");
            let _in_run = root.enter();
            group.bench_function(name, |b| b.iter(|| black_box(run.dispatch(&ctx, &event))));
        });
    };
    bench("off/8", false, None);
    bench("decision-log/8", true, None);
    let unexported = SdkTracerProvider::builder().build();
    bench("traces-no-export/8", false, Some(&unexported));
    let receiver = hookbox_bench::otlp_sink().expect("an OTLP receiver");
    let exported = hookbox_cli::telemetry::otlp_provider(Some(&receiver)).expect("exporter");
    bench("traces-exported/8", false, Some(&exported));
    bench("traces-exported-and-decision-log/8", true, Some(&exported));
    group.finish();
    let _ = exported.shutdown();
}

/// The argument patterns deny-tools applies when `deny_args` is not set.
const DENY_ARGS: [&str; 8] = [
    "*rm -rf*",
    "*rm -fr*",
    "*mkfs*",
    "*dd if=*",
    "*| sh*",
    "*| bash*",
    "*.ssh/*",
    "*/etc/shadow*",
];

/// A `Write` of 2 MiB of source code, as an agent sends it: JSON arguments
/// with the file's text escaped.
fn big_write() -> String {
    let line = "    let total = items.iter().map(|item| item.price * item.count).sum::<u64>();\n";
    let content = line.repeat(2 * 1024 * 1024 / line.len());
    serde_json::json!({"file_path": "/work/src/lib.rs", "content": content}).to_string()
}

/// The example guards on the inputs that hurt: deny-tools (its eight default
/// argument patterns) on a 2 MiB `Write`, against the SDK's glob run
/// natively on the same text, deadlines on. CPython's `in` on the same
/// text is timed in a subprocess for the report ([`cpython_in_ns`]).
fn guards(c: &mut Criterion, runtime: &Runtime) {
    let ctx = context();
    let args = big_write();
    let mut group = c.benchmark_group("guards");
    group.sample_size(20);
    let plugin = Arc::new(
        Plugin::from_file(
            runtime,
            std::path::Path::new(hookbox_tests::guests::DENY_TOOLS),
            PluginOptions::default(),
        )
        .expect("deny-tools"),
    );
    let mut stack = HookStack::new();
    stack.push_plugin(plugin);
    let mut run = stack.start_run("guards");
    run.instantiate_all().expect("instance");
    let event = StepEvent::ToolCall(hookbox::ToolCall {
        tool_name: "Write".into(),
        args: args.clone(),
        ..Default::default()
    });
    group.bench_function("deny-tools-2MiB/hookbox", |b| {
        b.iter(|| {
            let decision = run.dispatch(&ctx, &event).expect("within its deadline");
            assert!(decision.flow.is_continue());
        })
    });
    group.bench_function("deny-tools-2MiB/native-sdk-glob", |b| {
        b.iter(|| black_box(DENY_ARGS.iter().any(|p| hookbox_sdk::glob_match(p, &args))))
    });
    group.finish();
}

/// CPython's `in` looking for deny-tools' eight patterns in the same text,
/// in ns (the median of 21 runs), or `None` without a `python3`.
fn cpython_in_ns() -> Option<f64> {
    let file = std::env::temp_dir().join(format!("hookbox-bench-write-{}", std::process::id()));
    std::fs::write(&file, big_write()).ok()?;
    let needles: Vec<String> = DENY_ARGS
        .iter()
        .map(|p| p.trim_matches('*').to_owned())
        .collect();
    let script = format!(
        "import sys, timeit, statistics\n\
         text = open(sys.argv[1], encoding='utf-8').read()\n\
         needles = {needles:?}\n\
         runs = timeit.repeat(lambda: any(n in text for n in needles), number=1, repeat=21)\n\
         print(statistics.median(runs) * 1e9)\n"
    );
    let out = std::process::Command::new("python3")
        .args(["-c", &script])
        .arg(&file)
        .output()
        .ok()?;
    let _ = std::fs::remove_file(&file);
    String::from_utf8(out.stdout).ok()?.trim().parse().ok()
}

/// Ten plugins: the six examples and four more guards.
fn ten_plugin_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hookbox-bench-dir-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for (name, path) in hookbox_tests::guests::ALL
        .iter()
        .filter(|(n, _)| hookbox_tests::guests::EXAMPLES.contains(n))
    {
        std::fs::copy(path, dir.join(format!("{name}.wasm"))).unwrap();
    }
    for i in 0..4 {
        std::fs::copy(
            hookbox_tests::guests::BENCH_GUARD,
            dir.join(format!("guard-{i}.wasm")),
        )
        .unwrap();
    }
    dir
}

fn directory_start(c: &mut Criterion) {
    let dir = ten_plugin_dir();
    let cache = dir.with_extension("cache");
    let _ = std::fs::remove_dir_all(&cache);
    let mut group = c.benchmark_group("dir_start");
    group.sample_size(10);
    group.bench_function("cold", |b| {
        b.iter(|| {
            let runtime = Runtime::new(RuntimeConfig::default()).unwrap();
            black_box(hookbox::directory::load(&runtime, &dir).unwrap())
        })
    });
    let warm_config = || RuntimeConfig {
        cache_dir: Some(cache.clone()),
        ..RuntimeConfig::default()
    };
    // Fill the cache once.
    hookbox::directory::load(&Runtime::new(warm_config()).unwrap(), &dir).unwrap();
    group.bench_function("warm", |b| {
        b.iter(|| {
            let runtime = Runtime::new(warm_config()).unwrap();
            black_box(hookbox::directory::load(&runtime, &dir).unwrap())
        })
    });
    group.finish();
}

const RUNS: usize = 64;
const EVENTS_PER_RUN: usize = 100;

/// Many concurrent runs on tokio, each a session of tool calls through a
/// stack of 8, each dispatch on the blocking pool as the runner does it.
fn throughput(c: &mut Criterion, plugin: &Arc<Plugin>) {
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let stack = Arc::new(wasm_stack(plugin, 8));
    let event = Arc::new(tool_call(1024, Answer::Continue));
    let mut group = c.benchmark_group("throughput");
    group.sample_size(10);
    group.throughput(Throughput::Elements((RUNS * EVENTS_PER_RUN) as u64));
    group.bench_function("concurrent-runs-8-plugins", |b| {
        b.iter(|| {
            tokio.block_on(async {
                let tasks: Vec<_> = (0..RUNS)
                    .map(|i| {
                        let stack = stack.clone();
                        let event = event.clone();
                        tokio::spawn(async move {
                            let mut run = stack.start_run(format!("run-{i}"));
                            for _ in 0..EVENTS_PER_RUN {
                                let event = event.clone();
                                let (back, outcome) = tokio::task::spawn_blocking(move || {
                                    let ctx = run.context(1);
                                    let outcome = run.dispatch(&ctx, &event);
                                    (run, outcome)
                                })
                                .await
                                .unwrap();
                                outcome.expect("flow");
                                run = back;
                            }
                        })
                    })
                    .collect();
                for task in tasks {
                    task.await.unwrap();
                }
            })
        })
    });
    group.finish();
}

/// Resident memory of live runs: `runs` runs of a stack of 8, every plugin
/// instantiated; returns KiB per run.
fn memory_per_run(plugin: &Arc<Plugin>, runs: usize) -> f64 {
    let stack = wasm_stack(plugin, 8);
    let ctx = context();
    let event = tool_call(1024, Answer::Continue);
    let before = rss_kib();
    let live: Vec<_> = (0..runs)
        .map(|i| {
            let mut run = stack.start_run(format!("m-{i}"));
            run.dispatch(&ctx, &event).expect("flow");
            run
        })
        .collect();
    let after = rss_kib();
    drop(live);
    (after - before) / runs as f64
}

fn rss_kib() -> f64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: f64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0.0);
    pages * 4.0
}

fn main() {
    let runtime = Runtime::new(RuntimeConfig::default()).expect("runtime");
    let plugin = hookbox_bench::plugin(&runtime).expect("bench guard");
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .configure_from_args();
    per_event(&mut c, &runtime, &plugin);
    instantiation(&mut c, &runtime, &plugin);
    directory_start(&mut c);
    throughput(&mut c, &plugin);
    observability(&mut c, &plugin);
    guards(&mut c, &runtime);
    c.final_summary();

    let started = Instant::now();
    let memory = memory_per_run(&plugin, 100);
    let report = report(&criterion_dir(), memory, cpython_in_ns());
    println!("\n{report}");
    let _ = std::fs::write(criterion_dir().join("hookbox-report.md"), &report);
    eprintln!("(report written in {:?})", started.elapsed());
    // A regression of the hot path fails the run, so it is seen when it lands.
    let over = over_the_floor(&medians(&criterion_dir()));
    if !over.is_empty() {
        eprintln!(
            "hookbox is more than {:.0}% slower than raw wasmtime per event on {}: something on the hot path (host/core/src/stack/compose.rs, plugin.rs, clock.rs) costs more than it did",
            (FLOOR - 1.0) * 100.0,
            over.join(", ")
        );
        std::process::exit(1);
    }
}

fn criterion_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"))
        .join("criterion")
}

/// Medians in nanoseconds by criterion id (`group/function/parameter`).
fn medians(dir: &Path) -> BTreeMap<String, f64> {
    let mut found = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                if path.ends_with("new") {
                    let read = |f: &str| -> Option<serde_json::Value> {
                        serde_json::from_str(&std::fs::read_to_string(path.join(f)).ok()?).ok()
                    };
                    if let (Some(bench), Some(est)) =
                        (read("benchmark.json"), read("estimates.json"))
                        && let (Some(id), Some(median)) = (
                            bench["full_id"].as_str(),
                            est["median"]["point_estimate"].as_f64(),
                        )
                    {
                        found.insert(id.to_owned(), median);
                    }
                } else {
                    stack.push(path);
                }
            }
        }
    }
    found
}

fn us(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.2} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

/// How much slower than raw wasmtime hookbox may be on a `continue` row.
const FLOOR: f64 = 1.15;

/// The `continue` rows where hookbox ÷ raw wasmtime is past [`FLOOR`], each
/// with its ratio.
fn over_the_floor(m: &BTreeMap<String, f64>) -> Vec<String> {
    let mut over = Vec::new();
    for n in STACKS {
        for (_, size) in SIZES {
            let param = format!("continue/{n}/{size}");
            let (Some(hookbox), Some(raw)) = (
                m.get(&format!("per_event/hookbox/{param}")),
                m.get(&format!("per_event/raw-wasmtime/{param}")),
            ) else {
                continue;
            };
            if hookbox / raw > FLOOR {
                over.push(format!("{param} ({:.2}×)", hookbox / raw));
            }
        }
    }
    over
}

fn report(dir: &Path, memory_kib: f64, cpython_in: Option<f64>) -> String {
    let m = medians(dir);
    let get = |id: &str| m.get(id).copied();
    let mut out = String::from(
        "### Per event: tool-call through a stack, deadlines on (medians)\n\n\
         | answer / stack / args | native | hookbox | raw wasmtime | Extism | hookbox ÷ native | Extism ÷ hookbox | hookbox over raw |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    for answer in Answer::ALL {
        for n in STACKS {
            for (_, size) in SIZES {
                let param = format!("{}/{n}/{size}", answer.name());
                let cell = |who: &str| get(&format!("per_event/{who}/{param}"));
                let (Some(native), Some(hookbox), Some(raw)) =
                    (cell("native"), cell("hookbox"), cell("raw-wasmtime"))
                else {
                    continue;
                };
                // Extism only with `--features extism`.
                let extism = cell("extism");
                out.push_str(&format!(
                    "| {} / {n} / {size} | {} | {} | {} | {} | {:.0}× | {} | {:+.0}% |\n",
                    answer.name(),
                    us(native),
                    us(hookbox),
                    us(raw),
                    extism.map_or("–".into(), us),
                    hookbox / native,
                    extism.map_or("–".into(), |e| format!("{:.1}×", e / hookbox)),
                    (hookbox / raw - 1.0) * 100.0
                ));
            }
        }
    }
    let over = over_the_floor(&m);
    out.push_str(&format!(
        "\nThe floor: hookbox within {:.0}% of raw wasmtime on every `continue` row. {}\n",
        (FLOOR - 1.0) * 100.0,
        if over.is_empty() {
            "Held.".to_owned()
        } else {
            format!("**Missed** on {}.", over.join(", "))
        }
    ));
    out.push_str("\n### Subprocess hooks (a process per hook per event)\n\n| stack | subprocess | hookbox | subprocess ÷ hookbox |\n|---|---|---|---|\n");
    for n in STACKS {
        if let (Some(sub), Some(hookbox)) = (
            get(&format!("per_event/subprocess/continue/{n}/1KiB")),
            get(&format!("per_event/hookbox/continue/{n}/1KiB")),
        ) {
            out.push_str(&format!(
                "| {n}, continue, 1 KiB | {} | {} | {:.0}× |\n",
                us(sub),
                us(hookbox),
                sub / hookbox
            ));
        }
    }
    out.push_str("\n### Starting runs and stacks\n\n| what | median |\n|---|---|\n");
    for (label, id, per) in [
        (
            "instantiate a run of 1 plugin (no WASI imports)",
            "instantiate/run/1",
            1.0,
        ),
        (
            "instantiate a run of 8 plugins, per plugin",
            "instantiate/run/8",
            8.0,
        ),
        (
            "instantiate a run of 1 wasm32-wasip2 plugin",
            "instantiate/run-wasip2/1",
            1.0,
        ),
        (
            "a run's first event (instantiate + first call), 1 plugin",
            "instantiate/first-event/1",
            1.0,
        ),
        (
            "the same, in a pool that returns every page when a run ends",
            "instantiate/first-event-pages-returned/1",
            1.0,
        ),
        (
            "an event kind no plugin subscribed to, stack of 8",
            "unsubscribed/hookbox-8",
            1.0,
        ),
        (
            "the same event, empty stack",
            "unsubscribed/empty-stack",
            1.0,
        ),
        (
            "a tool none of 8 scoped plugins is scoped to",
            "unsubscribed/scoped-8-other-tool",
            1.0,
        ),
        ("10-plugin directory, cold (compile)", "dir_start/cold", 1.0),
        (
            "10-plugin directory, warm (compile cache)",
            "dir_start/warm",
            1.0,
        ),
    ] {
        if let Some(ns) = get(id) {
            out.push_str(&format!("| {label} | {} |\n", us(ns / per)));
        }
    }
    if let Some(ns) = get("throughput/concurrent-runs-8-plugins") {
        let events = (RUNS * EVENTS_PER_RUN) as f64;
        out.push_str(&format!(
            "| throughput: {RUNS} concurrent runs × {EVENTS_PER_RUN} events, stack of 8, on tokio | {:.0} events/s |\n",
            events / (ns / 1e9)
        ));
    }
    out.push_str(&format!(
        "| resident memory per live run, stack of 8 | {memory_kib:.0} KiB |\n"
    ));
    if let (Some(hookbox), Some(native)) = (
        get("guards/deny-tools-2MiB/hookbox"),
        get("guards/deny-tools-2MiB/native-sdk-glob"),
    ) {
        out.push_str(
            "\n### deny-tools on a 2 MiB `Write` (eight default patterns, deadline on)\n\n| hookbox | SDK glob, native | CPython `in` | hookbox ÷ native | hookbox ÷ CPython |\n|---|---|---|---|---|\n",
        );
        out.push_str(&format!(
            "| {} | {} | {} | {:.1}× | {} |\n",
            us(hookbox),
            us(native),
            cpython_in.map_or("–".into(), us),
            hookbox / native,
            cpython_in.map_or("–".into(), |py| format!("{:.2}×", hookbox / py)),
        ));
    }
    if let Some(off) = get("observability/off/8") {
        out.push_str(
            "\n### Watching decisions (stack of 8, 1 KiB, all continue)\n\n| what | median | ÷ off |\n|---|---|---|\n",
        );
        for (label, id) in [
            ("nothing watching", "off/8"),
            ("decision log, every decision", "decision-log/8"),
            ("traces built, no exporter", "traces-no-export/8"),
            ("traces exported over OTLP/HTTP", "traces-exported/8"),
            (
                "traces exported and every decision logged",
                "traces-exported-and-decision-log/8",
            ),
        ] {
            if let Some(ns) = get(&format!("observability/{id}")) {
                out.push_str(&format!("| {label} | {} | {:.2}× |\n", us(ns), ns / off));
            }
        }
    }
    out
}
