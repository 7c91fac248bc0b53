//! Decision logs: a JSON line for every decision that matters, with the
//! plugin's digest; a sink that blocks never stalls a decision.

use std::io::Write;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use hookbox::audit::DecisionLog;
use serde_json::Value;

use super::directory::{put, scratch_dir};
use super::support::*;
use hookbox_tests::guests;

/// A sink that keeps what it is given.
#[derive(Clone, Default)]
struct Kept(Arc<Mutex<Vec<u8>>>);

impl Write for Kept {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Kept {
    fn records(&self) -> Vec<Value> {
        String::from_utf8(self.0.lock().unwrap().clone())
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}")))
            .collect()
    }
}

/// A sink whose every write waits until it is let go.
struct Stuck(Mutex<mpsc::Receiver<()>>);

impl Write for Stuck {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let _ = self.0.lock().unwrap().recv();
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn every_decision_but_continue_and_every_failure_is_a_line_with_the_plugins_digest() {
    let dir = scratch_dir("audit");
    put(&dir, "guard.wasm", guests::PUPPET);
    std::fs::write(
        dir.join("hookbox.toml"),
        "[[plugin]]\nfile = \"guard.wasm\"\n[plugin.config]\nname = \"guard\"\n",
    )
    .unwrap();
    let loaded = hookbox::directory::load(runtime(), &dir).unwrap();
    let kept = Kept::default();
    let log = Arc::new(DecisionLog::to_writer(kept.clone()));
    let observer = log.for_run(7, DecisionLog::digests(&loaded.plugins));

    let mut run = loaded.stack.start_run("audited");
    run.observe(observer.clone());
    for event in [
        tool_call("guard:flow:continue", "{}"),
        tool_call("guard:flow:skip:not here", "{}"),
        tool_call("guard:flow:rewrite-args:{\"a\":1}", "{}"),
        completion_call("guard:flow:patch-request:be brief"),
        invalid_tool_call("guard:flow:retry:try read_file", &["read_file"]),
        text_delta("guard:panic"),
    ] {
        let _ = run.step(&event);
    }
    let mut second = loaded.stack.start_run("second");
    second.observe(observer);
    let _ = second.step(&tool_call("guard:flow:terminate:enough", "{}"));
    drop(second);
    drop(run);
    log.close();

    let records = kept.records();
    let digest = hookbox::cache::sha256_hex(&std::fs::read(dir.join("guard.wasm")).unwrap());
    let summary: Vec<(String, String, String)> = records
        .iter()
        .map(|r| {
            (
                r["run_id"].as_str().unwrap().to_owned(),
                r["event"].as_str().unwrap().to_owned(),
                r["flow"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let expected = [
        ("audited", "tool-call", "skip"),
        ("audited", "tool-call", "rewrite-args"),
        ("audited", "completion-call", "patch-request"),
        ("audited", "invalid-tool-call", "retry"),
        ("audited", "text-delta", "terminate"),
        ("second", "tool-call", "terminate"),
    ];
    assert_eq!(
        summary,
        expected.map(|(a, b, c)| (a.to_owned(), b.to_owned(), c.to_owned())),
        "{records:#?}"
    );
    for record in &records {
        assert_eq!(record["plugin"], "guard");
        assert_eq!(
            record["sha256"], digest,
            "the digest of the file that was loaded"
        );
        assert_eq!(record["generation"], 7);
        assert!(record["latency_us"].is_u64() && record["time"].as_str().unwrap().ends_with('Z'));
        assert!(record.get("shadow").is_none());
    }
    assert_eq!(records[0]["reason"], "not here");
    assert_eq!(records[3]["reason"], "try read_file");
    let failure = &records[4];
    assert_eq!(
        (&failure["cause"], failure["detail"].is_string()),
        (&Value::from("trap"), true)
    );
    let ids: std::collections::BTreeSet<&str> = records
        .iter()
        .map(|r| r["decision_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), records.len(), "decision ids are unique");
    assert_eq!(log.dropped(), 0);
}

#[test]
fn with_all_a_continue_is_logged_and_a_shadow_is_marked() {
    let kept = Kept::default();
    let log = Arc::new(DecisionLog::to_writer(kept.clone()).all());
    let mut stack = hookbox::HookStack::new();
    stack.push_shadow(puppet("s"));
    let mut run = stack.start_run("r");
    run.observe(log.for_run(1, Default::default()));
    let _ = run.step(&tool_call("s:flow:skip:would", "{}"));
    let _ = run.step(&tool_call("other", "{}"));
    drop(run);
    log.close();
    let records = kept.records();
    assert_eq!(records.len(), 2, "{records:?}");
    assert_eq!(
        (&records[0]["flow"], &records[0]["shadow"]),
        (&Value::from("skip"), &Value::from(true))
    );
    assert_eq!(records[1]["flow"], "continue");
}

#[test]
fn a_sink_that_blocks_never_stalls_a_decision_and_its_drops_are_counted() {
    let (release, stuck) = mpsc::channel();
    let log = Arc::new(DecisionLog::to_writer(Stuck(Mutex::new(stuck))));
    let stack = stack(&[puppet("guard")]);
    let events = DecisionLog::CAPACITY + 500;
    let mut run = stack.start_run("flood");
    run.observe(log.for_run(1, Default::default()));
    // Every decision is made though the sink takes nothing (if recording
    // waited for it, this would never end).
    for _ in 0..events {
        assert!(
            decided(run.step(&tool_call("guard:flow:skip:no", "{}"))).flow
                != hookbox::Flow::Continue
        );
    }
    let dropped = log.dropped();
    // Let the sink go before asserting: a failing test must not hang.
    drop(release);
    // The queue holds CAPACITY; the writer took a few more into its buffer
    // before the sink blocked it.
    assert!(
        (400..=500).contains(&dropped),
        "{dropped} of {events} dropped with {} queued",
        DecisionLog::CAPACITY
    );
}

/// The log names the plugins, their digests and what they stopped: a file
/// it creates is its owner's only, whatever the umask, and one that exists
/// keeps the mode its owner gave it.
#[cfg(unix)]
#[test]
fn a_decision_log_file_it_creates_is_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch_dir("audit-mode");
    let mode =
        |path: &std::path::Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;

    let created = dir.join("decisions.jsonl");
    DecisionLog::to_file(&created).unwrap().close();
    assert_eq!(
        mode(&created),
        0o600,
        "a new decision log is readable by others"
    );

    let shared = dir.join("shared.jsonl");
    std::fs::write(&shared, "").unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o640)).unwrap();
    DecisionLog::to_file(&shared).unwrap().close();
    assert_eq!(mode(&shared), 0o640, "an existing log's mode was changed");
}
