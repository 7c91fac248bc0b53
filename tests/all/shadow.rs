//! Shadow mode: a shadow plugin is asked at its place and what it would
//! have done is reported, never acted on; it never fails a run closed. One
//! test per rule of `hookbox::HookStack`'s shadow paragraph, with real guests.

use std::sync::{Arc, Mutex};

use hookbox::{Cause, Flow, HookStack, StepEvent, hook_fn};

use super::directory::{put, scratch_dir};
use super::support::*;
use hookbox_tests::guests;

/// A stack of: the shadow puppet `s`, then the enforcing puppet `e`.
fn shadow_then_enforce() -> HookStack {
    let mut stack = HookStack::new();
    stack.push_shadow(named_puppet("s"));
    stack.push_plugin(named_puppet("e"));
    stack
}

fn only_shadow(decision: &hookbox::Decision) -> &hookbox::Shadowed {
    let [answer] = &decision.shadow[..] else {
        panic!("one shadow answer expected: {decision:?}")
    };
    answer
}

#[test]
fn a_shadow_skip_does_not_change_the_net_flow_and_is_reported() {
    let decision = decided(once(
        &shadow_then_enforce(),
        &tool_call("s:flow:skip:no", "{}"),
    ));
    assert_eq!(decision.flow, Flow::Continue);
    assert_eq!(decision.plugin, None);
    let answer = only_shadow(&decision);
    assert_eq!(
        (&*answer.plugin, &answer.outcome),
        ("s", &Ok(Flow::skip("no")))
    );
}

#[test]
fn the_enforcing_plugins_still_decide_beside_a_shadow() {
    let decision = decided(once(
        &shadow_then_enforce(),
        &tool_call("e:flow:skip:enforced", "{}"),
    ));
    assert_eq!(decision.flow, Flow::skip("enforced"));
    assert_eq!(decision.plugin.as_deref(), Some("e"));
    assert!(
        decision.shadow.is_empty(),
        "a shadow that continued is not reported"
    );
}

#[test]
fn a_shadow_terminate_does_not_end_the_run() {
    let stack = shadow_then_enforce();
    let mut run = stack.start_run("r");
    let decision = decided(dispatch(
        &mut run,
        &tool_call("s:flow:terminate:stop", "{}"),
    ));
    assert_eq!(decision.flow, Flow::Continue);
    assert!(!run.is_over());
    assert_eq!(
        decided(dispatch(&mut run, &tool_call("e:flow:skip:later", "{}"))).flow,
        Flow::skip("later")
    );
}

#[test]
fn a_shadow_rewrite_is_not_threaded_into_the_next_hook_nor_returned() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut stack = HookStack::new();
    stack.push_shadow(named_puppet("s"));
    let recorder = seen.clone();
    stack.push_hook(hook_fn("after", move |_, event| {
        if let StepEvent::ToolCall(call) = event {
            recorder.lock().unwrap().push(call.args.clone());
        }
        Flow::Continue
    }));
    let decision = decided(once(
        &stack,
        &tool_call("s:flow:rewrite-args:{\"x\": 1}", "{\"x\":0}"),
    ));
    assert_eq!(decision.flow, Flow::Continue);
    assert_eq!(*seen.lock().unwrap(), ["{\"x\":0}"]);
    // Checked as an enforcing answer would be: in the canonical form.
    assert_eq!(
        only_shadow(&decision).outcome,
        Ok(Flow::rewrite_args("{\"x\":1}"))
    );
}

#[test]
fn a_shadow_patch_request_is_not_merged() {
    let decision = decided(once(
        &shadow_then_enforce(),
        &completion_call("s:flow:patch-request:be terse"),
    ));
    assert_eq!(decision.flow, Flow::Continue);
    assert!(
        matches!(&only_shadow(&decision).outcome, Ok(Flow::PatchRequest(p)) if p.preamble.as_deref() == Some("be terse"))
    );
}

#[test]
fn a_shadow_that_traps_leaves_the_run_going_and_is_reported_once() {
    let stack = shadow_then_enforce();
    let mut run = stack.start_run("r");
    let decision = decided(dispatch(&mut run, &tool_call("s:panic", "{}")));
    assert_eq!(decision.flow, Flow::Continue);
    let answer = only_shadow(&decision);
    let failure = answer.outcome.as_ref().unwrap_err();
    assert_eq!((&*failure.plugin, failure.cause), ("s", Cause::Trap));
    assert!(!run.is_over());
    // The dead shadow is not asked again; the enforcing puppet still is.
    let next = decided(dispatch(&mut run, &tool_call("s:flow:skip:again", "{}")));
    assert!(next.shadow.is_empty(), "{next:?}");
    assert_eq!(
        decided(dispatch(&mut run, &tool_call("e:flow:skip:on", "{}"))).flow,
        Flow::skip("on")
    );
}

