//! The compile cache: a warm start skips compilation; only verified entries
//! written by hookbox are ever loaded.

use hookbox::{Plugin, PluginOptions, Runtime, RuntimeConfig};

use super::directory::scratch_dir;
use hookbox_tests::guests;

fn runtime_with_cache(dir: &std::path::Path) -> Runtime {
    let config = RuntimeConfig {
        cache_dir: Some(dir.to_path_buf()),
        max_instances: 50,
        ..Default::default()
    };
    Runtime::new(config).unwrap()
}

fn load(runtime: &Runtime) {
    Plugin::from_file(
        runtime,
        guests::DENY_TOOLS.as_ref(),
        PluginOptions::default(),
    )
    .expect("loads");
}

fn entries(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "cwasm"))
        .collect();
    found.sort();
    found
}

#[test]
fn a_warm_start_loads_the_compiled_component_from_the_cache() {
    let dir = scratch_dir("cache-warm");
    let cold = runtime_with_cache(&dir);
    load(&cold);
    assert_eq!(cold.cache_stats().unwrap().hits, 0);
    assert_eq!(entries(&dir).len(), 1);

    let warm = runtime_with_cache(&dir);
    load(&warm);
    let stats = warm.cache_stats().unwrap();
    assert_eq!((stats.hits, stats.misses), (1, 0));
}

/// A verified entry is mapped, not copied: wasmtime runs the compiled code
/// and takes the memory images from the entry's own pages, which is what
/// makes a warm start cheap (a copy would read and allocate every byte).
#[cfg(target_os = "linux")]
#[test]
fn a_warm_start_maps_the_verified_entry_rather_than_copying_it() {
    let dir = scratch_dir("cache-mapped");
    load(&runtime_with_cache(&dir));
    let entry = entries(&dir).remove(0);
    let warm = runtime_with_cache(&dir);
    let plugin = Plugin::from_file(&warm, guests::DENY_TOOLS.as_ref(), PluginOptions::default())
        .expect("loads");
    assert_eq!(warm.cache_stats().unwrap().hits, 1);
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let entry = entry.canonicalize().unwrap();
    // Its code runs from the file's own pages: an executable mapping of it
    // (the tag check's read-only mapping is gone by now).
    let executable = maps.lines().any(|line| {
        let perms = line.split_whitespace().nth(1).unwrap_or("");
        line.ends_with(&*entry.to_string_lossy()) && perms.contains('x')
    });
    assert!(
        executable,
        "{} is not mapped executable:\n{maps}",
        entry.display()
    );
    drop(plugin);
}

#[test]
fn a_damaged_or_forged_entry_is_recompiled_never_loaded() {
    let dir = scratch_dir("cache-damaged");
    load(&runtime_with_cache(&dir));
    let entry = entries(&dir).remove(0);
    let good = std::fs::read(&entry).unwrap();
    // A byte of the artifact (its code), then one of the tag after it.
    for at in [good.len() / 2, good.len() - 1] {
        let mut bytes = good.clone();
        bytes[at] ^= 0xff;
        std::fs::write(&entry, &bytes).unwrap();

        let runtime = runtime_with_cache(&dir);
        load(&runtime);
        let stats = runtime.cache_stats().unwrap();
        assert_eq!(
            (stats.hits, stats.rejected),
            (0, 1),
            "byte {at} of {}",
            good.len()
        );
        // Rewritten: the next start hits again.
        let again = runtime_with_cache(&dir);
        load(&again);
        assert_eq!(again.cache_stats().unwrap().hits, 1);
    }
    let again = runtime_with_cache(&dir);

    // An artifact that wasmtime would accept, but that hookbox did not sign.
    let engine_bytes = std::fs::read(guests::DENY_TOOLS).unwrap();
    let forged = again.engine().precompile_component(&engine_bytes).unwrap();
    std::fs::write(&entry, [forged, vec![0u8; 32]].concat()).unwrap();
    let third = runtime_with_cache(&dir);
    load(&third);
    assert_eq!(third.cache_stats().unwrap().rejected, 1);
}

#[test]
fn a_cache_directory_others_can_write_to_is_not_used() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch_dir("cache-open");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let runtime = runtime_with_cache(&dir);
    assert!(runtime.cache_stats().is_none(), "the cache is off");
    load(&runtime);
}
