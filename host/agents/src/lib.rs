//! Coding agents' hook protocols mapped to hookbox events and flows.
//!
//! Each protocol is a [`Protocol`]: pure, typed functions from the agent's
//! hook input (serde structs, an enum of event names) to a hookbox
//! [`StepEvent`], and from a stack's [`Outcome`] to the agent's [`Reply`].
//! [`handle`] puts them together around a function that asks the stack;
//! the `hookbox` command reads stdin and sets the exit code,
//! `hookbox-serve` answers over HTTP, [`SessionStore`] keeps run state
//! between the hook processes of one session.
//!
//! Every protocol keeps the boundary rules
//! (docs/architecture.md#boundary-rules): a failure on a step the
//! agent lets a hook block is that step's own block, never an error the
//! agent reads as "go ahead"; events hookbox does not map get no opinion;
//! a rewritten result keeps the agent's shape or is withheld; a rewrite of
//! arguments is not an approval.
//!
//! | module | agent |
//! |---|---|
//! | [`claude_code`] | Claude Code's command and HTTP hooks |
//! | [`codex`] | OpenAI Codex CLI's hooks |
//! | [`gemini`] | Gemini CLI's hooks |
//! | [`cursor`] | Cursor's agent hooks |
//! | [`copilot`] | GitHub Copilot's hooks (CLI and cloud agent) |
//! | [`cline`] | Cline's hooks |
//! | [`windsurf`] | Windsurf Cascade's hooks |
//! | [`opencode`] | OpenCode, through hookbox's OpenCode plugin |
//!
//! ```
//! use hookbox_agents::{Options, Reply, claude_code::ClaudeCode, handle};
//! use hookbox::{Decision, Flow};
//!
//! let input = br#"{
//!     "session_id": "s1", "hook_event_name": "PreToolUse",
//!     "tool_name": "Bash", "tool_input": {"command": "rm -rf ~/"}, "tool_use_id": "t1"
//! }"#;
//! // A stand-in for a stack: deny every shell call.
//! let reply: Reply = handle::<ClaudeCode>(input, &Options::default(), |_session, event| {
//!     assert_eq!(event.kind(), hookbox::EventKind::ToolCall);
//!     Ok(Ok(Decision::new(Flow::skip("no shell"))))
//! });
//! assert_eq!(reply.exit_code, 0);
//! assert_eq!(reply.stdout.unwrap()["hookSpecificOutput"]["permissionDecision"], "deny");
//! ```

pub mod claude_code;
pub mod cline;
pub mod codex;
mod common;
pub mod copilot;
pub mod cursor;
pub mod gemini;
pub mod opencode;
mod reply;
pub mod shape;
mod store;
pub mod windsurf;

use hookbox::{Decision, Outcome, StepEvent, Stopped};
use serde::de::DeserializeOwned;

pub use reply::Reply;
#[cfg(feature = "redis")]
pub use store::RedisStore;
pub use store::{
    DEFAULT_MAX_AGE, Pin, Pinned, Saved, Scratchpads, SessionBackend, SessionHold, SessionLock,
    SessionRun, SessionStore, StepRefused, Stepped, StoreError, step as session_step,
};

/// How the adapters answer where the operator has a choice.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// A guard's rewrite of a call's arguments also grants the call
    /// (Claude Code: `"allow"` instead of `"ask"`). Off: the agent's own
    /// permission system still decides, on the changed call.
    pub rewrites_grant: bool,
    /// A subagent's hooks share its session's run state: a budget spans
    /// the session and every subagent it starts. Off: each subagent has
    /// state of its own, begun empty (a subagent's hooks do not count
    /// against its session's budget, nor its session's against it).
    pub subagents_share_state: bool,
}

/// Whose run a hook call belongs to: the agent's session, and inside it a
/// subagent. Run state (the plugins' scratchpads) spans one of these.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Session {
    /// The agent's session id, when the input has one.
    pub id: Option<String>,
    /// The subagent inside the session, when there is one.
    pub subagent: Option<String>,
}

/// One agent's hook protocol: how its input maps to a hookbox event and how
/// a decision is said back. Pure: no I/O.
pub trait Protocol {
    /// The agent's name, as the `hookbox hook AGENT` command spells it.
    const NAME: &'static str;
    /// A parsed hook input.
    type Input: DeserializeOwned;
    /// The input's field that names its event.
    const EVENT_FIELD: &'static str = "hook_event_name";

    /// The block for an input that cannot be read: the event's own when
    /// `input` (perhaps cut short) still names it, else the strongest the
    /// agent has.
    fn unreadable(input: &[u8], reason: &str) -> Reply;

    /// The block for `event` when hookbox gave no answer at all (it
    /// crashed, was killed or is not where the hook's command says):
    /// what the command of a printed configuration answers in its place.
    fn blocked_at(event: &str, reason: &str) -> Reply {
        let named = serde_json::json!({ Self::EVENT_FIELD: event }).to_string();
        Self::unreadable(named.as_bytes(), reason)
    }

