//! What a guest can keep and reach: nothing across runs, nothing beyond the
//! host imports, and only the events it subscribed to.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::{Arc, Mutex};

use hookbox::{Cause, Flow, HookStack};

use super::support::*;

#[test]
fn state_a_guest_keeps_lives_exactly_as_long_as_its_run() {
    let stack = stack(&[puppet("c")]);
    let mut first = stack.start_run("first");
    assert_eq!(
        decided(dispatch(&mut first, &tool_call("c:count", "{}"))).flow,
        Flow::skip("global=1 scratch=1")
    );
    assert_eq!(
        decided(dispatch(&mut first, &tool_call("c:count", "{}"))).flow,
        Flow::skip("global=2 scratch=2")
    );
    let mut second = stack.start_run("second");
    assert_eq!(
        decided(dispatch(&mut second, &tool_call("c:count", "{}"))).flow,
        Flow::skip("global=1 scratch=1"),
        "neither globals nor the scratchpad cross into a new run"
    );
}

#[test]
fn each_plugin_has_its_own_scratchpad() {
    let stack = stack(&[puppet("a"), puppet("b")]);
    let mut run = stack.start_run("r");
    dispatch(&mut run, &tool_call("a:count", "{}")).unwrap();
    dispatch(&mut run, &tool_call("a:count", "{}")).unwrap();
    assert_eq!(
        decided(dispatch(&mut run, &tool_call("b:count", "{}"))).flow,
        Flow::skip("global=1 scratch=1")
    );
}

#[test]
fn a_runs_scratchpads_are_listed_in_stack_order_nested_stacks_included() {
    let mut inner = HookStack::new();
    inner.push_plugin(puppet("b"));
    let mut stack = stack(&[puppet("a")]);
    stack.push_stack(inner).push_plugin(puppet("c"));
    let mut run = stack.start_run("r");
    assert!(run.scratchpads().is_empty(), "nothing started yet");
    dispatch(&mut run, &tool_call("a:count", "{}")).unwrap();
    dispatch(&mut run, &tool_call("a:count", "{}")).unwrap();
    dispatch(&mut run, &tool_call("b:count", "{}")).unwrap();
    let count = |n: &str| BTreeMap::from([("count".to_owned(), n.to_owned())]);
    let listed = |a: &str, b: &str| {
        BTreeMap::from([
            ("puppet".to_owned(), count(a)),
            ("puppet#2".to_owned(), count(b)),
        ])
    };
    // b's skip ends the chain: c has not been started.
    assert_eq!(run.scratchpads(), listed("2", "1"));
    assert!(dispatch(&mut run, &tool_call("c:panic", "{}")).is_err());
    assert_eq!(
        run.scratchpads(),
        listed("2", "1"),
        "an instance that failed is gone, and shows nothing"
    );
}

#[test]
fn a_restored_scratchpad_is_what_the_plugin_finds_when_it_starts() {
    let mut stack = stack(&[puppet("a")]);
    stack.push_plugin(puppet("b"));
    let count = |n: &str| BTreeMap::from([("count".to_owned(), n.to_owned())]);
    let mut first = stack.start_run("first");
    dispatch(&mut first, &tool_call("a:count", "{}")).unwrap();
    let saved = first.scratchpads();
    assert_eq!(saved.len(), 1, "{saved:?}");

    // A second run (a second process of the same session) carries on.
    let mut second = stack.start_run("second");
    second.restore_scratchpads(saved.clone());
    assert_eq!(
        second.scratchpads(),
        saved,
        "restored, before anything starts"
    );
    assert_eq!(
        decided(dispatch(&mut second, &tool_call("a:count", "{}"))).flow,
        Flow::skip("global=1 scratch=2"),
        "the scratchpad carries over; the guest's globals do not"
    );
    assert_eq!(second.scratchpads()["puppet"], count("2"));
    // Another session does not.
    let mut other = stack.start_run("other");
    dispatch(&mut other, &tool_call("a:count", "{}")).unwrap();
    assert_eq!(other.scratchpads()["puppet"], count("1"));
}

