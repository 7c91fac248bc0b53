//! The event half of a session: a `tools/call`, its result and a retry's
//! answers asked of the session's [`hookbox_adapter::Door`], and what the
//! proxy sends for each ([`crate::answer`]'s mapping). The pumps
//! ([`crate::proxy`]) only read and write.

use std::sync::atomic::Ordering;

use hookbox::{ToolError, ToolErrorKind, ToolOutcome};
use hookbox_adapter::verdict::{Call, Reading};
use hookbox_adapter::{Args, ToolUse};
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::answer::{self, Answered, CallAnswer};
use crate::bridge::Toward;
use crate::message::{self, Envelope, Era, code, id_key};
use crate::session::{Error, Guarded, Outstanding, Pending, Session, send};

/// A `tools/call`: a `tool-call` event; forwarded (as decided), answered
/// here, or refused.
pub(crate) async fn tool_call(
    session: &Session,
    params: Option<serde_json::Map<String, Value>>,
    id: &RawValue,
    line: &str,
    toward: &Toward,
    to_client: &mpsc::Sender<String>,
    to_server: &mpsc::Sender<String>,
) -> Result<(), Error> {
    let key = id_key(id);
    let answer_here = |text: String| {
        session.answered_here(key.clone());
        text
    };
    let Some(params) = params else {
        let refusal = message::error(
            Some(id),
            code::INVALID_PARAMS,
            "hookbox: tools/call needs params, an object",
        );
        return send(to_client, answer_here(refusal)).await;
    };
    let Some(name) = params.get("name").and_then(Value::as_str) else {
        let refusal = message::error(
            Some(id),
            code::INVALID_PARAMS,
            "hookbox: tools/call needs the tool's name",
        );
        return send(to_client, answer_here(refusal)).await;
    };
    if session.hidden.contains(name) {
        let refusal = message::error(
            Some(id),
            code::INVALID_PARAMS,
            &format!("Tool {name} not found"),
        );
        return send(to_client, answer_here(refusal)).await;
    }
    let arguments = params
        .get("arguments")
        .cloned()
        .unwrap_or_else(|| json!({}));
    if !arguments.is_object() {
        let refusal = message::error(
            Some(id),
            code::INVALID_PARAMS,
            "hookbox: a tool's arguments are an object",
        );
        return send(to_client, answer_here(refusal)).await;
    }
    let era = Era::of_request(&params);
    // What the guards see, and what the server gets: one canonical form.
    let internal_id = format!("mcp-{}", session.calls.fetch_add(1, Ordering::Relaxed));
    let call = ToolUse::new(name, Args::Json(arguments), Some(key.clone())).internal(&internal_id);
    let verdict = session
        .door
        .ask_tool_call(None, call, session.asking())
        .await
        .unwrap_or_else(Call::Stop);
    let forward_args = match answer::call(verdict, id, era) {
        CallAnswer::Forward(args) => args,
        CallAnswer::Reply(line) => return send(to_client, answer_here(line)).await,
    };
    // A 2026-07-28 retry's answers to the tool's questions are guarded too.
    let answers = match params.get("inputResponses") {
        None => None,
        Some(answers) => match guard_answers(session, name, &key, &forward_args, answers).await {
            Ok(answers) => Some(answers),
            Err(why) => {
                let refusal = message::error(Some(id), code::REFUSED, &why);
                return send(to_client, answer_here(refusal)).await;
            }
        },
    };
    // The message the server gets is rebuilt from what was read, with the
    // arguments the guards saw (or wrote): no duplicate key, no spelling
    // the server could read another way. Task augmentation is taken off:
    // a task's result would come back through `tasks/result`, past the
    // guards; without it the server answers the call itself.
    let value: Value = serde_json::from_str(&forward_args).unwrap_or_else(|_| json!({}));
    let outgoing = serde_json::from_str::<Value>(line)
        .ok()
        .and_then(|mut message| {
            let params = message.get_mut("params")?.as_object_mut()?;
            params.insert("arguments".into(), value);
            params.remove("task");
            if let Some(answers) = answers {
                params.insert("inputResponses".into(), answers);
            }
            toward.params(params);
            Some(message.to_string())
        });
    let Some(outgoing) = outgoing else {
        let refusal = message::error(
            Some(id),
            code::REFUSED,
            "hookbox: the call could not be read in full; refused",
        );
        return send(to_client, answer_here(refusal)).await;
    };
    session.outstanding().insert(
        key,
        Outstanding::Call(Pending {
            tool_name: name.to_owned(),
            call_id: id.get().to_owned(),
            internal_id,
            args: forward_args,
            era,
            kind: Guarded::Tool,
        }),
    );
    send(to_server, outgoing).await
}

