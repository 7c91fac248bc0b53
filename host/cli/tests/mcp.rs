//! `hookbox mcp` between real MCP parts no one here wrote: the official
//! Python SDK's client (PyPI `mcp`), the TypeScript SDK's (npm
//! `@modelcontextprotocol/client`, in the scenarios of both eras), a server
//! on the Rust SDK (rmcp, tests/mcp/rmcp-server), and the reference servers
//! `@modelcontextprotocol/server-filesystem` and `server-everything` (npm),
//! pinned in tests/mcp and installed by tests/mcp/setup.sh into target/mcp.
//! The plugins are the example guards and the puppet test guest.
//!
//! Without Node.js or Python these tests say so and pass, unless
//! `HOOKBOX_MCP=required` (as CI sets it) makes that a failure.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use hookbox_tests::guests;
use serde_json::{Value, json};

mod otlp;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// target/mcp with the servers and the client installed, or `None` (with a
/// message) when this machine cannot run them and they are not required.
fn installed() -> Option<&'static Path> {
    static INSTALLED: OnceLock<Option<PathBuf>> = OnceLock::new();
    INSTALLED
        .get_or_init(|| {
            let setup = Command::new(repo().join("tests/mcp/setup.sh"))
                .stderr(Stdio::inherit())
                .output()
                .expect("tests/mcp/setup.sh runs");
            if setup.status.success() {
                let dir = String::from_utf8(setup.stdout).unwrap();
                return Some(PathBuf::from(dir.trim()));
            }
            let required = std::env::var("HOOKBOX_MCP").is_ok_and(|v| v == "required");
            assert!(!required, "HOOKBOX_MCP=required, and tests/mcp/setup.sh failed");
            eprintln!("skipping the MCP tests: tests/mcp/setup.sh could not install the MCP servers and client");
            None
        })
        .as_deref()
}

fn server(mcp: &Path, name: &str) -> String {
    mcp.join(format!(
        "node_modules/@modelcontextprotocol/server-{name}/dist/index.js"
    ))
    .display()
    .to_string()
}

/// A plugin directory: the example guards and the puppet, with `manifest`.
fn plugin_dir(label: &str, manifest: &str) -> PathBuf {
    let dir = scratch(&format!("plugins-{label}"));
    for (name, path) in guests::ALL {
        std::fs::copy(path, dir.join(format!("{name}.wasm"))).unwrap();
    }
    std::fs::write(dir.join("hookbox.toml"), manifest).unwrap();
    dir
}

fn scratch(label: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hookbox-mcp-{label}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.canonicalize().unwrap()
}

/// `hookbox mcp --plugins DIR EXTRA... -- UPSTREAM...`, as a command line.
fn proxy(plugins: &Path, extra: &[&str], upstream: &[&str]) -> Vec<String> {
    let mut command = vec![
        env!("CARGO_BIN_EXE_hookbox").to_owned(),
        "mcp".into(),
        "--plugins".into(),
        plugins.display().to_string(),
    ];
    command.extend(extra.iter().map(|s| s.to_string()));
    command.push("--".into());
    command.extend(upstream.iter().map(|s| s.to_string()));
    command
}

/// The official MCP SDKs the scenarios are written on.
#[derive(Clone, Copy, Debug)]
enum Sdk {
    /// PyPI `mcp` 2.x: tests/mcp/client.py, every scenario.
    Python,
    /// npm `@modelcontextprotocol/client` 2.x: tests/mcp/client.mjs, the
    /// scenarios of both eras (`eras`, `old_server`, `ask`).
    TypeScript,
}

const BOTH_SDKS: [Sdk; 2] = [Sdk::Python, Sdk::TypeScript];

/// tests/mcp/client.py, to run `scenario` through `command`.
fn client_process(mcp: &Path, scenario: &str, arg: &str, command: &[String]) -> Command {
    sdk_process(mcp, Sdk::Python, scenario, arg, command)
}

/// `sdk`'s client, to run `scenario` through `command`.
fn sdk_process(mcp: &Path, sdk: Sdk, scenario: &str, arg: &str, command: &[String]) -> Command {
    let mut process = match sdk {
        Sdk::Python => {
            let mut python = Command::new(mcp.join("venv/bin/python"));
            python.arg(repo().join("tests/mcp/client.py"));
            python
        }
        Sdk::TypeScript => {
            let mut node = Command::new("node");
            node.arg(repo().join("tests/mcp/client.mjs"))
                .env("HOOKBOX_MCP_NODE_MODULES", mcp.join("node_modules"));
            node
        }
    };
    process.args([scenario, arg, "--"]).args(command);
    process
}

/// Runs a scenario of tests/mcp/client.py through `command`; what the
/// client saw.
fn client(mcp: &Path, scenario: &str, arg: &str, command: &[String]) -> Value {
    sdk_client(mcp, Sdk::Python, scenario, arg, command)
}

/// Runs a scenario of `sdk`'s client through `command`; what it saw.
fn sdk_client(mcp: &Path, sdk: Sdk, scenario: &str, arg: &str, command: &[String]) -> Value {
    let output = sdk_process(mcp, sdk, scenario, arg, command)
        .stderr(Stdio::inherit())
        .output()
        .expect("the client runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{sdk:?} {scenario} {arg}: the client failed: {stdout}"
    );
    serde_json::from_str(stdout.lines().last().unwrap_or(""))
        .unwrap_or_else(|_| panic!("{sdk:?} {scenario}: {stdout}"))
}

fn filesystem_manifest(root: &Path) -> String {
    format!(
        r#"
[[plugin]]
file = "puppet.wasm"
config = {{ name = "puppet", subscribe = "tool-call" }}

[[plugin]]
file = "deny-tools.wasm"
config = {{ deny = "edit_file" }}

[[plugin]]
file = "path-jail.wasm"
config = {{ root = "{root}", fields = "path,source,destination" }}

[[plugin]]
file = "redact-secrets.wasm"
"#,
        root = root.display()
    )
}

/// The folder the filesystem scenario works in: a file with a secret, one
/// to move, and twenty notes.
fn filesystem_root(label: &str) -> PathBuf {
    let root = scratch(label);
    std::fs::write(root.join("secret.txt"), "aws_key = AKIAQX7N2M4R5T6V7W3Y\n").unwrap();
    std::fs::write(root.join("a.txt"), "move me").unwrap();
    for i in 0..20 {
        std::fs::write(root.join(format!("n{i}.txt")), format!("note {i}")).unwrap();
    }
    root
}