    /// Parses a hook input.
    ///
    /// # Errors
    /// The block to answer when the input cannot be read.
    fn parse(input: &[u8]) -> Result<Self::Input, Reply> {
        serde_json::from_slice(input).map_err(|e| {
            Self::unreadable(
                input,
                &format!(
                    "hookbox: blocked: the hook input is not a {} hook input: {e}",
                    Self::NAME
                ),
            )
        })
    }

    /// The block for an input past `limit` bytes (`prefix` is its start).
    fn too_large(prefix: &[u8], limit: usize) -> Reply {
        Self::unreadable(
            prefix,
            &format!(
                "hookbox: blocked: the hook input is larger than {limit} bytes, the most hookbox reads"
            ),
        )
    }

    /// The input with its event named `event`, for agents whose input does
    /// not say which event it is (the hook's configuration does). Unchanged
    /// by default.
    fn name_event(input: &[u8], _event: &str) -> Vec<u8> {
        input.to_vec()
    }

    /// The session the call belongs to.
    fn session(input: &Self::Input) -> Session;

    /// The hookbox event for the input; `None` when hookbox has no opinion
    /// on this event.
    ///
    /// # Errors
    /// Why the input cannot be mapped (a field its event needs is missing).
    fn event(input: &Self::Input) -> Result<Option<StepEvent>, String>;

    /// The answer for an event hookbox does not map: no opinion.
    fn neutral(_input: &Self::Input) -> Reply {
        Reply::no_opinion().with_note("hookbox: not an event hookbox guards; no opinion")
    }

    /// The stack's decision, said in the agent's terms (a terminate is
    /// [`Protocol::fail`]'s, never asked here).
    fn answer(input: &Self::Input, decision: Decision, options: &Options) -> Reply;

    /// The event's own block, for a stack that failed closed or a failure
    /// outside the stack (the plugins could not be loaded, the server is
    /// full), and for a terminate.
    fn fail(input: &Self::Input, reason: &str) -> Reply;

    /// The answer when the session's state could not be read or kept (its
    /// store is down, slow or answering garbage): [`Protocol::fail`]'s,
    /// on every event. An outage never lets through what the normal path
    /// would have stopped: on a step that cannot be refused (Claude Code's
    /// `PostToolUseFailure`, whose message may hold a secret no guard
    /// read), that is the agent's stop.
    fn state_unavailable(input: &Self::Input, reason: &str) -> Reply {
        Self::fail(input, &format!("hookbox: blocked: {reason}"))
    }
}

/// Why a hook was not asked of the stack: a failure outside it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unasked {
    /// The step is blocked ([`Protocol::fail`]): the plugins could not be
    /// loaded, the server is full, the session is refused.
    Blocked(String),
    /// The session's state could not be read or kept
    /// ([`Protocol::state_unavailable`]).
    NoState(String),
}

impl From<String> for Unasked {
    fn from(reason: String) -> Unasked {
        Unasked::Blocked(reason)
    }
}

impl From<&str> for Unasked {
    fn from(reason: &str) -> Unasked {
        Unasked::Blocked(reason.to_owned())
    }
}

impl From<StoreError> for Unasked {
    fn from(e: StoreError) -> Unasked {
        Unasked::NoState(e.to_string())
    }
}

impl std::fmt::Display for Unasked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unasked::Blocked(reason) | Unasked::NoState(reason) => f.write_str(reason),
        }
    }
}

/// The whole hook: input in, reply out. `decide` asks the stack about the
/// mapped event for the session (its `Err` is a failure outside the stack:
/// it blocks, as a failed-closed outcome does, but for a session state
/// that is unavailable on a step the agent cannot block).
pub fn handle<P: Protocol>(
    input: &[u8],
    options: &Options,
    decide: impl FnOnce(&Session, &StepEvent) -> Result<Outcome, Unasked>,
) -> Reply {
    let input = match P::parse(input) {
        Ok(input) => input,
        Err(reply) => return reply,
    };
    let event = match P::event(&input) {
        Ok(Some(event)) => event,
        Ok(None) => return P::neutral(&input),
        Err(reason) => return P::fail(&input, &format!("hookbox: blocked: {reason}")),
    };
    let mut session = P::session(&input);
    if options.subagents_share_state {
        session.subagent = None;
    }
    match decide(&session, &event) {
        // A stop (a fail-closed, a terminate) is the event's own block in
        // every protocol.
        Ok(outcome) => match Stopped::settle(outcome, event.kind()) {
            Ok(decision) => P::answer(&input, decision, options),
            Err(stop) => P::fail(&input, &blocked(&stop)),
        },
        Err(Unasked::Blocked(reason)) => P::fail(&input, &format!("hookbox: blocked: {reason}")),
        Err(Unasked::NoState(reason)) => P::state_unavailable(&input, &reason),
    }
}

/// What an agent reads when the run stops: whose terminate and why, or
/// the plugin that failed closed and the cause.
pub(crate) fn blocked(stop: &Stopped) -> String {
    match stop {
        Stopped::Terminated { plugin, reason, .. } => format!("{plugin}: {reason}"),
        Stopped::FailedClosed(failure) => {
            format!("hookbox: blocked, the guard failed closed: {failure}")
        }
    }
}