#[test]
fn a_shadow_that_runs_away_is_reported_as_a_deadline_and_the_run_goes_on() {
    let decision = decided(once(&shadow_then_enforce(), &tool_call("s:loop", "{}")));
    assert_eq!(decision.flow, Flow::Continue);
    let failure = only_shadow(&decision).outcome.clone().unwrap_err();
    assert_eq!(failure.cause, Cause::Deadline);
}

#[test]
fn a_shadow_answer_the_event_does_not_honour_is_reported_not_failed_closed() {
    let decision = decided(once(
        &shadow_then_enforce(),
        &tool_call("s:flow:repair:other", "{}"),
    ));
    assert_eq!(decision.flow, Flow::Continue);
    let failure = only_shadow(&decision).outcome.clone().unwrap_err();
    assert_eq!(failure.cause, Cause::UnsupportedFlow);
}

#[test]
fn a_shadow_does_not_answer_an_invalid_tool_call() {
    let mut stack = HookStack::new();
    stack.push_shadow(named_puppet("s"));
    let decision = decided(once(
        &stack,
        &invalid_tool_call("s:flow:repair:read_file", &["read_file"]),
    ));
    assert_eq!(
        decision.flow,
        Flow::Fail,
        "nobody enforcing answered: the call fails"
    );
    assert_eq!(
        only_shadow(&decision).outcome,
        Ok(Flow::repair("read_file"))
    );
}

#[test]
fn a_shadow_keeps_no_state_across_runs() {
    let stack = shadow_then_enforce();
    for run_id in ["one", "two"] {
        let mut run = stack.start_run(run_id);
        let decision = decided(dispatch(&mut run, &tool_call("s:count", "{}")));
        let Ok(Flow::Skip(said)) = &only_shadow(&decision).outcome else {
            panic!("{decision:?}")
        };
        assert!(
            said.ends_with("scratch=1"),
            "a fresh instance per run: {said}"
        );
    }
}

#[test]
fn a_manifest_shadow_is_loaded_as_a_shadow_and_never_fails_runs_closed() {
    let dir = scratch_dir("shadow");
    put(&dir, "trial.wasm", guests::PUPPET);
    put(&dir, "guard.wasm", guests::PUPPET);
    std::fs::write(dir.join("broken.wasm"), b"not a component").unwrap();
    std::fs::write(
        dir.join("hookbox.toml"),
        "[[plugin]]\nfile = \"trial.wasm\"\nmode = \"shadow\"\n[plugin.config]\nname = \"trial\"\n\n\
         [[plugin]]\nfile = \"broken.wasm\"\nmode = \"shadow\"\n\n\
         [[plugin]]\nfile = \"guard.wasm\"\n[plugin.config]\nname = \"guard\"\n",
    )
    .unwrap();
    let loaded = hookbox::directory::load(runtime(), &dir).unwrap();
    let modes: Vec<_> = loaded
        .plugins
        .iter()
        .map(|p| (p.name.as_str(), p.mode.name(), p.result.is_ok()))
        .collect();
    assert_eq!(
        modes,
        [
            ("trial", "shadow", true),
            ("broken", "shadow", false),
            ("guard", "enforce", true)
        ]
    );

    // The broken shadow is left out (required by default, yet no fail-closed).
    let decision = decided(once(
        &loaded.stack,
        &tool_call("trial:flow:skip:would", "{}"),
    ));
    assert_eq!(decision.flow, Flow::Continue);
    assert_eq!(&*only_shadow(&decision).plugin, "trial");
    assert_eq!(
        decided(once(
            &loaded.stack,
            &tool_call("guard:flow:skip:does", "{}")
        ))
        .flow,
        Flow::skip("does")
    );
    // Its JSON form says what shadows would have done.
    let json = hookbox::outcome_json(&once(&loaded.stack, &tool_call("trial:panic", "{}")));
    assert_eq!(json["flow"], "continue");
    assert_eq!(json["shadow"][0]["plugin"], "trial");
    assert_eq!(json["shadow"][0]["fail_closed"]["cause"], "trap");
}