#[test]
fn each_flow_on_a_real_filesystem_server_does_what_the_rules_say() {
    let Some(mcp) = installed() else { return };
    let root = filesystem_root("fs-root");
    let plugins = plugin_dir("fs", &filesystem_manifest(&root));
    let root_text = root.display().to_string();
    let upstream = ["node", &server(mcp, "filesystem"), &root_text];
    let command = proxy(&plugins, &["--hide-tool", "directory_tree"], &upstream);
    let saw = client(mcp, "filesystem", &root_text, &command);

    let tools = saw["tools"].as_array().unwrap();
    assert!(tools.contains(&json!("read_text_file")), "{saw}");
    assert!(
        !tools.contains(&json!("directory_tree")),
        "a hidden tool is not offered: {saw}"
    );

    // rewrite-result: the secret never reaches the client.
    let read = &saw["read"];
    assert_eq!(read["is_error"], false, "{read}");
    assert!(read["text"].as_str().unwrap().contains("aws_key"), "{read}");
    assert!(!read.to_string().contains("AKIAQX7N2M4R5T6V7W3Y"), "{read}");

    // skip: the model reads the reason; the server never got the call.
    let denied = &saw["write_denied"];
    assert_eq!(denied["is_error"], true, "{denied}");
    assert!(
        denied["text"]
            .as_str()
            .unwrap()
            .contains("denied by policy"),
        "{denied}"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("n0.txt")).unwrap(),
        "note 0",
        "a skipped edit reached the server"
    );

    // rewrite-args: a path outside the root lands inside it (the server
    // alone would have refused it), `..` included.
    assert_eq!(saw["jailed"]["is_error"], false, "{saw}");
    assert!(root.join("jailed-dir").is_dir(), "{saw}");
    assert_eq!(saw["jailed_write"]["is_error"], false, "{saw}");
    assert_eq!(
        std::fs::read_to_string(root.join("jailed-dir/written.txt")).unwrap(),
        "inside",
        "the write tool's path is jailed: {saw}"
    );
    assert_eq!(saw["escaped"]["is_error"], false, "{saw}");
    assert!(root.join("out.txt").exists() && !root.parent().unwrap().join("out.txt").exists());

    // A hidden tool does not exist for the client.
    assert!(
        saw["hidden"]["error"]
            .as_str()
            .unwrap()
            .contains("not found"),
        "{saw}"
    );

    // Twenty calls at once: each answer is its own call's.
    let concurrent: Vec<String> = (0..20).map(|i| format!("note {i}")).collect();
    assert_eq!(saw["concurrent"], json!(concurrent));

    // terminate: an error, and every later call of the session the same.
    let terminated = saw["terminate"]["error"].as_str().unwrap();
    assert!(terminated.contains("stop here"), "{saw}");
    assert!(
        saw["after_terminate"]["error"]
            .as_str()
            .unwrap()
            .contains("stop here"),
        "{saw}"
    );
}

#[test]
fn a_proxied_session_is_one_trace_with_a_decision_span_per_guarded_message() {
    let Some(mcp) = installed() else { return };
    let (receiver, endpoint) = otlp::Receiver::start();
    let root = filesystem_root("otlp-root");
    let plugins = plugin_dir("otlp", &filesystem_manifest(&root));
    let root_text = root.display().to_string();
    let upstream = ["node", &server(mcp, "filesystem"), &root_text];
    // An MCP client hands the server it starts only part of its own
    // environment (the Python SDK: HOME, PATH and a few more), so the
    // variable goes on the command, as in a client's `env` entry.
    let mut command = vec![
        "env".to_owned(),
        format!("OTEL_EXPORTER_OTLP_ENDPOINT={endpoint}"),
    ];
    command.extend(proxy(&plugins, &[], &upstream));
    let output = client_process(mcp, "filesystem", &root_text, &command)
        .stderr(Stdio::inherit())
        .output()
        .expect("the client runs");
    assert!(output.status.success());

    let spans = receiver.spans();
    let [session] = otlp::named(&spans, "hookbox.run")[..] else {
        panic!(
            "one session span: {:?}",
            spans.iter().map(|s| &s.name).collect::<Vec<_>>()
        )
    };
    assert!(session.parent_span_id.is_empty());
    assert_eq!(otlp::attributes(session)["hookbox.surface"], "mcp");
    let decisions: Vec<_> = spans
        .iter()
        .filter(|s| s.name.starts_with("apply_guardrail "))
        .collect();
    assert!(
        decisions.len() > 20,
        "every guarded call and result: {}",
        decisions.len()
    );
    for decision in &decisions {
        assert_eq!(decision.trace_id, session.trace_id, "one trace per session");
        assert_eq!(decision.parent_span_id, session.span_id);
    }
    let by = |guardian: &str, decision: &str| {
        decisions.iter().any(|d| {
            let a = otlp::attributes(d);
            a.get("gen_ai.guardian.name").map(String::as_str) == Some(guardian)
                && a["gen_ai.security.decision.type"] == decision
        })
    };
    assert!(by("deny-tools", "deny"), "the denied edit");
    assert!(by("path-jail", "modify"), "the jailed path");
    assert!(by("redact-secrets", "modify"), "the redacted result");
    assert!(by("puppet", "deny"), "the terminate");
}

#[test]
fn what_is_not_a_tool_call_passes_through_and_still_works() {
    let Some(mcp) = installed() else { return };
    let plugins = plugin_dir("everything", &filesystem_manifest(Path::new("/nowhere")));
    let upstream = ["node", &server(mcp, "everything"), "stdio"];
    let saw = client(mcp, "everything", "", &proxy(&plugins, &[], &upstream));
    passed_through(&saw);
    // Structured content, and its output schema, arrive as the server sent them.
    assert_eq!(saw["structured"]["is_error"], false, "{saw}");
    assert_eq!(saw["long"]["is_error"], false, "{saw}");
    let sampled = saw["sampled"].as_array().unwrap();
    assert!(
        sampled.len() == 1 && sampled[0].as_str().unwrap().ends_with("hi there"),
        "a server's sampling request reaches the client: {saw}"
    );
    assert_eq!(saw["cancelled"], true, "{saw}");
    assert_eq!(saw["pinged"], true);
    assert!(saw["resources"].as_u64().unwrap() > 0, "{saw}");
    assert!(!saw["prompts"].as_array().unwrap().is_empty(), "{saw}");
}

