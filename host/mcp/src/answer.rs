//! The stack's decisions in MCP's terms: pure functions from the verdict
//! on a guarded message (the [`hookbox_adapter::Door`]'s, which built the
//! event and settled it) to what the proxy sends, so every rule is one row
//! here and one test below. The pumps ([`crate::proxy`]) only read and
//! write.
//!
//! | message | verdict | what the proxy sends |
//! |---|---|---|
//! | `tools/call` | run | the call to the server, with the arguments the verdict gives (the guards' canonical form, or a rewrite) |
//! | `tools/call` | skip | the client a tool result marked `isError` carrying the reason (tagged `resultType: "complete"` for a 2026-07-28 call); the server never sees the call |
//! | `tools/call` | refuse (a rewrite that is not an object) | the client a JSON-RPC error (`-32001`) saying so; the session goes on |
//! | `tools/call` | stop | the client a JSON-RPC error (`-32001`) naming the plugin and why; every later call of the session gets the same |
//! | a call's result | keep | the result as the server wrote it (completed for a bridged 2026-07-28 call), or its JSON-RPC error as it came |
//! | a call's result | keep, but it is an `input_required` result to a handshake-era call | a JSON-RPC error: that client cannot be asked for input |
//! | a call's result | replace | the client the guard's whole result (an object with `content`), else its text as the only content ([`rewritten_result`]); a JSON-RPC error stays one, with the guard's text as its message |
//! | a call's result | stop | a JSON-RPC error naming the plugin and why |
//! | a retry's `inputResponses` | keep | the answers to the server as they came |
//! | a retry's `inputResponses` | replace with an object | the rewrite to the server |
//! | a retry's `inputResponses` | replace with anything else, or stop | the retry refused with a JSON-RPC error saying why |

use hookbox::Stopped;
use hookbox_adapter::shape::result_text;
use hookbox_adapter::verdict::{Call, Reading};
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::bridge;
use crate::message::{self, Era, code};

/// What the proxy does with a `tools/call`.
#[derive(Debug, PartialEq)]
pub(crate) enum CallAnswer {
    /// Forward it with these arguments (canonical JSON object text).
    Forward(String),
    /// Answer the client with this line; the server never sees the call.
    Reply(String),
}

/// The answer to the `tools/call` `id` (of `era`) whose arguments the
/// guards saw as `asked`, from the stack's outcome.
pub(crate) fn call(verdict: Call, id: &RawValue, era: Era) -> CallAnswer {
    match verdict {
        Call::Run { args, .. } => CallAnswer::Forward(args),
        Call::Skip { reason, .. } => {
            CallAnswer::Reply(message::response(id, &message::tool_error(&reason, era)))
        }
        Call::Refuse { why, .. } => {
            CallAnswer::Reply(message::error(Some(id), code::REFUSED, &why))
        }
        Call::Stop(stop) => CallAnswer::Reply(stopped(id, &stop)),
    }
}

/// What the server answered a forwarded call, as the proxy read it.
#[derive(Debug)]
pub(crate) struct Answered {
    /// Its result object, or its JSON-RPC error object.
    pub reply: Result<Value, Value>,
    /// The call's revision.
    pub era: Era,
}

impl Answered {
    /// Whether the result asks the client for input (a 2026-07-28
    /// `input_required` result).
    pub fn asks(&self) -> bool {
        self.reply
            .as_ref()
            .is_ok_and(|r| r.get("resultType").and_then(Value::as_str) == Some("input_required"))
    }
}

/// The line the client gets for the call `id`'s result, from the stack's
/// outcome.
pub(crate) fn result(
    reading: Result<Reading, Stopped>,
    answered: Answered,
    id: &RawValue,
) -> String {
    let asks = answered.asks();
    let era = answered.era;
    let reading = match reading {
        Ok(reading) => reading,
        Err(stop) => return stopped(id, &stop),
    };
    match (reading, answered.reply) {
        // Only a client of the revision can answer a tool's questions.
        (Reading::Keep, Ok(_)) if asks && era == Era::Handshake => message::error(
            Some(id),
            code::REFUSED,
            "hookbox: the tool asks for input (an MCP 2026-07-28 input_required result), which this client, on an older revision of MCP, cannot be asked; use a client on 2026-07-28",
        ),
        (Reading::Keep, Ok(mut result)) => {
            if era == Era::Stateless {
                bridge::complete(&mut result, "tools/call");
            }
            message::response(id, &result)
        }
        (Reading::Keep, Err(error)) => message::error_object(id, error),
        (Reading::Replace { with, .. }, Ok(original)) => {
            message::response(id, &rewritten_result(&original, &result_text(&with), era))
        }
        // A JSON-RPC error stays one, saying what the guard wrote.
        (Reading::Replace { with, .. }, Err(_)) => {
            message::error(Some(id), code::REFUSED, &result_text(&with))
        }
    }
}

