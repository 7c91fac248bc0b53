//! hookbox's OpenCode plugin inside OpenCode itself (npm `opencode-ai`
//! 1.18.33, pinned in tests/opencode and installed by its setup.sh): the
//! plugin `hookbox hook opencode --print-config` prints, saved where
//! OpenCode loads plugins from, and `opencode run` on a scripted model
//! (tests/opencode/model.py, an OpenAI-compatible server) that calls real
//! tools on real files. What the model is sent back is what it read.
//!
//! Without OpenCode (npm, Linux x64) these tests say so and pass, unless
//! `HOOKBOX_OPENCODE=required` (as CI sets it) makes that a failure.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use hookbox_tests::guests;
use serde_json::{Value, json};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The pinned `opencode` binary, or `None` (with a message) when this
/// machine cannot run it and it is not required.
fn opencode() -> Option<&'static Path> {
    static INSTALLED: OnceLock<Option<PathBuf>> = OnceLock::new();
    INSTALLED
        .get_or_init(|| {
            let setup = Command::new(repo().join("tests/opencode/setup.sh"))
                .stderr(Stdio::inherit())
                .output()
                .expect("tests/opencode/setup.sh runs");
            if setup.status.success() {
                let binary = String::from_utf8(setup.stdout).unwrap();
                return Some(PathBuf::from(binary.trim()));
            }
            let required = std::env::var("HOOKBOX_OPENCODE").is_ok_and(|v| v == "required");
            assert!(
                !required,
                "HOOKBOX_OPENCODE=required, and tests/opencode/setup.sh failed"
            );
            eprintln!(
                "skipping the OpenCode tests: tests/opencode/setup.sh could not install OpenCode"
            );
            None
        })
        .as_deref()
}

