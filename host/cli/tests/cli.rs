//! The `hookbox` command, run as a user would: exit codes, messages, output.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use hookbox_tests::guests;
use serde_json::Value;

fn hookbox(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_hookbox"))
        .args(args)
        .env("HOOKBOX_LOG", "off")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("hookbox runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn lines(output: &Output) -> Vec<Value> {
    stdout(output)
        .lines()
        .map(|l| serde_json::from_str(l).expect("each output line is JSON"))
        .collect()
}

fn scratch(name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("hookbox-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn check_prints_a_plugins_subscriptions_and_imports() {
    let out = hookbox(&["check", guests::DENY_TOOLS], "");
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("subscriptions: tool-call"), "{text}");
    assert!(
        text.contains("imports:       hookbox:hook/config@0.1.0"),
        "{text}"
    );
}

#[test]
fn check_refuses_bad_plugins_with_one_line_and_a_failing_exit() {
    let core = scratch("core.wasm", &wat::parse_str("(module)").unwrap());
    let corrupt = scratch("corrupt.wasm", b"\0asm\x0d\0\x01\0junk");
    let other = scratch("other.wasm", &wat::parse_str(r#"(component (core module $m (func (export "f"))) (core instance $i (instantiate $m)) (func (export "hello") (canon lift (core func $i "f"))))"#).unwrap());
    for (path, says) in [
        (core.to_str().unwrap(), "not a component"),
        (corrupt.to_str().unwrap(), "failed to load (compile)"),
        (other.to_str().unwrap(), "does not export `on-event`"),
        ("/no/such/plugin.wasm", "no such file"),
    ] {
        let out = hookbox(&["check", path], "");
        assert!(!out.status.success(), "{path} must fail");
        let err = stderr(&out);
        assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
        assert!(err.contains(says), "{path}: `{err}` should say `{says}`");
    }
}

#[test]
fn check_shows_the_facts_of_a_refused_component_and_marks_what_is_not_provided() {
    // Built against a newer hookbox:hook, and wanting HTTP.
    let wrong = scratch(
        "wrong.wasm",
        &wat::parse_str(
            r#"(component
            (import "hookbox:hook/config@0.2.0" (instance (export "get" (func))))
            (import "wasi:http/outgoing-handler@0.2.0" (instance (export "handle" (func)))))"#,
        )
        .unwrap(),
    );
    let out = hookbox(&["check", wrong.to_str().unwrap()], "");
    assert!(!out.status.success());
    let (err, text) = (stderr(&out), stdout(&out));
    assert!(err.contains("refused"), "{err}");
    assert!(
        err.contains("built against hookbox:hook@0.2.0, this host implements hookbox:hook@0.1.0"),
        "{err}"
    );
    assert!(err.contains("-d http fetch-event"), "{err}");
    assert!(
        text.contains("hookbox:hook/config@0.2.0 (NOT PROVIDED), wasi:http/outgoing-handler@0.2.0 (NOT PROVIDED)"),
        "{text}"
    );
    assert!(text.contains("size:"), "{text}");

    // The same facts when it is refused as part of a directory.
    let dir = wrong.parent().unwrap().join("refused-dir");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(&wrong, dir.join("wrong.wasm")).unwrap();
    let out = hookbox(&["check", dir.to_str().unwrap()], "");
    assert!(!out.status.success());
    let (err, text) = (stderr(&out), stdout(&out));
    assert!(err.contains("- wrong (wrong.wasm, required): "), "{err}");
    assert!(
        text.contains("wasi:http/outgoing-handler@0.2.0 (NOT PROVIDED)") && text.contains("size:"),
        "{text}"
    );
}

#[test]
fn check_names_the_toolchain_that_built_a_plugin() {
    let out = hookbox(&["check", guests::DENY_TOOLS], "");
    let text = stdout(&out);
    // The guest profile strips rustc's own producers entry; the
    // component tools' remain (in the order the component records them).
    let built_with = text
        .lines()
        .find(|line| line.trim_start().starts_with("built with:"));
    assert!(
        built_with.is_some_and(|line| line.contains("wit-component ")),
        "{text}"
    );
}

#[test]
fn replay_prints_one_flow_per_event_naming_the_decider() {
    let events = r#"{"event":"tool-call","tool_name":"shell","args":{"cmd":"rm -rf /"}}
{"event":"tool-call","tool_name":"ls","args":"{}"}
"#;
    let out = hookbox(&["replay", "--plugin", guests::DENY_TOOLS, "-"], events);
    assert!(out.status.success(), "{}", stderr(&out));
    let lines = lines(&out);
    assert_eq!(lines[0]["flow"], "skip");
    assert_eq!(lines[0]["plugin"], "deny-tools");
    assert_eq!(lines[1], serde_json::json!({"flow": "continue"}));
}

#[test]
fn replay_shows_each_plugins_scratchpad_after_each_event_when_asked() {
    let events = r#"{"event":"tool-call","tool_name":"shell","args":"{}"}
{"event":"tool-call","tool_name":"read_file","args":"{}"}
{"event":"tool-call","tool_name":"shell","args":"{}"}
"#;
    let args = [
        "replay",
        "--plugin",
        guests::TOOLGUARD,
        "--config",
        "toolguard.deny=shell",
        "--scratchpad",
        "--runs",
        "2",
        "-",
    ];
    let out = hookbox(&args, events);
    assert!(out.status.success(), "{}", stderr(&out));
    let counts: Vec<(Value, Value)> = lines(&out)
        .iter()
        .map(|line| (line["run"].clone(), line["scratchpads"].clone()))
        .collect();
    let denials =
        |run: u32, n: &str| (run.into(), serde_json::json!({"toolguard": {"denials": n}}));
    // Counted per run: the second run starts from an empty scratchpad.
    assert_eq!(
        counts,
        [
            denials(1, "1"),
            denials(1, "1"),
            denials(1, "2"),
            denials(2, "1"),
            denials(2, "1"),
            denials(2, "2"),
        ]
    );
}

#[test]
fn replay_names_the_line_of_a_bad_event_and_runs_nothing() {
    let events = "{\"event\":\"tool-call\",\"tool_name\":\"ls\",\"args\":\"{}\"}\n{\"event\":\"tool-cal\"}\n";
    let out = hookbox(&["replay", "--plugin", guests::DENY_TOOLS, "-"], events);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("stdin:2"), "{}", stderr(&out));
    assert!(stdout(&out).is_empty(), "nothing ran");
}

#[test]
fn replay_config_reaches_the_plugin() {
    let event = r#"{"event":"tool-call","tool_name":"write_file","args":"{}"}"#;
    let out = hookbox(
        &[
            "replay",
            "--plugin",
            guests::DENY_TOOLS,
            "--config",
            "deny-tools.allow=read_file",
            "-",
        ],
        event,
    );
    assert_eq!(lines(&out)[0]["flow"], "skip", "{}", stderr(&out));
    let out = hookbox(
        &[
            "replay",
            "--plugin",
            guests::DENY_TOOLS,
            "--config",
            "nobody.x=1",
            "-",
        ],
        event,
    );
    assert!(stderr(&out).contains("`nobody`"), "{}", stderr(&out));
}

/// The four misbehaviours of the core issue each end a replay with a
/// fail-closed terminate naming the plugin and the cause; with `--runs 2`
/// the second run shows the process is still healthy.
#[test]
fn misbehaving_guests_end_a_replay_fail_closed_and_the_next_run_is_healthy() {
    for (command, cause) in [
        ("loop", "deadline"),
        ("grow", "memory"),
        ("recurse", "stack"),
        ("panic", "trap"),
    ] {
        let events = format!(
            "{{\"event\":\"tool-call\",\"tool_name\":\"puppet:flow:skip:fine\",\"args\":\"{{}}\"}}\n\
             {{\"event\":\"tool-call\",\"tool_name\":\"puppet:{command}\",\"args\":\"{{}}\"}}\n\
             {{\"event\":\"tool-call\",\"tool_name\":\"never-reached\",\"args\":\"{{}}\"}}\n"
        );
        let started = std::time::Instant::now();
        let out = hookbox(
            &["replay", "--plugin", guests::PUPPET, "--runs", "2", "-"],
            &events,
        );
        assert!(out.status.success(), "{}", stderr(&out));
        let lines = lines(&out);
        assert_eq!(
            lines.len(),
            4,
            "two lines per run: the run stops at the terminate"
        );
        for run in [&lines[0..2], &lines[2..4]] {
            assert_eq!(run[0]["flow"], "skip");
            assert_eq!(run[1]["flow"], "terminate");
            assert_eq!(run[1]["fail_closed"]["plugin"], "puppet");
            assert_eq!(run[1]["fail_closed"]["cause"], cause, "{command}");
        }
        // Generous: the budget is 100 ms per call; this only catches a hang.
        assert!(
            started.elapsed().as_secs() < 20,
            "{command} took {:?}",
            started.elapsed()
        );
    }
}

#[test]
fn a_plugin_that_cannot_load_fails_every_run_closed() {
    let corrupt = scratch("broken.wasm", b"\0asm\x0d\0\x01\0junk");
    let out = hookbox(
        &["replay", "--plugin", corrupt.to_str().unwrap(), "-"],
        r#"{"event":"text-delta","delta":"hi"}"#,
    );
    let lines = lines(&out);
    assert_eq!(lines[0]["fail_closed"]["cause"], "load");
    assert_eq!(lines[0]["fail_closed"]["plugin"], "broken");
}

#[test]
fn watch_reloads_the_directory_and_replays_stdin_against_the_live_stack() {
    use std::io::{BufRead, BufReader};
    let dir = std::env::temp_dir().join(format!("hookbox-cli-watch-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(guests::PUPPET, dir.join("guard.wasm")).unwrap();
    let manifest = |version: &str| {
        let text = format!(
            "[[plugin]]\nfile = \"guard.wasm\"\n[plugin.config]\nversion = \"{version}\"\n"
        );
        std::fs::write(dir.join("hookbox.toml"), text).unwrap();
    };
    manifest("v1");
    let mut child = Command::new(env!("CARGO_BIN_EXE_hookbox"))
        .args([
            "watch",
            "--plugins",
            dir.to_str().unwrap(),
            "--events",
            "-",
            "--debounce-ms",
            "20",
        ])
        .env("HOOKBOX_LOG", "off")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut ask = || {
        // A blank line first: each question is a new run, on the live stack.
        stdin
            .write_all(
                b"\n{\"event\":\"tool-call\",\"tool_name\":\"puppet:version\",\"args\":\"{}\"}\n",
            )
            .unwrap();
        stdin.flush().unwrap();
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        serde_json::from_str::<Value>(&line).unwrap()["reason"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(ask(), "v1");
    manifest("v2");
    let started = std::time::Instant::now();
    while ask() != "v2" {
        assert!(
            started.elapsed().as_secs() < 20,
            "the change was never picked up"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    drop(stdin); // end of input: watch ends
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("generation 1") && err.contains("reload: generation 2"),
        "{err}"
    );
}

/// `hookbox run` with a scripted model in a scratch workspace; `--json`
/// prints the loop events as JSON lines.
fn run_agent(name: &str, script: &str, extra: &[&str]) -> Output {
    let script = scratch(&format!("{name}.json"), script.as_bytes());
    let workspace =
        std::env::temp_dir().join(format!("hookbox-cli-ws-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::write(workspace.join("a.txt"), "hello").unwrap();
    let model = format!("scripted:{}", script.display());
    let mut args = vec!["run", "--workspace", workspace.to_str().unwrap()];
    if !extra.contains(&"--model") {
        args.extend(["--model", &model]);
    }
    args.extend_from_slice(extra);
    args.push("do the thing");
    hookbox(&args, "")
}

const READ_A: &str = r#"{"turns":[{"tool_calls":[{"name":"read_file","arguments":{"path":"a.txt"}}]},{"content":"It says hello."}]}"#;

#[test]
fn run_drives_the_loop_and_prints_every_loop_event() {
    let out = run_agent(
        "finish",
        READ_A,
        &["--json", "--plugin", guests::DENY_TOOLS],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let types: Vec<String> = lines(&out)
        .iter()
        .map(|l| l["type"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        types,
        [
            "iteration-start",
            "llm-response-received",
            "tool-execution-start",
            "tool-execution-end",
            "iteration-start",
            "llm-response-received",
            "run-end"
        ]
    );
    let end = lines(&out).pop().unwrap();
    assert_eq!(end["status"], "finished");
    assert_eq!(end["text"], "It says hello.");
}

#[test]
fn run_exit_status_says_how_the_run_ended() {
    // A hook terminates: 3.
    let budget = &[
        "--plugin",
        guests::CALL_BUDGET,
        "--config",
        "call-budget.max_calls=0",
    ];
    let out = run_agent("terminated", READ_A, budget);
    assert_eq!(out.status.code(), Some(3), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("terminated by `call-budget` at tool-call"),
        "{}",
        stdout(&out)
    );

    // A hook misbehaves: 4, with the diagnostic.
    let script = r#"{"turns":[{"tool_calls":[{"name":"puppet:panic","arguments":{}}]}]}"#;
    let out = run_agent("failed", script, &["--plugin", guests::PUPPET]);
    assert_eq!(out.status.code(), Some(4), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("failed closed: plugin `puppet`"),
        "{}",
        stdout(&out)
    );

    // An invalid tool call nobody handles, or a loop: 5.
    let script = r#"{"turns":[{"tool_calls":[{"name":"rm_rf","arguments":{}}]}]}"#;
    let out = run_agent("invalid", script, &[]);
    assert_eq!(out.status.code(), Some(5), "{}", stdout(&out));

    // A model that cannot be reached: 1, naming the server.
    let out = run_agent(
        "unreachable",
        READ_A,
        &["--model", "openai:m", "--base-url", "http://127.0.0.1:9/v1"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains("cannot reach http://127.0.0.1:9/v1"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn run_rejects_a_bad_model_spec_and_a_missing_workspace_clearly() {
    let out = hookbox(&["run", "--model", "gpt-4", "x"], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("expected scripted:FILE or openai:NAME"),
        "{}",
        stderr(&out)
    );
    let out = hookbox(&["run", "--model", "scripted:/nonexistent.json", "x"], "");
    assert!(
        stderr(&out).contains("cannot read the script /nonexistent.json"),
        "{}",
        stderr(&out)
    );
    let out = hookbox(
        &[
            "run",
            "--model",
            "openai:m",
            "--workspace",
            "/nonexistent-ws",
            "x",
        ],
        "",
    );
    assert!(
        stderr(&out).contains("workspace /nonexistent-ws"),
        "{}",
        stderr(&out)
    );
}