/// What a client reads besides tools, each guarded as a tool named by its
/// method: the request is a `tool-call` (its params, without `_meta`, as
/// the arguments: a resource's `uri`, a prompt's `name` and `arguments`),
/// its result a `tool-result` whose rewrite keeps the result's structure
/// (a resource's `contents`, a prompt's `messages`). `subscriptions/listen`
/// is asked as a call (what it later names is read through
/// `resources/read`, guarded here).
pub(crate) const READS: [&str; 3] = ["resources/read", "prompts/get", "subscriptions/listen"];

/// A client's request as read.
pub(crate) struct Asked<'a> {
    pub(crate) method: &'a str,
    pub(crate) params: Option<serde_json::Map<String, Value>>,
    pub(crate) id: &'a RawValue,
    pub(crate) line: &'a str,
}

/// One of [`READS`]: a `tool-call` event; forwarded (its params as
/// decided), or refused with the guard's reason.
pub(crate) async fn read(
    session: &Session,
    asked: Asked<'_>,
    toward: &Toward,
    to_client: &mpsc::Sender<String>,
    to_server: &mpsc::Sender<String>,
) -> Result<(), Error> {
    let Asked {
        method,
        params,
        id,
        line,
    } = asked;
    let key = id_key(id);
    let refuse = |why: &str| {
        session.answered_here(key.clone());
        message::error(Some(id), code::REFUSED, why)
    };
    let era = params.as_ref().map_or(Era::Handshake, Era::of_request);
    let mut args = params.unwrap_or_default();
    let meta = args.remove("_meta");
    let internal_id = format!("mcp-{}", session.calls.fetch_add(1, Ordering::Relaxed));
    let call = ToolUse::new(method, Args::Json(Value::Object(args)), Some(key.clone()))
        .internal(&internal_id);
    let verdict = session
        .door
        .ask_tool_call(None, call, session.asking())
        .await
        .unwrap_or_else(Call::Stop);
    let forward_args = match verdict {
        Call::Run { args, .. } => args,
        Call::Skip { reason, by, .. } => {
            return send(to_client, refuse(&format!("hookbox: `{by}`: {reason}"))).await;
        }
        Call::Refuse { why, .. } => {
            return send(to_client, refuse(&format!("hookbox: {why}"))).await;
        }
        Call::Stop(stop) => return send(to_client, refuse(&answer::stop_text(&stop))).await,
    };
    // The server gets the params the guards saw (or wrote), with the
    // request's own `_meta`.
    let outgoing = serde_json::from_str::<Value>(line)
        .ok()
        .zip(serde_json::from_str::<serde_json::Map<String, Value>>(&forward_args).ok())
        .and_then(|(mut message, mut params)| {
            if let Some(meta) = meta {
                params.insert("_meta".into(), meta);
            }
            toward.params(&mut params);
            message
                .as_object_mut()?
                .insert("params".into(), Value::Object(params));
            Some(message.to_string())
        });
    let Some(outgoing) = outgoing else {
        let why = format!("hookbox: the {method} request could not be read in full; refused");
        return send(to_client, refuse(&why)).await;
    };
    let complete = matches!(toward, Toward::HandshakeServer);
    session.outstanding().insert(
        key,
        Outstanding::Call(Pending {
            tool_name: method.to_owned(),
            call_id: id.get().to_owned(),
            internal_id,
            args: forward_args,
            era,
            kind: Guarded::Read { complete },
        }),
    );
    send(to_server, outgoing).await
}

/// The `inputResponses` of a 2026-07-28 retry (the client's answers to the
/// questions of the tool's `input_required` result): a `tool-result` event
/// with the answers as its result and `{"mcp": {"inputResponses": true}}`
/// as its extensions. What the server gets, or why the retry is refused.
async fn guard_answers(
    session: &Session,
    tool: &str,
    key: &str,
    args: &str,
    answers: &Value,
) -> Result<Value, String> {
    if !answers.is_object() {
        return Err("hookbox: inputResponses is an object of answers by key; refused".into());
    }
    let call = ToolUse::new(tool, args, Some(key.to_owned()))
        .internal(format!(
            "mcp-{}",
            session.calls.fetch_add(1, Ordering::Relaxed)
        ))
        .extensions(&json!({"mcp": {"inputResponses": true}}));
    // Read as the text they are sent as; a rewrite must be an object.
    let returned = Value::String(answers.to_string());
    let reading = session
        .door
        .ask_tool_result(
            None,
            call,
            &returned,
            ToolOutcome::Success,
            session.asking(),
        )
        .await;
    answer::answers(reading, answers)
}

