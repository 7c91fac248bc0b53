//! The README's first command, `cargo demo`, is this binary with `demo`:
//! run here, it is checked by `cargo test` (and built by it, so CI runs the
//! same binary instead of building it again for one package).

use std::process::Command;

#[test]
fn the_readme_demo_runs_to_its_end_with_the_guards_acting() {
    let out = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .arg("demo")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_TRACES_EXPORTER")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("$ hookbox run --plugins"), "{stdout}");
}
