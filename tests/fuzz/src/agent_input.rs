//! Each coding agent's hook input, whatever it holds, under every kind of
//! answer the stack can give: the adapter answers with an exit code the
//! agent knows and JSON it can read, and never panics.

use hookbox::{Cause, Decision, FailClosed, Flow, Outcome};
use hookbox_agents::{Options, Protocol, Reply, handle};

fn outcome(choice: u8) -> Result<Outcome, String> {
    let flow = match choice % 9 {
        0 => Flow::Continue,
        1 => Flow::Skip("skipped by the fuzzer".into()),
        2 => Flow::Terminate("terminated by the fuzzer".into()),
        3 => Flow::RewriteArgs(r#"{"command":"echo hi","file_path":"/tmp/x"}"#.into()),
        4 => Flow::RewriteResult("[redacted]".into()),
        5 => Flow::Fail,
        6 => {
            return Ok(Err(FailClosed::new(
                &"fuzz-guard".into(),
                Cause::Deadline,
                "still running after its deadline",
            )));
        }
        7 => return Err("the session store is unavailable".into()),
        _ => Flow::Repair("Bash".into()),
    };
    Ok(Ok(Decision::new(flow)))
}

fn answer<P: Protocol>(input: &[u8], options: &Options, choice: u8) -> Reply {
    handle::<P>(input, options, |_, _| outcome(choice).map_err(Into::into))
}

/// Checks the property for one input; panics where it does not hold.
pub fn check(data: &[u8]) {
    let [agent, choice, grant, input @ ..] = data else {
        return;
    };
    let options = Options {
        rewrites_grant: grant & 1 == 1,
        subagents_share_state: grant & 2 == 2,
    };
    use hookbox_agents::*;
    let reply = match agent % 7 {
        0 => answer::<claude_code::ClaudeCode>(input, &options, *choice),
        1 => answer::<codex::Codex>(input, &options, *choice),
        2 => answer::<gemini::Gemini>(input, &options, *choice),
        3 => answer::<cursor::Cursor>(input, &options, *choice),
        4 => answer::<copilot::Copilot>(input, &options, *choice),
        5 => answer::<cline::Cline>(input, &options, *choice),
        _ => answer::<windsurf::Windsurf>(input, &options, *choice),
    };
    assert!(
        matches!(reply.exit_code, 0 | 2),
        "exit code {}",
        reply.exit_code
    );
    if let Some(stdout) = &reply.stdout {
        assert!(stdout.is_object(), "stdout is not a JSON object: {stdout}");
    }
}