/// What a client reads besides tools is guarded as a tool is: a resource
/// and a prompt holding a token (from a server on the official Python SDK)
/// reach the client redacted, in their own structure; a guard denying the
/// read (deny-tools naming the method) refuses it, and only it.
#[test]
fn resources_and_prompts_are_guarded_as_tools_are() {
    let Some(mcp) = installed() else { return };
    let python = mcp.join("venv/bin/python").display().to_string();
    let server = repo()
        .join("tests/mcp/docs_server.py")
        .display()
        .to_string();
    let plugins = plugin_dir("docs", &filesystem_manifest(Path::new("/nowhere")));
    let saw = client(mcp, "docs", "", &proxy(&plugins, &[], &[&python, &server]));
    let token = ["ghp_", "16C7e42F292c6912E7710c838347Ae178B4a"].concat();
    for (what, kept) in [
        ("resource", "region = eu-west-1"),
        ("prompt", "Deploy prod"),
    ] {
        let text = saw[what]
            .as_str()
            .unwrap_or_else(|| panic!("{what}: {saw}"));
        assert!(!text.contains(&token), "{what}: {text}");
        assert!(
            text.contains("REDACTED") && text.contains(kept),
            "{what}: {text}"
        );
    }

    let denying = plugin_dir(
        "docs-denied",
        "[[plugin]]\nfile = \"deny-tools.wasm\"\nconfig = { deny = \"resources/read\" }\n",
    );
    let saw = client(mcp, "docs", "", &proxy(&denying, &[], &[&python, &server]));
    let refused = saw["resource_error"].as_str().unwrap_or_default();
    assert!(refused.contains("deny-tools"), "{saw}");
    assert!(
        saw["prompt"].as_str().is_some_and(|p| p.contains(&token)),
        "{saw}"
    );
}

/// Each SDK's `Client` as applications use it (its `auto` mode, and
/// pinned to each era) in front of `mcp-server-time`, a reference server on
/// the SDK 2.x that speaks both: the session negotiates the era the client
/// asks for through the proxy, and a call the proxy answers itself (a
/// denied one) is an answer that client reads in that era, as is one the
/// server answered.
#[test]
fn the_sdk_client_of_either_era_reads_the_answers_the_proxy_writes() {
    let Some(mcp) = installed() else { return };
    let manifest = &denying("get_current_time");
    let plugins = plugin_dir("eras", manifest);
    let upstream = [mcp.join("venv/bin/mcp-server-time").display().to_string()];
    let upstream: Vec<&str> = upstream.iter().map(String::as_str).collect();
    // Bridged (the proxy initializes the server for a 2026-07-28 client),
    // and passed through to a server declared to take the revision.
    let runs = [
        ("auto", "2026-07-28", &[][..]),
        ("2026-07-28", "2026-07-28", &[]),
        ("legacy", "2025-11-25", &[]),
        ("auto", "2026-07-28", &["--server-revision", "2026-07-28"]),
        ("legacy", "2025-11-25", &["--server-revision", "2026-07-28"]),
    ];
    for (sdk, (mode, era, extra)) in BOTH_SDKS
        .into_iter()
        .flat_map(|sdk| runs.map(|run| (sdk, run)))
    {
        let saw = sdk_client(mcp, sdk, "eras", mode, &proxy(&plugins, extra, &upstream));
        // What the messages below name.
        let mode = format!("{sdk:?} {mode} {extra:?}");
        assert_eq!(saw["protocol_version"], era, "mode {mode}: {saw}");
        assert_eq!(
            saw["tools"],
            json!(["convert_time", "get_current_time"]),
            "mode {mode}: {saw}"
        );
        denied_by_policy(&saw, &mode);
        assert_eq!(saw["allowed"]["is_error"], false, "mode {mode}: {saw}");
        assert!(
            saw["allowed"]["text"]
                .as_str()
                .is_some_and(|text| text.contains("Asia/Tokyo")),
            "mode {mode}: {saw}"
        );
    }
}

/// A manifest: deny-tools denying `tool`.
fn denying(tool: &str) -> String {
    format!("[[plugin]]\nfile = \"deny-tools.wasm\"\nconfig = {{ deny = \"{tool}\" }}\n")
}

/// What the `old_server` scenario must see under [`denying`]`("remove")`:
/// the two tools, `remove` denied, `echo` answered twice.
fn echoed_and_denied(saw: &Value, mode: &str) {
    assert_eq!(
        saw["tools"],
        json!(["echo", "remove"]),
        "mode {mode}: {saw}"
    );
    denied_by_policy(saw, mode);
    assert_eq!(saw["allowed"]["text"], "echo: hi", "mode {mode}: {saw}");
    assert_eq!(
        saw["again"]["text"], "echo: still here",
        "mode {mode}: {saw}"
    );
}

/// The scenario's `denied` call: answered by the proxy as a tool error, with
/// the skip's reason for the model.
fn denied_by_policy(saw: &Value, mode: &str) {
    assert_eq!(saw["denied"]["is_error"], true, "mode {mode}: {saw}");
    assert!(
        saw["denied"]["text"]
            .as_str()
            .is_some_and(|text| text.contains("denied by policy")),
        "mode {mode}: the skip's reason reaches the client: {saw}"
    );
}

