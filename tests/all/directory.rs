//! Plugin directories: the manifest, path safety, what is refused and how.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use hookbox::directory::{self, LoadedDir};
use hookbox::{Cause, Error, Flow};

use super::support::*;
use hookbox_tests::guests;

/// A fresh, empty directory for one test.
pub fn scratch_dir(label: &str) -> PathBuf {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "hookbox-{label}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

pub fn put(dir: &Path, file: &str, guest: &str) {
    std::fs::copy(guest, dir.join(file)).unwrap();
}

fn load(dir: &Path) -> LoadedDir {
    directory::load(runtime(), dir).expect("the directory loads")
}

fn reason(loaded: &LoadedDir, name: &str) -> String {
    let status = loaded
        .plugins
        .iter()
        .find(|p| p.name == name)
        .expect("listed");
    status
        .result
        .as_ref()
        .err()
        .map(|error| format!("{}: {}", error.phase, error.reason))
        .expect("failed to load")
}

#[test]
fn without_a_manifest_every_wasm_file_loads_in_file_name_order() {
    let dir = scratch_dir("no-manifest");
    put(&dir, "b.wasm", guests::PUPPET);
    put(&dir, "a.wasm", guests::PUPPET);
    std::fs::write(dir.join("notes.txt"), "not a plugin").unwrap();
    let loaded = load(&dir);
    let names: Vec<&str> = loaded.plugins.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    // Both answer `puppet:` commands; the first in order decides.
    let decision = decided(once(&loaded.stack, &tool_call("puppet:flow:skip:x", "{}")));
    assert_eq!(decision.plugin.as_deref(), Some("a"));
}

#[test]
fn the_manifest_sets_order_names_config_and_limits() {
    let dir = scratch_dir("manifest");
    put(&dir, "p.wasm", guests::PUPPET);
    put(&dir, "deny.wasm", guests::DENY_TOOLS);
    std::fs::write(
        dir.join("hookbox.toml"),
        r#"
[[plugin]]
file = "deny.wasm"
name = "policy"
[plugin.config]
deny = "shell"

[[plugin]]
file = "p.wasm"
name = "small"
[plugin.config]
name = "small"
[plugin.limits]
memory_mib = 2
"#,
    )
    .unwrap();
    let loaded = load(&dir);
    assert!(loaded.has_manifest);
    let denied = decided(once(&loaded.stack, &tool_call("shell", "{}")));
    assert_eq!(denied.plugin.as_deref(), Some("policy"));
    let failure = once(&loaded.stack, &tool_call("small:grow", "{}")).unwrap_err();
    assert_eq!((&*failure.plugin, failure.cause), ("small", Cause::Memory));
    assert!(failure.detail.contains(&(2 << 20).to_string()), "{failure}");
}

#[test]
fn a_manifest_with_an_unknown_key_is_refused_naming_the_key_and_line() {
    let dir = scratch_dir("bad-manifest");
    put(&dir, "p.wasm", guests::PUPPET);
    std::fs::write(
        dir.join("hookbox.toml"),
        "[[plugin]]\nfile = \"p.wasm\"\ntimeout = 5\n",
    )
    .unwrap();
    let Err(Error::Directory { reason, .. }) = directory::load(runtime(), &dir) else {
        panic!("must fail")
    };
    assert!(
        reason.contains("timeout") && reason.contains("line 3"),
        "{reason}"
    );
}

#[test]
fn two_plugins_with_the_same_name_are_refused() {
    let dir = scratch_dir("same-name");
    put(&dir, "a.wasm", guests::PUPPET);
    put(&dir, "b.wasm", guests::PUPPET);
    std::fs::write(
        dir.join("hookbox.toml"),
        "[[plugin]]\nfile = \"a.wasm\"\nname = \"x\"\n[[plugin]]\nfile = \"b.wasm\"\nname = \"x\"\n",
    )
    .unwrap();
    let Err(Error::Directory { reason, .. }) = directory::load(runtime(), &dir) else {
        panic!("must fail")
    };
    assert!(reason.contains("two plugins are named `x`"), "{reason}");
}

#[test]
fn paths_that_leave_the_directory_are_refused_and_runs_fail_closed() {
    let outside = scratch_dir("outside");
    put(&outside, "evil.wasm", guests::PUPPET);
    let dir = scratch_dir("escape");
    std::os::unix::fs::symlink(outside.join("evil.wasm"), dir.join("link.wasm")).unwrap();
    std::fs::write(
        dir.join("hookbox.toml"),
        "[[plugin]]\nfile = \"link.wasm\"\n[[plugin]]\nfile = \"../outside/evil.wasm\"\nname = \"dots\"\n[[plugin]]\nfile = \"/etc/passwd.wasm\"\nname = \"abs\"\n",
    )
    .unwrap();
    let loaded = load(&dir);
    assert!(reason(&loaded, "link").contains("outside the plugin directory"));
    assert!(reason(&loaded, "dots").contains("must stay inside"));
    assert!(reason(&loaded, "abs").contains("must stay inside"));
    let failure = once(&loaded.stack, &tool_call("t", "{}")).unwrap_err();
    assert_eq!((&*failure.plugin, failure.cause), ("link", Cause::Load));
}

#[test]
fn a_symlink_inside_the_directory_is_followed() {
    let dir = scratch_dir("inner-link");
    std::fs::create_dir(dir.join("versions")).unwrap();
    put(&dir.join("versions"), "p-1.wasm", guests::PUPPET);
    std::os::unix::fs::symlink(dir.join("versions/p-1.wasm"), dir.join("p.wasm")).unwrap();
    let loaded = load(&dir);
    assert!(
        loaded.plugins[0].result.is_ok(),
        "{:?}",
        loaded.plugins[0].result.as_ref().err()
    );
}

#[test]
fn an_optional_plugin_that_cannot_load_is_left_out() {
    let dir = scratch_dir("optional");
    put(&dir, "p.wasm", guests::PUPPET);
    std::fs::write(dir.join("broken.wasm"), b"\0asm\x0d\0\x01\0junk").unwrap();
    std::fs::write(
        dir.join("hookbox.toml"),
        "[[plugin]]\nfile = \"broken.wasm\"\nrequired = false\n[[plugin]]\nfile = \"p.wasm\"\n",
    )
    .unwrap();
    let loaded = load(&dir);
    assert!(reason(&loaded, "broken").contains("compile"));
    assert_eq!(
        decided(once(&loaded.stack, &tool_call("puppet:flow:skip:ok", "{}"))).flow,
        Flow::skip("ok")
    );
}

#[test]
fn a_precompiled_artifact_in_the_directory_is_never_loaded() {
    let dir = scratch_dir("precompiled");
    let bytes = std::fs::read(guests::PUPPET).unwrap();
    let precompiled = runtime().engine().precompile_component(&bytes).unwrap();
    std::fs::write(dir.join("fast.wasm"), precompiled).unwrap();
    let loaded = load(&dir);
    assert!(
        reason(&loaded, "fast").contains("compile"),
        "{}",
        reason(&loaded, "fast")
    );
}

#[test]
fn files_the_manifest_does_not_list_are_reported_and_not_loaded() {
    let dir = scratch_dir("unlisted");
    put(&dir, "p.wasm", guests::PUPPET);
    put(&dir, "extra.wasm", guests::PUPPET);
    std::fs::write(dir.join("hookbox.toml"), "[[plugin]]\nfile = \"p.wasm\"\n").unwrap();
    let loaded = load(&dir);
    assert_eq!(loaded.unlisted, ["extra.wasm"]);
    assert_eq!(loaded.plugins.len(), 1);
}
