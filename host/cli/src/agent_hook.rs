//! `hookbox hook AGENT`: a coding agent's command hook. The hook input on
//! stdin; the plugin directory asked, with the session's run state restored
//! from and saved to the session store; the answer on stdout and in the exit
//! code. The mappings are `hookbox_agents`'.

use std::io::{Read, Write};
use std::panic::AssertUnwindSafe;
use std::process::ExitCode;

use hookbox::{Outcome, StepEvent};
use hookbox_adapter::Door;
use hookbox_agents::{Options, Protocol, Session, SessionRun, StepRefused, Unasked, handle};

use crate::{hook_config, terminal};

/// The agents `hookbox hook` speaks to.
#[derive(Clone, Copy, clap::ValueEnum)]
pub(crate) enum Agent {
    /// Claude Code (command hooks; HTTP hooks are `hookbox serve`'s).
    ClaudeCode,
    /// OpenAI Codex CLI's hooks.
    Codex,
    /// Gemini CLI's hooks.
    Gemini,
    /// Cursor's agent hooks.
    Cursor,
    /// GitHub Copilot's hooks (CLI and cloud agent).
    Copilot,
    /// Cline's hooks.
    Cline,
    /// Windsurf's Cascade hooks (the answer is the exit code).
    Windsurf,
    /// OpenCode, through hookbox's OpenCode plugin (`--print-config`
    /// prints it).
    Opencode,
}

#[derive(clap::Args)]
pub(crate) struct HookArgs {
    /// The plugin directory.
    #[arg(long = "plugins")]
    dir: std::path::PathBuf,
    /// Let a guard's rewrite of a call's arguments also grant the call.
    /// Off: the agent's own permission system decides on the changed call.
    #[arg(long)]
    allow_rewrites: bool,
    /// The event this hook is configured for, for agents whose input does
    /// not name it (Copilot: `preToolUse`, `permissionRequest`,
    /// `postToolUse`).
    #[arg(long)]
    event: Option<String>,
    /// The session this hook call belongs to, for agents whose input names
    /// none (Copilot): calls naming the same session share the plugins'
    /// state. Without it, such a call starts from nothing and keeps
    /// nothing; an input's own session id always wins.
    #[arg(long, env = "HOOKBOX_SESSION", value_name = "NAME")]
    session: Option<String>,
    /// Print the agent's hook configuration for this command (on stdout)
    /// and what the agent needs before it runs it (on stderr: where it
    /// goes, Codex's trust review) instead of answering a hook. The command
    /// in it answers a crashed, killed or missing hookbox with the event's
    /// block; for OpenCode, hookbox's plugin (for `.opencode/plugins/`).
    #[arg(long)]
    print_config: bool,
    #[command(flatten)]
    state: crate::state::StateArgs,
}

/// `hookbox hook AGENT`'s arguments (its help is on [`crate`]'s `Command`).
#[derive(clap::Args)]
pub(crate) struct AgentHookArgs {
    /// The agent whose hook protocol to speak.
    agent: Agent,
    #[command(flatten)]
    hook: HookArgs,
}

impl AgentHookArgs {
    pub(crate) fn execute(self) -> anyhow::Result<ExitCode> {
        Ok(answer(self.agent, &self.hook))
    }
}

/// `hookbox claude-code`'s arguments (its help is on [`crate`]'s `Command`).
#[derive(clap::Args)]
pub(crate) struct ClaudeCodeArgs {
    #[command(flatten)]
    hook: HookArgs,
}

impl ClaudeCodeArgs {
    pub(crate) fn execute(self) -> anyhow::Result<ExitCode> {
        Ok(answer(Agent::ClaudeCode, &self.hook))
    }
}

/// The most bytes of hook input read (a large `Write` is a few MiB).
const INPUT_LIMIT: usize = 64 << 20;

pub(crate) fn run<P: Protocol>(args: &HookArgs, options: &Options) -> ExitCode {
    let event = args.event.as_deref();
    let mut input = Vec::new();
    let read = std::io::stdin()
        .lock()
        .take(INPUT_LIMIT as u64 + 1)
        .read_to_end(&mut input);
    let reply = match read {
        Err(e) => {
            P::too_large(&input, 0).with_note(format!("hookbox: cannot read the hook input: {e}"))
        }
        Ok(_) if input.len() > INPUT_LIMIT => {
            let prefix = &input[..INPUT_LIMIT];
            let named = event.map_or_else(|| prefix.to_vec(), |event| P::name_event(prefix, event));
            P::too_large(&named, INPUT_LIMIT)
        }
        Ok(_) => {
            if let Some(event) = event {
                input = P::name_event(&input, event);
            }
            // A panic anywhere under the answer (a hookbox bug) is the
            // event's block, not exit 101, which most agents read as "go
            // ahead".
            std::panic::catch_unwind(AssertUnwindSafe(|| {
                handle::<P>(&input, options, |session, event| {
                    decide::<P>(
                        args,
                        scoped(session, args.session.as_deref()).as_ref(),
                        event,
                    )
                })
            }))
            .unwrap_or_else(|panic| {
                P::unreadable(
                    &input,
                    &format!(
                        "hookbox: blocked: hookbox failed while deciding ({}); this is a bug in hookbox, please report it",
                        panic_message(panic.as_ref())
                    ),
                )
            })
        }
    };
    if let Some(json) = &reply.stdout {
        let _ = writeln!(std::io::stdout().lock(), "{json}");
    }
    if let Some(note) = &reply.stderr {
        let _ = writeln!(std::io::stderr().lock(), "{note}");
    }
    ExitCode::from(reply.exit_code)
}

