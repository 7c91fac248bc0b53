//! `hookbox hook AGENT --plugins DIR --print-config`: the agent's hook
//! configuration for this very command (absolute paths, every guarded
//! event, failures blocking), on stdout; where it goes and what the agent
//! needs done before it runs it, on stderr.

use std::path::Path;

use anyhow::{Context, Result, bail};
use serde_json::json;

/// The events each agent's configuration hooks.
const CLAUDE_CODE_EVENTS: [&str; 5] = [
    "PreToolUse",
    "PermissionRequest",
    "PostToolUse",
    "PostToolUseFailure",
    "UserPromptSubmit",
];
/// Windsurf's: the events `hookbox_agents::windsurf` maps.
const WINDSURF_EVENTS: [&str; 6] = [
    "pre_run_command",
    "pre_read_code",
    "pre_write_code",
    "pre_mcp_tool_use",
    "pre_user_prompt",
    "post_mcp_tool_use",
];
const CODEX_EVENTS: [&str; 4] = [
    "PreToolUse",
    "PermissionRequest",
    "PostToolUse",
    "UserPromptSubmit",
];

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
        "opencode" => Ok((opencode(&argv)?, OPENCODE_STEPS.to_owned())),
        "windsurf" => Ok((windsurf(&command), WINDSURF_STEPS.to_owned())),
        other => bail!(
            "--print-config knows claude-code, codex, opencode and windsurf; for {other}, docs/agents.md (\"Configuring an agent\") shows the configuration"
        ),
    }
}

fn claude_code(command: &str) -> String {
    let mut hooks = serde_json::Map::new();
    for event in CLAUDE_CODE_EVENTS {
        let handler = json!({"type": "command", "command": command, "onFailure": "block"});
        let entry = if event.starts_with("User") {
            json!({"hooks": [handler]})
        } else {
            json!({"matcher": "*", "hooks": [handler]})
        };
        hooks.insert(event.to_owned(), json!([entry]));
    }
    serde_json::to_string_pretty(&json!({"hooks": hooks})).unwrap_or_default()
}

const CLAUDE_CODE_STEPS: &str = "\
Put the \"hooks\" above in .claude/settings.json (this project) or
~/.claude/settings.json (every project), merged with any hooks already there.
\"onFailure\": \"block\" needs Claude Code 2.1.295 or later: with it, a hookbox
that cannot start or times out blocks the action; without it Claude Code
runs the tool. `/hooks` in Claude Code lists what it loaded.";

fn codex(command: &str) -> String {
    let mut out = String::from(
        "# hookbox: every guarded Codex event. In ~/.codex/config.toml, or\n# <repo>/.codex/config.toml for one project.\n",
    );
    for event in CODEX_EVENTS {
        out.push_str(&format!(
            "\n[[hooks.{event}]]\n[[hooks.{event}.hooks]]\ntype = \"command\"\ncommand = {}\n",
            toml_string(&blocking_every_abnormal_end(command))
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
abnormal end of hookbox (a crash, a kill, a missing binary) into 2, the
block. It is a POSIX shell line (macOS, Linux, WSL).";

/// `command` inside a shell line that turns every end but 0 and 2 into 2,
/// saying why on stderr (which the agent shows its model). For an agent
/// that reads a hook's exit code as Windsurf and Codex do: 2 blocks, and
/// anything else but 0 lets the action run, a crash (101), a kill (137) or
/// a missing binary (127) too.
fn blocking_every_abnormal_end(command: &str) -> String {
    format!(
        "{command} || {{ s=$?; [ \"$s\" -eq 2 ] || echo \"hookbox ended abnormally (exit $s): the action is blocked\" >&2; exit 2; }}"
    )
}

/// Windsurf reads nothing but the exit code ([`blocking_every_abnormal_end`]).
fn windsurf(command: &str) -> String {
    let guarded = blocking_every_abnormal_end(command);
    let mut hooks = serde_json::Map::new();
    for event in WINDSURF_EVENTS {
        hooks.insert(
            event.to_owned(),
            json!([{"command": guarded, "show_output": true}]),
        );
    }
    serde_json::to_string_pretty(&json!({"hooks": hooks})).unwrap_or_default()
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
