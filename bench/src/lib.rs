//! The benchmarks' contestants: one guard ([`hookbox_bench_guard`]) run as a
//! native Rust hook, as hookbox WASM plugins, as raw wasmtime component
//! calls (hookbox's floor), as Extism plugins (JSON in and out), and as a
//! subprocess per event (JSON on stdin and stdout). Stacks of them thread a
//! rewrite into the next guard, as a hookbox stack does, so every host does
//! the same work.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use anyhow::{Context, Result};
use hookbox::{Flow, HookContext, HookStack, Plugin, PluginOptions, Runtime, StepEvent, ToolCall};
use hookbox_bench_guard::{Verdict, decide};
use wasmtime::component::{Component, Linker, TypedFunc};
use wasmtime::{Store, StoreLimitsBuilder};

/// What the guard will answer to an event.
#[derive(Clone, Copy, Debug)]
pub enum Answer {
    Continue,
    RewriteArgs,
    Skip,
}

impl Answer {
    pub const ALL: [Answer; 3] = [Answer::Continue, Answer::RewriteArgs, Answer::Skip];

    pub fn name(self) -> &'static str {
        match self {
            Answer::Continue => "continue",
            Answer::RewriteArgs => "rewrite-args",
            Answer::Skip => "skip",
        }
    }
}

