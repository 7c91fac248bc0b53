//! `hookbox claude-code`: a Claude Code command hook. It reads the hook's
//! JSON on stdin, maps it to an event, asks the plugin directory's stack,
//! and answers in Claude Code's output JSON and exit codes.
//!
//! | Claude Code event | hookbox event | answers |
//! |---|---|---|
//! | `PreToolUse` | `tool-call` (`tool_input` as the arguments, `tool_use_id` as the call id) | continue → exit 0, no output; skip → `permissionDecision: deny` with the reason; rewrite-args → `allow` with `updatedInput`; terminate → `continue: false` with the reason, and deny |
//! | `PostToolUse` | `tool-result` (`tool_response` as the result) | continue → exit 0; rewrite-result → exit 2, the rewritten result on stderr (Claude Code cannot replace a tool's output); terminate → `continue: false` |
//! | `UserPromptSubmit` | `completion-call` | continue → exit 0; a patch of only extra-context → `additionalContext`; any other patch → exit 2 (not expressible); terminate → `decision: block` |
//!
//! Whatever cannot be expressed, a fail-closed stack, a malformed input or
//! an event it does not handle blocks: exit 2, the diagnostic on stderr.
//! Never allow by default.

use std::io::{Read, Write};
use std::path::Path;
use std::process::ExitCode;

use serde_json::{Value, json};

use crate::event::{CompletionCall, StepEvent, ToolCall, ToolResult};
use crate::flow::Flow;

/// What to tell Claude Code.
#[derive(Debug, PartialEq)]
pub(crate) enum Answer {
    /// Exit 0, and this JSON on stdout when there is one.
    Reply(Option<Value>),
    /// Exit 2: Claude Code blocks and shows this to Claude.
    Block(String),
}

pub(crate) fn run(dir: &Path) -> ExitCode {
    let mut input = String::new();
    let answer = match std::io::stdin().read_to_string(&mut input) {
        Ok(_) => answer(dir, &input),
        Err(e) => Answer::Block(format!("hookbox: cannot read the hook input: {e}")),
    };
    match answer {
        Answer::Reply(None) => ExitCode::SUCCESS,
        Answer::Reply(Some(json)) => {
            let _ = writeln!(std::io::stdout().lock(), "{json}");
            ExitCode::SUCCESS
        }
        Answer::Block(reason) => {
            let _ = writeln!(std::io::stderr().lock(), "{reason}");
            ExitCode::from(2)
        }
    }
}

/// The whole hook: input JSON in, answer out.
pub(crate) fn answer(dir: &Path, input: &str) -> Answer {
    let (hook, name, event) = match parse(input.as_bytes()) {
        Ok(parsed) => parsed,
        Err(reason) => return Answer::Block(reason),
    };
    let runtime = match super::runtime() {
        Ok(runtime) => runtime,
        Err(e) => return Answer::Block(format!("hookbox: {e:#}")),
    };
    let loaded = match crate::directory::load(&runtime, dir) {
        Ok(loaded) => loaded,
        Err(e) => return Answer::Block(format!("hookbox: {e}")),
    };
    let session = hook["session_id"].as_str().unwrap_or("claude-code");
    let mut run = loaded.stack.start_run(session);
    decide(&mut run, &name, event)
}

/// Asks `run` about one mapped event and words the answer.
pub(crate) fn decide(run: &mut crate::Run, name: &str, event: StepEvent) -> Answer {
    let ctx = run.context(1);
    match run.dispatch(&ctx, &event) {
        Err(failure) => Answer::Block(format!(
            "hookbox: blocked, the guard failed closed: {failure}"
        )),
        Ok(decision) => reply(name, decision.flow, decision.plugin.as_deref()),
    }
}

/// Parses a hook input: its event name and the mapped event.
///
/// # Errors
/// A message for Claude Code, when the input cannot be mapped.
pub(crate) fn parse(input: &[u8]) -> Result<(Value, String, StepEvent), String> {
    let hook: Value = serde_json::from_slice(input)
        .map_err(|e| format!("hookbox: the hook input is not JSON: {e}"))?;
    let name = hook["hook_event_name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let event = to_event(&name, &hook).map_err(|reason| format!("hookbox: {reason}"))?;
    Ok((hook, name, event))
}

/// The answer for an HTTP hook, which cannot exit 2: a block becomes the
/// event's own way of refusing.
pub(crate) fn http_reply(name: &str, answer: Answer) -> Value {
    match answer {
        Answer::Reply(Some(json)) => json,
        Answer::Reply(None) => json!({}),
        Answer::Block(reason) => match name {
            "PreToolUse" => json!({
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "deny",
                    "permissionDecisionReason": reason,
                }
            }),
            "PostToolUse" | "UserPromptSubmit" => json!({"decision": "block", "reason": reason}),
            _ => json!({"continue": false, "stopReason": reason}),
        },
    }
}

