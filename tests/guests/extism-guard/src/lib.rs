//! The benchmarks' guard as an Extism plugin, written the way Extism plugins
//! are: JSON in (the event in hookbox's JSON form), JSON out (the flow).

use extism_pdk::{FnResult, plugin_fn};
use hookbox_bench_guard::{Verdict, decide};
use serde_json::{Value, json};

#[plugin_fn]
pub fn on_event(input: String) -> FnResult<String> {
    let event: Value = serde_json::from_str(&input)?;
    let args = event["args"].as_str().unwrap_or_default();
    let flow = match decide(args) {
        Verdict::Continue => json!({"flow": "continue"}),
        Verdict::Skip(reason) => json!({"flow": "skip", "reason": reason}),
        Verdict::RewriteArgs(args) => json!({"flow": "rewrite-args", "args": args}),
    };
    Ok(flow.to_string())
}
