//! Hot reload: real files changing on disk while runs are in flight.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use hookbox::watch::DirWatcher;
use hookbox::{Cause, Flow};

use super::directory::{put, scratch_dir};
use super::support::*;
use hookbox_tests::guests;

const DEBOUNCE: Duration = Duration::from_millis(50);

fn manifest(dir: &Path, version: &str) {
    let text = format!(
        "[[plugin]]\nfile = \"guard.wasm\"\n[plugin.config]\nname = \"guard\"\nversion = \"{version}\"\n"
    );
    std::fs::write(dir.join("hookbox.toml"), text).unwrap();
}

fn version_of(watcher: &DirWatcher) -> Flow {
    let snapshot = watcher.snapshot();
    decided(once(&snapshot.stack, &tool_call("guard:version", "{}"))).flow
}

fn watched(label: &str, version: &str) -> (std::path::PathBuf, DirWatcher) {
    let dir = scratch_dir(label);
    put(&dir, "guard.wasm", guests::PUPPET);
    manifest(&dir, version);
    let watcher = DirWatcher::start(runtime(), &dir, DEBOUNCE).unwrap();
    (dir, watcher)
}

#[test]
fn a_run_in_flight_keeps_its_snapshot_and_new_runs_get_the_new_one() {
    let (dir, watcher) = watched("pinned", "v1");
    let snapshot = watcher.snapshot();
    let mut in_flight = snapshot.stack.start_run("in-flight");
    assert_eq!(
        decided(dispatch(&mut in_flight, &tool_call("guard:version", "{}"))).flow,
        Flow::skip("v1")
    );

    manifest(&dir, "v2");
    let report = watcher.reload_now();
    assert!(report.errors.is_empty(), "{report:?}");
    assert_eq!(version_of(&watcher), Flow::skip("v2"));
    assert_eq!(
        decided(dispatch(&mut in_flight, &tool_call("guard:version", "{}"))).flow,
        Flow::skip("v1"),
        "the run keeps the stack it started with"
    );
}

#[test]
fn a_corrupt_or_half_written_file_never_replaces_a_working_version() {
    let (dir, watcher) = watched("corrupt", "v1");
    let good = std::fs::read(guests::PUPPET).unwrap();
    for broken in [&good[..good.len() / 3], b"\0asm\x0d\0\x01\0junk".as_slice()] {
        std::fs::write(dir.join("guard.wasm"), broken).unwrap();
        let report = watcher.reload_now();
        assert_eq!(report.errors.len(), 1, "{report:?}");
        assert!(
            report.errors[0]
                .reason
                .contains("previous version stays live"),
            "{report:?}"
        );
        assert_eq!(
            version_of(&watcher),
            Flow::skip("v1"),
            "the old guard is still live"
        );
        let failed = watcher.snapshot().plugins[0].newer_version_failed.clone();
        assert!(
            failed.is_some_and(|e| e.phase == hookbox::LoadPhase::Compile),
            "the snapshot says the live version is not the newest"
        );
    }
    std::fs::write(dir.join("guard.wasm"), &good).unwrap();
    manifest(&dir, "v2");
    assert!(watcher.reload_now().errors.is_empty());
    assert_eq!(version_of(&watcher), Flow::skip("v2"));
    assert!(watcher.snapshot().plugins[0].newer_version_failed.is_none());
}

#[test]
fn a_removed_plugin_leaves_the_stack() {
    let dir = scratch_dir("removed");
    put(&dir, "a.wasm", guests::PUPPET);
    put(&dir, "b.wasm", guests::DENY_TOOLS);
    let watcher = DirWatcher::start(runtime(), &dir, DEBOUNCE).unwrap();
    assert_eq!(watcher.snapshot().stack.len(), 2);
    std::fs::remove_file(dir.join("a.wasm")).unwrap();
    let report = watcher.reload_now();
    assert_eq!(report.removed, ["a"]);
    assert_eq!(watcher.snapshot().stack.len(), 1);
    let flow = decided(once(
        &watcher.snapshot().stack,
        &tool_call("puppet:flow:skip:x", "{}"),
    ))
    .flow;
    assert_eq!(flow, Flow::Continue, "the removed puppet no longer answers");
}

#[test]
fn a_required_plugin_that_cannot_load_fails_new_runs_closed_until_fixed() {
    let dir = scratch_dir("required");
    put(&dir, "a.wasm", guests::PUPPET);
    let watcher = DirWatcher::start(runtime(), &dir, DEBOUNCE).unwrap();
    std::fs::write(dir.join("new.wasm"), b"not a component").unwrap();
    let report = watcher.reload_now();
    assert_eq!(report.errors[0].plugin, "new");
    let failure = once(&watcher.snapshot().stack, &tool_call("t", "{}")).unwrap_err();
    assert_eq!((&*failure.plugin, failure.cause), ("new", Cause::Load));

    put(&dir, "new.wasm", guests::DENY_TOOLS);
    assert!(watcher.reload_now().errors.is_empty());
    assert!(once(&watcher.snapshot().stack, &tool_call("t", "{}")).is_ok());
}

