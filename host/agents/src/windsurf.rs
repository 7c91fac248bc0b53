//! Windsurf's Cascade hooks (`hooks.json`: system, `~/.codeium/windsurf/`,
//! or the workspace's `.windsurf/`): a command per event, the input on
//! stdin, the answer in the exit code. Cascade reads no JSON from a hook:
//! exit 2 blocks a pre-hook's action, and Cascade's agent is shown stderr;
//! any other exit code lets the action run.
//!
//! | Cascade event | hookbox event | continue | what a guard can do, and how it is said |
//! |---|---|---|---|
//! | `pre_run_command` | `tool-call` of `run_command` (`{"command_line", "cwd"}`) | exit 0 | skip, terminate → exit 2 with the reason on stderr; rewrite-args → exit 2, telling the agent the arguments to run again with (Cascade cannot change an action) |
//! | `pre_read_code` | `tool-call` of `read_code` (`{"file_path"}`) | exit 0 | as above |
//! | `pre_write_code` | `tool-call` of `write_code` (`{"file_path", "edits"}`) | exit 0 | as above |
//! | `pre_mcp_tool_use` | `tool-call` of `mcp__<server>__<tool>` (`mcp_tool_arguments`), named as Claude Code and Codex name MCP tools | exit 0 | as above |
//! | `pre_user_prompt` | `completion-call` (`user_prompt`) | exit 0 | any patch (Cascade hooks cannot add context), terminate → exit 2: the prompt is blocked |
//! | `post_mcp_tool_use` | `tool-result` of `mcp__<server>__<tool>` (`mcp_result`) | exit 0 | rewrite-result, terminate → exit 2 telling the agent the output must not be used or repeated (Cascade cannot replace it; the agent sees stderr) |
//! | any other (`post_run_command`, `post_read_code`, `post_write_code`, `post_cascade_response`, ...) | — | exit 0 | — |
//!
//! Every failure (a stack that failed closed, an input that cannot be
//! read) is exit 2 with the diagnostic: the pre-hook's block. Run state
//! spans the Cascade conversation (`trajectory_id`).

use hookbox::{Decision, Flow, StepEvent, ToolOutcome};
use serde::Deserialize;
use serde_json::Value;

use crate::common::{args, prompt, tool_call, tool_result};
use crate::{Options, Protocol, Reply, Session};

/// A hook's input, as Cascade sends it. Other fields are ignored.
#[derive(Clone, Debug, Deserialize)]
#[non_exhaustive]
pub struct HookInput {
    /// The event (`pre_run_command`, ...).
    pub agent_action_name: String,
    /// The Cascade conversation: run state spans it.
    #[serde(default)]
    pub trajectory_id: Option<String>,
    /// The agent turn.
    #[serde(default)]
    pub execution_id: Option<String>,
    /// The event's own fields.
    #[serde(default)]
    pub tool_info: ToolInfo,
}

/// `tool_info`: the fields of each event (those it does not have are
/// `None`).
#[derive(Clone, Debug, Default, Deserialize)]
#[non_exhaustive]
pub struct ToolInfo {
    /// Commands: the command line.
    #[serde(default)]
    pub command_line: Option<String>,
    /// Commands: where it runs.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Reads and writes: the file (or folder, for a recursive read).
    #[serde(default)]
    pub file_path: Option<String>,
    /// Writes: the edits (`old_string`, `new_string`).
    #[serde(default)]
    pub edits: Option<Value>,
    /// MCP: the server.
    #[serde(default)]
    pub mcp_server_name: Option<String>,
    /// MCP: the tool.
    #[serde(default)]
    pub mcp_tool_name: Option<String>,
    /// MCP: its arguments.
    #[serde(default)]
    pub mcp_tool_arguments: Option<Value>,
    /// `post_mcp_tool_use`: what the tool returned.
    #[serde(default)]
    pub mcp_result: Option<Value>,
    /// `pre_user_prompt`: the prompt.
    #[serde(default)]
    pub user_prompt: Option<String>,
}

/// Windsurf's Cascade hook protocol.
pub struct Windsurf;

impl Protocol for Windsurf {
    const NAME: &'static str = "windsurf";
    type Input = HookInput;
    const EVENT_FIELD: &'static str = "agent_action_name";

