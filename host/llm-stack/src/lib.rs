//! hookbox for llm-stack: a directory of sandboxed WebAssembly guards around
//! llm-stack's tool loop.
//!
//! ```no_run
//! # async fn demo(model: std::sync::Arc<dyn llm_stack::DynProvider>, registry: llm_stack::ToolRegistry<()>, params: llm_stack::ChatParams) -> Result<(), Box<dyn std::error::Error>> {
//! use hookbox::{Runtime, RuntimeConfig, watch::StackSource};
//! use llm_stack::ToolLoopConfig;
//! use llm_stack::tool::tool_loop;
//!
//! let runtime = Runtime::new(RuntimeConfig::default())?;
//! let plugins = StackSource::watch(&runtime, "plugins".as_ref(), std::time::Duration::from_millis(200))?;
//! let guard = hookbox_llm_stack::Guard::new(plugins);
//!
//! // Per tool loop: one hookbox run, plugged in at three places.
//! let run = guard.start_run("run-1")?;
//! let provider = run.provider(model);
//! let tools = run.registry(&registry);
//! let config = run.config(ToolLoopConfig::default(), &registry);
//! match tool_loop(&provider, &tools, params, config, &()).await {
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
//! [`GuardRun`] plugs into each, for one loop:
//!
//! | llm-stack step | hookbox event | what the stack's answer does |
//! |---|---|---|
//! | provider call (`GuardRun::provider`) | completion-call | patch-request: a patched copy of this call's `ChatParams` (see below); terminate: the call fails with the stop |
//! | each streamed `TextDelta` | text-delta | terminate: the stream ends with the stop |
//! | each streamed `ToolCallStart` / `ToolCallDelta` | tool-call-delta | terminate: the stream ends with the stop |
//! | the stream's `Done` (or `generate`'s answer) | stream-response-finish, then model-turn-finished | terminate: the stream ends with the stop |
//! | approval of a call to an unknown tool (`GuardRun::config`) | invalid-tool-call | retry: denied with the feedback (the model reads it and answers again); skip: denied with the reason; fail, terminate: the run ends; repair: fails closed (llm-stack cannot rename a call); no plugin answered: llm-stack's own "unknown tool" answer |
//! | tool execution (`GuardRun::registry` / `interceptor`) | tool-call | rewrite-args: the tool runs with them; skip: the reason is the call's (error) result and the tool does not run; terminate: the run ends |
//! | the tool's response | tool-result | rewrite-result: the model reads it instead (the error flag kept); terminate: the run ends |
//!
//! The run ends through llm-stack's own error path: once the stack fails
//! closed or terminates, every later tool call is refused without running
//! and the next model call fails with `LlmError::Provider { code: "hookbox",
//! .. }` whose message names the plugin and cause ([`stopped`] reads it back;
//! [`GuardRun::stopped`] has it too). The model is not called again.
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
//! first (llm-stack approves a call before it runs), then the guard's
//! interceptor, then interceptors added after it, then the tool. llm-stack's
//! result processing (processor, extractor, cacher) comes after the guard's
//! tool-result.
//!
//! The guards are asked on tokio's blocking pool; from `on_tool_call`, which
//! llm-stack calls synchronously, through `block_in_place` on a
//! multi-threaded runtime (on a current-thread runtime that step blocks the
//! thread for at most the plugins' deadline).

mod guard;
mod map;

pub use guard::{Guard, GuardRun, GuardedProvider};
pub use hookbox::Stopped;

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
