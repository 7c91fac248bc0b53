//! Pinned plugins: a manifest's `sha256` refuses other bytes, at load and
//! on hot reload, and `hookbox lock` writes the pins.

use std::path::Path;
use std::time::Duration;

use hookbox::watch::DirWatcher;
use hookbox::{Cause, Flow, LoadPhase};

use super::directory::{put, scratch_dir};
use super::support::*;
use hookbox_tests::guests;

fn digest(path: &str) -> String {
    hookbox::cache::sha256_hex(&std::fs::read(path).unwrap())
}

fn pinned_dir(label: &str, pin: &str, required: bool) -> std::path::PathBuf {
    let dir = scratch_dir(label);
    put(&dir, "guard.wasm", guests::PUPPET);
    write_manifest(&dir, pin, required);
    dir
}

fn write_manifest(dir: &Path, pin: &str, required: bool) {
    std::fs::write(
        dir.join("hookbox.toml"),
        format!(
            "[[plugin]]\nfile = \"guard.wasm\"\nrequired = {required}\nsha256 = \"{pin}\"\n[plugin.config]\nname = \"guard\"\nversion = \"v1\"\n"
        ),
    )
    .unwrap();
}

#[test]
fn a_plugin_whose_bytes_match_its_pin_loads() {
    let dir = pinned_dir("pin-ok", &digest(guests::PUPPET).to_uppercase(), true);
    let loaded = hookbox::directory::load(runtime(), &dir).unwrap();
    assert!(loaded.plugins[0].result.is_ok());
    assert_eq!(
        loaded.plugins[0].sha256.as_deref(),
        Some(&*digest(guests::PUPPET))
    );
    assert_eq!(
        decided(once(&loaded.stack, &tool_call("guard:version", "{}"))).flow,
        Flow::skip("v1")
    );
}

#[test]
fn a_pin_mismatch_refuses_the_plugin_naming_both_digests_and_runs_fail_closed() {
    let wrong = "0".repeat(64);
    let dir = pinned_dir("pin-bad", &wrong, true);
    let loaded = hookbox::directory::load(runtime(), &dir).unwrap();
    let error = loaded.plugins[0].result.as_ref().unwrap_err();
    assert_eq!(error.phase, LoadPhase::Pin);
    assert!(
        error.reason.contains(&wrong) && error.reason.contains(&digest(guests::PUPPET)),
        "{error}"
    );
    let failure = once(&loaded.stack, &tool_call("anything", "{}")).unwrap_err();
    assert_eq!((&*failure.plugin, failure.cause), ("guard", Cause::Load));
    assert!(failure.detail.contains("pin"), "{failure}");
}

#[test]
fn an_optional_plugin_whose_pin_does_not_match_is_left_out() {
    let dir = pinned_dir("pin-optional", &"1".repeat(64), false);
    let loaded = hookbox::directory::load(runtime(), &dir).unwrap();
    assert!(loaded.plugins[0].result.is_err());
    assert_eq!(
        decided(once(&loaded.stack, &tool_call("guard:version", "{}"))).flow,
        Flow::Continue
    );
}

#[test]
fn a_pinned_file_replaced_during_hot_reload_is_refused_and_the_old_version_stays_live() {
    let dir = pinned_dir("pin-reload", &digest(guests::PUPPET), true);
    let watcher = DirWatcher::start(runtime(), &dir, Duration::from_millis(50)).unwrap();
    let version = |watcher: &DirWatcher| {
        decided(once(
            &watcher.snapshot().stack,
            &tool_call("guard:version", "{}"),
        ))
        .flow
    };
    assert_eq!(version(&watcher), Flow::skip("v1"));

    // Another valid component, dropped in place of the reviewed one.
    put(&dir, "guard.wasm", guests::DIRECTOR);
    let report = watcher.reload_now();
    let [error] = &report.errors[..] else {
        panic!("{report:?}")
    };
    assert_eq!(error.phase, LoadPhase::Pin);
    assert!(
        error.reason.contains(&digest(guests::DIRECTOR))
            && error.reason.contains("previous version stays live"),
        "{error}"
    );
    assert_eq!(
        version(&watcher),
        Flow::skip("v1"),
        "the reviewed version still runs"
    );
    let snapshot = watcher.snapshot();
    assert!(snapshot.plugins[0].newer_version_failed.is_some());
    assert_eq!(
        snapshot.plugins[0].sha256.as_deref(),
        Some(&*digest(guests::PUPPET)),
        "the digest of what runs"
    );

    // Pinning the new bytes lets them in.
    write_manifest(&dir, &digest(guests::DIRECTOR), true);
    let report = watcher.reload_now();
    assert!(report.errors.is_empty(), "{report:?}");
    assert!(watcher.snapshot().plugins[0].newer_version_failed.is_none());
}

#[test]
fn a_pin_changed_to_other_bytes_refuses_the_unchanged_file_on_reload() {
    let dir = pinned_dir("pin-repin", &digest(guests::PUPPET), true);
    let watcher = DirWatcher::start(runtime(), &dir, Duration::from_millis(50)).unwrap();
    write_manifest(&dir, &"2".repeat(64), true);
    watcher.reload_now();
    let snapshot = watcher.snapshot();
    let error = snapshot.plugins[0].result.as_ref().unwrap_err();
    assert_eq!(
        error.phase,
        LoadPhase::Pin,
        "an old version the pin refuses does not stay"
    );
    assert_eq!(
        once(&snapshot.stack, &tool_call("x", "{}"))
            .unwrap_err()
            .cause,
        Cause::Load
    );
}
