//! OpenCode plugins. OpenCode has no command hooks: a plugin is a module it
//! loads and calls. hookbox's is [`PLUGIN`] (`hookbox hook opencode
//! --plugins DIR --print-config` prints it for a plugin directory): on
//! each hook it sends `{"hook", "input", "output"}`, the two objects
//! OpenCode handed it, to `hookbox hook opencode` on stdin (or POSTs it to
//! `hookbox serve`'s `/opencode/hook` when `HOOKBOX_URL` is set) and does
//! what the JSON answer says. Anything but such an answer (hookbox missing,
//! a non-zero exit, no answer within 30 s, not JSON, an HTTP error) blocks.
//!
//! | OpenCode hook | hookbox event | continue | what a guard can do, and how it is said |
//! |---|---|---|---|
//! | `tool.execute.before` | `tool-call` of the tool (`output.args`) | `{}` | skip, terminate → `{"block": reason}`: the plugin throws it, OpenCode does not run the tool and the model reads the reason as its result; rewrite-args → `{"args": {...}}`: the plugin replaces the arguments in place, and OpenCode's own permission rules still apply to the changed call |
//! | `tool.execute.after` | `tool-result` of the tool: `output.output` (built-in tools) or `output.content` (MCP tools) | `{}` | rewrite-result → `{"result": {"output": ...}}` (or `{"content": [...]}`, the same structure): the plugin sets it on the result before OpenCode uses it; terminate → `{"block": reason}`: the plugin throws, and the model reads the reason instead of the output |
//! | any other | — | `{}` | — |
//!
//! Every failure (a stack that failed closed, an input that cannot be
//! read) is `{"block": ...}` with the diagnostic: before a tool runs, it
//! does not run; after, its output is withheld. Run state spans the
//! OpenCode session (`sessionID`).

use hookbox::{Decision, Flow, StepEvent, ToolOutcome};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::common::{args, tool_call, tool_result};
use crate::shape::reshape;
use crate::{Options, Protocol, Reply, Session};
use hookbox_adapter::verdict::rewritten_args;

/// hookbox's OpenCode plugin (TypeScript, loaded by OpenCode from
/// `.opencode/plugins/` or `~/.config/opencode/plugins/`), with
/// [`COMMAND_PLACEHOLDER`] where the `hookbox hook` command goes.
pub const PLUGIN: &str = include_str!("../opencode/hookbox.ts");

/// What [`PLUGIN`] has in place of the command it runs: a JSON array of
/// strings (the program and its arguments) replaces it.
pub const COMMAND_PLACEHOLDER: &str =
    "[\"hookbox\", \"hook\", \"opencode\", \"--plugins\", \"PLUGIN_DIR\"]";

/// What the plugin sends: the hook's name and OpenCode's two objects.
#[derive(Clone, Debug, Deserialize)]
#[non_exhaustive]
pub struct HookInput {
    /// `tool.execute.before`, `tool.execute.after`, ...
    pub hook: String,
    /// OpenCode's `input`.
    #[serde(default)]
    pub input: ToolInput,
    /// OpenCode's `output`: `{args}` before a tool runs; after, the
    /// result (`{title, output, metadata}`, or an MCP tool's `{content}`).
    #[serde(default)]
    pub output: Value,
}

/// The tool hooks' `input`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolInput {
    /// The tool (`bash`, `read`, `edit`, an MCP tool as `server_tool`).
    #[serde(default)]
    pub tool: Option<String>,
    /// The session: run state spans it.
    #[serde(rename = "sessionID", default)]
    pub session_id: Option<String>,
    /// The call.
    #[serde(rename = "callID", default)]
    pub call_id: Option<String>,
    /// `tool.execute.after`: the arguments the tool ran with.
    #[serde(default)]
    pub args: Option<Value>,
}

/// OpenCode, through hookbox's plugin.
pub struct OpenCode;

/// Where a result's text is: `output` (built-in tools) or `content` (MCP).
fn result_field(output: &Value) -> Option<(&'static str, &Value)> {
    match (output.get("output"), output.get("content")) {
        (Some(text @ Value::String(_)), _) => Some(("output", text)),
        (_, Some(content @ Value::Array(_))) => Some(("content", content)),
        _ => None,
    }
}

impl Protocol for OpenCode {
    const NAME: &'static str = "opencode";
    type Input = HookInput;

    fn unreadable(_input: &[u8], reason: &str) -> Reply {
        block(reason)
    }

    fn session(input: &HookInput) -> Session {
        Session {
            id: input.input.session_id.clone(),
            subagent: None,
        }
    }

    fn event(input: &HookInput) -> Result<Option<StepEvent>, String> {
        let call = &input.input;
        let tool = || {
            call.tool
                .as_deref()
                .ok_or_else(|| format!("{} without input.tool", input.hook))
        };
        let id = call.call_id.as_deref();
        Ok(Some(match input.hook.as_str() {
            "tool.execute.before" => tool_call(tool()?, id, args(input.output.get("args")))?,
            "tool.execute.after" => {
                let (_, result) = result_field(&input.output).ok_or_else(|| {
                    format!("{} without output.output or output.content", input.hook)
                })?;
                tool_result(
                    tool()?,
                    id,
                    args(call.args.as_ref()),
                    result,
                    ToolOutcome::Success,
                )
            }
            _ => return Ok(None),
        }))
    }

    fn neutral(_input: &HookInput) -> Reply {
        Reply::json(json!({}))
    }

    fn answer(input: &HookInput, decision: Decision, _options: &Options) -> Reply {
        let by = decision.by().to_string();
        let hook = input.hook.as_str();
        match (hook, decision.flow) {
            (_, Flow::Continue) => Reply::json(json!({})),
            ("tool.execute.before", Flow::Skip(reason)) => block(&reason),
            ("tool.execute.before", Flow::RewriteArgs(args)) => match rewritten_args(&args, &by) {
                Ok(args) => Reply::json(json!({ "args": args })),
                Err(reason) => block(&reason),
            },
            ("tool.execute.after", Flow::RewriteResult(text)) => {
                rewritten_result(input, &text, &by)
            }
            (_, flow) => block(&format!(
                "hookbox: {by} answered `{}` to {hook}, which an OpenCode plugin cannot do; blocked",
                flow.name()
            )),
        }
    }

    fn fail(_input: &HookInput, reason: &str) -> Reply {
        block(reason)
    }
}

/// A guard's rewrite of a result, in the result's own field and shape; a
/// bash result's `metadata.output` (what OpenCode shows of it) follows.
fn rewritten_result(input: &HookInput, text: &str, by: &str) -> Reply {
    let Some((field, original)) = result_field(&input.output) else {
        return block("hookbox: the tool's result has no output to rewrite; withheld");
    };
    let value = match reshape(original, text) {
        Ok(value) => value,
        Err(why) => {
            return block(&format!(
                "hookbox: {by} rewrote this tool's output, but {why}; withheld"
            ));
        }
    };
    let mut result = serde_json::Map::new();
    result.insert(field.to_owned(), value.clone());
    if let Some(Value::Object(metadata)) = input.output.get("metadata")
        && metadata.get(field).is_some_and(Value::is_string)
    {
        let mut metadata = metadata.clone();
        metadata.insert(field.to_owned(), value);
        result.insert("metadata".to_owned(), Value::Object(metadata));
    }
    Reply::json(json!({ "result": result }))
}

/// `{"block": reason}`: the plugin throws `reason`, which OpenCode hands
/// the model as the tool's result.
fn block(reason: &str) -> Reply {
    Reply::json(json!({ "block": reason }))
}