#[test]
fn a_restored_scratchpad_past_the_quota_fails_the_plugin_closed() {
    let stack = stack(&[puppet("a")]);
    let mut run = stack.start_run("r");
    let huge = BTreeMap::from([("k".to_owned(), "x".repeat(2 << 20))]);
    run.restore_scratchpads(BTreeMap::from([("puppet".to_owned(), huge)]));
    let failure = dispatch(&mut run, &tool_call("a:count", "{}")).unwrap_err();
    assert_eq!(failure.cause, Cause::Limit, "{failure}");
}

#[test]
fn a_plugin_is_only_dispatched_the_kinds_it_subscribed_to() {
    let only_tool_calls = plugin(
        hookbox_tests::guests::PUPPET,
        &[("name", "s"), ("subscribe", "tool-call")],
    );
    let stack = stack(&[only_tool_calls]);
    // If it were called, this completion-call would make it loop forever.
    assert_eq!(
        decided(once(&stack, &completion_call("s:loop"))).flow,
        Flow::Continue
    );
    assert_eq!(
        decided(once(&stack, &tool_call("s:flow:skip:yes", "{}"))).flow,
        Flow::skip("yes")
    );
}

#[test]
fn a_wasi_guest_finds_no_files_environment_arguments_network_or_time() {
    let probe = plugin(hookbox_tests::guests::WASI_PROBE, &[]);
    assert!(probe.info().uses_wasi);
    let decision = decided(once(&stack(&[probe]), &tool_call("anything", "{}")));
    assert_eq!(
        decision.flow,
        Flow::terminate("files=0 env=0 args=0 net=0 time=0 elapsed=0")
    );
}

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_guests_stdout_and_stderr_go_to_the_log_under_its_name() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    tracing::subscriber::with_default(subscriber, || {
        let probe = plugin(hookbox_tests::guests::WASI_PROBE, &[]);
        once(&stack(&[probe]), &tool_call("anything", "{}")).unwrap();
    });
    let log = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    for expected in [
        "hello from stdout",
        "hello from stderr",
        "plugin=\"wasi-probe\"",
        "stream=\"stdout\"",
    ] {
        assert!(log.contains(expected), "log lacks {expected}: {log}");
    }
}

#[test]
fn a_guest_cannot_forge_a_log_line_or_drive_the_terminal() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    tracing::subscriber::with_default(subscriber, || {
        once(&stack(&[puppet("f")]), &tool_call("f:log-forge", "{}")).unwrap();
    });
    let log = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert_eq!(log.lines().count(), 1, "one message, one line: {log}");
    assert!(!log.contains('\u{1b}'), "{log:?}");
    assert!(log.contains("ok\\nplugin"), "{log}");
}

#[test]
fn one_runaway_guest_does_not_stall_other_runs() {
    let looping = stack(&[puppet("l")]);
    let healthy = stack(&[puppet("h")]);
    let runaway = std::thread::spawn(move || once(&looping, &tool_call("l:loop", "{}")));
    for i in 0..50 {
        let flow = decided(once(
            &healthy,
            &tool_call(&format!("h:flow:skip:{i}"), "{}"),
        ))
        .flow;
        assert_eq!(flow, Flow::skip(i.to_string()));
    }
    assert_eq!(
        runaway.join().unwrap().unwrap_err().cause,
        hookbox::Cause::Deadline
    );
}

#[test]
fn instantiate_all_starts_every_plugin_up_front_or_fails_closed() {
    let mut stack =
        crate::support::stack(&[crate::support::puppet("a"), crate::support::puppet("b")]);
    let mut run = stack.start_run("eager");
    run.instantiate_all().expect("both start");
    let decision = crate::support::decided(crate::support::dispatch(
        &mut run,
        &crate::support::tool_call("b:flow:skip:eager", "{}"),
    ));
    assert_eq!(decision.flow, hookbox::Flow::skip("eager"));

    stack.push_unloadable("broken", "not a component");
    let mut run = stack.start_run("eager-2");
    let failure = run.instantiate_all().unwrap_err();
    assert_eq!(
        (&*failure.plugin, failure.cause),
        ("broken", hookbox::Cause::Load)
    );
    assert!(run.is_over());
}

