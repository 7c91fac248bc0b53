//! `hookbox run`: an agent in a workspace, guarded by plugins, its progress
//! printed live.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};

use hookbox::ToolOutcome;
use hookbox_runner::{
    Agent, LoopAction, LoopConfig, LoopDetection, LoopEvent, Model, OpenAiModel, RunReport,
    RunStatus, ScriptedModel, ShellTool, ToolSet, Workspace, text::cut,
};

use crate::terminal::say;

#[derive(Args)]
pub struct RunArgs {
    /// The model: `scripted:FILE` plays a recorded conversation;
    /// `openai:NAME` calls NAME on an OpenAI-compatible server.
    #[arg(long, value_name = "scripted:FILE | openai:NAME")]
    model: String,
    /// The server's API root for `openai:` models, e.g.
    /// http://localhost:11434/v1 for Ollama.
    #[arg(long, default_value = "https://api.openai.com/v1")]
    base_url: String,
    /// The environment variable holding the API key. Without this flag,
    /// $OPENAI_API_KEY is used, but only over https or to this machine.
    #[arg(long)]
    api_key_env: Option<String>,
    /// A plugin directory guarding the run.
    #[arg(long = "plugins")]
    dir: Option<PathBuf>,
    /// A plugin file, stacked before the directory's (repeatable).
    #[arg(long = "plugin")]
    plugins: Vec<PathBuf>,
    /// A setting for a --plugin file, `PLUGIN.KEY=VALUE` (repeatable).
    #[arg(long = "config", value_name = "PLUGIN.KEY=VALUE")]
    config: Vec<String>,
    /// The directory the file tools (and the shell) work in.
    #[arg(long, default_value = ".")]
    workspace: PathBuf,
    /// Give the model a `shell` tool (sh -c in the workspace).
    #[arg(long)]
    enable_shell: bool,
    /// The system prompt.
    #[arg(long)]
    preamble: Option<String>,
    #[arg(long, default_value_t = 16)]
    max_iterations: u32,
    /// The whole run, at most, in seconds.
    #[arg(long, default_value_t = 600)]
    timeout_secs: u64,
    /// One tool call, at most, in seconds.
    #[arg(long, default_value_t = 60)]
    tool_timeout_secs: u64,
    /// Stream the model's answer (hooks see text and tool-call deltas).
    #[arg(long)]
    stream: bool,
    /// Run one turn's tool calls one after another instead of at once.
    #[arg(long)]
    sequential_tools: bool,
    /// Identical consecutive tool calls that count as a loop (0: off).
    #[arg(long, default_value_t = 3)]
    loop_threshold: u32,
    /// What a loop does.
    #[arg(long, value_enum, default_value_t = OnLoop::InjectWarning)]
    on_loop: OnLoop,
    /// Print loop events as JSON lines instead of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    decision_log: crate::DecisionLogArgs,
    /// What to ask the agent.
    prompt: String,
}

#[derive(Clone, Copy, ValueEnum)]
enum OnLoop {
    Warn,
    Stop,
    InjectWarning,
}

impl RunArgs {
    pub(crate) fn execute(self) -> Result<ExitCode> {
        run(self)
    }
}

pub fn run(args: RunArgs) -> Result<ExitCode> {
    let model = model(&args)?;
    let workspace = Workspace::new(&args.workspace)?;
    let mut tools = ToolSet::new();
    for tool in workspace.file_tools() {
        tools.add(tool)?;
    }
    if args.enable_shell {
        tools.add(ShellTool::new(
            &workspace,
            Duration::from_secs(args.tool_timeout_secs),
        ))?;
    }
    let runtime = crate::runtime()?;
    let mut configs = crate::replay::parse_settings(&args.config)?;
    let (stack, digests) =
        crate::replay::build_stack(&runtime, &args.plugins, args.dir.as_deref(), &mut configs)?;
    let decision_log = args.decision_log.open()?;

    let config = LoopConfig {
        max_iterations: args.max_iterations,
        parallel_tools: !args.sequential_tools,
        timeout: Some(Duration::from_secs(args.timeout_secs)),
        tool_timeout: Duration::from_secs(args.tool_timeout_secs),
        loop_detection: (args.loop_threshold > 0).then_some(LoopDetection {
            threshold: args.loop_threshold,
            action: match args.on_loop {
                OnLoop::Warn => LoopAction::Warn,
                OnLoop::Stop => LoopAction::Stop,
                OnLoop::InjectWarning => LoopAction::InjectWarning,
            },
        }),
        stream: args.stream,
        ..LoopConfig::default()
    };
    let json = args.json;
    let banner = format!(
        "hookbox run: model {}, workspace {}, {} tool(s)\n",
        model.name(),
        workspace.root().display(),
        tools.names().count()
    );
    let mut agent = Agent::new(model)
        .tools(tools)
        .stack(stack)
        .config(config)
        .on_event(move |event| print_event(event, json));
    if let Some(preamble) = &args.preamble {
        agent = agent.preamble(preamble.clone());
    }
    if let Some(log) = &decision_log {
        agent = agent.observe(log.for_run(1, digests));
    }
    if !json {
        say!("{banner}");
    }
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let report = tokio.block_on(agent.run(&args.prompt));
    if json {
        say!(
            "{}",
            serde_json::json!({"type": "run-end", "status": report.status.name(), "detail": report.status.to_string(), "text": report.text})
        );
    } else {
        summary(&report);
    }
    Ok(match &report.status {
        RunStatus::Finished => ExitCode::SUCCESS,
        RunStatus::Terminated { .. } => ExitCode::from(3),
        RunStatus::FailedClosed(_) => ExitCode::from(4),
        RunStatus::Error(_) => ExitCode::FAILURE,
        _ => ExitCode::from(5),
    })
}

