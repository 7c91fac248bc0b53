//! Coding agents' hook protocols mapped to hookbox events and flows.
//!
//! Each protocol is a module of pure, typed functions: the agent's hook
//! input (serde structs, an enum of event names) in, a hookbox
//! [`StepEvent`](hookbox::StepEvent) out; a stack's [`Outcome`](hookbox::Outcome)
//! in, the agent's answer out. No I/O: the `hookbox` command reads stdin and
//! sets the exit code, `hookbox-serve` answers over HTTP, and a library user
//! can call the same functions from their own process.
//!
//! | module | agent |
//! |---|---|
//! | [`claude_code`] | Claude Code's command and HTTP hooks |
//!
//! ```
//! use hookbox_agents::claude_code::{self, Event, HookInput};
//!
//! let input = HookInput::parse(br#"{
//!     "session_id": "s1", "hook_event_name": "PreToolUse",
//!     "tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "t1"
//! }"#).unwrap();
//! assert_eq!(input.hook_event_name, Event::PreToolUse);
//! let event = claude_code::to_event(&input).unwrap();
//! assert_eq!(event.kind(), hookbox::EventKind::ToolCall);
//! ```

pub mod claude_code;
