//! Every mapped event of every agent × every flow a stack can answer, and a
//! stack that failed closed: continue is the agent's neutral answer, and
//! nothing else ever is. A guard's refusal, a rewrite the agent cannot take,
//! a flow the event does not honour: each must reach the agent as a
//! decision, never as the silence (or the exit code) it reads as "go ahead".

use std::sync::Arc;

use hookbox::{Cause, Decision, Document, FailClosed, Flow, RequestPatch};
use hookbox_agents::claude_code::ClaudeCode;
use hookbox_agents::cline::Cline;
use hookbox_agents::codex::Codex;
use hookbox_agents::copilot::Copilot;
use hookbox_agents::cursor::Cursor;
use hookbox_agents::gemini::Gemini;
use hookbox_agents::opencode::OpenCode;
use hookbox_agents::windsurf::Windsurf;
use hookbox_agents::{Options, Protocol, Reply, Unasked, handle};
use serde_json::json;

fn flows() -> Vec<Flow> {
    let context = RequestPatch {
        extra_context: Some(vec![Document {
            id: "d".into(),
            text: "t".into(),
        }]),
        ..Default::default()
    };
    let other = RequestPatch {
        temperature: Some(0.1),
        ..Default::default()
    };
    vec![
        Flow::terminate("stop"),
        Flow::skip("no"),
        Flow::rewrite_args(r#"{"command":"ls"}"#),
        Flow::rewrite_args("[1]"),
        Flow::rewrite_result("[REDACTED]"),
        Flow::rewrite_result(
            r#"{"stdout":"[REDACTED]","stderr":"","interrupted":false,"isImage":false}"#,
        ),
        Flow::PatchRequest(context),
        Flow::PatchRequest(other),
        Flow::Fail,
        Flow::retry("again"),
        Flow::repair("other"),
    ]
}

/// The agent's neutral answer: what a hook that says nothing gives.
fn neutral<P: Protocol>(input: &[u8]) -> Reply {
    handle::<P>(input, &Options::default(), |_, _| {
        Ok(Ok(Decision::new(Flow::Continue)))
    })
}

fn check<P: Protocol>(inputs: &[serde_json::Value]) {
    for input in inputs {
        let bytes = input.to_string().into_bytes();
        let quiet = neutral::<P>(&bytes);
        let mut answers = Vec::new();
        for flow in flows() {
            let name = flow.name();
            let reply = handle::<P>(&bytes, &Options::default(), |_, _| {
                Ok(Ok(Decision::new(flow.clone())))
            });
            answers.push((name.to_owned(), reply));
        }
        let failed = handle::<P>(&bytes, &Options::default(), |_, _| {
            Ok(Err(FailClosed::new(
                &Arc::from("g"),
                Cause::Trap,
                "trapped",
            )))
        });
        answers.push(("failed closed".into(), failed));
        let broken = handle::<P>(&bytes, &Options::default(), |_, _| Err("no plugins".into()));
        answers.push(("cannot load".into(), broken));
        // A session store that is down blocks every step the agent lets a
        // hook block (the one Claude Code step that cannot be blocked gets
        // no opinion: see below).
        let unblockable =
            P::NAME == ClaudeCode::NAME && input["hook_event_name"] == "PostToolUseFailure";
        if !unblockable {
            let no_state = handle::<P>(&bytes, &Options::default(), |_, _| {
                Err(Unasked::NoState("session state in redis://x: down".into()))
            });
            answers.push(("session state unavailable".into(), no_state));
        }
        for (what, reply) in answers {
            let same_as_silence =
                reply.exit_code == quiet.exit_code && reply.stdout == quiet.stdout;
            assert!(
                !same_as_silence,
                "{}: {what} on {input} answered like continue: {reply:?}",
                P::NAME
            );
        }
    }
}

#[test]
fn claude_code_never_fails_open() {
    let base = json!({"session_id": "s", "transcript_path": "/t", "cwd": "/w", "tool_name": "Bash",
                      "tool_input": {"command": "ls"}, "tool_use_id": "t"});
    let with = |fields: serde_json::Value| {
        let mut input = base.clone();
        input
            .as_object_mut()
            .unwrap()
            .extend(fields.as_object().unwrap().clone());
        input
    };
    check::<ClaudeCode>(&[
        with(json!({"hook_event_name": "PreToolUse"})),
        with(json!({"hook_event_name": "PermissionRequest"})),
        with(json!({"hook_event_name": "PostToolUse",
                    "tool_response": {"stdout": "x", "stderr": "", "interrupted": false, "isImage": false}})),
        with(json!({"hook_event_name": "PostToolUseFailure", "error": "exit 1"})),
        with(json!({"hook_event_name": "UserPromptSubmit", "prompt": "hi"})),
    ]);
}

/// A step Claude Code cannot refuse (`PostToolUseFailure`, whose error text
/// may hold a secret no guard has read) is not waved through when the
/// session's state is unavailable: it is Claude's stop, as a guard's
/// rewrite of it would be.
#[test]
fn a_claude_code_step_that_cannot_be_refused_is_claude_s_stop_when_its_state_is_unavailable() {
    let input = json!({"session_id": "s", "transcript_path": "/t", "cwd": "/w", "tool_name": "Bash",
                       "tool_input": {"command": "ls"}, "tool_use_id": "t",
                       "hook_event_name": "PostToolUseFailure", "error": "exit 1"});
    let reply = handle::<ClaudeCode>(input.to_string().as_bytes(), &Options::default(), |_, _| {
        Err(Unasked::NoState("session state in redis://x: down".into()))
    });
    assert_eq!(reply.exit_code, 0);
    let answer = reply.stdout.expect("an answer, not silence");
    assert_eq!(answer["continue"], false, "{answer}");
    assert!(
        answer["stopReason"]
            .as_str()
            .unwrap()
            .contains("redis://x: down")
    );
}

#[test]
fn codex_never_fails_open() {
    let base = |event: &str| {
        json!({"session_id": "s", "turn_id": "1", "cwd": "/w", "hook_event_name": event,
                                    "tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "t",
                                    "tool_response": "x", "prompt": "hi"})
    };
    check::<Codex>(
        &[
            "PreToolUse",
            "PermissionRequest",
            "PostToolUse",
            "UserPromptSubmit",
        ]
        .map(base),
    );
}

#[test]
fn gemini_never_fails_open() {
    let base = |event: &str| {
        json!({"session_id": "s", "cwd": "/w", "hook_event_name": event,
                                    "tool_name": "run_shell_command", "tool_input": {"command": "ls"},
                                    "tool_response": {"llmContent": "x", "returnDisplay": "x"}, "prompt": "hi"})
    };
    check::<Gemini>(&["BeforeTool", "AfterTool", "BeforeAgent"].map(base));
}

#[test]
fn cursor_never_fails_open() {
    let base = |event: &str| {
        json!({"conversation_id": "c", "hook_event_name": event, "tool_name": "MCP:x",
                                    "tool_input": {"command": "ls"}, "tool_output": "{\"a\":1}", "command": "ls",
                                    "file_path": "/w/a", "content": "x", "prompt": "hi"})
    };
    check::<Cursor>(
        &[
            "preToolUse",
            "beforeShellExecution",
            "beforeMCPExecution",
            "beforeReadFile",
            "postToolUse",
            "beforeSubmitPrompt",
        ]
        .map(base),
    );
}

#[test]
fn copilot_never_fails_open() {
    let base = |event: &str| {
        json!({"sessionId": "s", "cwd": "/w", "hookEventName": event, "toolName": "bash",
                                    "toolArgs": "{\"command\":\"ls\"}",
                                    "toolResult": {"resultType": "success", "textResultForLlm": "x"}})
    };
    check::<Copilot>(&["preToolUse", "permissionRequest", "postToolUse"].map(base));
}

#[test]
fn cline_never_fails_open() {
    let payload = json!({"toolName": "execute_command", "parameters": {"command": "ls"}, "result": "x", "success": true});
    check::<Cline>(&[
        json!({"hookName": "PreToolUse", "taskId": "t", "preToolUse": payload}),
        json!({"hookName": "PostToolUse", "taskId": "t", "postToolUse": payload}),
        json!({"hookName": "UserPromptSubmit", "taskId": "t", "userPromptSubmit": {"prompt": "hi"}}),
    ]);
}

#[test]
fn codex_never_answers_with_an_empty_reason_it_would_ignore() {
    let call = json!({"session_id": "s", "turn_id": "1", "cwd": "/w", "hook_event_name": "PreToolUse",
                      "tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "t",
                      "tool_response": "x"});
    let reply = handle::<Codex>(call.to_string().as_bytes(), &Options::default(), |_, _| {
        Ok(Ok(Decision::new(Flow::skip(""))))
    });
    let reason = &reply.stdout.unwrap()["hookSpecificOutput"]["permissionDecisionReason"];
    assert!(!reason.as_str().unwrap().trim().is_empty(), "{reason}");
    let mut result = call.clone();
    result["hook_event_name"] = "PostToolUse".into();
    let reply = handle::<Codex>(
        result.to_string().as_bytes(),
        &Options::default(),
        |_, _| Ok(Ok(Decision::new(Flow::rewrite_result("")))),
    );
    let reason = &reply.stdout.unwrap()["reason"];
    assert!(!reason.as_str().unwrap().trim().is_empty(), "{reason}");
}

#[test]
fn gemini_denies_a_rewrite_that_removes_an_argument_it_would_keep() {
    let call = json!({"session_id": "s", "cwd": "/w", "hook_event_name": "BeforeTool", "tool_name": "search",
                      "tool_input": {"q": "x", "include_secrets": true}});
    let reply = handle::<Gemini>(call.to_string().as_bytes(), &Options::default(), |_, _| {
        Ok(Ok(Decision::new(Flow::rewrite_args(r#"{"q":"x"}"#))))
    });
    let answer = reply.stdout.unwrap();
    assert_eq!(answer["decision"], "deny", "{answer}");
    assert!(
        answer["reason"]
            .as_str()
            .unwrap()
            .contains("include_secrets"),
        "{answer}"
    );
}

#[test]
fn windsurf_never_fails_open() {
    let base = |event: &str| {
        json!({"agent_action_name": event, "trajectory_id": "t", "execution_id": "e",
               "timestamp": "2026-12-01T10:00:00Z", "tool_info": {
                   "command_line": "ls", "cwd": "/w", "file_path": "/w/a", "edits": [],
                   "mcp_server_name": "s", "mcp_tool_name": "t", "mcp_tool_arguments": {"a": 1},
                   "mcp_result": "x", "user_prompt": "hi"}})
    };
    check::<Windsurf>(
        &[
            "pre_run_command",
            "pre_read_code",
            "pre_write_code",
            "pre_mcp_tool_use",
            "post_mcp_tool_use",
            "pre_user_prompt",
        ]
        .map(base),
    );
}

#[test]
fn opencode_never_fails_open() {
    let session =
        json!({"tool": "bash", "sessionID": "s", "callID": "c", "args": {"command": "ls"}});
    check::<OpenCode>(&[
        json!({"hook": "tool.execute.before", "input": session, "output": {"args": {"command": "ls"}}}),
        json!({"hook": "tool.execute.after", "input": session,
               "output": {"title": "ls", "output": "a\nb", "metadata": {"output": "a\nb"}}}),
        json!({"hook": "tool.execute.after", "input": session,
               "output": {"content": [{"type": "text", "text": "x"}]}}),
    ]);
}
