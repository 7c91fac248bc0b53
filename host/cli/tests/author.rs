//! `hookbox new`, `build`, `test` and `lock`, from fresh folders, as a new
//! user runs them.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use hookbox_tests::guests;

fn hookbox_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hookbox"))
        .args(args)
        .current_dir(dir)
        .env("HOOKBOX_LOG", "off")
        .env("HOOKBOX_CACHE_DIR", "off")
        .output()
        .expect("hookbox runs")
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn fresh(label: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hookbox-author-{label}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A folder holding one component and a case file for it.
fn guard_with_cases(label: &str, guest: &str, cases: &str) -> (PathBuf, PathBuf) {
    let dir = fresh(label);
    let wasm = dir.join("guard.wasm");
    std::fs::copy(guest, &wasm).unwrap();
    std::fs::write(dir.join("cases.json"), cases).unwrap();
    (dir, wasm)
}

const DENY_SHELL: &str = r#"{"runs": [{"name": "shell is denied", "config": {"deny": "shell"}, "steps": [
  {"event": {"event": "tool-call", "tool_name": "shell", "args": "{}"},
   "flow": {"flow": "skip", "reason": "SKIP"}, "plugin": "guard"},
  {"event": {"event": "tool-call", "tool_name": "read_file", "args": "{}"},
   "flow": {"flow": "continue"}}
]}]}"#;

