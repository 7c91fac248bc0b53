//! The SDK's allocator (`hookbox_sdk::alloc`): a Rust guest starts its
//! heap in the free tail of the memory it is instantiated with, so a run
//! whose events fit there never grows its memory (which costs the host two
//! `mprotect`s per run). Checked with a memory limit of exactly the initial
//! size: any growth fails the run closed.

use std::sync::Arc;

use hookbox::{Cause, Flow, HookStack, Limits, Plugin, PluginOptions};
use hookbox_tests::guests;

use super::support::*;

/// The initial size in bytes of the first memory of the component at `path`.
fn initial_memory(path: &str) -> usize {
    let bytes = std::fs::read(path).unwrap();
    for payload in wasmparser::Parser::new(0).parse_all(&bytes) {
        if let wasmparser::Payload::MemorySection(memories) = payload.unwrap() {
            let memory = memories.into_iter().next().unwrap().unwrap();
            return usize::try_from(memory.initial).unwrap() * 65536;
        }
    }
    panic!("{path} has no memory");
}

fn held_to_initial_memory(path: &str) -> HookStack {
    let plugin = Plugin::from_file(
        runtime(),
        path.as_ref(),
        PluginOptions {
            limits: Some(Limits {
                memory_bytes: initial_memory(path),
                ..Limits::default()
            }),
            ..PluginOptions::default()
        },
    )
    .unwrap();
    let mut stack = HookStack::new();
    stack.push_plugin(Arc::new(plugin));
    stack
}

#[test]
fn a_small_event_is_decided_without_growing_the_guests_memory() {
    let stack = held_to_initial_memory(guests::BENCH_GUARD);
    let args = format!(r#"{{"cmd":"src/main.rs","note":"{}"}}"#, "x".repeat(1000));
    let mut run = stack.start_run("small");
    let ctx = run.context(1);
    let decision = decided(run.dispatch(&ctx, &tool_call("shell", &args)));
    assert_eq!(decision.flow, Flow::Continue);
}

#[test]
fn an_event_past_the_free_tail_grows_the_memory_as_before() {
    // The same limit, an event larger than the whole initial memory: the
    // guest must grow, and the limit stops it (the allocator does not hide
    // growth, it only starts in place).
    let stack = held_to_initial_memory(guests::BENCH_GUARD);
    let args = format!(
        r#"{{"cmd":"src/main.rs","note":"{}"}}"#,
        "x".repeat(2 << 20)
    );
    let mut run = stack.start_run("large");
    let ctx = run.context(1);
    let failure = run.dispatch(&ctx, &tool_call("shell", &args)).unwrap_err();
    assert_eq!(failure.cause, Cause::Memory, "{failure}");
}

/// A run whose first event is larger than the free tail grows the memory
/// first; the tail is handed out later, for the small allocations, with
/// the bounds it had before the growth. (Read after it, it reached over
/// the grown pages holding the event, and dlmalloc's bookkeeping broke:
/// redact-secrets trapped on every event after one like this.)
#[test]
fn a_first_event_past_the_free_tail_leaves_the_heap_sound_for_later_ones() {
    let limits = Limits {
        answer_bytes: 4 << 20,
        deadline: std::time::Duration::from_secs(2),
        ..Limits::default()
    };
    let stack = stack(&[plugin_with(guests::REDACT_SECRETS, &[], Some(limits))]);
    let mut run = stack.start_run("tail");
    let big = format!("{}\nDB_PASSWORD=hunter2\n", "x".repeat(2 << 20));
    assert!(big.len() > initial_memory(guests::REDACT_SECRETS));
    let mut events = vec![big];
    events.extend((0..50).map(|i| format!("line {i}\nAPI_KEY=k3y-{i:04}\n")));
    for (i, text) in events.iter().enumerate() {
        let decision = decided(dispatch(&mut run, &tool_result("read_file", text)));
        let Flow::RewriteResult(out) = decision.flow else {
            panic!("event {i}: {:?}", decision.flow)
        };
        assert!(
            out.ends_with("=[REDACTED]\n"),
            "event {i}: {}",
            &out[out.len().saturating_sub(40)..]
        );
    }
}
