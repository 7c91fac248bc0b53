//! Every fail-closed cause (docs/contract.md#fail-closed), each with a real misbehaving
//! guest: the run ends with a typed diagnostic naming the plugin and the
//! cause, and the host stays healthy for the next run.

use std::sync::Arc;

use hookbox::{Cause, Flow, Limits, Plugin, PluginOptions, Runtime, RuntimeConfig, StepEvent};

use super::support::*;
use super::wat;

/// Runs `event` through a stack of [a well-behaved puppet, `guest`] and
/// expects `guest` to fail closed with `cause`; then checks a new run of the
/// same stack still works.
fn fails_closed(guest: Arc<Plugin>, event: StepEvent, cause: Cause) -> hookbox::FailClosed {
    let stack = stack(&[puppet("well-behaved"), guest.clone()]);
    let mut run = stack.start_run("misbehaving");
    let failure = dispatch(&mut run, &event).expect_err("the run must fail closed");
    assert_eq!(
        (&*failure.plugin, failure.cause),
        (guest.name(), cause),
        "{failure}"
    );
    assert!(run.is_over());
    let again = dispatch(&mut run, &tool_call("well-behaved:flow:skip:x", "{}"));
    assert_eq!(
        again,
        Err(failure.clone()),
        "a failed run stays failed; its instances are never entered again"
    );

    let next = once(&stack, &tool_call("well-behaved:flow:skip:healthy", "{}"));
    assert_eq!(
        decided(next).flow,
        Flow::skip("healthy"),
        "the next run works"
    );
    failure
}

/// A puppet with a deadline far beyond what its misbehaviour needs, so the
/// cause under test, not the wall clock, is what stops it.
fn patient(name: &str) -> Arc<Plugin> {
    plugin_with(
        hookbox_tests::guests::PUPPET,
        &[("name", name)],
        Some(patient_limits()),
    )
}

fn patient_limits() -> Limits {
    Limits {
        deadline: std::time::Duration::from_secs(30),
        ..Default::default()
    }
}

fn from_wat(name: &str, bytes: &[u8]) -> Arc<Plugin> {
    let options = PluginOptions {
        limits: Some(patient_limits()),
        ..Default::default()
    };
    Arc::new(Plugin::from_bytes(runtime(), name, bytes, options).expect("loads"))
}

#[test]
fn a_guest_that_loops_forever_hits_its_deadline() {
    let failure = fails_closed(
        puppet("looper"),
        tool_call("looper:loop", "{}"),
        Cause::Deadline,
    );
    assert!(failure.detail.contains("deadline"), "{failure}");
}

/// The deadline counts the CPU time of the call's thread: a guest on a host
/// whose cores are all taken gets its whole budget, however long it waits
/// for a core.
#[test]
fn a_guest_on_a_busy_host_is_not_failed_closed_for_waiting_for_a_core() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};
    let deadline = Duration::from_millis(100);
    let timed = |guest: &Arc<Plugin>, millions: u64| {
        let event = tool_call(&format!("worker:spin:{millions}"), "{}");
        let started = Instant::now();
        let outcome = once(&stack(std::slice::from_ref(guest)), &event);
        (outcome, started.elapsed())
    };
    // Work that takes a quarter of the deadline on an idle core (the least
    // of three tries: the machine may not be idle).
    let calibrating = plugin_with(
        hookbox_tests::guests::PUPPET,
        &[("name", "worker")],
        Some(patient_limits()),
    );
    let per_million = (0..3).map(|_| timed(&calibrating, 4).1 / 4).min().unwrap();
    let millions = (deadline.as_secs_f64() / 4.0 / per_million.as_secs_f64()).max(1.0) as u64;

    let worker = plugin_with(
        hookbox_tests::guests::PUPPET,
        &[("name", "worker")],
        Some(Limits {
            deadline,
            ..Default::default()
        }),
    );
    // Eight threads per core spinning: the guest's thread gets a small
    // share of a core, and its work takes longer than its deadline in wall
    // time.
    let stop = Arc::new(AtomicBool::new(false));
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let hogs: Vec<_> = (0..8 * cores)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    std::hint::black_box(0u64);
                }
            })
        })
        .collect();
    let calls: Vec<_> = (0..4).map(|_| timed(&worker, millions)).collect();
    stop.store(true, Ordering::Relaxed);
    hogs.into_iter().for_each(|h| h.join().unwrap());

    for (outcome, _) in &calls {
        assert_eq!(decided(outcome.clone()).flow, Flow::Continue);
    }
    let longest = calls.iter().map(|(_, took)| *took).max().unwrap();
    assert!(
        longest > deadline,
        "the host was not busy enough to test anything: the longest call took {longest:?}"
    );
}

#[test]
fn a_guest_that_grows_memory_without_bound_hits_its_memory_limit() {
    fails_closed(patient("hog"), tool_call("hog:grow", "{}"), Cause::Memory);
}

#[test]
fn a_guest_that_recurses_without_bound_exhausts_its_stack() {
    fails_closed(
        patient("deep"),
        tool_call("deep:recurse", "{}"),
        Cause::Stack,
    );
}