#[test]
fn a_manifest_that_does_not_parse_keeps_the_previous_stack() {
    let (dir, watcher) = watched("bad-manifest", "v1");
    std::fs::write(
        dir.join("hookbox.toml"),
        "[[plugin]]\nfile = \"guard.wasm\"\nbogus = 1\n",
    )
    .unwrap();
    let report = watcher.reload_now();
    assert!(
        report
            .directory_error
            .as_ref()
            .is_some_and(|e| e.contains("bogus")),
        "{report:?}"
    );
    assert_eq!(version_of(&watcher), Flow::skip("v1"));
}

#[test]
fn an_unchanged_plugin_is_not_recompiled() {
    let (_dir, watcher) = watched("unchanged", "v1");
    let report = watcher.reload_now();
    assert!(report.compiled.is_empty(), "{report:?}");
}

/// The watcher notices a change by itself; a storm of rewrites settles on
/// the last version, in far fewer reloads than writes.
#[test]
fn a_storm_of_rewrites_settles_on_the_last_version() {
    let (dir, watcher) = watched("storm", "v0");
    let started = Instant::now();
    for i in 1..=40 {
        manifest(&dir, &format!("v{i}"));
        std::thread::sleep(Duration::from_millis(2));
    }
    let mut reloads = 0;
    while version_of(&watcher) != Flow::skip("v40") {
        assert!(started.elapsed() < Duration::from_secs(30), "never settled");
        if watcher.next_report(Duration::from_secs(5)).is_some() {
            reloads += 1;
        }
    }
    assert!(reloads < 20, "{reloads} reloads for 40 writes");
}

#[test]
fn runs_never_see_a_mixed_or_missing_stack_while_reloading() {
    let (dir, watcher) = watched("concurrent", "v0");
    let watcher = Arc::new(watcher);
    let stop = Arc::new(AtomicBool::new(false));
    let runners: Vec<_> = (0..2)
        .map(|_| {
            let (watcher, stop) = (watcher.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut runs = 0;
                while !stop.load(Ordering::SeqCst) {
                    let snapshot = watcher.snapshot();
                    let mut run = snapshot.stack.start_run("r");
                    let first = decided(dispatch(&mut run, &tool_call("guard:version", "{}"))).flow;
                    std::thread::yield_now();
                    let second =
                        decided(dispatch(&mut run, &tool_call("guard:version", "{}"))).flow;
                    assert_eq!(first, second, "one run, one version");
                    runs += 1;
                }
                runs
            })
        })
        .collect();
    for i in 1..=10 {
        manifest(&dir, &format!("v{i}"));
        watcher.reload_now();
    }
    stop.store(true, Ordering::SeqCst);
    for runner in runners {
        assert!(runner.join().expect("no panic") > 0);
    }
    assert_eq!(version_of(&watcher), Flow::skip("v10"));
}

#[test]
fn a_plugin_in_a_subdirectory_named_by_the_manifest_is_hot_reloaded() {
    let dir = scratch_dir("subdir");
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    put(&dir, "sub/guard.wasm", guests::PUPPET);
    std::fs::write(
        dir.join("hookbox.toml"),
        "[[plugin]]\nfile = \"sub/guard.wasm\"\nname = \"guard\"\n[plugin.config]\nname = \"guard\"\nversion = \"v1\"\n",
    )
    .unwrap();
    let watcher = DirWatcher::start(runtime(), &dir, DEBOUNCE).unwrap();
    assert_eq!(version_of(&watcher), Flow::skip("v1"));
    // Only the subdirectory changes: deny-tools replaces the puppet.
    put(&dir, "sub/guard.wasm", guests::DENY_TOOLS);
    let report = watcher
        .next_report(Duration::from_secs(20))
        .expect("a change in the subdirectory triggers a reload");
    assert!(report.errors.is_empty(), "{report:?}");
    assert_eq!(
        version_of(&watcher),
        Flow::Continue,
        "the new plugin is live"
    );
}

#[test]
fn reloads_are_counted_by_how_they_ended() {
    let dir = scratch_dir("counted");
    put(&dir, "guard.wasm", guests::PUPPET);
    manifest(&dir, "v1");
    // A debounce no test outlasts: only the reloads asked for here happen.
    let watcher = DirWatcher::start(runtime(), &dir, Duration::from_secs(3600)).unwrap();
    assert_eq!(watcher.reloads(), (0, 0), "the first load is not a reload");
    manifest(&dir, "v2");
    watcher.reload_now();
    std::fs::write(dir.join("guard.wasm"), b"not a component").unwrap();
    watcher.reload_now();
    assert_eq!(watcher.reloads(), (1, 1));
    assert_eq!(
        version_of(&watcher),
        Flow::skip("v2"),
        "the failed reload kept v2 live"
    );
}
