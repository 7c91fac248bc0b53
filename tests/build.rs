//! Builds every Rust guest (the example plugins and the test guests) for
//! `wasm32-unknown-unknown`, encodes each as a component, and writes their
//! paths as constants, so `cargo test` just works.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

/// (crate, directory) of every guest.
const GUESTS: &[(&str, &str)] = &[
    ("deny-tools", "plugins/deny-tools"),
    ("redact-secrets", "plugins/redact-secrets"),
    ("path-jail", "plugins/path-jail"),
    ("call-budget", "plugins/call-budget"),
    ("inject-context", "plugins/inject-context"),
    ("repair-tools", "plugins/repair-tools"),
    ("puppet", "tests/guests/puppet"),
];

fn main() -> Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().context("workspace root")?.to_path_buf();
    for watched in ["wit", "sdk", "plugins", "tests/guests"] {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }
    let target_dir = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("target"));
    let guest_target = target_dir.join("guests");

    let mut cargo = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cargo
        .current_dir(&root)
        .args(["build", "--quiet", "--target", "wasm32-unknown-unknown", "--profile", "guest", "--target-dir"])
        .arg(&guest_target)
        // The outer build's flags are for the host, not for wasm.
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET");
    for (name, _) in GUESTS {
        cargo.args(["-p", name]);
    }
    let status = cargo.status().context("running cargo to build the guests")?;
    if !status.success() {
        bail!("building the guests failed; is the target installed? `rustup target add wasm32-unknown-unknown`");
    }

    let out_dir = PathBuf::from(std::env::var("OUT_DIR")?);
    let mut constants = String::new();
    for (name, _) in GUESTS {
        let core = guest_target.join("wasm32-unknown-unknown/guest").join(format!("{}.wasm", name.replace('-', "_")));
        let bytes = std::fs::read(&core).with_context(|| format!("reading {}", core.display()))?;
        let component = wit_component::ComponentEncoder::default()
            .module(&bytes)
            .and_then(|encoder| encoder.validate(true).encode())
            .with_context(|| format!("encoding {name} as a component"))?;
        let file = out_dir.join(format!("{name}.wasm"));
        std::fs::write(&file, component)?;
        let constant = name.to_uppercase().replace('-', "_");
        constants.push_str(&format!("/// The `{name}` guest, as a component.\npub const {constant}: &str = {:?};\n", file.display().to_string()));
    }
    constants.push_str(&format!(
        "/// Every guest: (name, path).\npub const ALL: &[(&str, &str)] = &[{}];\n",
        GUESTS.iter().map(|(n, _)| format!("({n:?}, {})", n.to_uppercase().replace('-', "_"))).collect::<Vec<_>>().join(", ")
    ));
    std::fs::write(out_dir.join("guests.rs"), constants)?;
    Ok(())
}
