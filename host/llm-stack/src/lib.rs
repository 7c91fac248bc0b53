//! hookbox for llm-stack: a directory of sandboxed WebAssembly guards around
//! llm-stack's tool loop.
//!
//! ```no_run
//! # async fn demo(model: std::sync::Arc<dyn llm_stack::DynProvider>, registry: llm_stack::ToolRegistry<()>, params: llm_stack::ChatParams) -> Result<(), Box<dyn std::error::Error>> {
//! use hookbox::{Runtime, RuntimeConfig, watch::StackSource};
//! use llm_stack::ToolLoopConfig;
//!
//! let runtime = Runtime::new(RuntimeConfig::default())?;
//! let plugins = StackSource::watch(&runtime, "plugins".as_ref(), std::time::Duration::from_millis(200))?;
//! let guard = hookbox_llm_stack::Guard::new(plugins);
//!
//! // Per tool loop: one hookbox run, plugged in where llm-stack takes hooks.
//! let run = guard.start_run("run-1")?;
//! match hookbox_llm_stack::tool_loop(&run, model, &registry, params, ToolLoopConfig::default(), &()).await {
//!     Ok(done) => println!("{:?}", done.response.text()),
//!     Err(err) => match hookbox_llm_stack::stopped(&err) {
//!         Some(stop) => eprintln!("stopped by plugin {}: {stop}", stop.plugin()),
//!         None => eprintln!("{err}"),
//!     },
//! }
//! # Ok(()) }
//! ```
//!
//! llm-stack has no hook trait: its loop takes a provider, a tool registry
//! (with interceptors) and a `ToolLoopConfig` (with `on_tool_call`). A
//! [`GuardRun`] plugs into each, for one loop ([`tool_loop`] does all three;
//! with `ToolLoopHandle` or `tool_loop_stream`, use the pieces and
//! [`GuardRun::check`] the end):
//!
//! | llm-stack step | hookbox event | what the stack's answer does |
//! |---|---|---|
//! | provider call (`GuardRun::provider`) | completion-call | patch-request: a patched copy of this call's `ChatParams` (see below); terminate: the call fails with the stop |
//! | each streamed `TextDelta` | text-delta | terminate: the stream ends with the stop; a rewrite (a guard redacting the text so far) ends it fail-closed too: the deltas are passed on as they come, so the rewrite cannot be honoured (docs/contract.md#streamed-text) |
//! | each streamed `ToolCallStart` / `ToolCallDelta` | tool-call-delta | terminate: the stream ends with the stop |
//! | the stream's end (`Done`, or the stream running out) | stream-response-finish, then model-turn-finished | terminate: the stream ends with the stop |
//! | `generate`'s answer (not used by the loop) | completion-response, then model-turn-finished | terminate: the call fails with the stop |
//! | approval of a call to a tool the registry lacks, or that this turn's request did not offer (`GuardRun::config`) | invalid-tool-call | retry: denied with the feedback (the model reads it and answers again); skip: denied with the reason; fail (or every plugin continued), terminate: the run ends; repair: fails closed (llm-stack cannot rename a call); no plugin subscribed: llm-stack's own "unknown tool" answer, or a denial for a tool not offered |
//! | tool execution (`GuardRun::registry` / `interceptor`) | tool-call | rewrite-args: the tool runs with them (a rewrite that is not a JSON object is refused as a skip is, saying so); skip: the reason is the call's (error) result, asked about as a skipped tool-result, and the tool does not run; terminate: the run ends |
//! | the tool's response | tool-result | rewrite-result: the model reads it instead (the error flag kept); terminate: the run ends |
//!
//! The run ends through llm-stack's own error path: once the stack fails
//! closed or terminates, every later tool call is refused without running
//! and the next model call fails with `LlmError::Provider { code: "hookbox",
//! .. }` whose message names the plugin and cause ([`stopped`] reads it back;
//! [`GuardRun::stopped`] has it too). The model is not called again. When
//! llm-stack ends the loop first on its own terms (its iteration limit or
//! timeout, checked before the model call), [`GuardRun::check`] (which
//! [`tool_loop`] applies) turns that `Ok` into the stop.
//!
//! A turn's request decides which tools the model may call: a call to a
//! registered tool the request did not offer (a patch's active-tools, a
//! tool choice of none or of one tool) is an invalid tool call, not run.
//!
//! A request patch: `preamble` replaces `system`; `extra-context` documents
//! are appended to it as `<document id="...">` blocks (llm-stack has no
//! documents); `temperature`, `max-tokens` as they are; `tool-choice`
//! `specific` of one tool is llm-stack's `Specific`, of several the tools
//! advertised narrow to them under `Required`; `active-tools` narrows the
//! tools; `additional-params` merge onto `metadata` (forwarded to the
//! provider); `history` replaces the messages, each message a guard left as
//! it was keeping its structure. A changed or new `tool` message, a
//! `specific` choice of no tools or additional-params that are not a JSON
//! object fail the run closed, naming the plugin.
//!
//! Tool arguments reach the guards and the tool in hookbox's one canonical
//! JSON form. Interceptors run after llm-stack's schema check, so a
//! rewrite-args is not checked against the tool's schema again: the tool
//! gets what the guard wrote.
//!
//! Ordering with llm-stack's own hooks: `config`'s `on_tool_call` decides
//! first (llm-stack approves a call before it runs; its `Modify` is what the
//! guards see), then the interceptors in the order added, then the tool.
//! What the guards check is what runs only if no interceptor added after
//! the guard's changes the arguments, and what the model reads is the
//! guards' rewrite only if none added before it changes the result: use
//! `GuardRun::registry` (the guard's interceptor alone), or add yours before
//! it and let them leave results be. llm-stack's result processing
//! (processor, extractor, cacher) comes after the guard's tool-result.
//!
//! The guards are asked without holding up the executor: on a
//! multi-threaded runtime in place, the worker's other tasks handed off
//! (`block_in_place`); on a current-thread runtime on tokio's blocking
//! pool. From `on_tool_call`, which llm-stack calls synchronously, in place
//! as well (on a current-thread runtime that step blocks the thread for at
//! most the plugins' deadline).

