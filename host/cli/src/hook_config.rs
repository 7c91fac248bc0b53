//! `hookbox hook AGENT --plugins DIR --print-config`: the agent's hook
//! configuration for this very command (absolute paths, every guarded
//! event, failures blocking), on stdout; where it goes and what the agent
//! needs done before it runs it, on stderr.

use std::path::Path;

use anyhow::{Context, Result, bail};
use hookbox_agents::Protocol;
use hookbox_agents::claude_code::ClaudeCode;
use hookbox_agents::cline::Cline;
use hookbox_agents::codex::Codex;
use hookbox_agents::copilot::Copilot;
use hookbox_agents::cursor::Cursor;
use hookbox_agents::gemini::Gemini;
use hookbox_agents::windsurf::Windsurf;
use serde_json::json;

/// The events each agent's configuration hooks: those its module maps, one
/// hook per guarded step (Cursor's `preToolUse` covers the shell and MCP
/// tools its older `beforeShellExecution` and `beforeMCPExecution` name).
const CLAUDE_CODE_EVENTS: [&str; 5] = [
    "PreToolUse",
    "PermissionRequest",
    "PostToolUse",
    "PostToolUseFailure",
    "UserPromptSubmit",
];
const CODEX_EVENTS: [&str; 4] = [
    "PreToolUse",
    "PermissionRequest",
    "PostToolUse",
    "UserPromptSubmit",
];
const GEMINI_EVENTS: [&str; 3] = ["BeforeTool", "AfterTool", "BeforeAgent"];
const CURSOR_EVENTS: [&str; 4] = [
    "preToolUse",
    "postToolUse",
    "beforeReadFile",
    "beforeSubmitPrompt",
];
const COPILOT_EVENTS: [&str; 2] = ["preToolUse", "postToolUse"];
const CLINE_EVENTS: [&str; 3] = ["PreToolUse", "PostToolUse", "UserPromptSubmit"];
const WINDSURF_EVENTS: [&str; 6] = [
    "pre_run_command",
    "pre_read_code",
    "pre_write_code",
    "pre_mcp_tool_use",
    "pre_user_prompt",
    "post_mcp_tool_use",
];

/// What the command of a printed configuration answers when hookbox gave
/// no answer at all.
const NO_ANSWER: &str = "hookbox: blocked: hookbox ended without answering (it crashed, was killed, or is not at the path the command names); its stderr says more";

/// What to print for `agent` (its name on the command line): the
/// configuration, and the steps around it.
pub(crate) fn print_config(
    agent: &str,
    dir: &Path,
    allow_rewrites: bool,
) -> Result<(String, String)> {
    let exe = std::env::current_exe().context("cannot tell where this hookbox is")?;
    let dir = dir.canonicalize().with_context(|| {
        format!(
            "the plugin directory {} cannot be found; make it first (hookbox new, or copy the guards into it)",
            dir.display()
        )
    })?;
    let mut argv = vec![
        exe.display().to_string(),
        "hook".into(),
        agent.into(),
        "--plugins".into(),
        dir.display().to_string(),
    ];
    if allow_rewrites {
        argv.push("--allow-rewrites".into());
    }
    let command: Vec<String> = argv.iter().map(|word| shell_quoted(word)).collect();
    let command = command.join(" ");
    match agent {
        "claude-code" => Ok((claude_code(&command), CLAUDE_CODE_STEPS.to_owned())),
        "codex" => Ok((codex(&command), CODEX_STEPS.to_owned())),
        "gemini" => Ok((gemini(&command), GEMINI_STEPS.to_owned())),
        "cursor" => Ok((cursor(&command), CURSOR_STEPS.to_owned())),
        "copilot" => Ok((copilot(&command), COPILOT_STEPS.to_owned())),
        "cline" => Ok((cline(&command), CLINE_STEPS.to_owned())),
        "opencode" => Ok((opencode(&argv)?, OPENCODE_STEPS.to_owned())),
        "windsurf" => Ok((windsurf(&command), WINDSURF_STEPS.to_owned())),
        other => bail!("--print-config does not know the agent {other}"),
    }
}

/// `command` as a POSIX shell line that answers every end of hookbox
/// but its own (exit 0 or 2, what it printed passed on) with `P`'s block
/// for `event`: its JSON on stdout and its exit code, and why on stderr.
/// Every agent lets the action run on some abnormal end (a crash's 101, a
/// kill's 137, a missing binary's 127, output that is not JSON), each in
/// its own way; with this, none is one.
fn answering_every_end<P: Protocol>(command: &str, event: &str) -> String {
    let block = P::blocked_at(event, NO_ANSWER);
    let json = block
        .stdout
        .map(|json| format!(" printf '%s\\n' {};", shell_quoted(&json.to_string())))
        .unwrap_or_default();
    format!(
        "out=$({command}); s=$?; if [ \"$s\" -eq 0 ] || [ \"$s\" -eq 2 ]; then [ -z \"$out\" ] || printf '%s\\n' \"$out\"; exit \"$s\"; fi; echo \"hookbox ended abnormally (exit $s): the action is blocked\" >&2;{json} exit {}",
        block.exit_code
    )
}