fn to_event(name: &str, hook: &Value) -> Result<StepEvent, String> {
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let tool_name = || {
        hook["tool_name"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| format!("{name} input without a tool_name"))
    };
    let id = hook["tool_use_id"].as_str().map(str::to_owned);
    let args = match &hook["tool_input"] {
        Value::Null => "{}".to_owned(),
        input => input.to_string(),
    };
    Ok(match name {
        "PreToolUse" => StepEvent::ToolCall(ToolCall {
            tool_name: tool_name()?,
            internal_call_id: id.clone().unwrap_or_default(),
            tool_call_id: id,
            args,
        }),
        "PostToolUse" => StepEvent::ToolResult(ToolResult {
            tool_name: tool_name()?,
            internal_call_id: id.clone().unwrap_or_default(),
            tool_call_id: id,
            args,
            result: text(&hook["tool_response"]),
            extensions: "{}".into(),
            ..Default::default()
        }),
        "UserPromptSubmit" => StepEvent::CompletionCall(CompletionCall {
            prompt: hook["prompt"]
                .as_str()
                .ok_or("UserPromptSubmit input without a prompt")?
                .to_owned(),
            history: Vec::new(),
            turn: 1,
        }),
        "" => return Err("the input has no hook_event_name".into()),
        other => {
            return Err(format!(
                "`{other}` is not handled (PreToolUse, PostToolUse, UserPromptSubmit are); remove this hook from that event"
            ));
        }
    })
}

fn reply(name: &str, flow: Flow, plugin: Option<&str>) -> Answer {
    let by = plugin.unwrap_or("hookbox");
    match (name, flow) {
        (_, Flow::Continue) => Answer::Reply(None),
        ("PreToolUse", Flow::Skip(reason)) => Answer::Reply(Some(json!({
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": reason,
            }
        }))),
        ("PreToolUse", Flow::RewriteArgs(args)) => match serde_json::from_str::<Value>(&args) {
            Ok(input) => Answer::Reply(Some(json!({
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "allow",
                    "permissionDecisionReason": format!("arguments rewritten by {by}"),
                    "updatedInput": input,
                }
            }))),
            Err(e) => Answer::Block(format!(
                "hookbox: {by} rewrote the arguments into non-JSON: {e}"
            )),
        },
        ("PreToolUse", Flow::Terminate(reason)) => Answer::Reply(Some(json!({
            "continue": false,
            "stopReason": reason,
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": reason,
            }
        }))),
        ("PostToolUse", Flow::RewriteResult(result)) => Answer::Block(format!(
            "hookbox: {by} withheld this tool's output (Claude Code cannot replace it). Use this instead:\n{result}"
        )),
        ("PostToolUse", Flow::Terminate(reason)) => Answer::Reply(Some(json!({
            "continue": false,
            "stopReason": reason,
        }))),
        ("UserPromptSubmit", Flow::Terminate(reason)) => Answer::Reply(Some(json!({
            "decision": "block",
            "reason": reason,
        }))),
        ("UserPromptSubmit", Flow::PatchRequest(patch)) => {
            let only_context = crate::flow::RequestPatch {
                extra_context: patch.extra_context.clone(),
                ..Default::default()
            } == patch;
            match patch.extra_context.filter(|_| only_context) {
                Some(documents) => {
                    let context: Vec<String> = documents
                        .iter()
                        .map(|d| format!("<document id=\"{}\">\n{}\n</document>", d.id, d.text))
                        .collect();
                    Answer::Reply(Some(json!({
                        "hookSpecificOutput": {
                            "hookEventName": "UserPromptSubmit",
                            "additionalContext": context.join("\n\n"),
                        }
                    })))
                }
                None => Answer::Block(format!(
                    "hookbox: {by} patched the request in a way Claude Code hooks cannot express (only extra-context can be added); blocked"
                )),
            }
        }
        (_, flow) => Answer::Block(format!(
            "hookbox: {by} answered `{}` to {name}, which Claude Code hooks cannot express; blocked",
            flow.name()
        )),
    }
}
