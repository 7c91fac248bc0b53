//! hookbox for rig: a directory of sandboxed WebAssembly guards as a
//! rig-agent hook.
//!
//! ```no_run
//! # async fn demo(model: rig_agent::test_utils::MockCompletionModel) -> Result<(), Box<dyn std::error::Error>> {
//! use hookbox::{Runtime, RuntimeConfig, watch::StackSource};
//! use rig_agent::AgentBuilder;
//!
//! let runtime = Runtime::new(RuntimeConfig::default())?;
//! let plugins = StackSource::watch(&runtime, "plugins".as_ref(), std::time::Duration::from_millis(200))?;
//! let agent = AgentBuilder::new(model)
//!     .add_hook(hookbox_rig::Guard::new(plugins))
//!     .build();
//! match agent.prompt("tidy up /tmp").max_turns(8).await {
//!     Ok(answer) => println!("{}", answer.output()),
//!     Err(err) => match hookbox_rig::stopped(&err) {
//!         Some(stop) => eprintln!("stopped by plugin {}: {stop}", stop.plugin()),
//!         None => eprintln!("{err}"),
//!     },
//! }
//! # Ok(()) }
//! ```
//!
//! One hookbox run per rig run, on the newest snapshot of the source when
//! the run starts: fresh guest instances for the run, kept to its end (a
//! hot reload mid-run does not move it), nothing shared between runs. The
//! guards are asked off the executor (`hookbox_adapter::off_executor`); the
//! verdicts are `hookbox_adapter::verdict`'s, written here in rig's terms.
//!
//! | rig hook | hookbox event | what the stack's answer does |
//! |---|---|---|
//! | `on_run_start` | (opens the run) | no instance slots free: the run stops before the model is called |
//! | `on_completion_call` | completion-call | patch-request: rig's `RequestPatch` for this turn (preamble, temperature, max-tokens, tool-choice, active-tools, additional-params, extra-context, history); terminate: stop |
//! | `on_outcome` (completion) | completion-response, or stream-response-finish when streaming | terminate: stop |
//! | `on_model_turn_finished` | model-turn-finished | terminate: stop |
//! | `on_invalid_tool_call` | invalid-tool-call | fail / retry / repair / skip: rig's action of that name (every plugin continuing is fail); terminate: stop; no plugin subscribed, or arguments that are not JSON: no opinion (rig decides) |
//! | `on_dispatch` (tool) | tool-call | rewrite-args: `DispatchAction::Patch` with the arguments (a rewrite that is not a JSON object: `DispatchAction::skip` saying so, the run goes on); skip: `DispatchAction::skip` (the model sees the reason); terminate: stop |
//! | `on_outcome` (tool) | tool-result | rewrite-result: the model-visible output replaced in its shape (text stays text, JSON the same structure; a rewrite that does not fit withholds it, `hookbox_adapter::shape`), the result's status kept; terminate: stop |
//! | `on_text_delta` | text-delta | terminate: stop; a rewrite (a guard redacting the text so far) stops too, fail-closed: rig's observer cannot change the text it streams (docs/contract.md#streamed-text) |
//! | `on_tool_call_delta` | tool-call-delta | terminate: stop |
//! | `on_run_settled` | (ends the run) | the run's instances are released |
//!
//! "Stop" is rig's own: `PromptError::Cancelled`, with a reason that names
//! the plugin and the cause ([`stopped`] reads it back as a
//! [`hookbox::Stopped`]). A failure of any guard (trap, deadline, memory, a
//! flow the event does not honour) stops the run the same way.
//!
//! What rig cannot take is refused, never dropped: a history patch with a
//! new or changed `tool` message (rig sends a tool result only with its
//! call), a tool choice naming an empty tool, additional-params that are not
//! a JSON object, and a JSON tool output rewritten into text that is not
//! JSON each stop the run, naming the plugin (cause `unsupported-flow` or
//! `invalid-json`). A history patch keeps every message a guard left as it
//! was, tool calls and results included.
//!
//! Tool arguments reach the guards, and the tool, in hookbox's one canonical
//! JSON form: a call whose arguments were not canonical is patched to the
//! canonical text even when every guard continued.
//!
//! rig composes its own hooks in the order they were added; the guard is
//! one of them. Within it, hookbox composes its plugins by hookbox's rules
//! (the manifest's order). Add the guard last: a rig hook added after it
//! could patch a tool call's arguments after the guards checked them, or
//! replace a result after they redacted it. Hooks added before it see the
//! model's calls first; their patches are what the guards see, and their
//! denials mean the guards are never asked.
//!
//! Arguments that are not a JSON object are not an invalid tool call in
//! hookbox's sense (the tool is known): rig answers them with its own
//! feedback. An invalid tool call no plugin subscribes to is rig's to
//! decide; one the stack answers with continue everywhere is a fail. A
//! repair to a tool the turn does not allow, or a skip under a tool choice
//! of none (both of which rig refuses), stop the run naming the plugin.
//!
//! Left as rig does it: a resumed run (`Agent::resume`) is a new hookbox
//! run, with fresh scratchpads.

mod guard;
mod map;

pub use guard::Guard;
pub use hookbox::Stopped;

/// The hookbox stop behind a rig error: `Some` when the guard stopped the
/// run, naming the plugin and the cause.
pub fn stopped(err: &rig_agent::completion::PromptError) -> Option<Stopped> {
    match err {
        rig_agent::completion::PromptError::Cancelled { reason, .. } => {
            Stopped::from_reason(reason)
        }
        _ => None,
    }
}