/// What the server gets as a retry's `inputResponses`, from the stack's
/// outcome about `answers`.
///
/// # Errors
/// Why the retry is refused: the text of the JSON-RPC error the client
/// gets.
pub(crate) fn answers(reading: Result<Reading, Stopped>, answers: &Value) -> Result<Value, String> {
    match reading {
        Ok(Reading::Keep) => Ok(answers.clone()),
        Ok(Reading::Replace { with, by, .. }) => {
            match serde_json::from_str::<Value>(&result_text(&with)) {
                Ok(rewritten) if rewritten.is_object() => Ok(rewritten),
                _ => Err(format!(
                    "hookbox: `{by}` rewrote the answers to something that is not a JSON object; the retry is refused"
                )),
            }
        }
        Err(stop) => Err(stop_text(&stop)),
    }
}

/// The error the client gets for a message of a run that `stop` ended.
fn stopped(id: &RawValue, stop: &Stopped) -> String {
    message::error(Some(id), code::REFUSED, &stop_text(stop))
}

/// Why a run's message is refused: the failure, or who ended the run.
pub(crate) fn stop_text(stop: &Stopped) -> String {
    let what = match stop {
        Stopped::FailedClosed(failure) => failure.to_string(),
        Stopped::Terminated { plugin, reason, .. } => {
            format!("`{plugin}` ended this session's run: {reason}")
        }
    };
    format!("hookbox: {what}; this session's later calls are refused too")
}

