//! The agent runner: a tool loop that drives a model and tools and obeys the
//! hook stack at every step.
//!
//! | module | job |
//! |---|---|
//! | [`agent`] | the agent (model, tools, stack, baseline request) and its builder |
//! | [`config`] | loop settings: limits, parallelism, loop detection |
//! | [`report`] | how a run ended, each tool call, the transcript |
//! | `tool_loop` | one iteration after another, every flow honoured |
//! | [`events`] | loop events for UIs, by callback or stream |
//! | [`model`] | the model trait and its wire-neutral types |
//! | `openai` | an OpenAI-compatible chat-completions client (tools, SSE streaming; feature `openai`, on by default) |
//! | [`scripted`] | a model that plays a recorded conversation |
//! | [`tools`] | the tool trait, argument checks, the workspace tools and the shell |
//! | [`Error`] | what can go wrong setting up a run or calling a model |
//!
//! ```no_run
//! use std::sync::Arc;
//! use hookbox_runner::{Agent, ScriptedModel, ToolSet, Workspace};
//!
//! # async fn demo(stack: hookbox::HookStack) -> Result<(), hookbox_runner::Error> {
//! let model = ScriptedModel::from_file("session.json".as_ref())?;
//! let workspace = Workspace::new("workspace")?;
//! let mut tools = ToolSet::new();
//! for tool in workspace.file_tools() {
//!     tools.add(tool)?;
//! }
//! let agent = Agent::new(Arc::new(model))
//!     .tools(tools)
//!     .stack(stack)
//!     .on_event(|event| println!("{event:?}"));
//! let report = agent.run("Tidy up the README").await;
//! println!("{}: {}", report.status, report.text);
//! # Ok(()) }
//! ```
//!
//! Telemetry follows the OpenTelemetry GenAI conventions: an `invoke_agent`
//! root span per run (`gen_ai.conversation.id` is the run id), inside it a
//! `chat` span per model call (`gen_ai.provider.name`,
//! `gen_ai.request.model`, `gen_ai.usage.*`, `gen_ai.response.finish_reasons`
//! as a JSON array), an `execute_tool` span per tool run (`gen_ai.tool.name`,
//! `gen_ai.tool.call.id`), and the stack's `apply_guardrail` span per
//! decision ([`hookbox::trace`]). Tool arguments (as executed) and results
//! (as delivered) are recorded only when [`hookbox::trace::capture_content`]
//! is on.

pub mod agent;
pub mod config;
mod error;
pub mod events;
mod guard;
pub mod model;
#[cfg(feature = "openai")]
pub mod openai;
pub mod report;
pub mod scripted;
pub mod text;
mod tool_loop;
pub mod tools;

pub use agent::Agent;
pub use config::{LoopConfig, LoopDetection};
pub use error::Error;
pub use events::{LoopAction, LoopCallback, LoopEvent};
pub use model::{
    ChatMessage, ChunkStream, Model, ModelChunk, ModelRequest, ModelTurn, ToolCallRequest, ToolSpec,
};
#[cfg(feature = "openai")]
pub use openai::OpenAiModel;
pub use report::{RunReport, RunStatus, ToolRecord};
pub use scripted::ScriptedModel;
pub use tools::{ShellTool, Tool, ToolOutput, ToolSet, Workspace};