/// Settings in the shape Claude Code and Gemini CLI share: per event, a
/// group of handlers, with a tool `matcher` for tool events (not for the
/// prompt's, which has none); `handler` makes one from its command.
fn grouped<P: Protocol>(
    command: &str,
    events: &[&str],
    (matcher, prompt): (&str, &str),
    handler: impl Fn(String) -> serde_json::Value,
) -> String {
    let mut hooks = serde_json::Map::new();
    for &event in events {
        let handler = handler(answering_every_end::<P>(command, event));
        let group = if event == prompt {
            json!({"hooks": [handler]})
        } else {
            json!({"matcher": matcher, "hooks": [handler]})
        };
        hooks.insert(event.to_owned(), json!([group]));
    }
    serde_json::to_string_pretty(&json!({"hooks": hooks})).unwrap_or_default()
}

fn claude_code(command: &str) -> String {
    grouped::<ClaudeCode>(
        command,
        &CLAUDE_CODE_EVENTS,
        ("*", "UserPromptSubmit"),
        |command| json!({"type": "command", "command": command, "onFailure": "block"}),
    )
}

const CLAUDE_CODE_STEPS: &str = "\
Put the \"hooks\" above in .claude/settings.json (this project) or
~/.claude/settings.json (every project), merged with any hooks already there.
\"onFailure\": \"block\" needs Claude Code 2.1.295 or later: with it, a hook
that times out blocks the action; without it Claude Code runs the tool. The
command is a POSIX shell line (macOS, Linux, WSL) that answers a crashed,
killed or missing hookbox with the event's block. `/hooks` in Claude Code
lists what it loaded.";

fn codex(command: &str) -> String {
    let mut out = String::from(
        "# hookbox: every guarded Codex event. In ~/.codex/config.toml, or\n# <repo>/.codex/config.toml for one project.\n",
    );
    for event in CODEX_EVENTS {
        out.push_str(&format!(
            "\n[[hooks.{event}]]\n[[hooks.{event}.hooks]]\ntype = \"command\"\ncommand = {}\n",
            toml_string(&answering_every_end::<Codex>(command, event))
        ));
    }
    out
}

const CODEX_STEPS: &str = "\
Add the tables above to ~/.codex/config.toml (or <repo>/.codex/config.toml).
Codex does not run a hook until you trust it, and says nothing while it
skips one:
  1. Start Codex and open /hooks: the four hookbox hooks show as new.
  2. Review each and trust it. Trust is kept for the hook's exact definition:
     a changed command (another path, another flag) is new again and
     skipped until trusted again.
  3. A project's .codex/config.toml is read only in a trusted project: trust
     the folder when Codex asks, or run `codex exec --trust` once in it.
For a one-off headless run whose hooks you checked yourself,
`codex exec --dangerously-bypass-hook-trust` runs them untrusted.
hookbox answers only with the fields Codex knows: Codex counts an unknown
field as a failed hook and runs the tool. Codex runs the tool, too, when a
hook exits with any code but 0 or 2: the command above turns every
abnormal end of hookbox (a crash, a kill, a missing binary) into the
event's block. It is a POSIX shell line (macOS, Linux, WSL).";

fn gemini(command: &str) -> String {
    // Gemini's tool matcher is a regular expression.
    grouped::<Gemini>(
        command,
        &GEMINI_EVENTS,
        (".*", "BeforeAgent"),
        |command| json!({"name": "hookbox", "type": "command", "command": command}),
    )
}

const GEMINI_STEPS: &str = "\
Put the \"hooks\" above in .gemini/settings.json (this project) or
~/.gemini/settings.json (every project), merged with any hooks already
there. Gemini runs the
tool when a hook exits with any code but 0 or 2, or prints something that
is not JSON: the command above answers every abnormal end of hookbox (a
crash, a kill, a missing binary) with the event's block. A hook Gemini
kills at its own timeout (60 s by default; `timeout`, in ms, per hook) is
Gemini's to decide, and it runs the tool: keep the plugins' deadlines
below it. It is a POSIX shell line (macOS, Linux, WSL).";

/// Settings with one handler per event, `handler`'s for it (Cursor,
/// Copilot, Windsurf), and the file format's `version`, where it has one.
fn flat(
    events: &[&str],
    version: Option<u32>,
    handler: impl Fn(&str) -> serde_json::Value,
) -> String {
    let hooks: serde_json::Map<String, serde_json::Value> = events
        .iter()
        .map(|&event| (event.to_owned(), json!([handler(event)])))
        .collect();
    let settings = match version {
        Some(version) => json!({"version": version, "hooks": hooks}),
        None => json!({"hooks": hooks}),
    };
    serde_json::to_string_pretty(&settings).unwrap_or_default()
}

