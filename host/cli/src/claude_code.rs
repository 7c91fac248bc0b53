//! `hookbox claude-code`: a Claude Code command hook. The hook input on
//! stdin, the plugin directory's answer on stdout and in the exit code; the
//! mapping itself is `hookbox_agents::claude_code`.

use std::io::{Read, Write};
use std::path::Path;
use std::process::ExitCode;

use hookbox_agents::claude_code::{self, Answer, HookInput};

pub(crate) fn run(dir: &Path) -> ExitCode {
    let mut input = Vec::new();
    let answer = match std::io::stdin().read_to_end(&mut input) {
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

/// The whole hook: input in, answer out. Every failure is a block.
fn answer(dir: &Path, input: &[u8]) -> Answer {
    let mapped = HookInput::parse(input)
        .and_then(|input| claude_code::to_event(&input).map(|event| (input, event)));
    let (input, event) = match mapped {
        Ok(mapped) => mapped,
        Err(reason) => return Answer::Block(reason),
    };
    let runtime = match crate::runtime() {
        Ok(runtime) => runtime,
        Err(e) => return Answer::Block(format!("hookbox: {e:#}")),
    };
    let loaded = match hookbox::directory::load(&runtime, dir) {
        Ok(loaded) => loaded,
        Err(e) => return Answer::Block(format!("hookbox: {e}")),
    };
    let session = input.session_id.as_deref().unwrap_or("claude-code");
    let mut run = loaded.stack.start_run(session);
    claude_code::answer(&input.hook_event_name, run.step(&event))
}
