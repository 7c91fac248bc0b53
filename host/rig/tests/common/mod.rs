//! What both of hookbox-rig's test files use: a recording tool, what the
//! model was sent, how a run stopped.

#![allow(dead_code, reason = "each test binary uses its own part")]

use std::sync::{Arc, Mutex};

use hookbox::{EventKind, Stopped};
use rig_agent::completion::PromptError;
use rig_agent::test_utils::MockCompletionModel;
use rig_core::completion::message::ToolName;
use rig_core::tool::{DynamicTool, ToolOutput};
use serde_json::{Value, json};

/// A tool that records the arguments it ran with and answers `output`.
pub fn tool(name: &str, output: ToolOutput) -> (DynamicTool, Arc<Mutex<Vec<Value>>>) {
    let calls = Arc::new(Mutex::new(Vec::new()));
    let seen = calls.clone();
    let tool = DynamicTool::new(
        ToolName::new(name).unwrap(),
        "a test tool",
        json!({"type": "object"}),
        move |args| {
            seen.lock().unwrap().push(args);
            let output = output.clone();
            Box::pin(async move { Ok(output) })
        },
    );
    (tool, calls)
}

/// Everything the model was sent on call `n` (history and documents), as
/// JSON text.
pub fn sent(model: &MockCompletionModel, n: usize) -> String {
    let request = &model.requests()[n];
    serde_json::to_string(&(&request.chat_history, &request.documents)).unwrap()
}

/// The hookbox stop behind `err`.
pub fn stopped(err: PromptError) -> Stopped {
    hookbox_rig::stopped(&err).unwrap_or_else(|| panic!("not a hookbox stop: {err:?}"))
}

/// The hookbox stop that ended `result`.
pub fn stop_of(result: Result<impl std::fmt::Debug, PromptError>) -> Stopped {
    stopped(result.expect_err("the run stopped"))
}

/// The puppet's terminate at `event`.
pub fn terminated(event: EventKind, reason: &str) -> Stopped {
    Stopped::Terminated {
        plugin: "puppet".into(),
        event,
        reason: reason.into(),
    }
}