#[test]
fn a_guest_that_panics_traps() {
    fails_closed(
        patient("panicky"),
        tool_call("panicky:panic", "{}"),
        Cause::Trap,
    );
}

#[test]
fn an_answer_past_the_answer_limit_is_oversized() {
    fails_closed(
        patient("big"),
        tool_result("big:huge", "r"),
        Cause::Oversized,
    );
}

#[test]
fn an_answer_that_reuses_one_buffer_many_times_is_stopped_before_the_host_copies_it() {
    // A patch-request whose extra-context lists 100,000 documents, all
    // pointing at the same 64 KiB: 6 GiB if the host lifted it naively.
    let flow_at = 4096;
    let docs_at = 65536 * 2;
    let body = format!(
        r#"(local $i i32)
        (i32.store8 (i32.const {flow_at}) (i32.const 5))              ;; patch-request
        (i32.store8 (i32.const {extra}) (i32.const 1))                ;; extra-context: some
        (i32.store (i32.const {ptr}) (i32.const {docs_at}))
        (i32.store (i32.const {len}) (i32.const 100000))
        (drop (memory.grow (i32.const 30)))
        (loop $fill
          (i32.store (i32.add (i32.const {docs_at}) (i32.mul (local.get $i) (i32.const 16))) (i32.const 0))
          (i32.store offset=4 (i32.add (i32.const {docs_at}) (i32.mul (local.get $i) (i32.const 16))) (i32.const 1))
          (i32.store offset=8 (i32.add (i32.const {docs_at}) (i32.mul (local.get $i) (i32.const 16))) (i32.const 0))
          (i32.store offset=12 (i32.add (i32.const {docs_at}) (i32.mul (local.get $i) (i32.const 16))) (i32.const 65536))
          (local.set $i (i32.add (local.get $i) (i32.const 1)))
          (br_if $fill (i32.lt_u (local.get $i) (i32.const 100000))))
        (i32.const {flow_at})"#,
        extra = flow_at + 8 + 80,
        ptr = flow_at + 8 + 84,
        len = flow_at + 8 + 88,
    );
    let guest = from_wat("amplifier", &wat::hook(&body, ""));
    fails_closed(guest, completion_call("go"), Cause::Oversized);
}

#[test]
fn an_answer_with_invalid_utf8_traps() {
    // rewrite-result pointing at two bytes that are not UTF-8 (the flow's
    // payload sits at offset 8: a patch-request's f64 aligns the variant).
    let body = r#"(i32.store8 (i32.const 4096) (i32.const 4))
        (i32.store (i32.const 4104) (i32.const 5000))
        (i32.store (i32.const 4108) (i32.const 2))
        (i32.store16 (i32.const 5000) (i32.const 0xffff))
        (i32.const 4096)"#;
    fails_closed(
        from_wat("garbler", &wat::hook(body, "")),
        tool_result("t", "r"),
        Cause::Trap,
    );
}

#[test]
fn a_flow_the_event_does_not_honour_fails_closed() {
    fails_closed(
        patient("rogue"),
        text_delta("rogue:flow:skip:nope"),
        Cause::UnsupportedFlow,
    );
}

#[test]
fn a_rewrite_args_that_is_not_json_fails_closed() {
    fails_closed(
        patient("sloppy"),
        tool_call("sloppy:flow:rewrite-args:{oops", "{}"),
        Cause::InvalidJson,
    );
}

#[test]
fn a_guest_that_grows_a_table_without_bound_hits_its_limit() {
    let body = r#"(loop $grow
          (drop (table.grow $t (ref.null func) (i32.const 1000)))
          (br $grow))
        (i32.const 3072)"#;
    let guest = from_wat("tables", &wat::hook(body, "(table $t 1 funcref)"));
    fails_closed(guest, tool_call("t", "{}"), Cause::Memory);
}

#[test]
fn a_guest_flooding_the_log_hits_its_log_limit() {
    fails_closed(
        patient("chatty"),
        tool_call("chatty:log-flood", "{}"),
        Cause::Limit,
    );
}

#[test]
fn many_tiny_scratchpad_entries_count_their_bookkeeping() {
    fails_closed(
        patient("tiny"),
        tool_call("tiny:scratch-tiny", "{}"),
        Cause::Limit,
    );
}

/// The quota counts an entry as the session store writes it: a value of
/// control characters that fits in raw bytes but not as stored JSON fails
/// closed where the guest writes it, never cut short at a save.
#[test]
fn a_scratchpad_value_that_fits_raw_but_not_as_stored_fails_closed() {
    fails_closed(
        patient("pad"),
        tool_call("pad:scratch-control", "{}"),
        Cause::Limit,
    );
}