/// tests/mcp/rmcp-server: where `HOOKBOX_RMCP_SERVER` says it was built
/// (CI builds it before the tests run: cargo takes the target directory
/// even to find a build fresh, and waits for whatever else builds there),
/// else built here (cargo has it fresh after a workspace build: this is
/// then a no-op).
///
/// Without what cargo sets for this test (`CARGO_MANIFEST_DIR`,
/// `CARGO_PKG_*`, `OUT_DIR` ...): build scripts that read those (ring's
/// does) would see them changed, run again, and rebuild their crates in the
/// workspace's target directory for this build and again for the next.
fn rmcp_server() -> String {
    if let Some(built) = std::env::var_os("HOOKBOX_RMCP_SERVER") {
        let built = std::path::PathBuf::from(built);
        assert!(
            built.is_file(),
            "HOOKBOX_RMCP_SERVER names {}, which is not there: build it (cargo build -p hookbox-rmcp-server) or unset it",
            built.display()
        );
        return built.to_string_lossy().into_owned();
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = Command::new(cargo);
    for (name, _) in std::env::vars_os() {
        let set_by_cargo = name.to_str().is_some_and(|name| {
            name.starts_with("CARGO_PKG_")
                || name.starts_with("CARGO_BIN_EXE_")
                || [
                    "CARGO_MANIFEST_DIR",
                    "CARGO_MANIFEST_PATH",
                    "CARGO_MANIFEST_LINKS",
                    "CARGO_CRATE_NAME",
                    "CARGO_BIN_NAME",
                    "CARGO_PRIMARY_PACKAGE",
                    "CARGO_TARGET_TMPDIR",
                    "CARGO_RUSTC_CURRENT_DIR",
                    "OUT_DIR",
                ]
                .contains(&name)
        });
        if set_by_cargo {
            command.env_remove(name);
        }
    }
    let built = command
        .args([
            "build",
            "--quiet",
            "-p",
            "hookbox-rmcp-server",
            "--message-format=json",
        ])
        .current_dir(repo())
        .stderr(Stdio::inherit())
        .output()
        .expect("cargo runs");
    assert!(
        built.status.success(),
        "building tests/mcp/rmcp-server failed"
    );
    String::from_utf8_lossy(&built.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find_map(|message| message["executable"].as_str().map(str::to_owned))
        .expect("cargo names the server's executable")
}

/// A client of either era in front of a server built on rmcp 2.2, which
/// takes only the initialize handshake and exits when its first request is
/// anything else: the proxy initializes it on a 2026-07-28 client's behalf
/// (the `server/discover` probe never reaches it), and every flow works in
/// the era the client asked for.
#[test]
fn a_client_of_either_era_works_with_a_server_from_before_the_revision() {
    let Some(mcp) = installed() else { return };
    let manifest = &denying("remove");
    let plugins = plugin_dir("old-server", manifest);
    let server = rmcp_server();
    let runs = [
        ("auto", "2026-07-28"),
        ("2026-07-28", "2026-07-28"),
        ("legacy", "2025-11-25"),
    ];
    for (sdk, (mode, era)) in BOTH_SDKS
        .into_iter()
        .flat_map(|sdk| runs.map(|run| (sdk, run)))
    {
        let saw = sdk_client(
            mcp,
            sdk,
            "old_server",
            mode,
            &proxy(&plugins, &[], &[&server]),
        );
        let mode = &format!("{sdk:?} {mode}");
        assert_eq!(saw["protocol_version"], era, "mode {mode}: {saw}");
        // Python's client pinned to the revision asks nothing the name is in.
        if mode != "Python 2026-07-28" {
            assert_eq!(saw["server"], "hookbox-rmcp-server", "mode {mode}: {saw}");
        }
        echoed_and_denied(&saw, mode);
    }
    // Straight to the server, or through a proxy told it takes the
    // revision, the probe ends it: what the proxy spares it by default.
    // (TypeScript's client probes on a process of its own, then starts the
    // server again for an initialize, so only Python's shows it.)
    let told = proxy(&plugins, &["--server-revision", "2026-07-28"], &[&server]);
    for command in [vec![server.clone()], told] {
        let direct = client_process(mcp, "old_server", "auto", &command)
            .stderr(Stdio::null())
            .output()
            .unwrap();
        assert!(
            !direct.status.success(),
            "{command:?}: the rmcp 2.2 server took server/discover after all"
        );
    }
}

/// A handshake-era client of either SDK in front of a server on 2026-07-28
/// alone (tests/mcp/new_server.mjs: the TypeScript SDK's `serveStdio` with
/// `legacy: 'reject'`, which refuses `initialize`): the proxy reverses the
/// bridge, answering the client's `initialize` from the server's
/// `server/discover`, and every flow works. A 2026-07-28 client passes
/// through; straight to the server, the handshake-era client fails.
#[test]
fn a_handshake_client_works_with_a_server_of_the_revision_alone() {
    let Some(mcp) = installed() else { return };
    let manifest = &denying("remove");
    let plugins = plugin_dir("new-server", manifest);
    let server = [
        "node".to_owned(),
        repo()
            .join("tests/mcp/new_server.mjs")
            .display()
            .to_string(),
        mcp.join("node_modules").display().to_string(),
    ];
    let server: Vec<&str> = server.iter().map(String::as_str).collect();
    let runs = [
        ("legacy", "2025-11-25"),
        ("auto", "2026-07-28"),
        ("2026-07-28", "2026-07-28"),
    ];
    for (sdk, (mode, era)) in BOTH_SDKS
        .into_iter()
        .flat_map(|sdk| runs.map(|run| (sdk, run)))
    {
        let saw = sdk_client(mcp, sdk, "old_server", mode, &proxy(&plugins, &[], &server));
        let mode = &format!("{sdk:?} {mode}");
        assert_eq!(saw["protocol_version"], era, "mode {mode}: {saw}");
        if era == "2025-11-25" {
            assert_eq!(saw["server"], "hookbox-2026-server", "mode {mode}: {saw}");
        }
        echoed_and_denied(&saw, mode);
    }
    let server: Vec<String> = server.iter().map(|s| s.to_string()).collect();
    let direct = client_process(mcp, "old_server", "legacy", &server)
        .stderr(Stdio::null())
        .output()
        .unwrap();
    assert!(
        !direct.status.success(),
        "the server took a handshake-era client after all: {}",
        String::from_utf8_lossy(&direct.stdout)
    );
}

/// A tool that asks the user before it runs (tests/mcp/ask_server.py, on the
/// Python SDK) through a proxy told the server takes 2026-07-28: the
/// question (an `input_required` result) reaches the client, and the
/// answer in its retry is guarded: the secret the user typed is redacted
/// before the server gets it. Bridged instead (no flag), the server's
/// handshake-era question is refused and the call ends in an error, never
/// hangs.
#[test]
fn a_tool_that_asks_the_user_is_guarded_on_the_question_and_the_answer() {
    let Some(mcp) = installed() else { return };
    let plugins = plugin_dir("ask", "[[plugin]]\nfile = \"redact-secrets.wasm\"\n");
    let python = mcp.join("venv/bin/python").display().to_string();
    let server = repo().join("tests/mcp/ask_server.py").display().to_string();
    for sdk in BOTH_SDKS {
        let log = scratch(&format!("ask-log-{sdk:?}")).join("codes");
        let log_arg = log.display().to_string();
        let told = proxy(
            &plugins,
            &["--server-revision", "2026-07-28"],
            &[&python, &server, &log_arg],
        );
        let saw = sdk_client(mcp, sdk, "ask", "AKIAQX7N2M4R5T6V7W3Y", &told);
        assert_eq!(saw["deploy"]["is_error"], false, "{sdk:?}: {saw}");
        assert!(
            saw["deploy"]["text"]
                .as_str()
                .unwrap()
                .starts_with("deployed prod with code "),
            "{sdk:?}: {saw}"
        );
        let got = std::fs::read_to_string(&log).unwrap();
        assert!(
            !got.is_empty() && !got.contains("AKIA"),
            "{sdk:?}: the server got the secret: {got:?}"
        );

        let bridged = proxy(&plugins, &[], &[&python, &server]);
        let saw = sdk_client(mcp, sdk, "ask", "1234", &bridged);
        let refused = saw["deploy"]["is_error"] == true || saw["deploy"].get("error").is_some();
        assert!(refused, "{sdk:?}: {saw}");
    }
}

/// What the `everything` scenario must see on any transport: plain and
/// structured results, progress, a server's sampling request, and a call
/// after a cancelled one.
fn passed_through(saw: &Value) {
    assert_eq!(saw["echo"]["text"], "Echo: hello - there", "{saw}");
    assert!(saw["structured"]["structured"].is_object(), "{saw}");
    assert!(
        saw["progress"].as_array().unwrap().len() >= 4,
        "progress notifications pass: {saw}"
    );
    assert!(
        saw["sampling"]["text"]
            .as_str()
            .unwrap()
            .contains("sampled answer"),
        "a server's sampling request reaches the client: {saw}"
    );
    assert_eq!(
        saw["after_cancel"]["text"], "Echo: still here",
        "a cancelled call leaves nothing hanging: {saw}"
    );
}

#[test]
fn a_guest_that_loops_fails_its_session_closed_and_no_other() {
    let Some(mcp) = installed() else { return };
    let plugins = plugin_dir("loop", &filesystem_manifest(Path::new("/nowhere")));
    let upstream = ["node", &server(mcp, "everything"), "stdio"];
    let command = proxy(&plugins, &[], &upstream);
    let looped = std::thread::spawn({
        let (mcp, command) = (mcp.to_path_buf(), command.clone());
        move || client(&mcp, "loop", "", &command)
    });
    let other = client_with_reload(mcp, &command, None);
    let looped = looped.join().unwrap();
    let first = looped["first"]["error"].as_str().unwrap();
    assert!(
        first.contains("puppet") && first.contains("deadline"),
        "{looped}"
    );
    assert!(
        looped["later"]["error"]
            .as_str()
            .unwrap()
            .contains("deadline"),
        "{looped}"
    );
    assert_eq!(
        other["first"]["text"], "Echo: one",
        "another session is unaffected: {other}"
    );
    assert_eq!(other["second"]["text"], "Echo: two", "{other}");
}

/// The `echo` scenario: one call, then (after `between` ran) another.
fn client_with_reload(mcp: &Path, command: &[String], between: Option<&dyn Fn()>) -> Value {
    let mut child = client_process(mcp, "echo", "", command)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    assert_eq!(lines.next().unwrap().unwrap(), r#"{"ready": true}"#);
    if let Some(between) = between {
        between();
    }
    writeln!(child.stdin.as_mut().unwrap()).unwrap();
    let last = lines.next().unwrap().unwrap();
    assert!(child.wait().unwrap().success());
    serde_json::from_str(&last).unwrap()
}

#[test]
fn a_session_keeps_the_stack_it_started_with_and_a_new_one_gets_the_new() {
    let Some(mcp) = installed() else { return };
    let manifest = |deny: &str| {
        format!("[[plugin]]\nfile = \"deny-tools.wasm\"\nconfig = {{ deny = \"{deny}\" }}\n")
    };
    let plugins = plugin_dir("reload", &manifest("nothing"));
    let upstream = ["node", &server(mcp, "everything"), "stdio"];
    let command = proxy(&plugins, &[], &upstream);
    let tighten = || std::fs::write(plugins.join("hookbox.toml"), manifest("echo")).unwrap();
    let pinned = client_with_reload(mcp, &command, Some(&tighten));
    assert_eq!(
        pinned["second"]["text"], "Echo: two",
        "the running session is pinned: {pinned}"
    );
    let fresh = client(mcp, "loop", "", &command);
    assert!(
        fresh["later"]["text"]
            .as_str()
            .unwrap()
            .contains("denied by policy"),
        "{fresh}"
    );
}

#[test]
fn a_server_that_dies_or_babbles_mid_call_answers_the_call_with_an_error() {
    let Some(mcp) = installed() else { return };
    let plugins = plugin_dir("broken", &filesystem_manifest(Path::new("/nowhere")));
    let script = repo()
        .join("tests/mcp/broken_server.py")
        .display()
        .to_string();
    let python = mcp.join("venv/bin/python").display().to_string();
    for mode in ["crash", "garbage"] {
        let saw = client(
            mcp,
            "crash",
            "",
            &proxy(&plugins, &[], &[&python, &script, mode]),
        );
        let error = saw["call"]["error"]
            .as_str()
            .unwrap_or_else(|| panic!("{mode}: {saw}"));
        assert!(error.starts_with("hookbox:"), "{mode}: {saw}");
        assert!(
            !saw.to_string().contains("half"),
            "{mode}: no partial message reaches the client"
        );
    }
}

/// Raw lines, no SDK: what a guard checks is what the server reads, escapes
/// and all.
#[test]
fn an_escaped_method_or_tool_name_is_guarded_as_the_server_reads_it() {
    let Some(mcp) = installed() else { return };
    let root = scratch("raw-root");
    let plugins = plugin_dir("raw", &filesystem_manifest(&root));
    let root_text = root.display().to_string();
    let command = proxy(
        &plugins,
        &[],
        &["node", &server(mcp, "filesystem"), &root_text],
    );
    let mut child = Command::new(&command[0])
        .args(&command[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    // The manifest denies `edit_file`; the call spells it with an escape.
    std::fs::write(root.join("escaped.txt"), "original").unwrap();
    let target = root.join("escaped.txt").display().to_string();
    let lines = [
        json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}).to_string(),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned(),
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{{"name":"edit\u005ffile","arguments":{{"path":"{target}","edits":[{{"oldText":"original","newText":"x"}}]}}}}}}"#
        ),
        r#"[{"jsonrpc":"2.0","id":2,"method":"ping"}]"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":3,"method":"ping","method":"tools/call"}"#.to_owned(),
    ];
    let mut stdin = child.stdin.take().unwrap();
    for line in &lines {
        writeln!(stdin, "{line}").unwrap();
    }
    let mut answers = BufReader::new(child.stdout.take().unwrap()).lines();
    let answers: Vec<Value> = (0..4)
        .map(|_| serde_json::from_str(&answers.next().unwrap().unwrap()).unwrap())
        .collect();
    drop(stdin);
    let _ = child.wait();
    let denied = answers
        .iter()
        .find(|a| a["id"] == 1)
        .expect("call 1 answered");
    assert_eq!(denied["result"]["isError"], true, "{answers:?}");
    assert_eq!(
        std::fs::read_to_string(root.join("escaped.txt")).unwrap(),
        "original",
        "an escaped tools/call slipped past the guard"
    );
    // A batch (each request in it answered) and a message with a key
    // twice are refused, never forwarded.
    let batch = answers
        .iter()
        .find(|a| a["id"] == 2)
        .expect("the batch's ping answered");
    assert_eq!(batch["error"]["code"], -32600, "{answers:?}");
    let twice = answers
        .iter()
        .find(|a| a["id"].is_null())
        .expect("the duplicate refused");
    assert_eq!(twice["error"]["code"], -32700, "{answers:?}");
}

