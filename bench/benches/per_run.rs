//! `cargo bench -p hookbox-bench --bench per_run`: what each shipped guard
//! costs a run, against deny-tools, in one process. A run is a fresh
//! instance (a session in `hookbox serve`, an invocation in the Python and
//! Node bindings, a process for a command hook), so what a guard builds
//! before its first answer is paid by every run.
//!
//! Each guard is built as `hookbox build` and `cargo demo` build it (a guard
//! that names a start-up is pre-initialised), then measured two ways: a
//! fresh run asked one event, and the same event in a run already warm.
//! The languages' conformance guards (`languages/build.sh`) are measured
//! too where built. The table is printed and written to
//! `target/criterion/per-run-report.md`; the run exits 1 when a guard's
//! fresh run on its everyday event costs more than [`BOUND`] times
//! deny-tools'.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion};
use hookbox::{
    CompletionCall, HookStack, InvalidToolCall, Plugin, PluginOptions, Runtime, RuntimeConfig,
    StepEvent, ToolCall, ToolResult,
};
use hookbox_bench::{human, target_dir};
use hookbox_tests::guests;

/// How many times deny-tools' per-run cost a guard may cost.
const BOUND: f64 = 10.0;

/// One row: a guard, the event it is asked, whether the bound applies.
struct Row {
    id: String,
    guard: String,
    event_label: &'static str,
    event: StepEvent,
    bounded: bool,
    stack: HookStack,
    /// Whether a run goes on after the event (call-budget's ends, once its
    /// budget is spent): then it has a warm cost.
    warm: bool,
    /// Page faults per fresh run, where the platform counts them.
    faults: Option<f64>,
}

fn tool_call(tool: &str, args: &str) -> StepEvent {
    StepEvent::ToolCall(ToolCall {
        tool_name: tool.into(),
        tool_call_id: Some("call-1".into()),
        internal_call_id: "i-1".into(),
        args: args.into(),
    })
}

fn tool_result(text: &str) -> StepEvent {
    StepEvent::ToolResult(ToolResult {
        tool_name: "read_file".into(),
        internal_call_id: "i-1".into(),
        args: r#"{"path":"config/app.env"}"#.into(),
        result: text.into(),
        ..Default::default()
    })
}

