//! `cargo xtask bench`: quick figures for the core — component sizes,
//! compile time, per-run instantiation and per-event cost of stacks of 1 and
//! 8 plugins — each next to a baseline measured in the same process (a
//! native Rust hook with the same logic), so ratios hold on a noisy machine.
//! Run it in release: `cargo run --release -p xtask -- bench`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use hookbox::{
    Flow, HookStack, Plugin, PluginOptions, Runtime, RuntimeConfig, StepEvent, ToolCall, hook_fn,
};
use hookbox_tests::guests;

/// Median of `samples` timings of `batch` calls of `f`, per call.
fn median_per_call(samples: usize, batch: u32, mut f: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..samples)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..batch {
                f();
            }
            start.elapsed() / batch
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

fn event(args_bytes: usize) -> StepEvent {
    let padding = "x".repeat(args_bytes.saturating_sub(20));
    StepEvent::ToolCall(ToolCall {
        tool_name: "read_file".into(),
        tool_call_id: Some("c1".into()),
        internal_call_id: "i1".into(),
        args: format!(r#"{{"path":"a","pad":"{padding}"}}"#),
    })
}

/// The deny-tools logic with its default patterns, as a native hook: the
/// same glob matcher (the SDK's, compiled for the host), the same patterns.
fn native_deny(stack: &mut HookStack, n: usize) {
    const PATTERNS: &[&str] = &[
        "*rm -rf*",
        "*rm -fr*",
        "*mkfs*",
        "*dd if=*",
        "*| sh*",
        "*| bash*",
        "*.ssh/*",
        "*/etc/shadow*",
    ];
    for i in 0..n {
        stack.push_hook(hook_fn(format!("native-{i}"), |_, event| match event {
            StepEvent::ToolCall(call)
                if PATTERNS
                    .iter()
                    .any(|p| hookbox_sdk::glob_match(p, &call.args)) =>
            {
                Flow::skip("denied")
            }
            _ => Flow::Continue,
        }));
    }
}

/// The puppet's continue path (a prefix check and one `config` import call)
/// as a native hook: the smallest realistic guard.
fn native_minimal(stack: &mut HookStack, n: usize) {
    for i in 0..n {
        stack.push_hook(hook_fn(format!("native-{i}"), |_, event| match event {
            StepEvent::ToolCall(call) if call.tool_name.starts_with("puppet:") => Flow::skip("x"),
            _ => Flow::Continue,
        }));
    }
}

pub fn run() -> Result<()> {
    let runtime = Runtime::new(RuntimeConfig::default())?;
    println!("## Component sizes");
    for (name, path) in guests::ALL {
        println!("- {name}: {} bytes", std::fs::metadata(path)?.len());
    }

    println!("\n## Compile (median of 5)");
    for (name, path) in guests::ALL
        .iter()
        .filter(|(n, _)| guests::EXAMPLES.contains(n) || *n == "wasi-probe")
    {
        let bytes = std::fs::read(path)?;
        let t = median_per_call(5, 1, || {
            Plugin::from_bytes(&runtime, name, &bytes, PluginOptions::default()).expect("loads");
        });
        println!("- {name}: {:.1} ms", t.as_secs_f64() * 1e3);
    }

    let deny = Arc::new(Plugin::from_file(
        &runtime,
        guests::DENY_TOOLS.as_ref(),
        PluginOptions::default(),
    )?);
    let puppet = Arc::new(Plugin::from_file(
        &runtime,
        guests::PUPPET.as_ref(),
        PluginOptions::default(),
    )?);
    let small = event(1024);

    println!("\n## Per-run instantiation (first event of a run minus a warm event), median");
    for (label, plugin) in [
        ("puppet (no WASI imports)", &puppet),
        ("deny-tools (no WASI imports)", &deny),
    ] {
        let mut stack = HookStack::new();
        stack.push_plugin(plugin.clone());
        let ctx = stack.start_run("x").context(1);
        let text = StepEvent::TextDelta(Default::default());
        // The first event of a run costs instantiate + call; a warm one,
        // the call. `text` is a kind these plugins did not subscribe to.
        let cold = median_per_call(21, 200, || {
            let mut run = stack.start_run("r");
            let _ = run.dispatch(&ctx, &small);
        });
        let mut warm_run = stack.start_run("w");
        let warm = median_per_call(21, 2000, || {
            let _ = warm_run.dispatch(&ctx, &small);
        });
        let mut unsubscribed = stack.start_run("u");
        let skipped = median_per_call(21, 20000, || {
            let _ = unsubscribed.dispatch(&ctx, &text);
        });
        println!(
            "- {label}: instantiate ≈ {:.2} µs (first event {:.2} µs, warm event {:.2} µs); unsubscribed event {:.0} ns",
            (cold.saturating_sub(warm)).as_secs_f64() * 1e6,
            cold.as_secs_f64() * 1e6,
            warm.as_secs_f64() * 1e6,
            skipped.as_secs_f64() * 1e9
        );
    }

    println!("\n## Per event, tool-call, all continue, deadlines on (warm run), median");
    for (label, plugin, native) in [
        (
            "minimal guard (puppet)",
            &puppet,
            native_minimal as fn(&mut HookStack, usize),
        ),
        (
            "deny-tools (8 glob patterns over the args)",
            &deny,
            native_deny,
        ),
    ] {
        println!("### {label}");
        for args in [1024, 64 * 1024] {
            let event = event(args);
            for n in [1, 8] {
                let mut wasm = HookStack::new();
                for _ in 0..n {
                    wasm.push_plugin(plugin.clone());
                }
                let mut native_stack = HookStack::new();
                native(&mut native_stack, n);
                let ctx = wasm.start_run("x").context(1);
                let mut wasm_run = wasm.start_run("w");
                let mut native_run = native_stack.start_run("n");
                assert_eq!(
                    wasm_run.dispatch(&ctx, &event).unwrap().flow,
                    Flow::Continue
                );
                let batch = if args > 4096 { 100 } else { 2000 };
                let w = median_per_call(21, batch, || {
                    let _ = wasm_run.dispatch(&ctx, &event);
                });
                let b = median_per_call(21, batch * 10, || {
                    let _ = native_run.dispatch(&ctx, &event);
                });
                println!(
                    "- {n} plugin(s), {} KiB args: wasm {:.2} µs, native {:.3} µs, ratio {:.1}x",
                    args / 1024,
                    w.as_secs_f64() * 1e6,
                    b.as_secs_f64() * 1e6,
                    w.as_secs_f64() / b.as_secs_f64()
                );
            }
        }
    }
    directory_figures()?;
    Ok(())
}

/// Ten distinct components: the guests, each made unique by a custom section
/// (same code, different bytes, so each is its own cache entry).
fn ten_plugin_dir(dir: &std::path::Path) -> Result<()> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir)?;
    let sources: Vec<&str> = guests::ALL
        .iter()
        .filter(|(n, _)| *n != "wasi-probe")
        .map(|(_, p)| *p)
        .collect();
    for i in 0..10 {
        let mut bytes = std::fs::read(sources[i % sources.len()])?;
        let name = format!("copy-{i}");
        // A custom section: id 0, size, name length, name.
        bytes.extend_from_slice(&[0, (name.len() + 1) as u8, name.len() as u8]);
        bytes.extend_from_slice(name.as_bytes());
        std::fs::write(dir.join(format!("p{i:02}.wasm")), bytes)?;
    }
    Ok(())
}