/// The everything server over streamable HTTP, on a free port; killed on drop.
struct HttpServer {
    child: std::process::Child,
    url: String,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts `command`, and waits until something listens on `port`.
fn serving_on(mut command: Command, port: u16) -> HttpServer {
    let child = command.spawn().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "{command:?} never listened on {port}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    HttpServer {
        child,
        url: format!("http://127.0.0.1:{port}/mcp"),
    }
}

fn http_server(mcp: &Path) -> HttpServer {
    let port = free_port();
    let mut command = Command::new("node");
    command
        .args([&server(mcp, "everything"), "streamableHttp"])
        .env("PORT", port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    serving_on(command, port)
}

#[test]
fn a_remote_server_over_streamable_http_is_guarded_the_same() {
    let Some(mcp) = installed() else { return };
    let server = http_server(mcp);
    let plugins = plugin_dir("http", &filesystem_manifest(Path::new("/nowhere")));
    let command = proxy(&plugins, &["--upstream", &server.url], &[]);

    let saw = client(mcp, "everything", "", &command);
    passed_through(&saw);
    assert_eq!(saw["pinged"], true);

    // A second session on the same server: its guest loops, it fails
    // closed, and its later calls are refused.
    let looped = client(mcp, "loop", "", &command);
    let first = looped["first"]["error"].as_str().unwrap();
    assert!(first.contains("deadline"), "{looped}");
    assert!(
        looped["later"]["error"]
            .as_str()
            .unwrap()
            .contains("deadline"),
        "{looped}"
    );
}

#[test]
fn an_upstream_that_cannot_be_reached_answers_each_request_with_an_error() {
    let Some(mcp) = installed() else { return };
    let plugins = plugin_dir("unreachable", &filesystem_manifest(Path::new("/nowhere")));
    let url = format!("http://127.0.0.1:{}/mcp", free_port());
    let command = proxy(&plugins, &["--upstream", &url], &[]);
    let output = client_process(mcp, "echo", "", &command)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("cannot be reached"), "{stderr}");
}