/// The result the client sees after a guard rewrote `original` to `text`:
/// a whole result when the guard wrote one (an object with `content`),
/// else `text` as the only content. Structured content the guard did not
/// write again is dropped, and the result then marked an error: a client
/// checking it against the tool's output schema must not take text for it.
/// It is final (`resultType: "complete"`) where the call's revision, or the
/// server's answer, tags results.
pub(crate) fn rewritten_result(original: &Value, text: &str, era: Era) -> Value {
    let mut result = match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(result)) if result.get("content").is_some_and(Value::is_array) => {
            Value::Object(result)
        }
        _ => {
            let failed = original.get("isError") == Some(&Value::Bool(true));
            let structured = original.get("structuredContent").is_some();
            json!({"content": [{"type": "text", "text": text}], "isError": failed || structured})
        }
    };
    let tagged = original.get("resultType").is_some();
    if tagged { Era::Stateless } else { era }.tag(&mut result);
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use hookbox::{Cause, Decision, EventKind, FailClosed, Flow, Outcome};
    use hookbox_adapter::verdict;
    use std::sync::Arc;

    /// The verdict the Door gives a call the stack answered with `outcome`.
    fn asked(outcome: Outcome, asked: &str) -> Call {
        verdict::tool_call(Stopped::settle(outcome, EventKind::ToolCall), asked.into())
    }

    /// What the Door gives a text result the stack answered with `outcome`.
    fn read(outcome: Outcome) -> Result<Reading, Stopped> {
        let returned = Value::String("the result".into());
        verdict::reading(Stopped::settle(outcome, EventKind::ToolResult), &returned)
    }

    fn id() -> Box<RawValue> {
        RawValue::from_string("7".into()).unwrap()
    }

    fn by(plugin: &str, flow: Flow) -> Outcome {
        Ok(Decision {
            plugin: Some(Arc::from(plugin)),
            ..Decision::new(flow)
        })
    }

    fn line(text: &str) -> Value {
        serde_json::from_str(text).unwrap()
    }

    /// The message of a JSON-RPC error line, after checking its code.
    fn refusal(text: &str) -> String {
        let line = line(text);
        assert_eq!(line["id"], 7, "{line}");
        assert_eq!(line["error"]["code"], code::REFUSED, "{line}");
        line["error"]["message"].as_str().unwrap().to_owned()
    }

    const ASKED: &str = r#"{"path":"/etc/passwd"}"#;

    fn reply(answer: CallAnswer) -> String {
        match answer {
            CallAnswer::Reply(line) => line,
            CallAnswer::Forward(args) => panic!("forwarded {args}"),
        }
    }

    // tools/call: one test per row.

    #[test]
    fn call_run_forwards_the_arguments_of_the_verdict() {
        let answer = call(
            asked(Ok(Decision::new(Flow::Continue)), ASKED),
            &id(),
            Era::Handshake,
        );
        assert_eq!(answer, CallAnswer::Forward(ASKED.into()));
        let jailed = r#"{"path":"/jail/etc/passwd"}"#;
        let answer = call(
            asked(by("jail", Flow::RewriteArgs(jailed.into())), ASKED),
            &id(),
            Era::Handshake,
        );
        assert_eq!(answer, CallAnswer::Forward(jailed.into()));
    }

    #[test]
    fn call_skip_answers_with_an_error_result_tagged_by_revision() {
        for (era, tagged) in [(Era::Handshake, false), (Era::Stateless, true)] {
            let text = reply(call(
                asked(by("deny", Flow::Skip("denied".into())), ASKED),
                &id(),
                era,
            ));
            let result = &line(&text)["result"];
            assert_eq!(result["isError"], true);
            assert_eq!(result["content"][0]["text"], "denied");
            assert_eq!(result.get("resultType").is_some(), tagged, "{result}");
        }
    }

    #[test]
    fn call_refuse_is_an_error_and_the_session_goes_on() {
        let text = reply(call(
            asked(by("odd", Flow::RewriteArgs("[1]".into())), ASKED),
            &id(),
            Era::Handshake,
        ));
        let message = refusal(&text);
        assert!(
            message.contains("`odd`") && message.contains("not a JSON object"),
            "{message}"
        );
        assert!(!message.contains("later calls"), "{message}");
    }

    #[test]
    fn call_stop_is_an_error_naming_the_plugin() {
        let text = reply(call(
            asked(by("guard", Flow::Terminate("no".into())), ASKED),
            &id(),
            Era::Handshake,
        ));
        let message = refusal(&text);
        assert!(
            message.contains("`guard` ended this session's run: no"),
            "{message}"
        );
        let failure = FailClosed::new(&Arc::from("trapper"), Cause::Trap, "boom");
        let message = refusal(&reply(call(
            asked(Err(failure), ASKED),
            &id(),
            Era::Handshake,
        )));
        assert!(
            message.contains("trapper") && message.contains("later calls are refused"),
            "{message}"
        );
    }

    // A call's result: one test per row.

    fn answered(reply: Result<Value, Value>, era: Era) -> Answered {
        Answered { reply, era }
    }

    #[test]
    fn result_keep_passes_it_completed_for_a_bridged_call() {
        let server = json!({"content": [{"type": "text", "text": "hi"}]});
        let plain = line(&result(
            read(Ok(Decision::new(Flow::Continue))),
            answered(Ok(server.clone()), Era::Handshake),
            &id(),
        ));
        assert_eq!(plain["result"], server);
        let bridged = line(&result(
            read(Ok(Decision::new(Flow::Continue))),
            answered(Ok(server), Era::Stateless),
            &id(),
        ));
        assert_eq!(bridged["result"]["resultType"], "complete");
        let error = json!({"code": -32000, "message": "tool broke"});
        let passed = line(&result(
            read(Ok(Decision::new(Flow::Continue))),
            answered(Err(error.clone()), Era::Handshake),
            &id(),
        ));
        assert_eq!(passed["error"], error);
    }

    #[test]
    fn result_keep_of_an_input_request_to_a_handshake_client_is_refused() {
        let asks = json!({"resultType": "input_required", "inputRequests": {}});
        let message = refusal(&result(
            read(Ok(Decision::new(Flow::Continue))),
            answered(Ok(asks), Era::Handshake),
            &id(),
        ));
        assert!(message.contains("input_required"), "{message}");
    }

    #[test]
    fn result_replace_is_the_guards_result_or_text() {
        let server = json!({"content": [{"type": "text", "text": "sk-live-1"}], "structuredContent": {"k": 1}});
        let text = line(&result(
            read(by("redact", Flow::RewriteResult("[redacted]".into()))),
            answered(Ok(server.clone()), Era::Handshake),
            &id(),
        ));
        assert_eq!(
            text["result"],
            json!({"content": [{"type": "text", "text": "[redacted]"}], "isError": true})
        );
        let whole = r#"{"content":[{"type":"text","text":"ok"}]}"#;
        let rewritten = line(&result(
            read(by("redact", Flow::RewriteResult(whole.into()))),
            answered(Ok(server), Era::Handshake),
            &id(),
        ));
        assert_eq!(rewritten["result"], line(whole));
        let error = json!({"code": -32000, "message": "sk-live-1"});
        let message = refusal(&result(
            read(by("redact", Flow::RewriteResult("[redacted]".into()))),
            answered(Err(error), Era::Handshake),
            &id(),
        ));
        assert_eq!(message, "[redacted]");
    }

    #[test]
    fn result_stop_is_an_error_naming_the_plugin() {
        let server = json!({"content": []});
        let message = refusal(&result(
            read(by("guard", Flow::Terminate("no".into()))),
            answered(Ok(server), Era::Handshake),
            &id(),
        ));
        assert!(
            message.contains("`guard` ended this session's run: no"),
            "{message}"
        );
    }

    // A retry's inputResponses: one test per row.

    #[test]
    fn answers_keep_passes_them() {
        let given = json!({"confirm": {"action": "accept"}});
        assert_eq!(
            answers(read(Ok(Decision::new(Flow::Continue))), &given),
            Ok(given)
        );
    }

    #[test]
    fn answers_replace_with_an_object_is_what_the_server_gets() {
        let given = json!({"confirm": {"action": "accept"}});
        let rewrite = r#"{"confirm":{"action":"decline"}}"#;
        assert_eq!(
            answers(read(by("g", Flow::RewriteResult(rewrite.into()))), &given),
            Ok(line(rewrite))
        );
    }

    #[test]
    fn answers_replace_with_anything_else_or_stop_refuses_the_retry() {
        let given = json!({});
        let odd = answers(read(by("g", Flow::RewriteResult("[1]".into()))), &given).unwrap_err();
        assert!(
            odd.contains("`g`") && odd.contains("retry is refused"),
            "{odd}"
        );
        let stop = answers(read(by("g", Flow::Terminate("no".into()))), &given).unwrap_err();
        assert!(stop.contains("`g` ended this session's run"), "{stop}");
    }
}