mod guard;
mod map;

pub use guard::{Guard, GuardRun, GuardedProvider};
pub use hookbox::Stopped;

use std::sync::Arc;

use llm_stack::tool::{LoopDepth, ToolLoopResult};
use llm_stack::{ChatParams, DynProvider, LlmError, ToolLoopConfig, ToolRegistry};

/// llm-stack's `tool_loop` with `run` plugged into all three places
/// (provider, registry, config), checked at the end ([`GuardRun::check`]):
/// the one call that cannot forget a piece.
///
/// # Errors
/// llm-stack's own errors, and the stack's stop as
/// `LlmError::Provider { code: "hookbox", .. }` ([`stopped`] reads it).
#[allow(clippy::result_large_err, reason = "llm-stack's own error type")]
pub async fn tool_loop<Ctx: LoopDepth + Send + Sync + 'static>(
    run: &GuardRun,
    provider: Arc<dyn DynProvider>,
    registry: &ToolRegistry<Ctx>,
    params: ChatParams,
    config: ToolLoopConfig,
    ctx: &Ctx,
) -> Result<ToolLoopResult, LlmError> {
    let provider = run.provider(provider);
    let tools = run.registry(registry);
    let config = run.config(config, registry);
    let result = llm_stack::tool::tool_loop(&provider, &tools, params, config, ctx).await;
    run.check(result)
}

/// The hookbox stop behind an llm-stack error: `Some` when the guard ended
/// the run, naming the plugin and the cause.
pub fn stopped(err: &llm_stack::LlmError) -> Option<Stopped> {
    match err {
        llm_stack::LlmError::Provider { code, message, .. } if code == guard::STOP_CODE => {
            Stopped::from_reason(message)
        }
        _ => None,
    }
}