/// An upstream whose answer never ends (one endless event-stream line, an
/// event of endless short lines, an endless JSON body): the proxy holds at
/// most its line limit of it, answers the call with an error and ends the
/// session.
#[test]
fn an_upstream_answer_without_end_is_cut_at_the_bound_and_the_call_answered() {
    let Some(mcp) = installed() else { return };
    let plugins = plugin_dir("hostile", &filesystem_manifest(Path::new("/nowhere")));
    let script = repo().join("tests/mcp/hostile_http_server.py");
    for mode in ["line", "event", "body"] {
        let port = free_port();
        let mut command = Command::new(mcp.join("venv/bin/python"));
        command.arg(&script).args([mode, &port.to_string()]);
        let server = serving_on(command, port);
        let saw = client(
            mcp,
            "crash",
            "",
            &proxy(&plugins, &["--upstream", &server.url], &[]),
        );
        let error = saw["call"]["error"]
            .as_str()
            .unwrap_or_else(|| panic!("{mode}: {saw}"));
        assert!(
            error.starts_with("hookbox:") && error.contains("the most hookbox holds"),
            "{mode}: {saw}"
        );
    }
}

/// `hookbox mcp --listen` on a free loopback port; killed on drop.
fn listening(plugins: &Path, upstream: &[&str]) -> HttpServer {
    listening_with(plugins, &[], upstream)
}

/// `hookbox mcp --listen` with `extra` flags on a free loopback port.
fn listening_with(plugins: &Path, extra: &[&str], upstream: &[&str]) -> HttpServer {
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let mut flags = vec!["--listen", &listen];
    flags.extend_from_slice(extra);
    let line = proxy(plugins, &flags, upstream);
    let mut command = Command::new(&line[0]);
    command
        .args(&line[1..])
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    serving_on(command, port)
}

