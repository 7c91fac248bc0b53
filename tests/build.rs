//! Builds every Rust guest (the example plugins and the test guests) for
//! `wasm32-unknown-unknown`, encodes each as a component, and writes their
//! paths as constants, so `cargo test` just works.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

/// The example guardrails in `plugins/`.
const EXAMPLES: &[&str] = &[
    "deny-tools",
    "redact-secrets",
    "path-jail",
    "call-budget",
    "inject-context",
    "repair-tools",
    "egress",
    "shell-guard",
    "pii",
    "provenance",
];

/// The test guests in `tests/guests/` built like the examples, and the Rust
/// build of the guard of `languages/`.
const TEST_GUESTS: &[&str] = &["puppet", "director", "bench-guard", "toolguard"];

/// Plain core modules for other hosts (the benchmarks' Extism peer), built
/// like the others but not encoded.
const CORE_GUESTS: &[&str] = &["extism-guard"];

/// Guests built for wasm32-wasip2 (components already, importing WASI).
const WASI_GUESTS: &[&str] = &["wasi-probe"];

fn main() -> Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .context("workspace root")?
        .to_path_buf();
    for watched in [
        "Cargo.toml",
        "wit",
        "sdk",
        "plugins",
        "tests/guests",
        "bench/guard",
        "languages/rust",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }
    let target_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let guest_target = target_dir.join("guests");

    // Built for wasm32-unknown-unknown, then encoded as components.
    let guests: Vec<&str> = EXAMPLES.iter().chain(TEST_GUESTS).copied().collect();
    let core_built: Vec<&str> = guests.iter().chain(CORE_GUESTS).copied().collect();
    cargo_build(&root, &guest_target, "wasm32-unknown-unknown", &core_built)?;
    cargo_build(&root, &guest_target, "wasm32-wasip2", WASI_GUESTS)?;

    let out_dir = PathBuf::from(std::env::var("OUT_DIR")?);
    let mut constants = String::new();
    for name in &guests {
        let core = guest_target
            .join("wasm32-unknown-unknown/guest")
            .join(format!("{}.wasm", name.replace('-', "_")));
        let bytes = std::fs::read(&core).with_context(|| format!("reading {}", core.display()))?;
        let component = wit_component::ComponentEncoder::default()
            .module(&bytes)
            .and_then(|encoder| encoder.validate(true).encode())
            .with_context(|| format!("encoding {name} as a component"))?;
        let file = out_dir.join(format!("{name}.wasm"));
        std::fs::write(&file, component)?;
        let constant = name.to_uppercase().replace('-', "_");
        constants.push_str(&format!(
            "/// The `{name}` guest, as a component.\npub const {constant}: &str = {:?};\n\
             /// The `{name}` guest's core module, before it is encoded.\npub const {constant}_MODULE: &str = {:?};\n",
            file.display().to_string(),
            core.display().to_string()
        ));
    }
    // Built as they are, copied as they are.
    for (names, target, kind) in [
        (
            CORE_GUESTS,
            "wasm32-unknown-unknown",
            "a core module (not a hookbox component)",
        ),
        (WASI_GUESTS, "wasm32-wasip2", "a wasm32-wasip2 component"),
    ] {
        for name in names {
            let built = guest_target
                .join(target)
                .join("guest")
                .join(format!("{}.wasm", name.replace('-', "_")));
            let file = out_dir.join(format!("{name}.wasm"));
            std::fs::copy(&built, &file).with_context(|| format!("copying {}", built.display()))?;
            let constant = name.to_uppercase().replace('-', "_");
            constants.push_str(&format!(
                "/// The `{name}` guest, {kind}.\npub const {constant}: &str = {:?};\n",
                file.display().to_string()
            ));
        }
    }
    constants.push_str(&format!(
        "/// Every guest: (name, path).\npub const ALL: &[(&str, &str)] = &[{}];\n",
        guests
            .iter()
            .chain(WASI_GUESTS)
            .map(|n| format!("({n:?}, {})", n.to_uppercase().replace('-', "_")))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    constants.push_str(&format!(
        "/// Every guest encoded from a core module: (name, core module path).\npub const MODULES: &[(&str, &str)] = &[{}];\n",
        guests
            .iter()
            .map(|n| format!("({n:?}, {}_MODULE)", n.to_uppercase().replace('-', "_")))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    constants.push_str(&format!(
        "/// The names of the example guardrails in `plugins/`.\npub const EXAMPLES: &[&str] = &{EXAMPLES:?};\n"
    ));
    std::fs::write(out_dir.join("guests.rs"), constants)?;
    Ok(())
}

/// `cargo build` of `packages` for `target`, in a target directory of their
/// own (the outer build holds the lock on the main one).
fn cargo_build(root: &Path, target_dir: &Path, target: &str, packages: &[&str]) -> Result<()> {
    let mut cargo = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cargo
        .current_dir(root)
        .args([
            "build",
            "--quiet",
            "--target",
            target,
            "--profile",
            "guest",
            "--target-dir",
        ])
        .arg(target_dir)
        // The outer build's flags are for the host, not for wasm.
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET")
        // Under `cargo clippy`, lint the guests as their own workspace members
        // instead, not inside this build.
        .env_remove("RUSTC_WORKSPACE_WRAPPER");
    for package in packages {
        cargo.args(["-p", package]);
    }
    let status = cargo
        .status()
        .with_context(|| format!("running cargo to build the {target} guests"))?;
    if !status.success() {
        bail!(
            "building the {target} guests failed; is the target installed? `rustup target add {target}`"
        );
    }
    Ok(())
}