/// What deny-tools answers to a denied shell call.
fn shell_denial() -> String {
    let runtime = hookbox::Runtime::new(Default::default()).unwrap();
    let options = hookbox::PluginOptions {
        config: [("deny".to_string(), "shell".to_string())].into(),
        ..Default::default()
    };
    let plugin =
        hookbox::Plugin::from_file(&runtime, guests::DENY_TOOLS.as_ref(), options).unwrap();
    let mut stack = hookbox::HookStack::new();
    stack.push_plugin(plugin.into());
    let call =
        serde_json::from_str(r#"{"event":"tool-call","tool_name":"shell","args":"{}"}"#).unwrap();
    match stack.start_run("r").step(&call).unwrap().flow {
        hookbox::Flow::Skip(reason) => reason,
        other => panic!("{other:?}"),
    }
}

#[test]
fn test_passes_cases_that_hold_and_exits_zero() {
    let cases = DENY_SHELL.replace("SKIP", &shell_denial().replace('"', "\\\""));
    let (dir, wasm) = guard_with_cases("pass", guests::DENY_TOOLS, &cases);
    let out = hookbox_in(
        &dir,
        &["test", wasm.to_str().unwrap(), "--cases", "cases.json"],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("PASS") && text(&out).contains("1 run(s), 2 step(s), 0 failure(s)"),
        "{}",
        text(&out)
    );
}

#[test]
fn a_failing_case_exits_non_zero_with_a_diff_naming_the_run_and_the_event() {
    let (dir, wasm) = guard_with_cases(
        "fail",
        guests::DENY_TOOLS,
        &DENY_SHELL.replace("SKIP", "wrong reason"),
    );
    let out = hookbox_in(
        &dir,
        &["test", wasm.to_str().unwrap(), "--cases", "cases.json"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let said = text(&out);
    assert!(
        said.contains("FAIL") && said.contains("shell is denied › step 1 (tool-call shell)"),
        "{said}"
    );
    assert!(
        said.contains("flow.reason\n    - expected \"wrong reason\"\n    + got      "),
        "{said}"
    );
    assert!(said.contains("1 failure(s)"), "{said}");
}

#[test]
fn test_runs_a_plugin_directory_with_its_manifest_and_its_cases() {
    let dir = fresh("dir");
    std::fs::copy(guests::DENY_TOOLS, dir.join("deny.wasm")).unwrap();
    std::fs::write(
        dir.join("hookbox.toml"),
        "[[plugin]]\nfile = \"deny.wasm\"\n[plugin.config]\ndeny = \"shell\"\n",
    )
    .unwrap();
    std::fs::create_dir(dir.join("cases")).unwrap();
    let reason = shell_denial().replace('"', "\\\"");
    std::fs::write(
        dir.join("cases/deny.json"),
        format!(r#"{{"runs": [{{"steps": [{{"event": {{"event": "tool-call", "tool_name": "shell", "args": "{{}}"}}, "flow": {{"flow": "skip", "reason": "{reason}"}}, "plugin": "deny"}}]}}]}}"#),
    )
    .unwrap();
    let out = hookbox_in(&dir, &["test", "."]);
    assert!(out.status.success(), "{}", text(&out));

    // A config in a case is for a single guard: a directory's is its manifest's.
    std::fs::write(
        dir.join("cases/deny.json"),
        r#"{"runs": [{"config": {"deny": "x"}, "steps": []}]}"#,
    )
    .unwrap();
    let out = hookbox_in(&dir, &["test"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out).contains("hookbox.toml"), "{}", text(&out));
}

#[test]
fn test_without_cases_says_where_to_put_them() {
    let dir = fresh("nocases");
    std::fs::copy(guests::DENY_TOOLS, dir.join("deny.wasm")).unwrap();
    let out = hookbox_in(&dir, &["test"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("cases"), "{}", text(&out));
}

#[test]
fn lock_pins_every_plugin_that_loads_and_a_changed_file_is_then_refused() {
    let dir = fresh("lock");
    std::fs::copy(guests::DENY_TOOLS, dir.join("deny.wasm")).unwrap();
    std::fs::write(
        dir.join("hookbox.toml"),
        "# reviewed 2026-12-01\n[[plugin]]\nfile = \"deny.wasm\" # the policy\n[plugin.config]\ndeny = \"shell\"\n",
    )
    .unwrap();
    let out = hookbox_in(&dir, &["lock", "."]);
    assert!(out.status.success(), "{}", text(&out));
    let digest = hookbox::cache::sha256_hex(&std::fs::read(guests::DENY_TOOLS).unwrap());
    let manifest = std::fs::read_to_string(dir.join("hookbox.toml")).unwrap();
    assert!(
        manifest.contains(&format!("sha256 = \"{digest}\"")),
        "{manifest}"
    );
    assert!(
        manifest.contains("# reviewed 2026-12-01") && manifest.contains("# the policy"),
        "comments stay: {manifest}"
    );
    assert!(
        text(&out).contains(&format!("pinned    deny (deny.wasm): sha256 {digest}")),
        "{}",
        text(&out)
    );

    let out = hookbox_in(&dir, &["check", "."]);
    assert!(out.status.success(), "{}", text(&out));
    std::fs::copy(guests::REDACT_SECRETS, dir.join("deny.wasm")).unwrap();
    let out = hookbox_in(&dir, &["check", "."]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out).contains("pin: deny.wasm has sha256") && text(&out).contains(&digest),
        "{}",
        text(&out)
    );

    // Locking again pins the new bytes.
    let out = hookbox_in(&dir, &["lock", "."]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(hookbox_in(&dir, &["check", "."]).status.success());
}

#[test]
fn lock_writes_a_manifest_for_a_directory_without_one() {
    let dir = fresh("lock-new");
    std::fs::copy(guests::DENY_TOOLS, dir.join("b.wasm")).unwrap();
    std::fs::copy(guests::REDACT_SECRETS, dir.join("a.wasm")).unwrap();
    let out = hookbox_in(&dir, &["lock", "."]);
    assert!(out.status.success(), "{}", text(&out));
    let manifest = hookbox::manifest::Manifest::parse(
        &std::fs::read_to_string(dir.join("hookbox.toml")).unwrap(),
    )
    .unwrap();
    let files: Vec<_> = manifest
        .plugins
        .iter()
        .map(|p| (p.file.as_str(), p.sha256.is_some()))
        .collect();
    assert_eq!(
        files,
        [("a.wasm", true), ("b.wasm", true)],
        "file-name order, as before"
    );
}

#[test]
fn new_refuses_a_bad_name_an_unknown_language_and_a_folder_in_use() {
    let dir = fresh("new-bad");
    let out = hookbox_in(&dir, &["new", "No_Shell"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("not a plugin name"), "{}", text(&out));
    let out = hookbox_in(&dir, &["new", "guard", "--lang", "cobol"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).contains("choose one of rust, javascript, python, c, go"),
        "{}",
        text(&out)
    );
    std::fs::create_dir(dir.join("taken")).unwrap();
    std::fs::write(dir.join("taken/file"), "").unwrap();
    let out = hookbox_in(&dir, &["new", "taken"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("not empty"), "{}", text(&out));
}

#[test]
fn build_says_what_is_not_a_project() {
    let dir = fresh("not-a-project");
    let out = hookbox_in(&dir, &["build"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).contains("hookbox new NAME --lang LANG"),
        "{}",
        text(&out)
    );
}

/// `HOOKBOX_MAX_COMPILE_SECS` sets the compile limit of every command: a
/// limit too short refuses the plugin and says how to allow more; a bad
/// value is refused before anything loads.
#[test]
fn the_compile_limit_comes_from_the_environment() {
    let (dir, _) = guard_with_cases("compile-limit", guests::DENY_TOOLS, DENY_SHELL);
    let check = |limit: &str| {
        Command::new(env!("CARGO_BIN_EXE_hookbox"))
            .args(["check", "guard.wasm"])
            .current_dir(&dir)
            .env("HOOKBOX_LOG", "off")
            .env("HOOKBOX_CACHE_DIR", "off")
            .env("HOOKBOX_MAX_COMPILE_SECS", limit)
            .output()
            .expect("hookbox runs")
    };

    let out = check("0.000001");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("took longer than 1µs to compile")
            && text(&out).contains("allow more with HOOKBOX_MAX_COMPILE_SECS=SECONDS"),
        "{}",
        text(&out)
    );

    assert!(check("600").status.success());

    for bad in ["0", "-1", "soon", ""] {
        let out = check(bad);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {}", text(&out));
        assert!(
            text(&out).contains("not a number of seconds above 0"),
            "{bad:?}: {}",
            text(&out)
        );
    }
}

/// A Rust guard from a fresh `hookbox new`: it builds with cargo alone,
/// passes its own cases, and loads. (The other languages are run the same
/// way by `.ci/run`, with their toolchains.)
#[test]
fn a_new_rust_guard_tests_builds_and_checks_out_of_the_box() {
    let dir = fresh("new-rust");
    let out = hookbox_in(&dir, &["new", "no-shell", "--lang", "rust"]);
    assert!(out.status.success(), "{}", text(&out));
    let project = dir.join("no-shell");
    // The guard's build shares a target directory across test runs.
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("author-guests");
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_hookbox"))
            .args(args)
            .current_dir(&project)
            .env("HOOKBOX_LOG", "off")
            .env("CARGO_TARGET_DIR", &target)
            .output()
            .unwrap()
    };
    let out = run(&["test"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("PASS .: 1 case file(s), 2 run(s), 4 step(s), 0 failure(s)"),
        "{}",
        text(&out)
    );
    let out = run(&["build"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("subscriptions: tool-call"),
        "{}",
        text(&out)
    );
    let out = run(&["check", "no-shell.wasm"]);
    assert!(out.status.success(), "{}", text(&out));

    // An edit that breaks a case is caught.
    let lib = project.join("src/lib.rs");
    let source = std::fs::read_to_string(&lib)
        .unwrap()
        .replace("is denied by policy", "is not allowed");
    std::fs::write(&lib, source).unwrap();
    let out = run(&["test"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("step 1 (tool-call shell)"),
        "{}",
        text(&out)
    );
}

/// `hookbox build` installs a JavaScript project's dependencies without
/// running any install script: a `preinstall` that would run code on the
/// author's machine does not run, and the build says what it ran.
#[test]
fn a_javascript_build_runs_no_install_script() {
    let has_npm = Command::new("npm")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_npm {
        let required = std::env::var("HOOKBOX_LANGUAGES").is_ok_and(|l| l.contains("javascript"));
        assert!(
            !required,
            "HOOKBOX_LANGUAGES names javascript but npm is not on PATH"
        );
        eprintln!("skipped: no npm on PATH");
        return;
    }
    let dir = fresh("npm-scripts");
    let out = hookbox_in(&dir, &["new", "scripted", "--lang", "javascript"]);
    assert!(out.status.success(), "{}", text(&out));
    let project = dir.join("scripted");
    let ran = project.join("install-script-ran");
    // No dependencies to fetch (the test needs no registry), and scripts
    // that leave a mark if npm runs them.
    let package = serde_json::json!({
        "name": "scripted",
        "private": true,
        "scripts": {
            "preinstall": "node -e \"require('fs').writeFileSync('install-script-ran', 'pre')\"",
            "postinstall": "node -e \"require('fs').writeFileSync('install-script-ran', 'post')\"",
        },
    });
    std::fs::write(project.join("package.json"), package.to_string()).unwrap();
    let out = hookbox_in(&project, &["build"]);
    assert!(!ran.exists(), "npm ran an install script: {}", text(&out));
    // The build still fails (nothing installed componentize-js), naming the
    // step as it ran it.
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("npm install --ignore-scripts"),
        "{}",
        text(&out)
    );
}