/// `hookbox mcp --listen` with `extra` flags, guarding
/// tests/mcp/broken_server.py in `mode`.
fn listening_to_broken(mcp: &Path, label: &str, extra: &[&str], mode: &str) -> HttpServer {
    let plugins = plugin_dir(label, &filesystem_manifest(Path::new("/nowhere")));
    let script = repo().join("tests/mcp/broken_server.py");
    let python = mcp.join("venv/bin/python");
    listening_with(
        &plugins,
        extra,
        &[
            &python.display().to_string(),
            &script.display().to_string(),
            mode,
        ],
    )
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

/// The `Mcp-Session-Id` an answer to `initialize` gives.
fn session_id_of(response: &str) -> Option<String> {
    response.lines().find_map(|l| {
        l.to_ascii_lowercase()
            .strip_prefix("mcp-session-id: ")
            .map(str::to_owned)
    })
}

/// Concurrent `initialize`s cannot pass `--max-sessions`: the limit is
/// taken before a session's server starts, and given back when it ends.
#[test]
fn concurrent_initializes_open_no_more_sessions_than_the_limit() {
    let Some(mcp) = installed() else { return };
    let served = listening_to_broken(mcp, "limit", &["--max-sessions", "2"], "silent");
    let answers: Vec<String> = (0..8)
        .map(|_| {
            let url = served.url.clone();
            std::thread::spawn(move || raw_post(&url, "", "", INITIALIZE))
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|t| t.join().unwrap())
        .collect();
    let opened: Vec<String> = answers.iter().filter_map(|a| session_id_of(a)).collect();
    assert_eq!(opened.len(), 2, "{answers:#?}");
    for refused in answers.iter().filter(|a| session_id_of(a).is_none()) {
        assert!(
            refused.starts_with("HTTP/1.1 502") && refused.contains("2 sessions are open"),
            "{refused}"
        );
    }
    // One ended: its place is free once its server has gone.
    let addr = served
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp");
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "DELETE /mcp HTTP/1.1\r\nHost: {addr}\r\nMcp-Session-Id: {}\r\nConnection: close\r\n\r\n",
        opened[0]
    )
    .unwrap();
    let mut ended = String::new();
    let _ = std::io::Read::read_to_string(&mut stream, &mut ended);
    assert!(ended.starts_with("HTTP/1.1 204"), "{ended}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    loop {
        let again = raw_post(&served.url, "", "", INITIALIZE);
        if session_id_of(&again).is_some() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the ended session's place was never given back: {again}"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// A call the server never answers is answered by hookbox after
/// `--idle-secs`, and the session, idle, is ended.
#[test]
fn a_request_the_server_never_answers_is_answered_and_its_session_reaped() {
    let Some(mcp) = installed() else { return };
    let served = listening_to_broken(mcp, "reap", &["--idle-secs", "2"], "silent");
    let opened = raw_post(&served.url, "", "", INITIALIZE);
    let session = session_id_of(&opened).unwrap_or_else(|| panic!("{opened}"));
    let in_session = format!("Mcp-Session-Id: {session}\r\n");
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let response = raw_post(&served.url, "", &in_session, initialized);
    assert!(response.starts_with("HTTP/1.1 202"), "{response}");
    let call =
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"die","arguments":{}}}"#;
    let started = std::time::Instant::now();
    let response = raw_post(&served.url, "", &in_session, call);
    assert!(
        response.contains(r#""id":7"#) && response.contains("left this request unanswered"),
        "after {:?}: {response}",
        started.elapsed()
    );
    let list = r#"{"jsonrpc":"2.0","id":8,"method":"tools/list"}"#;
    let response = raw_post(&served.url, "", &in_session, list);
    assert!(response.starts_with("HTTP/1.1 404"), "{response}");
}

#[test]
fn clients_over_streamable_http_get_a_guarded_session_each() {
    let Some(mcp) = installed() else { return };
    let plugins = plugin_dir("listen", &filesystem_manifest(Path::new("/nowhere")));
    let everything = server(mcp, "everything");
    let served = listening(&plugins, &["node", &everything, "stdio"]);
    let url = [served.url.clone()];

    let saw = client(mcp, "everything", "", &url);
    passed_through(&saw);

    // Two sessions at once: one fails closed, the other is unaffected.
    let looped = std::thread::spawn({
        let (mcp, url) = (mcp.to_path_buf(), url.clone());
        move || client(&mcp, "loop", "", &url)
    });
    let other = client(mcp, "loop", "", &url);
    let looped = looped.join().unwrap();
    for session in [&looped, &other] {
        assert!(
            session["first"]["error"]
                .as_str()
                .unwrap()
                .contains("deadline"),
            "{session}"
        );
    }

    // A page of another origin may not reach it.
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#;
    let response = raw_post(&served.url, "http://evil.example", "", initialize);
    assert!(response.starts_with("HTTP/1.1 403"), "{response}");
    assert!(response.contains("--allow-origin"), "{response}");
    // Nor, after DNS rebinding, a page of its own name on this machine.
    let rebound = "Host: rebound.example:80\r\n";
    let response = raw_post(&served.url, "", rebound, initialize);
    assert!(response.starts_with("HTTP/1.1 403"), "{response}");
    assert!(response.contains("--allow-host"), "{response}");
}

/// `--listen` serves 2026-07-28 clients, which send no `initialize` and get
/// no session id: each client's requests share one stateless session (its
/// run, its upstream), bridged to a server from before the revision. And a
/// call budget spans a client's requests across its connections.
#[test]
fn a_2026_client_over_http_is_served_without_a_session_id() {
    let Some(mcp) = installed() else { return };
    let manifest = &denying("remove");
    let plugins = plugin_dir("stateless", manifest);
    let server = rmcp_server();
    let served = listening(&plugins, &[&server]);
    let url = [served.url.clone()];
    for (sdk, mode) in BOTH_SDKS
        .into_iter()
        .flat_map(|sdk| ["auto", "2026-07-28"].map(|mode| (sdk, mode)))
    {
        let saw = sdk_client(mcp, sdk, "old_server", mode, &url);
        let mode = format!("{sdk:?} {mode}");
        assert_eq!(saw["protocol_version"], "2026-07-28", "{mode}: {saw}");
        echoed_and_denied(&saw, &mode);
    }
    // No session id is handed out for a stateless request.
    let list = r#"{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
    let response = raw_post(&served.url, "", "Mcp-Method: tools/list\r\n", list);
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(
        !response.to_ascii_lowercase().contains("mcp-session-id"),
        "{response}"
    );
    assert!(
        response.contains("\"resultType\":\"complete\""),
        "{response}"
    );

    // One run per client: a budget of 4 calls holds across its connections
    // (each `old_server` run makes 3).
    let manifest = "[[plugin]]\nfile = \"call-budget.wasm\"\nconfig = { max_calls = \"4\" }\n";
    let plugins = plugin_dir("stateless-budget", manifest);
    let served = listening(&plugins, &[&server]);
    let url = [served.url.clone()];
    let first = client(mcp, "old_server", "2026-07-28", &url);
    assert_eq!(first["again"]["text"], "echo: still here", "{first}");
    let second = client(mcp, "old_server", "2026-07-28", &url);
    assert!(
        second["allowed"]["error"]
            .as_str()
            .is_some_and(|e| e.contains("budget")),
        "the fifth call of the client is past its budget: {second}"
    );
}

/// `Mcp-Method` / `Mcp-Name` that disagree with the body (a gateway would
/// route on one and the server run the other), that a 2026-07-28 request
/// lacks, or that it sends twice: refused with -32020 before anything is
/// forwarded.
#[test]
fn a_request_whose_routing_headers_disagree_with_its_body_is_refused() {
    let Some(mcp) = installed() else { return };
    let plugins = plugin_dir("headers", &filesystem_manifest(Path::new("/nowhere")));
    let everything = server(mcp, "everything");
    let served = listening(&plugins, &["node", &everything, "stdio"]);
    // The server's own origin (a page it served) is let in, as no Origin is.
    let origin = served.url.trim_end_matches("/mcp");
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#;
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"write_file","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
    for (headers, body) in [
        ("Mcp-Method: tools/list\r\n", initialize),
        ("Mcp-Method: tools/call\r\nMcp-Name: read_file\r\n", call),
        ("Mcp-Method: tools/call\r\n", call),
        ("", call),
        // Twice: a gateway allowing only tools/list may match the second.
        (
            "Mcp-Method: tools/call\r\nMcp-Method: tools/list\r\nMcp-Name: write_file\r\n",
            call,
        ),
        (
            "Mcp-Method: tools/call\r\nMcp-Name: write_file\r\nMcp-Name: read_file\r\n",
            call,
        ),
    ] {
        let response = raw_post(&served.url, origin, headers, body);
        assert!(
            response.starts_with("HTTP/1.1 400"),
            "{headers:?}: {response}"
        );
        assert!(response.contains("-32020"), "{headers:?}: {response}");
    }
    // Headers that agree, and none from a handshake-era client, are served.
    for headers in ["Mcp-Method: initialize\r\n", ""] {
        let response = raw_post(&served.url, origin, headers, initialize);
        assert!(
            response.starts_with("HTTP/1.1 200"),
            "{headers:?}: {response}"
        );
    }
}

/// `--listen` with HOOKBOX_MCP_TOKENS: a request without one of the tokens
/// is refused (401, `WWW-Authenticate: Bearer`), a session is its token's
/// alone (another token's request for it is answered as for no session),
/// and an address reachable from other machines is refused without tokens.
#[test]
fn listen_with_tokens_lets_in_only_their_clients_each_to_its_own_sessions() {
    let Some(_mcp) = installed() else { return };
    let plugins = plugin_dir("tokens", "");
    let server = rmcp_server();
    let (alice, bob) = ("alice-token-0123456789", "bob-token-0123456789ab");
    let port = free_port();
    let line = proxy(
        &plugins,
        &["--listen", &format!("127.0.0.1:{port}")],
        &[&server],
    );
    let mut command = Command::new(&line[0]);
    command
        .args(&line[1..])
        .env("HOOKBOX_MCP_TOKENS", format!("{alice}, {bob}"))
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    let served = serving_on(command, port);
    let origin = "";
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    for shown in [
        "",
        "Authorization: Bearer wrong-token-0123456789
",
        "Authorization: alice-token-0123456789
",
    ] {
        let response = raw_post(&served.url, origin, shown, initialize);
        assert!(
            response.starts_with("HTTP/1.1 401"),
            "{shown:?}: {response}"
        );
        assert!(
            response
                .to_ascii_lowercase()
                .contains("www-authenticate: bearer"),
            "{response}"
        );
    }
    let as_alice = format!("Authorization: Bearer {alice}\r\n");
    let response = raw_post(&served.url, origin, &as_alice, initialize);
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.contains("hookbox-rmcp-server"), "{response}");
    let session = response
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("mcp-session-id: ")
                .map(str::to_owned)
        })
        .expect("a session id");
    let in_session =
        |token: &str| format!("Authorization: Bearer {token}\r\nMcp-Session-Id: {session}\r\n");
    let response = raw_post(&served.url, origin, &in_session(bob), list);
    assert!(
        response.starts_with("HTTP/1.1 404"),
        "another token's request for alice's session: {response}"
    );
    let response = raw_post(&served.url, origin, &in_session(alice), list);
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.contains("echo"), "{response}");

    // Off loopback without tokens: refused before it listens.
    let line = proxy(&plugins, &["--listen", "0.0.0.0:0"], &[&server]);
    let refused = Command::new(&line[0])
        .args(&line[1..])
        .env_remove("HOOKBOX_MCP_TOKENS")
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("HOOKBOX_MCP_TOKENS"), "{said}");
}

