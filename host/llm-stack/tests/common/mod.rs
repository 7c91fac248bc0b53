//! What both of hookbox-llm-stack's test files use: a scripted model, what
//! it was sent, how a loop stopped.

#![allow(dead_code, reason = "each test binary uses its own part")]
#![allow(clippy::result_large_err, reason = "llm-stack's own error type")]

use std::sync::Arc;

use hookbox::{EventKind, Stopped};
use llm_stack::mock::MockProvider;
use llm_stack::test_helpers::mock_for;
use llm_stack::tool::ToolLoopResult;
use llm_stack::{ChatResponse, LlmError};

/// llm-stack's mock provider, answering `script` in order.
pub fn model(script: Vec<ChatResponse>) -> Arc<MockProvider> {
    let mock = mock_for("mock", "mock-model");
    for response in script {
        mock.queue_response(response);
    }
    Arc::new(mock)
}

/// Everything the model was sent on call `n`, as JSON text.
pub fn sent(model: &MockProvider, n: usize) -> String {
    serde_json::to_string(&model.recorded_calls()[n]).unwrap()
}

/// The hookbox stop behind `err`.
pub fn stopped(err: LlmError) -> Stopped {
    hookbox_llm_stack::stopped(&err).unwrap_or_else(|| panic!("not a hookbox stop: {err:?}"))
}

/// The hookbox stop that ended `result`.
pub fn stop_of(result: Result<ToolLoopResult, LlmError>) -> Stopped {
    stopped(result.expect_err("the loop stopped"))
}

/// The puppet's terminate at `event`.
pub fn terminated(event: EventKind, reason: &str) -> Stopped {
    Stopped::Terminated {
        plugin: "puppet".into(),
        event,
        reason: reason.into(),
    }
}
