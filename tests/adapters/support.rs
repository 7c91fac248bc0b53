//! Test and benchmark support shared by the framework adapters (hookbox-rig,
//! hookbox-llm-stack), included by path from their tests and benches: one
//! runtime, plugins from the test guests, scratch plugin directories, and
//! the benchmarks' report.

#![allow(dead_code, reason = "each test binary uses its own part")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use hookbox::{HookStack, Plugin, PluginOptions, Runtime, RuntimeConfig};
use hookbox_tests::guests;

pub fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| Runtime::new(RuntimeConfig::default()).expect("runtime"))
}

/// The guest at `path` with `config`.
pub fn plugin(path: &str, config: &[(&str, &str)]) -> Arc<Plugin> {
    let config: BTreeMap<String, String> = config
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let options = PluginOptions {
        config,
        ..Default::default()
    };
    Arc::new(Plugin::from_file(runtime(), path.as_ref(), options).expect("plugin loads"))
}

pub fn stack(plugins: &[Arc<Plugin>]) -> HookStack {
    let mut stack = HookStack::new();
    for p in plugins {
        stack.push_plugin(p.clone());
    }
    stack
}

/// The puppet, answering the flow its events name on the event kinds in
/// `subscribe` (comma-separated).
pub fn puppet(subscribe: &str) -> HookStack {
    stack(&[plugin(guests::PUPPET, &[("subscribe", subscribe)])])
}

/// The four example guards the examples and benchmarks use: house rules on
/// the first request, destructive commands denied, paths jailed to
/// `/workspace`, secrets redacted.
pub fn example_guards() -> HookStack {
    stack(&[
        plugin(
            guests::INJECT_CONTEXT,
            &[("doc.rules", "House rules: never delete files.")],
        ),
        plugin(guests::DENY_TOOLS, &[]),
        plugin(guests::PATH_JAIL, &[("root", "/workspace")]),
        plugin(guests::REDACT_SECRETS, &[]),
    ])
}

/// A scratch plugin directory whose deny-tools denies `shell`.
pub fn plugin_dir(label: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hookbox-{label}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(guests::DENY_TOOLS, dir.join("deny-tools.wasm")).unwrap();
    write_manifest(&dir, "shell");
    dir
}

/// The directory's manifest, denying the tools in `deny`.
pub fn write_manifest(dir: &Path, deny: &str) {
    let manifest =
        format!("[[plugin]]\nfile = \"deny-tools.wasm\"\nconfig = {{ deny = \"{deny}\" }}\n");
    std::fs::write(dir.join("hookbox.toml"), manifest).unwrap();
}

/// Tool calls per benchmark run: `HOOKBOX_BENCH_CALLS`, 16 by default. A
/// run's guest instances are made once, so more calls spread that cost.
pub fn bench_calls() -> usize {
    std::env::var("HOOKBOX_BENCH_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(16)
}

/// Benchmark rounds: 5 warm-up rounds, then this many measured.
pub const ROUNDS: usize = 60;

/// Runs `round` (no hook, native hook, guard: each a run's duration) the
/// warm-up and measured rounds, interleaved, and prints the medians per
/// tool call and their ratios.
pub fn bench(what: &str, native: &str, mut round: impl FnMut() -> [Duration; 3]) {
    let mut times: [Vec<Duration>; 3] = Default::default();
    for n in 0..ROUNDS + 5 {
        let measured = round();
        if n >= 5 {
            for (all, one) in times.iter_mut().zip(measured) {
                all.push(one);
            }
        }
    }
    let [b, n, g] = times.map(|mut all| {
        all.sort();
        all[all.len() / 2]
    });
    let calls = bench_calls();
    let per_call = |d: Duration| d / calls as u32;
    println!("{what} of {calls} tool calls, median of {ROUNDS} rounds (per tool call):");
    println!("  no hook:                    {:>9.1?}", per_call(b));
    println!("  {native:<27} {:>9.1?}", per_call(n));
    println!("  hookbox guard, 4 plugins:   {:>9.1?}", per_call(g));
    println!(
        "  guard adds {:.1?} per call over no hook ({:.2}x the run), {:.1?} over the native hook ({:.2}x)",
        per_call(g.saturating_sub(b)),
        g.as_secs_f64() / b.as_secs_f64(),
        per_call(g.saturating_sub(n)),
        g.as_secs_f64() / n.as_secs_f64(),
    );
}
