//! What every fuzz target checks, as plain functions over the input's bytes.
//!
//! Two drivers share them, so the property is written once:
//!
//! - `fuzz/` (its own workspace, nightly): cargo fuzz's coverage-guided
//!   search, one `fuzz_target!` per module here, run by `fuzz/run`;
//! - `cargo test` (this crate's `tests/corpus.rs`, stable): every target's
//!   checked-in seeds in `fuzz/corpus/TARGET`, and inputs made from them by
//!   seeded mutation, replayed on every test run.
//!
//! Each `check` returns when the property holds and panics when it does not.
//! The targets are listed in [`TARGETS`]; the replay test fails when a
//! target of `fuzz/Cargo.toml` or a corpus folder is missing from it.

pub mod agent_input;
pub mod canonical_json;
pub mod event_json;
pub mod flow_json;
pub mod guest_answer;
pub mod manifest;
pub mod mcp_message;

/// A fuzz target: its name (its binary in `fuzz/`, its folder in
/// `fuzz/corpus/`) and the check it runs.
#[derive(Clone, Copy, Debug)]
pub struct Target {
    /// The name the fuzz binary and the corpus folder have.
    pub name: &'static str,
    /// The property: returns when it holds, panics when it does not.
    pub check: fn(&[u8]),
}

/// Every fuzz target.
pub const TARGETS: &[Target] = &[
    Target {
        name: "agent_input",
        check: agent_input::check,
    },
    Target {
        name: "canonical_json",
        check: canonical_json::check,
    },
    Target {
        name: "event_json",
        check: event_json::check,
    },
    Target {
        name: "flow_json",
        check: flow_json::check,
    },
    Target {
        name: "guest_answer",
        check: guest_answer::check,
    },
    Target {
        name: "manifest",
        check: manifest::check,
    },
    Target {
        name: "mcp_message",
        check: mcp_message::check,
    },
];
