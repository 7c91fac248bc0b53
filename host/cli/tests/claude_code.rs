//! `hookbox claude-code` against recorded Claude Code hook inputs
//! (tests/data/claude-code/*.json: the input, the exit code, and the
//! expected stdout JSON or a piece of stderr), run as Claude Code runs it: a
//! process per event, the input on stdin.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use hookbox_tests::guests;
use serde_json::Value;

fn plugin_dir() -> PathBuf {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/claude-code");
    let dir = std::env::temp_dir().join(format!("hookbox-claude-code-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(data.join("hookbox.toml"), dir.join("hookbox.toml")).unwrap();
    for (name, path) in guests::ALL
        .iter()
        .filter(|(n, _)| guests::EXAMPLES.contains(n))
    {
        std::fs::copy(path, dir.join(format!("{name}.wasm"))).unwrap();
    }
    dir
}

#[test]
fn every_recorded_hook_input_gets_the_recorded_answer() {
    let dir = plugin_dir();
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/claude-code");
    let mut fixtures: Vec<PathBuf> = std::fs::read_dir(&data)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    fixtures.sort();
    assert!(fixtures.len() >= 8, "fixtures missing: {fixtures:?}");
    for fixture in fixtures {
        let case: Value =
            serde_json::from_str(&std::fs::read_to_string(&fixture).unwrap()).unwrap();
        let name = fixture.file_name().unwrap().to_string_lossy();
        let input = match &case["input"] {
            Value::String(raw) => raw.clone(),
            value => value.to_string(),
        };
        let mut child = Command::new(env!("CARGO_BIN_EXE_hookbox"))
            .args(["claude-code", "--plugins"])
            .arg(&dir)
            .env("HOOKBOX_CACHE_DIR", dir.join(".cache"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            case["exit"].as_i64().map(|c| c as i32),
            "{name}: stdout {stdout} stderr {stderr}"
        );
        match &case["stdout"] {
            Value::Null if case.get("stdout").is_some() => {
                assert_eq!(stdout.trim(), "", "{name}: no output means no opinion")
            }
            Value::Null => {}
            expected => {
                let got: Value = serde_json::from_str(&stdout)
                    .unwrap_or_else(|e| panic!("{name}: stdout is not JSON ({e}): {stdout}"));
                assert_eq!(&got, expected, "{name}");
            }
        }
        if let Some(piece) = case["stderr_contains"].as_str() {
            assert!(
                stderr.contains(piece),
                "{name}: stderr lacks {piece:?}: {stderr}"
            );
        }
    }
}

#[test]
fn a_stack_that_fails_closed_blocks_the_tool_call() {
    let dir =
        std::env::temp_dir().join(format!("hookbox-claude-code-broken-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("guard.wasm"), b"not a component").unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_hookbox"))
        .args(["claude-code", "--plugins"])
        .arg(&dir)
        .env("HOOKBOX_CACHE_DIR", "off")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let input = r#"{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"t"}"#;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(2), "never allow by default");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("failed closed") && stderr.contains("guard"),
        "{stderr}"
    );
}