fn cursor(command: &str) -> String {
    flat(&CURSOR_EVENTS, Some(1), |event| {
        let command = answering_every_end::<Cursor>(command, event);
        json!({"command": command, "failClosed": true})
    })
}

const CURSOR_STEPS: &str = "\
Put the \"hooks\" above in .cursor/hooks.json (this project) or
~/.cursor/hooks.json (every project), merged with any hooks already there.
\"failClosed\": true makes Cursor block the action when a hook times out;
the command itself answers a crashed, killed or missing hookbox with the
event's block. preToolUse covers every tool, the shell and MCP tools too
(beforeShellExecution and beforeMCPExecution are also understood, for
Cursor versions without it). It is a POSIX shell line (macOS, Linux, WSL).";

fn copilot(command: &str) -> String {
    flat(&COPILOT_EVENTS, Some(1), |event| {
        // Copilot's input does not name its event: the command does.
        let command = format!("{command} --event {event}");
        let command = answering_every_end::<Copilot>(&command, event);
        json!({"type": "command", "bash": command, "timeoutSec": 30})
    })
}

const COPILOT_STEPS: &str = "\
Save the JSON above as .github/hooks/hookbox.json in the repository (Copilot
CLI reads it from the working directory) or in ~/.copilot/hooks/ (every
repository). The paths in it are this machine's: the cloud agent needs
hookbox installed in its environment and the paths changed to match.
Copilot's input names no session: set HOOKBOX_SESSION in Copilot's
environment (or add --session NAME to the command) so the calls of one
session share the plugins' state; without it each call starts from
nothing. The command answers a crashed, killed or missing hookbox with
the event's block; it is a bash line (macOS, Linux, WSL).";

fn cline(command: &str) -> String {
    format!(
        "#!/bin/sh\n# hookbox: a Cline hook, the same for each event it guards ({}).\n{}\n",
        CLINE_EVENTS.join(", "),
        answering_every_end::<Cline>(command, CLINE_EVENTS[0])
    )
}

const CLINE_STEPS: &str = "\
Save the script above as .clinerules/hooks/PreToolUse (this project) or
~/Documents/Cline/Hooks/PreToolUse (every project), make it
executable (chmod +x), and link PostToolUse and UserPromptSubmit to it in
the same folder (ln -s PreToolUse PostToolUse). Cline runs the action when
a hook exits non-zero or prints no JSON: the script answers every abnormal
end of hookbox (a crash, a kill, a missing binary) with Cline's cancel.";

/// Windsurf reads nothing but the exit code ([`answering_every_end`]).
fn windsurf(command: &str) -> String {
    flat(&WINDSURF_EVENTS, None, |event| {
        let command = answering_every_end::<Windsurf>(command, event);
        json!({"command": command, "show_output": true})
    })
}

const WINDSURF_STEPS: &str = "\
Put the \"hooks\" above in .windsurf/hooks.json (this workspace),
~/.codeium/windsurf/hooks.json (every workspace) or the system's hooks.json,
merged with any hooks already there. Cascade reads only a hook's exit code,
and runs the action on any code but 2: the command above turns every
abnormal end of hookbox (a crash, a kill, a missing binary) into 2, the
block. It is a POSIX shell line (macOS, Linux, WSL).";

/// hookbox's OpenCode plugin, running `argv`.
fn opencode(argv: &[String]) -> Result<String> {
    use hookbox_agents::opencode::{COMMAND_PLACEHOLDER, PLUGIN};
    let command = serde_json::to_string(argv).context("the command as JSON")?;
    let plugin = PLUGIN.replacen(COMMAND_PLACEHOLDER, &command, 1);
    if plugin == PLUGIN {
        bail!("hookbox's OpenCode plugin has lost its command placeholder (a bug in hookbox)");
    }
    Ok(plugin)
}

const OPENCODE_STEPS: &str = "\
Save the plugin above as .opencode/plugins/hookbox.ts (this project) or
~/.config/opencode/plugins/hookbox.ts (every project); OpenCode loads it
when it starts. With HOOKBOX_URL (and HOOKBOX_TOKEN) in OpenCode's
environment it asks `hookbox serve` at $HOOKBOX_URL/opencode/hook instead
of running the command. A hookbox that cannot be asked blocks the tool.";

/// `text` as one word to a POSIX shell.
fn shell_quoted(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+:=@,".contains(&b));
    if plain {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// `text` as a TOML basic string.
fn toml_string(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_a_shell_would_split_is_quoted_as_one_word() {
        assert_eq!(shell_quoted("/usr/bin/hookbox"), "/usr/bin/hookbox");
        assert_eq!(shell_quoted("/my guards"), "'/my guards'");
        assert_eq!(shell_quoted("/it's"), r"'/it'\''s'");
        assert_eq!(shell_quoted("$HOME"), "'$HOME'");
    }
}