/// The event each shipped guard is asked most: what an agent sends every
/// turn, and nothing for it to stop.
fn everyday(guard: &str) -> (&'static str, StepEvent) {
    match guard {
        "inject-context" => (
            "completion-call",
            StepEvent::CompletionCall(CompletionCall {
                prompt: "Tidy up this project.".into(),
                turn: 1,
                ..Default::default()
            }),
        ),
        "repair-tools" => (
            "invalid-tool-call",
            StepEvent::InvalidToolCall(InvalidToolCall {
                tool_name: "read_fil".into(),
                args: Some(r#"{"path":"README.md"}"#.into()),
                ..Default::default()
            }),
        ),
        "redact-secrets" => (
            "tool-result, no secret",
            tool_result(
                "# acme-service\n\nA small web service. Run it with `cargo run`.\nSee docs/deploy.md for the staging host.\n",
            ),
        ),
        "pii" => (
            "tool-result, no personal data",
            tool_result(
                "# acme-service\n\nA small web service. Run it with `cargo run`.\nSee docs/deploy.md for the staging host.\n",
            ),
        ),
        "provenance" => (
            "tool-result, kept in its ledger",
            tool_result(
                "# acme-service\n\nA small web service. Run it with `cargo run`.\nSee docs/deploy.md for the staging host.\n",
            ),
        ),
        "shell-guard" => (
            "tool-call, a build command",
            tool_call(
                "Bash",
                r#"{"command":"cargo build --release 2>&1 | tail -n 20 && git status --short"}"#,
            ),
        ),
        "egress" => (
            "tool-call, a curl command",
            tool_call(
                "bash",
                r#"{"command":"curl -s https://api.github.com/repos/o/r | jq .stargazers_count"}"#,
            ),
        ),
        _ => (
            "tool-call",
            tool_call("read_file", r#"{"path":"src/main.rs"}"#),
        ),
    }
}

fn stack_of(plugin: Plugin) -> HookStack {
    let mut stack = HookStack::new();
    stack.push_plugin(Arc::new(plugin));
    stack
}

fn rows(runtime: &Runtime) -> Vec<Row> {
    let mut rows = Vec::new();
    for (name, module) in guests::MODULES
        .iter()
        .filter(|(name, _)| guests::EXAMPLES.contains(name))
    {
        let core = std::fs::read(module).expect("the guard's core module");
        let bytes = hookbox_author::component_of_module(&core).expect("built as hookbox builds");
        let load =
            || Plugin::from_bytes(runtime, name, &bytes, PluginOptions::default()).expect("loads");
        let (event_label, event) = everyday(name);
        rows.push(Row {
            id: (*name).to_owned(),
            guard: (*name).to_owned(),
            event_label,
            event,
            bounded: true,
            stack: stack_of(load()),
            warm: true,
            faults: None,
        });
        if *name == "redact-secrets" {
            // With a secret, and both ways as the plain build (`cargo build`
            // and `wasm-tools component new`: no start-up run), which builds
            // its regexes in every run.
            let secret = tool_result(
                "DATABASE_URL=postgres://db/app\nOPENAI_API_KEY=sk-live-4f9a8b7c6d5e4f3a2b1c\n", // gitleaks:allow
            );
            let plain = || {
                Plugin::from_file(
                    runtime,
                    Path::new(guests::REDACT_SECRETS),
                    PluginOptions::default(),
                )
                .expect("loads")
            };
            for (id, guard, event_label, event, plugin) in [
                (
                    "redact-secrets-secret",
                    "redact-secrets",
                    "tool-result with a secret",
                    secret.clone(),
                    load(),
                ),
                (
                    "redact-secrets-plain",
                    "redact-secrets, plain build",
                    "tool-result, no secret",
                    everyday(name).1,
                    plain(),
                ),
                (
                    "redact-secrets-plain-secret",
                    "redact-secrets, plain build",
                    "tool-result with a secret",
                    secret,
                    plain(),
                ),
            ] {
                rows.push(Row {
                    id: id.to_owned(),
                    guard: guard.to_owned(),
                    event_label,
                    event,
                    bounded: false,
                    stack: stack_of(plugin),
                    warm: true,
                    faults: None,
                });
            }
        }
    }
    for language in ["rust", "javascript", "javascript-aot", "python", "c", "go"] {
        let path = if language == "rust" {
            PathBuf::from(guests::TOOLGUARD)
        } else {
            target_dir().join(format!("languages/{language}/toolguard.wasm"))
        };
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        let plugin = Plugin::from_bytes(runtime, "toolguard", &bytes, PluginOptions::default())
            .unwrap_or_else(|e| panic!("{language}: {e}"));
        rows.push(Row {
            id: format!("toolguard-{language}"),
            guard: format!("toolguard ({language})"),
            event_label: "tool-call",
            event: tool_call("read_file", r#"{"path":"src/main.rs"}"#),
            // Interpreted languages start an interpreter: measured, not bound.
            bounded: language == "rust",
            stack: stack_of(plugin),
            warm: true,
            faults: None,
        });
    }
    rows
}

fn bench(c: &mut Criterion, rows: &mut [Row]) {
    let ctx = hookbox_bench::context();
    let mut group = c.benchmark_group("per_run");
    for row in rows.iter_mut() {
        group.bench_function(BenchmarkId::new("fresh", &row.id), |b| {
            b.iter(|| {
                let mut run = row.stack.start_run("bench");
                black_box(run.dispatch(&ctx, &row.event).expect("answers"));
            })
        });
        row.faults = faults_per_run(row);
        // A run the event ends (call-budget's, once spent) has no warm cost.
        let mut run = row.stack.start_run("bench");
        for _ in 0..1000 {
            run.dispatch(&ctx, &row.event).expect("answers");
        }
        row.warm = !run.is_over();
        if !row.warm {
            continue;
        }
        group.bench_function(BenchmarkId::new("warm", &row.id), |b| {
            b.iter(|| black_box(run.dispatch(&ctx, &row.event).expect("answers")))
        });
    }
    group.finish();
}

fn median(kind: &str, id: &str) -> Option<f64> {
    hookbox_bench::criterion_median(&format!("per_run/{kind}/{id}"))
}

/// The table, and the rows past the bound.
fn report(rows: &[Row]) -> (String, Vec<String>) {
    let baseline = median("fresh", "deny-tools").expect("deny-tools was measured");
    let mut out = String::from(
        "| guard | event | fresh run, first event | same event, warm run | start-up (fresh − warm) | page faults a fresh run | fresh ÷ deny-tools |\n|---|---|---|---|---|---|---|\n",
    );
    let mut over = Vec::new();
    for row in rows {
        let Some(fresh) = median("fresh", &row.id) else {
            continue;
        };
        // Warm only while the run goes on (see `bench`).
        let warm = median("warm", &row.id).filter(|_| row.warm);
        let ratio = fresh / baseline;
        if row.bounded && ratio > BOUND {
            over.push(format!("{} ({ratio:.1}×)", row.guard));
        }
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {ratio:.1}×{} |\n",
            row.guard,
            row.event_label,
            human(fresh),
            warm.map_or("– (the run ended)".into(), human),
            warm.map_or("–".into(), |warm| human((fresh - warm).max(0.0))),
            row.faults.map_or("–".into(), |f| format!("{f:.0}")),
            if row.bounded { "" } else { " (not bound)" }
        ));
    }
    (out, over)
}

/// Minor page faults of this process so far (Linux): what a fresh run
/// writes of its guard's memory that the host's reset of the instance did
/// not keep (see `hookbox_sdk::alloc::start_up`).
fn minor_faults() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // After the command name, in parentheses and possibly with spaces.
    let fields = &stat[stat.rfind(')')? + 2..];
    fields.split(' ').nth(7)?.parse().ok()
}

/// Page faults per fresh run, over 200 runs after one.
fn faults_per_run(row: &Row) -> Option<f64> {
    const RUNS: u32 = 200;
    let ctx = hookbox_bench::context();
    let run_once = || {
        let mut run = row.stack.start_run("bench");
        black_box(run.dispatch(&ctx, &row.event).expect("answers"));
    };
    run_once();
    let before = minor_faults()?;
    for _ in 0..RUNS {
        run_once();
    }
    Some((minor_faults()? - before) as f64 / f64::from(RUNS))
}

fn main() {
    let runtime = Runtime::new(RuntimeConfig::default()).expect("runtime");
    let mut rows = rows(&runtime);
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .configure_from_args();
    bench(&mut c, &mut rows);
    c.final_summary();
    let (table, over) = report(&rows);
    println!("\n{table}");
    let _ = std::fs::write(target_dir().join("criterion/per-run-report.md"), &table);
    if !over.is_empty() {
        eprintln!(
            "past {BOUND}× deny-tools' cost per run: {}; does the guard build something on first use that `hookbox_sdk::pre_initialize!` could build at build time?",
            over.join(", ")
        );
        std::process::exit(1);
    }
}