#[test]
fn misbehaving_runs_among_many_concurrent_ones_change_no_other_outcome() {
    use hookbox::{Cause, Limits};
    // `bad` misbehaves when told to, under the default 100 ms deadline;
    // `good` answers a flow naming its run, with a deadline no load reaches.
    let bad = crate::support::puppet("bad");
    let good = crate::support::plugin_with(
        hookbox_tests::guests::PUPPET,
        &[("name", "good")],
        Some(Limits {
            deadline: std::time::Duration::from_secs(30),
            ..Default::default()
        }),
    );
    let stack = Arc::new(crate::support::stack(&[bad, good]));
    let misbehaviours = [
        ("grow", Cause::Memory),
        ("panic", Cause::Trap),
        ("loop", Cause::Deadline),
    ];
    let rss = || {
        let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
        statm
            .split_whitespace()
            .nth(1)
            .unwrap()
            .parse::<u64>()
            .unwrap()
            * 4096
    };
    let mut resident = Vec::new();
    for round in 0..3 {
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let stack = stack.clone();
                std::thread::spawn(move || {
                    for r in 0..8 {
                        let id = t * 8 + r;
                        let mut run = stack.start_run(format!("load-{round}-{id}"));
                        // One run in four misbehaves; the others go on.
                        let command = if id % 4 == 0 {
                            format!("bad:{};good:flow:continue", misbehaviours[id / 4 % 3].0)
                        } else {
                            format!("good:flow:skip:run {id}")
                        };
                        let outcome = dispatch(&mut run, &tool_call(&command, "{}"));
                        if id % 4 == 0 {
                            let failure = outcome.expect_err("misbehaviour fails closed");
                            assert_eq!(
                                (&*failure.plugin, failure.cause),
                                ("puppet", misbehaviours[id / 4 % 3].1),
                                "{command}"
                            );
                        } else {
                            let decision = decided(outcome);
                            assert_eq!(decision.flow, Flow::skip(format!("run {id}")));
                        }
                    }
                })
            })
            .collect();
        for thread in threads {
            thread
                .join()
                .expect("no run's outcome depends on the others");
        }
        resident.push(rss());
    }
    // Rounds after the first reuse what the first one needed.
    let growth = resident[2].saturating_sub(resident[0]);
    assert!(
        growth < 64 << 20,
        "resident memory grew by {growth} bytes: {resident:?}"
    );
}

#[test]
fn a_slot_the_next_run_reuses_holds_nothing_of_the_last() {
    // One instance slot: each run reuses the memory the last one wrote,
    // kept resident between runs and reset (RuntimeConfig::keep_resident_bytes).
    let runtime = hookbox::Runtime::new(hookbox::RuntimeConfig {
        max_instances: 1,
        ..hookbox::RuntimeConfig::default()
    })
    .unwrap();
    let plugin = hookbox::Plugin::from_file(
        &runtime,
        std::path::Path::new(hookbox_tests::guests::PUPPET),
        hookbox::PluginOptions::default(),
    )
    .unwrap();
    let mut stack = HookStack::new();
    stack.push_plugin(Arc::new(plugin));
    for name in ["first", "second", "third"] {
        let mut run = stack
            .try_start_run(name)
            .expect("the one slot is free again");
        for count in 1..=3 {
            assert_eq!(
                decided(dispatch(&mut run, &tool_call("puppet:count", "{}"))).flow,
                Flow::skip(format!("global={count} scratch={count}")),
                "{name} run, event {count}"
            );
        }
    }
}
