//! The example guardrails make the decisions their READMEs claim, alone and
//! replayed together against the example session.

use hookbox::{Document, Flow, HookStack, RequestPatch, StepEvent};

use super::support::*;
use hookbox_tests::guests;

fn example(path: &str, config: &[(&str, &str)]) -> HookStack {
    stack(&[plugin(path, config)])
}

#[test]
fn deny_tools_denies_by_name_by_allow_list_and_by_argument_pattern() {
    let by_name = example(guests::DENY_TOOLS, &[("deny", "shell, net_*")]);
    assert!(
        matches!(decided(once(&by_name, &tool_call("net_fetch", "{}"))).flow, Flow::Skip(r) if r.contains("deny-list"))
    );
    assert_eq!(
        decided(once(&by_name, &tool_call("read_file", "{}"))).flow,
        Flow::Continue
    );

    let allow = example(guests::DENY_TOOLS, &[("allow", "read_file,list_dir")]);
    assert!(
        matches!(decided(once(&allow, &tool_call("write_file", "{}"))).flow, Flow::Skip(r) if r.contains("allow-list"))
    );

    let defaults = example(guests::DENY_TOOLS, &[]);
    let skip = decided(once(
        &defaults,
        &tool_call("shell", r#"{"cmd":"sudo rm -rf /"}"#),
    ))
    .flow;
    assert_eq!(
        skip,
        Flow::skip(
            "Not executed: the `shell` call was denied by policy because its arguments match the denied pattern `*rm -rf*`. Do not retry it."
        )
    );
    assert_eq!(
        decided(once(&defaults, &tool_call("shell", r#"{"cmd":"ls"}"#))).flow,
        Flow::Continue
    );
}

#[test]
fn redact_secrets_redacts_credentials_keys_and_emails_from_results() {
    let stack = example(guests::REDACT_SECRETS, &[]);
    let text = "user=bob\nexport  AWS_SECRET_ACCESS_KEY=ab3cd\naws_access_key_id=AKIAABCDEFGHIJKLMNOP\nx-api-key: 1234\nmax_tokens: 1024\ntoken ghp_0123456789abcdefABCDEF0123456789abcd and mail bob@corp.example.\n-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\nbye";
    let Flow::RewriteResult(redacted) = decided(once(&stack, &tool_result("read_file", text))).flow
    else {
        panic!("expected a rewrite")
    };
    assert_eq!(
        redacted,
        "user=bob\nexport  AWS_SECRET_ACCESS_KEY=[REDACTED]\naws_access_key_id=[REDACTED]\nx-api-key: [REDACTED]\nmax_tokens: 1024\ntoken [REDACTED] and mail [REDACTED EMAIL].\n[REDACTED PRIVATE KEY]\nbye"
    );
    assert_eq!(
        decided(once(&stack, &tool_result("read_file", "nothing to hide"))).flow,
        Flow::Continue
    );
}

#[test]
fn path_jail_keeps_every_path_inside_the_root() {
    let stack = example(
        guests::PATH_JAIL,
        &[("root", "/srv/ws"), ("fields", "path,dest")],
    );
    let cases = [
        (
            r#"{"path":"../../etc/passwd"}"#,
            Some(r#"{"path":"/srv/ws/etc/passwd"}"#),
        ),
        (
            r#"{"path":"/etc/hosts","dest":"a/../../b"}"#,
            Some(r#"{"dest":"/srv/ws/b","path":"/srv/ws/etc/hosts"}"#),
        ),
        (r#"{"path":"/srv/ws/src/main.rs"}"#, None),
        (r#"{"other":"../x"}"#, None),
    ];
    for (args, expected) in cases {
        let flow = decided(once(&stack, &tool_call("read_file", args))).flow;
        assert_eq!(
            flow,
            expected.map_or(Flow::Continue, Flow::rewrite_args),
            "{args}"
        );
    }
    let root = example(guests::PATH_JAIL, &[("root", "/")]);
    assert_eq!(
        decided(once(&root, &tool_call("t", r#"{"path":"/.."}"#))).flow,
        Flow::rewrite_args(r#"{"path":"/"}"#)
    );
    let here = example(guests::PATH_JAIL, &[("root", ".")]);
    for (path, expected) in [
        ("notes.txt", None),
        ("src/a.rs", None),
        (".", None),
        ("../../etc/passwd", Some("etc/passwd")),
        ("/etc/passwd", Some("etc/passwd")),
        ("..", Some(".")),
        ("src/../../x", Some("x")),
    ] {
        let flow = decided(once(
            &here,
            &tool_call("t", &format!(r#"{{"path":"{path}"}}"#)),
        ))
        .flow;
        let expected = expected.map_or(Flow::Continue, |p| {
            Flow::rewrite_args(format!(r#"{{"path":"{p}"}}"#))
        });
        assert_eq!(flow, expected, "{path}");
    }
}

#[test]
fn call_budget_terminates_the_run_past_its_budget_and_each_run_starts_at_zero() {
    let stack = example(guests::CALL_BUDGET, &[("max_calls", "2")]);
    for _ in 0..2 {
        let mut run = stack.start_run("r");
        for _ in 0..2 {
            assert_eq!(
                decided(dispatch(&mut run, &tool_call("t", "{}"))).flow,
                Flow::Continue
            );
        }
        assert_eq!(
            decided(dispatch(&mut run, &tool_call("t", "{}"))).flow,
            Flow::terminate("tool-call budget exhausted: 3 calls in this run, the limit is 2")
        );
    }
}

/// A counter the store garbled (or lost to another use of its key) is not
/// read as zero, which would start the budget again: it is spent, and the
/// run ends at its next call.
#[test]
fn a_garbled_counter_is_spent_not_reset() {
    let stack = example(guests::CALL_BUDGET, &[("max_calls", "2")]);
    for garbage in ["", "seven", "-1", "18446744073709551616"] {
        let mut run = stack.start_run("r");
        let saved = [("calls".to_owned(), garbage.to_owned())].into();
        run.restore_scratchpads([("call-budget".to_owned(), saved)].into());
        let flow = decided(dispatch(&mut run, &tool_call("t", "{}"))).flow;
        assert!(
            matches!(&flow, Flow::Terminate(why) if why.contains("budget exhausted")),
            "{garbage:?}: {flow:?}"
        );
    }
}

#[test]
fn inject_context_adds_documents_on_the_first_turn() {
    let stack = example(
        guests::INJECT_CONTEXT,
        &[("doc.style", "Use tabs."), ("doc.api", "v2 only.")],
    );
    let mut run = stack.start_run("r");
    let expected = Flow::PatchRequest(RequestPatch {
        extra_context: Some(vec![
            Document {
                id: "api".into(),
                text: "v2 only.".into(),
            },
            Document {
                id: "style".into(),
                text: "Use tabs.".into(),
            },
        ]),
        ..Default::default()
    });
    assert_eq!(
        run.dispatch(&run.context(1), &completion_call("go"))
            .unwrap()
            .flow,
        expected
    );
    assert_eq!(
        run.dispatch(&run.context(2), &completion_call("go"))
            .unwrap()
            .flow,
        Flow::Continue
    );
}

#[test]
fn repair_tools_repairs_near_misses_and_asks_for_a_retry_otherwise() {
    let stack = example(guests::REPAIR_TOOLS, &[]);
    let tools = ["read_file", "write_file", "list_dir"];
    assert_eq!(
        decided(once(&stack, &invalid_tool_call("reed_file", &tools))).flow,
        Flow::repair("read_file")
    );
    assert_eq!(
        decided(once(&stack, &invalid_tool_call("launch_rocket", &tools))).flow,
        Flow::retry(
            "`launch_rocket` is not a valid tool. Call one of: [read_file, write_file, list_dir]."
        )
    );
}

/// The example session, replayed through every example plugin in file-name
/// order, as `cargo demo` does.
#[test]
fn the_example_session_shows_every_guardrail_acting() {
    let mut examples: Vec<(&str, &str)> = guests::ALL
        .iter()
        .copied()
        .filter(|(n, _)| guests::EXAMPLES.contains(n))
        .collect();
    examples.sort();
    let stack = stack(
        &examples
            .iter()
            .map(|(_, path)| plugin(path, &[]))
            .collect::<Vec<_>>(),
    );
    let session = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/session.jsonl"
    ))
    .unwrap();
    let events: Vec<StepEvent> = session
        .lines()
        .filter(|l| !l.starts_with("//") && !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut run = stack.start_run("demo");
    let mut decisions = Vec::new();
    let mut turn = 0;
    for event in &events {
        if let StepEvent::CompletionCall(call) = event {
            turn = call.turn;
        }
        let outcome = run.dispatch(&run.context(turn), event);
        decisions.push(match &outcome {
            Ok(d) => format!(
                "{} by {}",
                d.flow.name(),
                d.plugin.as_deref().unwrap_or("-")
            ),
            Err(f) => format!("fail-closed {f}"),
        });
        if run.is_over() {
            break;
        }
    }
    assert_eq!(
        decisions,
        [
            "patch-request by inject-context",
            "rewrite-args by path-jail",
            "rewrite-args by path-jail",
            "rewrite-result by redact-secrets",
            "skip by deny-tools",
            "skip by egress",
            "skip by shell-guard",
            "rewrite-result by pii",
            "repair by repair-tools",
            "continue by -",
            "terminate by call-budget",
        ]
    );
}

#[test]
fn native_hooks_and_wasm_plugins_compose_in_one_stack() {
    // A native hook rewrites the arguments; the WASM path-jail sees the
    // rewrite and jails it; a native auditor after them sees the final args.
    let mut stack = HookStack::new();
    stack.push_hook(hookbox::hook_fn("redirect", |_, event| match event {
        StepEvent::ToolCall(_) => Flow::rewrite_args(r#"{"path":"../secrets"}"#),
        _ => Flow::Continue,
    }));
    stack.push_plugin(plugin(guests::PATH_JAIL, &[("root", "/w")]));
    let seen = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let auditor_saw = seen.clone();
    stack.push_hook(hookbox::hook_fn("auditor", move |_, event| {
        if let StepEvent::ToolCall(call) = event {
            *auditor_saw.lock().unwrap() = call.args.clone();
        }
        Flow::Continue
    }));
    let decision = decided(once(&stack, &tool_call("read_file", r#"{"path":"a"}"#)));
    assert_eq!(
        decision.flow,
        Flow::rewrite_args(r#"{"path":"/w/secrets"}"#)
    );
    assert_eq!(decision.plugin.as_deref(), Some("path-jail"));
    assert_eq!(*seen.lock().unwrap(), r#"{"path":"/w/secrets"}"#);
}

#[test]
fn a_json_escape_does_not_sidestep_deny_tools_at_the_boundary() {
    // The JSON form as serve, replay and watch read it: the arguments as
    // JSON text carrying `\u002d` for the `-` of `-rf`.
    let line =
        r#"{"event":"tool-call","tool_name":"shell","args":"{\"command\":\"rm \\u002drf ~/\"}"}"#;
    let event: StepEvent = serde_json::from_str(line).unwrap();
    let StepEvent::ToolCall(call) = &event else {
        panic!("a tool call")
    };
    assert_eq!(
        call.args, r#"{"command":"rm -rf ~/"}"#,
        "one canonical form"
    );
    let stack = stack(&[plugin(guests::DENY_TOOLS, &[])]);
    assert!(matches!(decided(once(&stack, &event)).flow, Flow::Skip(_)));
}

#[test]
fn a_rewrite_carrying_a_json_escape_is_checked_as_what_the_tool_runs() {
    // An earlier plugin rewrites the arguments into an escaped `rm -rf`;
    // deny-tools, later in the chain, must see (and deny) the real text.
    let rewriter = plugin(
        guests::DIRECTOR,
        &[("tool-call", r#"rewrite-args:{"command":"rm \u002drf ~/"}"#)],
    );
    let stack = stack(&[rewriter, plugin(guests::DENY_TOOLS, &[])]);
    let decision = decided(once(&stack, &tool_call("shell", r#"{"command":"ls"}"#)));
    assert!(matches!(decision.flow, Flow::Skip(_)), "{decision:?}");
    assert_eq!(
        decision.rewritten.as_deref(),
        Some(r#"{"command":"rm -rf ~/"}"#),
        "the kept rewrite is canonical too"
    );
}

#[test]
fn a_rewrite_nested_past_the_one_depth_limit_fails_closed() {
    let deep = "[".repeat(100_000) + &"]".repeat(100_000);
    let rewriter = plugin(
        guests::DIRECTOR,
        &[("tool-call", &format!("rewrite-args:{deep}"))],
    );
    let failure = once(&stack(&[rewriter]), &tool_call("shell", "{}")).unwrap_err();
    assert_eq!(failure.cause, hookbox::Cause::InvalidJson, "{failure}");
}