fn model(args: &RunArgs) -> Result<Arc<dyn Model>> {
    if let Some(file) = args.model.strip_prefix("scripted:") {
        return Ok(Arc::new(ScriptedModel::from_file(file.as_ref())?));
    }
    if let Some(name) = args.model.strip_prefix("openai:") {
        let key = match &args.api_key_env {
            Some(var) => {
                Some(std::env::var(var).with_context(|| format!("--api-key-env {var}: not set"))?)
            }
            None if key_may_travel(&args.base_url) => std::env::var("OPENAI_API_KEY").ok(),
            None => {
                if std::env::var_os("OPENAI_API_KEY").is_some() {
                    tracing::warn!(
                        "not sending $OPENAI_API_KEY to {} (plain http to another machine); pass --api-key-env OPENAI_API_KEY to send it anyway",
                        args.base_url
                    );
                }
                None
            }
        };
        return Ok(Arc::new(
            OpenAiModel::new(&args.base_url, name)?.api_key(key),
        ));
    }
    bail!(
        "--model {}: expected scripted:FILE or openai:NAME, e.g. openai:gpt-4o-mini",
        args.model
    )
}

/// Whether the default API key may go to `base_url`: over TLS, or to this
/// machine.
fn key_may_travel(base_url: &str) -> bool {
    let Some(rest) = base_url.strip_prefix("http://") else {
        return base_url.starts_with("https://");
    };
    let host = rest.split(['/', '?']).next().unwrap_or_default();
    let host = host.rsplit_once(':').map_or(host, |(h, port)| {
        if port.chars().all(|c| c.is_ascii_digit()) {
            h
        } else {
            host
        }
    });
    matches!(host, "localhost" | "127.0.0.1" | "[::1]")
}

fn print_event(event: &LoopEvent, json: bool) {
    let mut out = std::io::stdout().lock();
    if json {
        let _ = writeln!(out, "{}", serde_json::to_string(event).unwrap_or_default());
        return;
    }
    let line = match event {
        LoopEvent::IterationStart {
            iteration,
            message_count,
        } => format!(
            "── iteration {iteration} ({message_count} message{})",
            if *message_count == 1 { "" } else { "s" }
        ),
        LoopEvent::LlmResponseReceived {
            has_tool_calls,
            text_length,
            ..
        } => format!(
            "   model: {text_length} chars{}",
            if *has_tool_calls { ", calls tools" } else { "" }
        ),
        LoopEvent::ToolExecutionStart {
            tool_name,
            arguments,
            ..
        } => format!("   → {tool_name} {}", one_line(&arguments.to_string(), 100)),
        LoopEvent::ToolExecutionEnd {
            tool_name,
            result,
            outcome,
            duration,
            ..
        } => {
            let mark = match outcome {
                ToolOutcome::Success => "✓".to_owned(),
                ToolOutcome::Error(e) => format!(
                    "✗ {}:",
                    serde_json::to_value(e.kind)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_owned))
                        .unwrap_or_default()
                ),
                ToolOutcome::Skipped(_) => "· skipped:".into(),
                ToolOutcome::Denied(_) => "· denied:".into(),
            };
            format!(
                "   {mark} {tool_name} in {:.1} ms: {}",
                duration.as_secs_f64() * 1e3,
                one_line(result, 80)
            )
        }
        LoopEvent::LoopDetected {
            tool_name,
            consecutive_count,
            action,
        } => format!(
            "   ⟳ loop: {tool_name} {consecutive_count}× with identical arguments → {}",
            action.name()
        ),
        LoopEvent::HookDecision {
            event,
            flow,
            plugin,
            detail,
        } => format!(
            "   ⚑ {} → {flow} on {event}{}",
            plugin.as_deref().unwrap_or("(default)"),
            if detail.is_empty() {
                String::new()
            } else {
                format!(": {}", one_line(detail, 100))
            }
        ),
    };
    let _ = writeln!(out, "{line}");
}

fn summary(report: &RunReport) {
    let mut by_outcome: BTreeMap<&str, usize> = BTreeMap::new();
    for call in &report.tool_calls {
        let key = match &call.outcome {
            ToolOutcome::Success => "ok",
            ToolOutcome::Error(_) => "failed",
            ToolOutcome::Skipped(_) => "skipped",
            ToolOutcome::Denied(_) => "denied",
        };
        *by_outcome.entry(key).or_default() += 1;
    }
    let calls: Vec<String> = by_outcome.iter().map(|(k, n)| format!("{n} {k}")).collect();
    say!("");
    if !report.text.is_empty() {
        say!("{}\n", report.text.trim_end());
    }
    say!("run {}: {}", report.run_id, report.status);
    say!(
        "  {} iteration(s); {} tool call(s) ({}); {} tokens in, {} out",
        report.iterations,
        report.tool_calls.len(),
        if calls.is_empty() {
            "none".into()
        } else {
            calls.join(", ")
        },
        report.usage.input_tokens,
        report.usage.output_tokens
    );
}

fn one_line(text: &str, max: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    cut(&flat, max)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_default_key_goes_only_over_tls_or_to_this_machine() {
        use super::key_may_travel;
        assert!(key_may_travel("https://api.openai.com/v1"));
        assert!(key_may_travel("http://localhost:11434/v1"));
        assert!(key_may_travel("http://127.0.0.1:8000/v1"));
        assert!(!key_may_travel("http://lan-box:11434/v1"));
        assert!(!key_may_travel("http://localhost.evil.com/v1"));
    }
}
