//! `cargo bench -p hookbox-bench --bench languages`: toolguard as built in
//! each language (`languages/`), side by side in one process: compile time,
//! size, instantiation, a run's first event and per-event costs, each as a
//! ratio to the Rust build. Build them first with
//! `languages/build.sh rust javascript python c go` (which also records
//! each build's time); the ones not built are left out. The table is
//! printed at the end and written to `target/criterion/languages-report.md`.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion};
use hookbox::{
    HookStack, Plugin, PluginOptions, Runtime, RuntimeConfig, StepEvent, ToolCall, ToolOutcome,
    ToolResult,
};
use hookbox_bench::{human, target_dir};

/// `javascript-aot` is the JavaScript guard compiled ahead of time
/// (`languages/build.sh javascript-aot`, with weval).
const LANGUAGES: [&str; 6] = ["rust", "javascript", "javascript-aot", "python", "c", "go"];

fn component(language: &str) -> PathBuf {
    if language == "rust" {
        PathBuf::from(hookbox_tests::guests::TOOLGUARD)
    } else {
        target_dir().join(format!("languages/{language}/toolguard.wasm"))
    }
}

/// One language's guard, loaded, with what was measured outside criterion.
struct Guard {
    language: &'static str,
    stack: HookStack,
    size: usize,
    compile: Duration,
    build_seconds: Option<String>,
}

fn load(runtime: &Runtime, language: &'static str) -> Option<Guard> {
    load_file(runtime, language, &component(language))
}

fn load_file(runtime: &Runtime, language: &'static str, path: &Path) -> Option<Guard> {
    let bytes = std::fs::read(path).ok()?;
    // No compile cache: this is what a first load costs.
    let started = Instant::now();
    let plugin = Plugin::from_bytes(runtime, "toolguard", &bytes, PluginOptions::default())
        .unwrap_or_else(|e| panic!("{language}: {e}"));
    let compile = started.elapsed();
    let mut stack = HookStack::new();
    stack.push_plugin(plugin.into());
    let build_seconds =
        std::fs::read_to_string(target_dir().join(format!("languages/{language}/build-seconds")))
            .ok()
            .map(|s| s.trim().to_owned());
    Some(Guard {
        language,
        stack,
        size: bytes.len(),
        compile,
        build_seconds,
    })
}

/// An ordinary call: every pattern is checked, none matches.
fn clean_call() -> StepEvent {
    StepEvent::ToolCall(ToolCall {
        tool_name: "read_file".into(),
        tool_call_id: Some("call-1".into()),
        internal_call_id: "i-1".into(),
        args: r#"{"path":"src/main.rs","offset":0,"limit":200}"#.into(),
    })
}

/// 1 KiB of file content with one key in it: redacted.
fn secret_result() -> StepEvent {
    let mut text = String::new();
    while text.len() < 1000 {
        text.push_str("fn handler(request: Request) -> Response { route(request) }\n");
    }
    text.push_str("OPENAI_API_KEY=sk-0123456789abcdef\n");
    StepEvent::ToolResult(ToolResult {
        tool_name: "read_file".into(),
        tool_call_id: Some("call-1".into()),
        internal_call_id: "i-1".into(),
        args: r#"{"path":".env"}"#.into(),
        result: text,
        outcome: ToolOutcome::Success,
        extensions: "{}".into(),
    })
}

const BENCHES: [(&str, &str); 4] = [
    ("instantiate", "a fresh run's instance"),
    ("first-event", "a run's first event (instantiate + call)"),
    ("tool-call", "tool-call, nothing denied (warm)"),
    (
        "tool-result",
        "tool-result, 1 KiB, one secret redacted (warm)",
    ),
];

fn bench(c: &mut Criterion, guards: &[Guard]) {
    let ctx = hookbox_bench::context();
    let (call, result) = (clean_call(), secret_result());
    let mut group = c.benchmark_group("languages");
    for guard in guards {
        let stack = &guard.stack;
        group.bench_function(BenchmarkId::new("instantiate", guard.language), |b| {
            b.iter(|| {
                let mut run = stack.start_run("bench");
                run.instantiate_all().expect("instantiates");
                black_box(run)
            })
        });
        group.bench_function(BenchmarkId::new("first-event", guard.language), |b| {
            b.iter(|| {
                let mut run = stack.start_run("bench");
                black_box(run.dispatch(&ctx, &call).expect("decides"))
            })
        });
        let mut run = stack.start_run("bench");
        run.instantiate_all().expect("instantiates");
        group.bench_function(BenchmarkId::new("tool-call", guard.language), |b| {
            b.iter(|| black_box(run.dispatch(&ctx, &call).expect("decides")))
        });
        group.bench_function(BenchmarkId::new("tool-result", guard.language), |b| {
            b.iter(|| black_box(run.dispatch(&ctx, &result).expect("decides")))
        });
    }
    group.finish();
}

/// A `len`-byte tool result with nothing in it to redact.
fn plain_result(len: usize) -> StepEvent {
    StepEvent::ToolResult(ToolResult {
        tool_name: "read_file".into(),
        tool_call_id: Some("call-1".into()),
        internal_call_id: "i-1".into(),
        args: r#"{"path":"notes.txt"}"#.into(),
        result: "x".repeat(len),
        outcome: ToolOutcome::Success,
        extensions: "{}".into(),
    })
}