/// What `--upstream` POSTs carry: `Mcp-Method` on every message and
/// `Mcp-Name` where the body names a target, as 2026-07-28 servers
/// require. The upstream here is a recorder that answers every request
/// with an empty result.
#[test]
fn the_upstream_gets_routing_headers_that_match_each_body() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let recorded = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    std::thread::spawn({
        let recorded = recorded.clone();
        move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let recorded = recorded.clone();
                std::thread::spawn(move || answer_recorded(stream, &recorded));
            }
        }
    });
    let plugins = plugin_dir("upstream-headers", "");
    let command = proxy(&plugins, &["--upstream", &url], &[]);
    let mut child = Command::new(&command[0])
        .args(&command[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    for line in [
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_file","arguments":{}}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"file:///notes.txt"}}"#,
    ] {
        writeln!(stdin, "{line}").unwrap();
        let mut answer = String::new();
        stdout.read_line(&mut answer).unwrap();
        assert!(answer.contains("\"result\""), "{line}: {answer}");
    }
    drop(stdin);
    let _ = child.wait();
    let recorded = recorded.lock().unwrap();
    for expected in [
        ("tools/list", None),
        ("tools/call", Some("read_file")),
        ("resources/read", Some("file:///notes.txt")),
    ] {
        assert!(
            recorded
                .iter()
                .any(|(method, name)| method.as_deref() == Some(expected.0)
                    && name.as_deref() == expected.1),
            "{expected:?} in {recorded:?}"
        );
    }
}

/// Reads one POST off `stream`, records its `Mcp-Method` and `Mcp-Name`,
/// and answers its id with an empty result.
fn answer_recorded(
    stream: std::net::TcpStream,
    recorded: &std::sync::Mutex<Vec<(Option<String>, Option<String>)>>,
) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let (mut method, mut name, mut length) = (None, None, 0);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((key, value)) = line.split_once(':') {
            let value = value.trim().to_owned();
            match key.to_ascii_lowercase().as_str() {
                "mcp-method" => method = Some(value),
                "mcp-name" => name = Some(value),
                "content-length" => length = value.parse().unwrap_or(0),
                _ => {}
            }
        }
    }
    let mut body = vec![0; length];
    std::io::Read::read_exact(&mut reader, &mut body).unwrap();
    recorded.lock().unwrap().push((method, name));
    let id = serde_json::from_slice::<Value>(&body).map_or(Value::Null, |m| m["id"].clone());
    let answer =
        json!({"jsonrpc": "2.0", "id": id, "result": {"tools": [], "content": [], "contents": []}})
            .to_string();
    let mut stream = stream;
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
        answer.len()
    );
}

/// A POST to `url` as `origin`'s page (none: `""`), with `headers` (a
/// `Host` of their own instead of the server's address).
fn raw_post(url: &str, origin: &str, headers: &str, body: &str) -> String {
    let addr = url.trim_start_matches("http://").trim_end_matches("/mcp");
    let mut head = String::new();
    if !headers.to_ascii_lowercase().contains("host:") {
        head.push_str(&format!("Host: {addr}\r\n"));
    }
    if !origin.is_empty() {
        head.push_str(&format!("Origin: {origin}\r\n"));
    }
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\n{head}{headers}Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    // To its end, or as far as it got when the answer is a stream that
    // stays open.
    let mut response = Vec::new();
    let mut chunk = [0; 4096];
    while let Ok(n) = std::io::Read::read(&mut stream, &mut chunk) {
        if n == 0 || response.len() > 1 << 16 {
            break;
        }
        response.extend_from_slice(&chunk[..n]);
    }
    String::from_utf8_lossy(&response).into_owned()
}

#[test]
fn a_server_that_does_not_start_is_named_and_the_proxy_exits() {
    let plugins = plugin_dir("nostart", "");
    let output = Command::new(env!("CARGO_BIN_EXE_hookbox"))
        .args(["mcp", "--plugins"])
        .arg(&plugins)
        .args(["--", "/nonexistent/mcp-server", "--stdio"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("cannot start the MCP server `/nonexistent/mcp-server`"),
        "{stderr}"
    );
    assert!(output.stdout.is_empty(), "nothing reaches the client");
}

#[test]
fn the_proxy_exits_with_its_servers_exit_code() {
    let plugins = plugin_dir("exit", "");
    let output = Command::new(env!("CARGO_BIN_EXE_hookbox"))
        .args(["mcp", "--plugins"])
        .arg(&plugins)
        .args(["--", "sh", "-c", "exit 7"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(7));
}
