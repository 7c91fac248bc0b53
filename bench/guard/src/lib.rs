//! The benchmarks' guard, shared by every way of running it (a native hook,
//! a hookbox component, an Extism plugin, a subprocess), so they compare the
//! hosts and not the logic:
//!
//! - arguments containing `rm -rf` → skip;
//! - arguments containing `/etc/` → rewrite-args, the path moved under
//!   `/jail`;
//! - anything else → continue.

#![no_std]

extern crate alloc;

use alloc::string::String;

/// What the guard decides.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    Continue,
    Skip(&'static str),
    RewriteArgs(String),
}

pub const SKIP_REASON: &str = "Not executed: destructive command. Do not retry.";

/// Decides on one tool call's JSON arguments.
pub fn decide(args: &str) -> Verdict {
    use memchr::memmem::find;
    if find(args.as_bytes(), b"rm -rf").is_some() {
        Verdict::Skip(SKIP_REASON)
    } else if find(args.as_bytes(), b"/etc/").is_some() {
        Verdict::RewriteArgs(args.replace("/etc/", "/jail/etc/"))
    } else {
        Verdict::Continue
    }
}