    fn unreadable(_input: &[u8], reason: &str) -> Reply {
        block(reason)
    }

    fn session(input: &HookInput) -> Session {
        Session {
            id: input.trajectory_id.clone(),
            subagent: None,
        }
    }

    fn event(input: &HookInput) -> Result<Option<StepEvent>, String> {
        let info = &input.tool_info;
        let id = input.execution_id.as_deref();
        let needs = |field: &str| format!("{} without tool_info.{field}", input.agent_action_name);
        Ok(Some(match input.agent_action_name.as_str() {
            "pre_run_command" => {
                let command = info
                    .command_line
                    .as_ref()
                    .ok_or_else(|| needs("command_line"))?;
                let args = serde_json::json!({"command_line": command, "cwd": info.cwd});
                tool_call("run_command", id, args)?
            }
            "pre_read_code" => {
                let path = info.file_path.as_ref().ok_or_else(|| needs("file_path"))?;
                tool_call("read_code", id, serde_json::json!({"file_path": path}))?
            }
            "pre_write_code" => {
                let path = info.file_path.as_ref().ok_or_else(|| needs("file_path"))?;
                let args = serde_json::json!({"file_path": path, "edits": info.edits});
                tool_call("write_code", id, args)?
            }
            "pre_mcp_tool_use" => tool_call(
                &mcp_name(input)?,
                id,
                args(info.mcp_tool_arguments.as_ref()),
            )?,
            "post_mcp_tool_use" => {
                let result = info
                    .mcp_result
                    .as_ref()
                    .cloned()
                    .unwrap_or_else(|| Value::String(String::new()));
                tool_result(
                    &mcp_name(input)?,
                    id,
                    args(info.mcp_tool_arguments.as_ref()),
                    &result,
                    ToolOutcome::Success,
                )
            }
            "pre_user_prompt" => prompt(
                info.user_prompt
                    .clone()
                    .ok_or_else(|| needs("user_prompt"))?,
            ),
            _ => return Ok(None),
        }))
    }

    fn answer(input: &HookInput, decision: Decision, _options: &Options) -> Reply {
        let by = decision.by().to_string();
        let event = input.agent_action_name.as_str();
        match (event, decision.flow) {
            (_, Flow::Continue) => Reply::no_opinion(),
            ("post_mcp_tool_use", Flow::RewriteResult(_)) => block(&format!(
                "hookbox: {by} found content in this tool's output that must not be used or repeated (Cascade cannot replace it); treat the output as withheld"
            )),
            (_, Flow::Skip(reason)) if event.starts_with("pre_") => block(&reason),
            (_, Flow::RewriteArgs(args))
                if event.starts_with("pre_") && event != "pre_user_prompt" =>
            {
                block(&format!(
                    "Not run: hookbox guard {by} allows this only with other arguments: {args}. Do it again with those if they still do what you need."
                ))
            }
            ("pre_user_prompt", Flow::PatchRequest(_)) => block(&format!(
                "hookbox: {by} would add to this prompt, which Cascade hooks cannot do; blocked rather than sent without it (leave {by} out of the plugins Cascade's hook uses)"
            )),
            (_, flow) => block(&format!(
                "hookbox: {by} answered `{}` to {event}, which Cascade hooks cannot express; blocked",
                flow.name()
            )),
        }
    }

    fn fail(_input: &HookInput, reason: &str) -> Reply {
        block(reason)
    }
}

/// An MCP tool's name as Claude Code and Codex spell it.
fn mcp_name(input: &HookInput) -> Result<String, String> {
    let info = &input.tool_info;
    let (Some(server), Some(tool)) = (&info.mcp_server_name, &info.mcp_tool_name) else {
        return Err(format!(
            "{} without tool_info.mcp_server_name and mcp_tool_name",
            input.agent_action_name
        ));
    };
    Ok(format!("mcp__{server}__{tool}"))
}

/// Exit 2, `reason` on stderr: Cascade's block, which its agent reads.
fn block(reason: &str) -> Reply {
    Reply {
        exit_code: 2,
        stdout: None,
        stderr: Some(reason.to_owned()),
    }
}
