//! `cargo bench -p hookbox-bench --bench redact`: redact-secrets on 2 MiB
//! tool results (a log and a one-line JSON body, each with a token and a
//! password in it), against the same plugin on 2 MiB with no keyword of
//! any rule in it (the cost of carrying 2 MiB in and out and one pass of
//! the keyword automaton), in one process, interleaved; and each as a
//! share of the default 100 ms deadline. Medians of 21 warm runs each.

use std::time::{Duration, Instant};

use hookbox::{
    HookContext, HookStack, Limits, Plugin, PluginOptions, Runtime, RuntimeConfig, StepEvent,
    ToolOutcome, ToolResult,
};

fn result(text: String) -> StepEvent {
    StepEvent::ToolResult(ToolResult {
        tool_name: "read_file".into(),
        tool_call_id: Some("call-1".into()),
        internal_call_id: "i-1".into(),
        args: "{}".into(),
        result: text,
        outcome: ToolOutcome::Success,
        extensions: "{}".into(),
    })
}

fn main() {
    let runtime = Runtime::new(RuntimeConfig::default()).expect("runtime");
    let bytes = std::fs::read(hookbox_tests::guests::REDACT_SECRETS).expect("the guest is built");
    // Its answer is as large as the result: the answer limit is raised to
    // 4 MiB; the deadline stays the default 100 ms.
    let options = PluginOptions {
        limits: Some(Limits {
            answer_bytes: 4 << 20,
            ..Limits::default()
        }),
        ..PluginOptions::default()
    };
    let plugin = Plugin::from_bytes(&runtime, "redact-secrets", &bytes, options)
        .expect("redact-secrets loads");
    let mut stack = HookStack::new();
    stack.push_plugin(plugin.into());
    // A planted token, for the plugin to find.
    let token = "ghp_0123456789ABCDEFGHIJabcdefghij012345"; // gitleaks:allow
    let [log, json] = hookbox_tests::results::two_mib(token);
    let cases = [
        (
            "2 MiB, no keyword (baseline)",
            result("x".repeat(log.len())),
        ),
        ("2 MiB log, 2 secrets per 5000 lines", result(log)),
        ("2 MiB one-line JSON body", result(json)),
    ];
    let ctx = HookContext::default();
    let mut run = stack.start_run("bench");
    // Warm: the instance made, the rules each case wakes compiled.
    for (_, event) in &cases {
        run.dispatch(&ctx, event).expect("decides");
    }
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); cases.len()];
    for _ in 0..21 {
        for (i, (_, event)) in cases.iter().enumerate() {
            let started = Instant::now();
            std::hint::black_box(run.dispatch(&ctx, event).expect("decides"));
            times[i].push(started.elapsed());
        }
    }
    let medians: Vec<Duration> = times
        .iter_mut()
        .map(|t| {
            t.sort();
            t[t.len() / 2]
        })
        .collect();
    println!("| result | median | × baseline | of the 100 ms deadline |");
    println!("|---|---|---|---|");
    for ((name, _), median) in cases.iter().zip(&medians) {
        println!(
            "| {name} | {:.1} ms | {:.2} | {:.0} % |",
            median.as_secs_f64() * 1e3,
            median.as_secs_f64() / medians[0].as_secs_f64(),
            median.as_secs_f64() / 0.1 * 100.0
        );
    }
}