/// A tool-call event whose arguments are `bytes` long and make the guard
/// answer `answer`.
pub fn tool_call(bytes: usize, answer: Answer) -> StepEvent {
    let marker = match answer {
        Answer::Continue => "src/main.rs",
        Answer::RewriteArgs => "/etc/hosts",
        Answer::Skip => "rm -rf /",
    };
    let padding = "x".repeat(bytes.saturating_sub(32 + marker.len()));
    StepEvent::ToolCall(ToolCall {
        tool_name: "shell".into(),
        tool_call_id: Some("call-1".into()),
        internal_call_id: "i-1".into(),
        args: format!(r#"{{"cmd":"{marker}","note":"{padding}"}}"#),
    })
}

pub fn context() -> HookContext {
    HookContext {
        run_id: "bench".into(),
        turn: 1,
        is_streaming: false,
        agent_name: None,
    }
}

fn flow(verdict: Verdict) -> Flow {
    match verdict {
        Verdict::Continue => Flow::Continue,
        Verdict::Skip(reason) => Flow::skip(reason),
        Verdict::RewriteArgs(args) => Flow::rewrite_args(args),
    }
}

/// `n` native hooks running the guard.
pub fn native_stack(n: usize) -> HookStack {
    let mut stack = HookStack::new();
    for i in 0..n {
        stack.push_hook(hookbox::hook_fn(
            format!("native-{i}"),
            |_, event| match event {
                StepEvent::ToolCall(call) => flow(decide(&call.args)),
                _ => Flow::Continue,
            },
        ));
    }
    stack
}

/// The guard as a hookbox plugin, compiled once.
pub fn plugin(runtime: &Runtime) -> Result<Arc<Plugin>> {
    Ok(Arc::new(Plugin::from_file(
        runtime,
        hookbox_tests::guests::BENCH_GUARD.as_ref(),
        PluginOptions::default(),
    )?))
}

/// `n` instances of `plugin` in a stack (each run gets its own instances).
pub fn wasm_stack(plugin: &Arc<Plugin>, n: usize) -> HookStack {
    let mut stack = HookStack::new();
    for _ in 0..n {
        stack.push_plugin(plugin.clone());
    }
    stack
}

type OnEvent<'a> = TypedFunc<(&'a HookContext, &'a StepEvent), (Flow,)>;

/// The floor: the same component called straight through wasmtime, in the
/// same engine (pooling, epoch deadlines), with the chain threaded by hand
/// and nothing else: no composition rules, no checks, no telemetry.
pub struct RawCalls {
    calls: Vec<(Store<wasmtime::StoreLimits>, wasmtime::component::Func)>,
    deadline_ticks: u64,
}

impl RawCalls {
    pub fn new(runtime: &Runtime, n: usize) -> wasmtime::Result<RawCalls> {
        let engine = runtime.engine();
        let component = Component::from_file(engine, hookbox_tests::guests::BENCH_GUARD)?;
        let mut linker: Linker<wasmtime::StoreLimits> = Linker::new(engine);
        linker.define_unknown_imports_as_traps(&component)?;
        let pre = linker.instantiate_pre(&component)?;
        let mut calls = Vec::new();
        for _ in 0..n {
            let limits = StoreLimitsBuilder::new().memory_size(64 << 20).build();
            let mut store = Store::new(engine, limits);
            store.limiter(|limits| limits);
            store.epoch_deadline_trap();
            let instance = pre.instantiate(&mut store)?;
            // Type-checked once here; called unchecked below, as hookbox does.
            let typed: OnEvent<'_> = instance.get_typed_func(&mut store, "on-event")?;
            calls.push((store, *typed.func()));
        }
        Ok(RawCalls {
            calls,
            deadline_ticks: 101,
        })
    }

    /// Runs the chain over `event`: a rewrite goes on to the next guard, a
    /// skip ends it.
    pub fn call(&mut self, ctx: &HookContext, event: &StepEvent) -> wasmtime::Result<Flow> {
        let mut rewritten: Option<StepEvent> = None;
        let mut net = Flow::Continue;
        for (store, func) in &mut self.calls {
            // SAFETY: `new` type-checked this function against these types.
            let on_event: OnEvent<'_> = unsafe { TypedFunc::new_unchecked(*func) };
            store.set_epoch_deadline(self.deadline_ticks);
            let current = rewritten.as_ref().unwrap_or(event);
            let (flow,) = on_event.call(&mut *store, (ctx, current))?;
            match flow {
                Flow::RewriteArgs(args) => {
                    let mut next = current.clone();
                    if let StepEvent::ToolCall(call) = &mut next {
                        call.args = args.clone();
                    }
                    rewritten = Some(next);
                    net = Flow::RewriteArgs(args);
                }
                Flow::Continue => {}
                other => return Ok(other),
            }
        }
        Ok(net)
    }
}

/// The guard as `n` Extism plugins: the event goes in as JSON, the flow
/// comes back as JSON, per plugin, the way Extism hosts call plugins.
#[cfg(feature = "extism")]
pub struct ExtismStack {
    plugins: Vec<extism::Plugin>,
}

#[cfg(feature = "extism")]
impl ExtismStack {
    pub fn new(n: usize) -> Result<ExtismStack> {
        let wasm = std::fs::read(hookbox_tests::guests::EXTISM_GUARD)?;
        let mut plugins = Vec::new();
        for _ in 0..n {
            // Deadlines on, as in hookbox (Extism enforces them with epochs).
            let manifest = extism::Manifest::new([extism::Wasm::data(wasm.clone())])
                .with_timeout(std::time::Duration::from_millis(100));
            plugins.push(
                extism::Plugin::new(&manifest, [], false)
                    .map_err(|e| anyhow::anyhow!("extism: {e}"))?,
            );
        }
        Ok(ExtismStack { plugins })
    }

    pub fn call(&mut self, event: &StepEvent) -> Result<Flow> {
        let mut chain = Chain::new(event);
        for plugin in &mut self.plugins {
            let input = serde_json::to_string(&chain.current)?;
            let output = plugin
                .call::<&str, &str>("on_event", &input)
                .map_err(|e| anyhow::anyhow!("extism call: {e}"))?;
            if let Some(end) = chain.take(serde_json::from_str::<Flow>(output)?) {
                return Ok(end);
            }
        }
        Ok(chain.net)
    }
}

/// The guard as `n` subprocess hooks: one process per hook per event, the
/// event as JSON on stdin, the flow as JSON on stdout, as agent CLIs run
/// command hooks.
pub fn subprocess_chain(program: &Path, n: usize, event: &StepEvent) -> Result<Flow> {
    let mut chain = Chain::new(event);
    for _ in 0..n {
        let mut child = Command::new(program)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .with_context(|| format!("spawning {}", program.display()))?;
        let input = serde_json::to_vec(&chain.current)?;
        child.stdin.take().context("stdin")?.write_all(&input)?;
        let output = child.wait_with_output()?;
        if let Some(end) = chain.take(serde_json::from_slice::<Flow>(&output.stdout)?) {
            return Ok(end);
        }
    }
    Ok(chain.net)
}

/// A tool-call chain threaded by hand for the peers, as a hookbox stack
/// threads it: a rewrite goes on to the next guard, continue passes, any
/// other answer ends it.
struct Chain {
    current: StepEvent,
    net: Flow,
}

impl Chain {
    fn new(event: &StepEvent) -> Chain {
        Chain {
            current: event.clone(),
            net: Flow::Continue,
        }
    }

    /// Takes one guard's answer; `Some` when it ends the chain.
    fn take(&mut self, flow: Flow) -> Option<Flow> {
        match flow {
            Flow::RewriteArgs(args) => {
                if let StepEvent::ToolCall(call) = &mut self.current {
                    call.args = args.clone();
                }
                self.net = Flow::RewriteArgs(args);
                None
            }
            Flow::Continue => None,
            other => Some(other),
        }
    }
}

/// What the subprocess hook does: one event in, one flow out.
pub fn subprocess_main() -> Result<()> {
    let mut input = String::new();
    std::io::Read::read_to_string(&mut std::io::stdin(), &mut input)?;
    let event: StepEvent = serde_json::from_str(&input)?;
    let answer = match &event {
        StepEvent::ToolCall(call) => flow(decide(&call.args)),
        _ => Flow::Continue,
    };
    serde_json::to_writer(std::io::stdout().lock(), &answer)?;
    Ok(())
}

/// An OTLP/HTTP receiver on this machine that answers every export with
/// 200 and keeps nothing: what the exporter costs without a collector's
/// own work. Returns its `/v1/traces` URL.
///
/// # Errors
/// No local port to listen on.
pub fn otlp_sink() -> Result<String> {
    use std::io::{BufRead, BufReader, Read};
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let url = format!("http://{}/v1/traces", listener.local_addr()?);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut out = stream.try_clone()?;
                let mut reader = BufReader::new(stream);
                loop {
                    let mut length = 0;
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line)? == 0 {
                            return Ok::<_, std::io::Error>(());
                        }
                        if line == "\r\n" {
                            break;
                        }
                        if let Some((name, value)) = line.split_once(':')
                            && name.eq_ignore_ascii_case("content-length")
                        {
                            length = value.trim().parse().unwrap_or(0);
                        }
                    }
                    std::io::copy(&mut (&mut reader).take(length), &mut std::io::sink())?;
                    out.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")?;
                }
            });
        }
    });
    Ok(url)
}

/// The workspace's target directory, where the benchmarks read built
/// guards and criterion's results.
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"))
}

/// The median criterion measured for the benchmark `id` (`group/name/param`)
/// in its last run, in ns.
pub fn criterion_median(id: &str) -> Option<f64> {
    let file = target_dir().join(format!("criterion/{id}/new/estimates.json"));
    let estimates: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(file).ok()?).ok()?;
    estimates["median"]["point_estimate"].as_f64()
}

/// A time in ns in the unit that reads best.
pub fn human(ns: f64) -> String {
    if ns >= 1e9 {
        format!("{:.1} s", ns / 1e9)
    } else if ns >= 1e6 {
        format!("{:.1} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.1} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}