/// What a panic said, if it said it as text.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a panic")
}

/// The session a call belongs to: the input's own, else the one `--session`
/// names, else none (a call whose state nobody shares).
fn scoped(session: &Session, named: Option<&str>) -> Option<Session> {
    match (&session.id, named) {
        (Some(_), _) => Some(session.clone()),
        (None, Some(name)) => Some(Session {
            id: Some(name.to_owned()),
            ..session.clone()
        }),
        (None, None) => None,
    }
}

/// The plugin directory's answer for the session, its state carried over
/// from the session's earlier hook calls (in `--state`'s store). With no
/// session, a run of its own that starts empty and is kept nowhere.
fn decide<P: Protocol>(
    args: &HookArgs,
    session: Option<&Session>,
    event: &StepEvent,
) -> Result<Outcome, Unasked> {
    // One process, one event: a pool sized for a thousand runs costs more to
    // set up than the event takes. Instances are allocated as they start.
    let runtime = crate::runtime_with(hookbox::RuntimeConfig {
        pooling: false,
        ..hookbox::RuntimeConfig::default()
    })
    .map_err(|e| format!("{e:#}"))?;
    let loaded_at = std::time::SystemTime::now();
    let loaded = hookbox::directory::load(&runtime, &args.dir).map_err(|e| e.to_string())?;
    fault_injected();
    let run_id = session
        .and_then(|session| session.id.clone())
        .unwrap_or_else(|| P::NAME.to_owned());
    let span = tracing::info_span!(
        "hookbox.run",
        otel.name = "hookbox.run",
        otel.kind = "server",
        gen_ai.conversation.id = run_id.as_str(),
        hookbox.surface = P::NAME,
    );
    let door = Door::open(&loaded.stack, run_id);
    let decide = |door: &Door, event: &StepEvent| span.in_scope(|| door.decide(None, event));
    let Some(session) = session else {
        return Ok(decide(&door, event));
    };
    let store = args.state.open(false).map_err(|e| format!("{e:#}"))?;
    let digest = hookbox::directory::stack_digest(&loaded.plugins);
    let pin = Some((digest.as_str(), loaded_at));
    let run = SessionRun::Fresh(&door);
    match hookbox_agents::session_step(&*store, (P::NAME, session), pin, &run, event, decide) {
        Ok(stepped) => {
            if let Some(from) = stepped.moved {
                tracing::info!(
                    from = %from.digest,
                    "the session moved to the plugin directory's newer stack, keeping its state"
                );
            }
            Ok(stepped.outcome)
        }
        Err(StepRefused::Store(e)) => {
            tracing::warn!("session state unavailable: {e}");
            Err(Unasked::from(e))
        }
        Err(StepRefused::Unpinned(why) | StepRefused::Ended(why)) => Err(Unasked::Blocked(why)),
        Err(StepRefused::Broken(failure)) => Err(Unasked::Blocked(failure.to_string())),
    }
}

/// `hookbox hook AGENT` (and `hookbox claude-code`): `--print-config`, or
/// the hook answered.
pub(crate) fn answer(agent: Agent, args: &HookArgs) -> ExitCode {
    if args.print_config {
        let name = clap::ValueEnum::to_possible_value(&agent)
            .map(|v| v.get_name().to_owned())
            .unwrap_or_default();
        return match hook_config::print_config(&name, &args.dir, args.allow_rewrites) {
            Ok((config, steps)) => {
                println!("{config}");
                terminal::tell!("{steps}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                terminal::tell!("hookbox: {e:#}");
                ExitCode::from(2)
            }
        };
    }
    let options = hookbox_agents::Options {
        rewrites_grant: args.allow_rewrites,
        subagents_share_state: args.state.subagents_share_state,
    };
    match agent {
        Agent::ClaudeCode => run::<hookbox_agents::claude_code::ClaudeCode>(args, &options),
        Agent::Codex => run::<hookbox_agents::codex::Codex>(args, &options),
        Agent::Gemini => run::<hookbox_agents::gemini::Gemini>(args, &options),
        Agent::Cursor => run::<hookbox_agents::cursor::Cursor>(args, &options),
        Agent::Copilot => run::<hookbox_agents::copilot::Copilot>(args, &options),
        Agent::Cline => run::<hookbox_agents::cline::Cline>(args, &options),
        Agent::Windsurf => run::<hookbox_agents::windsurf::Windsurf>(args, &options),
        Agent::Opencode => run::<hookbox_agents::opencode::OpenCode>(args, &options),
    }
}

/// In debug builds only, `HOOKBOX_TEST_FAULT=panic` makes a decision panic
/// and `HOOKBOX_TEST_FAULT=hang` makes it never end, once the plugins have
/// loaded: how the tests show what an agent reads when `hookbox hook`
/// fails inside or is killed. Release builds have no such switch.
fn fault_injected() {
    #[cfg(debug_assertions)]
    match std::env::var("HOOKBOX_TEST_FAULT").as_deref() {
        Ok("panic") => panic!("HOOKBOX_TEST_FAULT=panic"),
        Ok("hang") => loop {
            std::thread::park();
        },
        _ => {}
    }
}