fn scratch(label: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hookbox-opencode-{label}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A port nothing listens on (until something takes it).
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// A child process killed when the test is done with it.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// tests/opencode/model.py serving `script`: its port, and the file it
/// logs each request's messages to.
fn model(dir: &Path, script: &Value) -> (Killed, u16, PathBuf) {
    let script_file = dir.join("script.json");
    std::fs::write(&script_file, script.to_string()).unwrap();
    let log = dir.join("requests.jsonl");
    let mut child = Command::new("python3")
        .arg(repo().join("tests/opencode/model.py"))
        .arg(&script_file)
        .arg(&log)
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs tests/opencode/model.py");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port = line.trim().parse().expect("model.py prints its port");
    (Killed(child), port, log)
}

/// A project: the files the script's tools use, hookbox's plugin running
/// `hookbox hook` on `plugins` in `.opencode/plugins/`, and an `opencode.json` that talks to
/// the model on `port` and lets every tool run (hookbox is the guard).
fn project(dir: &Path, plugins: &Path, port: u16) -> PathBuf {
    let project = dir.join("project");
    std::fs::create_dir_all(project.join("notes")).unwrap();
    std::fs::create_dir_all(project.join(".opencode/plugins")).unwrap();
    std::fs::write(project.join("notes/todo.txt"), "buy milk\n").unwrap();
    std::fs::write(
        project.join("secrets.txt"),
        "OPENAI_API_KEY=sk-proj-Q8vX2mRk7TnL4wZp9bYc3HdF6gJs1aEu0iKo5\n",
    )
    .unwrap();
    let printed = Command::new(env!("CARGO_BIN_EXE_hookbox"))
        .args(["hook", "opencode", "--print-config", "--plugins"])
        .arg(plugins)
        .output()
        .unwrap();
    assert!(printed.status.success(), "{printed:?}");
    std::fs::write(
        project.join(".opencode/plugins/hookbox.ts"),
        &printed.stdout,
    )
    .unwrap();
    let config = json!({
        "$schema": "https://opencode.ai/config.json",
        "provider": {"scripted": {
            "npm": "@ai-sdk/openai-compatible",
            "name": "Scripted",
            "options": {"baseURL": format!("http://127.0.0.1:{port}/v1"), "apiKey": "none"},
            "models": {"scripted": {"name": "scripted", "tool_call": true}}
        }},
        "model": "scripted/scripted",
        "permission": {"bash": "allow", "read": "allow", "edit": "allow", "external_directory": "allow"},
        "autoupdate": false,
        "share": "disabled"
    });
    std::fs::write(project.join("opencode.json"), config.to_string()).unwrap();
    project
}

/// The example guards: deny-tools' defaults, path-jail holding `filePath`
/// inside the [`project`], redact-secrets.
fn plugin_dir(dir: &Path) -> PathBuf {
    let root = dir.join("project");
    let plugins = dir.join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    for (name, path) in guests::ALL {
        std::fs::copy(path, plugins.join(format!("{name}.wasm"))).unwrap();
    }
    let manifest = format!(
        "[[plugin]]\nfile = \"deny-tools.wasm\"\n\n[[plugin]]\nfile = \"path-jail.wasm\"\nconfig = {{ root = \"{}\", fields = \"filePath\" }}\n\n[[plugin]]\nfile = \"redact-secrets.wasm\"\n",
        root.display()
    );
    std::fs::write(plugins.join("hookbox.toml"), manifest).unwrap();
    plugins
}

/// `opencode run` in `project`, its home and caches inside `dir`, with
/// `env` besides; the tool results the model was sent, by call id.
fn run(opencode: &Path, dir: &Path, project: &Path, log: &Path, env: &[(&str, &str)]) -> Value {
    let home = dir.join("home");
    let mut command = Command::new(opencode);
    command
        .args(["run", "Tidy up this project"])
        .current_dir(project)
        // OpenCode takes its directory from $PWD, which a shell sets and
        // `current_dir` does not.
        .env("PWD", project)
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("XDG_STATE_HOME", home.join(".local/state"))
        .env("OPENCODE_DISABLE_MODELS_FETCH", "1")
        .env("OPENCODE_DISABLE_AUTOUPDATE", "1")
        .env("HOOKBOX_CACHE_DIR", dir.join("hookbox-cache"))
        .env("HOOKBOX_STATE_DIR", dir.join("hookbox-state"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (key, value) in env {
        command.env(key, value);
    }
    let child = command.spawn().expect("opencode runs");
    let started = Instant::now();
    let mut child = Killed(child);
    let status = loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(180),
            "opencode run did not finish in 180 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut stdout = String::new();
    let mut stderr = String::new();
    use std::io::Read;
    let _ = child.0.stdout.take().unwrap().read_to_string(&mut stdout);
    let _ = child.0.stderr.take().unwrap().read_to_string(&mut stderr);
    assert!(
        status.success(),
        "opencode run: {status}\n{stdout}\n{stderr}"
    );
    let requests = std::fs::read_to_string(log).unwrap_or_default();
    let last: Value = requests
        .lines()
        .last()
        .map(|line| serde_json::from_str(line).unwrap())
        .unwrap_or_else(|| panic!("the model was never asked:\n{stdout}\n{stderr}"));
    let mut results = serde_json::Map::new();
    for message in last.as_array().unwrap() {
        if message["role"] == "tool" {
            let id = message["tool_call_id"].as_str().unwrap().to_owned();
            results.insert(id, message["content"].clone());
        }
    }
    Value::Object(results)
}

/// The chores: a destructive command, a read outside the project, a
/// command whose output holds a key, then done.
fn chores() -> Value {
    json!([
        {"tool": "bash", "args": {"command": "rm -rf ./build && touch pwned", "description": "Clean the build"}},
        {"tool": "read", "args": {"filePath": "/notes/todo.txt"}},
        {"tool": "bash", "args": {"command": "cat secrets.txt", "description": "Show the settings"}},
        {"text": "All tidy."}
    ])
}

/// What the chores must come to under the example guards.
fn guarded(results: &Value, project: &Path) {
    let text = |id: &str| results[id].as_str().unwrap_or_default().to_owned();
    assert!(
        text("call_1").contains("denied by policy"),
        "the model reads deny-tools' reason: {results}"
    );
    assert!(
        !project.join("pwned").exists(),
        "the denied command ran anyway"
    );
    assert!(
        text("call_2").contains("buy milk"),
        "path-jail's rewrite (/notes/todo.txt into the project) is what ran: {results}"
    );
    assert!(
        text("call_3").contains("OPENAI_API_KEY=[REDACTED]")
            && !text("call_3").contains("sk-proj-"),
        "the model reads the output redacted: {results}"
    );
}

#[test]
fn the_plugin_guards_opencode_through_hookbox_hook() {
    let Some(opencode) = opencode() else { return };
    let dir = scratch("hook");
    let (_model, port, log) = model(&dir, &chores());
    let plugins = plugin_dir(&dir);
    let project = project(&dir, &plugins, port);
    let results = run(opencode, &dir, &project, &log, &[]);
    guarded(&results, &project);
}

#[test]
fn the_plugin_guards_opencode_through_hookbox_serve() {
    let Some(opencode) = opencode() else { return };
    let dir = scratch("serve");
    let (_model, port, log) = model(&dir, &chores());
    let plugins = plugin_dir(&dir);
    let serve_port = free_port();
    let token = "opencode-test-token";
    let _serve = Killed(
        Command::new(env!("CARGO_BIN_EXE_hookbox"))
            .args([
                "serve",
                "--listen",
                &format!("127.0.0.1:{serve_port}"),
                "--plugins",
            ])
            .arg(&plugins)
            .env("HOOKBOX_SERVE_TOKENS", token)
            .env("HOOKBOX_CACHE_DIR", dir.join("hookbox-cache"))
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let url = format!("http://127.0.0.1:{serve_port}");
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", serve_port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "hookbox serve did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // The plugin's command would guard with no plugins at all: only the
    // server can have answered as the guards do.
    let unguarded = dir.join("unguarded");
    std::fs::create_dir_all(&unguarded).unwrap();
    let project = project(&dir, &unguarded, port);
    let env = [("HOOKBOX_URL", url.as_str()), ("HOOKBOX_TOKEN", token)];
    let results = run(opencode, &dir, &project, &log, &env);
    guarded(&results, &project);
}

/// A hookbox that cannot be asked (here: a server that is not there) is a
/// block, before the tool runs and after.
#[test]
fn the_plugin_fails_closed_when_hookbox_cannot_be_asked() {
    let Some(opencode) = opencode() else { return };
    let dir = scratch("closed");
    let script = json!([
        {"tool": "bash", "args": {"command": "touch pwned", "description": "Make a file"}},
        {"text": "Done."}
    ]);
    let (_model, port, log) = model(&dir, &script);
    let plugins = plugin_dir(&dir);
    let project = project(&dir, &plugins, port);
    let nobody = format!("http://127.0.0.1:{}", free_port());
    let results = run(opencode, &dir, &project, &log, &[("HOOKBOX_URL", &nobody)]);
    assert!(
        results["call_1"]
            .as_str()
            .is_some_and(|t| t.contains("hookbox: blocked")),
        "{results}"
    );
    assert!(!project.join("pwned").exists(), "the tool ran unguarded");
}