/// The result of a forwarded call: a `tool-result` event; passed on (as the
/// guards saw it), its result rewritten, or refused. A response that is
/// not exactly one result object or one error object ends the session.
pub(crate) async fn tool_result(
    session: &Session,
    envelope: &Envelope<'_>,
    pending: Pending,
    to_client: &mpsc::Sender<String>,
) -> Result<(), Error> {
    let id = RawValue::from_string(pending.call_id.clone())
        .map_err(|_| Error::Upstream("a call id that cannot be written back".into()))?;
    if let Guarded::Read { complete } = pending.kind {
        return read_result(session, envelope, (pending, complete), &id, to_client).await;
    }
    let era = pending.era;
    let read = |raw: &RawValue| match serde_json::from_str::<Value>(raw.get()) {
        Ok(Value::Object(object)) => Ok(Value::Object(object)),
        _ => Err(Error::Upstream(format!(
            "the response to tools/call {} is not an object hookbox can read in full",
            id.get()
        ))),
    };
    let (result, reply, outcome) = match (envelope.result, envelope.error) {
        (Some(result), None) => {
            let value = read(result)?;
            let failed = value.get("isError") == Some(&Value::Bool(true));
            let outcome = if failed {
                ToolOutcome::Error(ToolError {
                    kind: ToolErrorKind::Execution,
                    message: text_of(&value),
                })
            } else {
                ToolOutcome::Success
            };
            (value.to_string(), Ok(value), outcome)
        }
        (None, Some(error)) => {
            let value = read(error)?;
            let outcome = ToolOutcome::Error(ToolError {
                kind: ToolErrorKind::Other,
                message: value
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
            });
            (value.to_string(), Err(value), outcome)
        }
        _ => {
            return Err(Error::Upstream(format!(
                "the response to tools/call {} has {} a result and an error",
                id.get(),
                if envelope.result.is_some() {
                    "both"
                } else {
                    "neither"
                }
            )));
        }
    };
    let answered = Answered { reply, era };
    // A 2026-07-28 result asking the client for input is marked so.
    let extensions = if answered.asks() {
        json!({"mcp": {"resultType": "input_required"}})
    } else {
        json!({})
    };
    let call = ToolUse::new(pending.tool_name, pending.args, Some(id_key(&id)))
        .internal(pending.internal_id)
        .extensions(&extensions);
    // The whole result object (or the error object) as its JSON text, as
    // guards read it; a rewrite may be a whole result ([`answer`]).
    let returned = Value::String(result);
    let reading = session
        .door
        .ask_tool_result(None, call, &returned, outcome, session.asking())
        .await;
    let line = answer::result(reading, answered, &id);
    send(to_client, line).await
}

/// The response to a read ([`READS`]): its result a `tool-result` event
/// read as the JSON it is, so a rewrite comes back in the result's own
/// structure (or the structure withheld); an error's text likewise, the
/// error staying one.
async fn read_result(
    session: &Session,
    envelope: &Envelope<'_>,
    (pending, complete): (Pending, bool),
    id: &RawValue,
    to_client: &mpsc::Sender<String>,
) -> Result<(), Error> {
    let method = pending.tool_name.clone();
    let object = |raw: &RawValue| match serde_json::from_str::<Value>(raw.get()) {
        Ok(value @ Value::Object(_)) => Ok(value),
        _ => Err(Error::Upstream(format!(
            "the response to {method} {} is not an object hookbox can read in full",
            id.get()
        ))),
    };
    let (returned, failed) = match (envelope.result, envelope.error) {
        (Some(result), None) => (object(result)?, false),
        (None, Some(error)) => (object(error)?, true),
        _ => {
            return Err(Error::Upstream(format!(
                "the response to {method} {} has both a result and an error, or neither",
                id.get()
            )));
        }
    };
    let outcome = if failed {
        ToolOutcome::Error(ToolError {
            kind: ToolErrorKind::Other,
            message: returned["message"].as_str().unwrap_or("").to_owned(),
        })
    } else {
        ToolOutcome::Success
    };
    let call = ToolUse::new(pending.tool_name, pending.args, Some(id_key(id)))
        .internal(pending.internal_id);
    let reading = session
        .door
        .ask_tool_result(None, call, &returned, outcome, session.asking())
        .await;
    let mut seen = match reading {
        Err(stop) => {
            let line = message::error(Some(id), code::REFUSED, &answer::stop_text(&stop));
            return send(to_client, line).await;
        }
        Ok(Reading::Keep) => returned,
        Ok(Reading::Replace { with, .. }) => with,
    };
    let line = if failed {
        message::error_object(id, seen)
    } else {
        if complete {
            crate::bridge::complete(&mut seen, &method);
        }
        message::response(id, &seen)
    };
    send(to_client, line).await
}

/// The text blocks of a result, joined.
fn text_of(result: &Value) -> String {
    result
        .get("content")
        .and_then(Value::as_array)
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}