#[test]
fn an_event_past_the_hosts_bound_is_refused_before_any_guest_runs() {
    let stack = stack(&[puppet("p")]).with_max_event_bytes(4096);
    let mut run = stack.start_run("r");
    let big = format!(r#"{{"content":"{}"}}"#, "x".repeat(5000));
    let failure = dispatch(&mut run, &tool_call("write_file", &big)).unwrap_err();
    assert_eq!(
        (&*failure.plugin, failure.cause),
        ("hookbox", Cause::Oversized),
        "the host names itself, not the guard: {failure}"
    );
    assert!(run.scratchpads().is_empty(), "no guest was started");
    // Within the bound, the same stack runs the guard.
    let fits = stack.start_run("r2");
    let mut fits = fits;
    assert!(dispatch(&mut fits, &tool_call("write_file", "{}")).is_ok());
}

#[test]
fn empty_log_messages_are_not_free() {
    fails_closed(
        patient("quiet"),
        tool_call("quiet:log-empty-flood", "{}"),
        Cause::Limit,
    );
}

#[test]
fn a_flood_of_empty_lines_on_stdout_hits_the_log_limit() {
    let probe = plugin(hookbox_tests::guests::WASI_PROBE, &[]);
    let failure = once(&stack(&[probe]), &tool_call("newline-flood", "{}")).unwrap_err();
    assert_eq!(failure.cause, Cause::Limit, "{failure}");
}

#[test]
fn a_guest_filling_its_scratchpad_hits_its_quota() {
    fails_closed(
        patient("hoarder"),
        tool_call("hoarder:scratch-flood", "{}"),
        Cause::Limit,
    );
}

#[test]
fn every_event_and_flow_pair_a_real_guest_answers_is_checked_against_the_table() {
    let guest = puppet("p");
    let stack = stack(&[guest]);
    let events: Vec<fn(&str) -> StepEvent> = vec![
        completion_call,
        |s| {
            StepEvent::CompletionResponse(hookbox::CompletionResponse {
                prompt: s.into(),
                ..Default::default()
            })
        },
        |s| {
            StepEvent::ModelTurnFinished(hookbox::ModelTurnFinished {
                content: s.into(),
                ..Default::default()
            })
        },
        |s| invalid_tool_call(s, &["shell"]),
        |s| tool_call(s, "{}"),
        |s| tool_result(s, "r"),
        text_delta,
        |s| {
            StepEvent::ToolCallDelta(hookbox::ToolCallDelta {
                delta: s.into(),
                ..Default::default()
            })
        },
        |s| {
            StepEvent::StreamResponseFinish(hookbox::StreamResponseFinish {
                prompt: s.into(),
                ..Default::default()
            })
        },
    ];
    let flows = [
        "continue",
        "terminate:t",
        "skip:s",
        "rewrite-args:{}",
        "rewrite-result:r",
        "patch-request:p",
        "fail",
        "retry:f",
        "repair:r",
    ];
    for make in &events {
        for flow in flows {
            let event = make(&format!("p:flow:{flow}"));
            let kind = event.kind();
            let outcome = once(&stack, &event);
            let expected = match outcome {
                Ok(ref d) => {
                    kind.honours(&d.flow)
                        || (kind == hookbox::EventKind::InvalidToolCall && flow == "continue")
                }
                Err(ref f) => {
                    f.cause == Cause::UnsupportedFlow
                        && !hookbox::rules::flows_honoured_by(kind).any(|n| flow.starts_with(n))
                }
            };
            assert!(expected, "{kind} answered {flow}: {outcome:?}");
        }
    }
}

#[test]
fn a_guest_that_loops_while_starting_fails_to_load() {
    let err = Plugin::from_bytes(
        runtime(),
        "slow-start",
        &wat::hook(
            "(i32.const 3072)",
            "(func $spin (loop $l (br $l))) (start $spin)",
        ),
        PluginOptions::default(),
    )
    .expect_err("must not load");
    let message = err.to_string();
    assert!(
        message.contains("slow-start") && message.contains("deadline"),
        "{message}"
    );
}

#[test]
fn deadlines_follow_the_epoch_not_the_wall_clock() {
    // A manual epoch: the guest is interrupted only once the test has
    // advanced the epoch past its deadline, however slow the machine is.
    let runtime = Runtime::new(RuntimeConfig {
        epoch_tick: None,
        ..Default::default()
    })
    .unwrap();
    let limits = Limits {
        deadline: std::time::Duration::from_millis(5),
        ..Default::default()
    };
    let looper = Plugin::from_file(
        &runtime,
        hookbox_tests::guests::PUPPET.as_ref(),
        PluginOptions {
            limits: Some(limits),
            config: [("name".to_string(), "l".to_string())].into(),
        },
    )
    .unwrap();
    let stack = stack(&[Arc::new(looper)]);
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let ticker = {
        let (runtime, done) = (runtime.clone(), done.clone());
        std::thread::spawn(move || {
            let mut ticks = 0u64;
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                runtime.advance_epoch();
                ticks += 1;
                std::thread::yield_now();
            }
            ticks
        })
    };
    let failure = once(&stack, &tool_call("l:loop", "{}")).unwrap_err();
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    let ticks = ticker.join().unwrap();
    assert_eq!(failure.cause, Cause::Deadline);
    assert!(
        ticks >= 5,
        "interrupted after {ticks} ticks, before its 5-tick deadline"
    );
}