/// What a call into StarlingMonkey costs apart from a guard's work:
/// `bench/js/crossing.js`, which answers a tool call `continue` and hands a
/// tool result straight back as a rewrite, interpreted and compiled ahead
/// of time; the Rust toolguard's tool call beside it.
const CROSSINGS: [(&str, &str); 3] = [
    ("tool-call", "tool-call, answered `continue`"),
    ("echo-1KiB", "tool-result of 1 KiB handed back"),
    ("echo-64KiB", "tool-result of 64 KiB handed back"),
];

fn crossing(c: &mut Criterion, guards: &[Guard]) {
    let ctx = hookbox_bench::context();
    let events = [clean_call(), plain_result(1024), plain_result(64 * 1024)];
    let mut group = c.benchmark_group("crossing");
    for guard in guards {
        let mut run = guard.stack.start_run("bench");
        run.instantiate_all().expect("instantiates");
        for ((bench, _), event) in CROSSINGS.iter().zip(&events) {
            group.bench_function(BenchmarkId::new(*bench, guard.language), |b| {
                b.iter(|| black_box(run.dispatch(&ctx, event).expect("decides")))
            });
        }
    }
    group.finish();
}

fn main() {
    let runtime = Runtime::new(RuntimeConfig::default()).expect("runtime");
    let aot = target_dir().join("languages/javascript-aot");
    let crossings: Vec<Guard> = [
        ("interpreted", aot.join("crossing-interpreted.wasm")),
        ("aot", aot.join("crossing.wasm")),
    ]
    .into_iter()
    .filter_map(|(name, path)| load_file(&runtime, name, &path))
    .collect();
    let guards: Vec<Guard> = LANGUAGES
        .into_iter()
        .filter_map(|language| {
            let guard = load(&runtime, language);
            if guard.is_none() {
                eprintln!("{language}: not built (languages/build.sh {language}); left out");
            }
            guard
        })
        .collect();
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .configure_from_args();
    bench(&mut c, &guards);
    crossing(&mut c, &crossings);
    c.final_summary();

    let mut report = report(&guards);
    if !crossings.is_empty() {
        report.push_str(&crossing_report(&crossings));
    }
    println!("\n{report}");
    let dir = target_dir().join("criterion");
    let _ = std::fs::create_dir_all(&dir);
    let _ = std::fs::write(dir.join("languages-report.md"), &report);
}

/// Criterion's median for `languages/<bench>/<language>`, in nanoseconds.
fn median(bench: &str, language: &str) -> Option<f64> {
    median_in("languages", bench, language)
}

fn median_in(group: &str, bench: &str, language: &str) -> Option<f64> {
    hookbox_bench::criterion_median(&format!("{group}/{bench}/{language}"))
}

fn report(guards: &[Guard]) -> String {
    let rust = guards.iter().find(|g| g.language == "rust");
    let ratio = |value: f64, base: Option<f64>| match base {
        Some(base) if base > 0.0 && value / base < 9.95 => format!(" ({:.1}×)", value / base),
        Some(base) if base > 0.0 => format!(" ({:.0}×)", value / base),
        _ => String::new(),
    };
    let mut out = header(guards);
    let mut row = |label: &str, cell: &dyn Fn(&Guard) -> String| {
        out.push_str(&format!("| {label} |"));
        for guard in guards {
            out.push_str(&format!(" {} |", cell(guard)));
        }
        out.push('\n');
    };
    row("build from source (languages/build.sh)", &|g| {
        g.build_seconds
            .as_ref()
            .map_or("–".into(), |s| format!("{s} s"))
    });
    row("component size", &|g| {
        format!(
            "{:.0} KiB{}",
            g.size as f64 / 1024.0,
            ratio(g.size as f64, rust.map(|r| r.size as f64))
        )
    });
    row("compile at first load (one sample)", &|g| {
        let ns = g.compile.as_nanos() as f64;
        format!(
            "{}{}",
            human(ns),
            ratio(ns, rust.map(|r| r.compile.as_nanos() as f64))
        )
    });
    for (bench, label) in BENCHES {
        let base = median(bench, "rust");
        row(label, &|g| match median(bench, g.language) {
            Some(ns) => format!("{}{}", human(ns), ratio(ns, base)),
            None => "–".into(),
        });
    }
    out
}

/// A table's first two lines: a column per guard.
fn header(guards: &[Guard]) -> String {
    let names: Vec<&str> = guards.iter().map(|g| g.language).collect();
    format!(
        "| | {} |\n|---|{}\n",
        names.join(" | "),
        "---|".repeat(guards.len())
    )
}

fn crossing_report(guards: &[Guard]) -> String {
    let mut out = String::from(
        "\nThe crossing alone (bench/js/crossing.js), warm run, ratio to the Rust toolguard's tool call:\n\n",
    );
    out.push_str(&header(guards));
    let rust = median("tool-call", "rust");
    for (bench, label) in CROSSINGS {
        out.push_str(&format!("| {label} |"));
        for guard in guards {
            let cell = match (median_in("crossing", bench, guard.language), rust) {
                (Some(ns), Some(base)) => format!("{} ({:.0}×)", human(ns), ns / base),
                (Some(ns), None) => human(ns),
                _ => "–".into(),
            };
            out.push_str(&format!(" {cell} |"));
        }
        out.push('\n');
    }
    out
}