fn directory_figures() -> Result<()> {
    let base = std::env::temp_dir().join(format!("hookbox-bench-{}", std::process::id()));
    let (dir, cache) = (base.join("plugins"), base.join("cache"));
    ten_plugin_dir(&dir)?;

    println!("\n## A 10-plugin directory: cold start (compile) vs warm start (compile cache)");
    let mut cold = Vec::new();
    let mut warm = Vec::new();
    for _ in 0..5 {
        let _ = std::fs::remove_dir_all(&cache);
        let config = || RuntimeConfig {
            cache_dir: Some(cache.clone()),
            ..RuntimeConfig::default()
        };
        let start = Instant::now();
        let runtime = Runtime::new(config())?;
        let loaded = hookbox::directory::load(&runtime, &dir)?;
        cold.push(start.elapsed());
        assert_eq!(loaded.failures().count(), 0);
        let start = Instant::now();
        let runtime = Runtime::new(config())?;
        hookbox::directory::load(&runtime, &dir)?;
        warm.push(start.elapsed());
        assert_eq!(runtime.cache_stats().map(|s| s.hits), Some(10));
    }
    cold.sort();
    warm.sort();
    println!(
        "- cold {:.1} ms, warm {:.1} ms (medians of 5, runtime creation included): warm is {:.0}x faster",
        cold[2].as_secs_f64() * 1e3,
        warm[2].as_secs_f64() * 1e3,
        cold[2].as_secs_f64() / warm[2].as_secs_f64()
    );

    println!("\n## Hot reload: from a file change to new runs using it");
    let runtime = Runtime::new(RuntimeConfig {
        cache_dir: Some(cache.clone()),
        ..RuntimeConfig::default()
    })?;
    let watcher = hookbox::watch::DirWatcher::start(&runtime, &dir, Duration::from_millis(20))?;
    let replacement = std::fs::read(guests::DENY_TOOLS)?;
    let mut latencies = Vec::new();
    for round in 0..5u8 {
        let mut bytes = replacement.clone();
        bytes.extend_from_slice(&[0, 3, 2, b'r', b'0' + round]);
        let generation = watcher.snapshot().generation;
        let start = Instant::now();
        std::fs::write(dir.join("p00.wasm"), &bytes)?;
        while watcher.snapshot().generation == generation {
            std::thread::sleep(Duration::from_micros(200));
            if start.elapsed() > Duration::from_secs(10) {
                anyhow::bail!("the change was not picked up");
            }
        }
        latencies.push(start.elapsed());
    }
    latencies.sort();
    println!(
        "- median {:.1} ms (debounce 20 ms + compile of a 29 KB component + swap)",
        latencies[2].as_secs_f64() * 1e3
    );
    let _ = std::fs::remove_dir_all(&base);
    Ok(())
}
