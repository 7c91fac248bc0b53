//! Rust guards: cargo builds the crate for `wasm32-unknown-unknown`, and the
//! core module is encoded as a component here, in-process.

use std::path::PathBuf;
use std::process::Command;

use super::{Language, Project, encode, find_tool, run};
use crate::Error;

const INSTALL_CARGO: &str = "install Rust with rustup (https://rustup.rs)";

/// The `[package] name` of the project's `Cargo.toml`, dashes kept.
pub(super) fn package_name(dir: &std::path::Path) -> Result<String, Error> {
    let path = dir.join("Cargo.toml");
    let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
    let doc: toml_edit::DocumentMut = text.parse().map_err(|e| Error::NotAProject {
        dir: dir.to_path_buf(),
        reason: format!("Cargo.toml does not parse: {e}"),
    })?;
    doc.get("package")
        .and_then(|p| p.get("name"))
        .and_then(|n| n.as_str())
        .map(str::to_owned)
        .ok_or_else(|| Error::NotAProject {
            dir: dir.to_path_buf(),
            reason: "Cargo.toml has no [package] name: a guard is one cdylib crate".into(),
        })
}

pub(super) fn build(project: &Project) -> Result<Vec<u8>, Error> {
    let cargo = find_tool(Language::Rust, "cargo", INSTALL_CARGO)?;
    // A toolchain file names the compiler and the wasm target: rustup
    // installs what is missing (newer rustups no longer do it on their own),
    // and only that: a guard's build does not update rustup itself, which
    // fails where rustup does not live in CARGO_HOME.
    if project.dir.join("rust-toolchain.toml").is_file()
        && let Ok(rustup) = find_tool(Language::Rust, "rustup", INSTALL_CARGO)
    {
        run(
            Language::Rust,
            "rustup toolchain install",
            Command::new(rustup)
                .args(["toolchain", "install", "--no-self-update"])
                .current_dir(&project.dir),
        )?;
    }
    let output = Command::new(&cargo)
        .args([
            "build",
            "--release",
            "--lib",
            "--target",
            "wasm32-unknown-unknown",
            "--message-format=json-render-diagnostics",
        ])
        .current_dir(&project.dir)
        // cargo's own progress and errors go to the user as they come.
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| Error::Build {
            language: "rust",
            step: "cargo build".into(),
            output: format!("cannot start cargo: {e}"),
        })?;
    if !output.status.success() {
        let hint = if String::from_utf8_lossy(&output.stdout).contains("wasm32-unknown-unknown") {
            "; is the target installed? `rustup target add wasm32-unknown-unknown`"
        } else {
            ""
        };
        return Err(Error::Build {
            language: "rust",
            step: "cargo build --release --target wasm32-unknown-unknown".into(),
            output: format!("see cargo's errors above ({}){hint}", output.status),
        });
    }
    let module = built_module(&output.stdout, &project.name).ok_or_else(|| Error::Build {
        language: "rust",
        step: "cargo build".into(),
        output: format!(
            "cargo built no `{}` cdylib for wasm32-unknown-unknown; Cargo.toml needs `[lib] crate-type = [\"cdylib\"]`",
            project.name
        ),
    })?;
    let bytes = std::fs::read(&module).map_err(|e| Error::io(&module, e))?;
    encode(Language::Rust, &bytes, None)
}

/// The `.wasm` file cargo reported for the package's library.
fn built_module(messages: &[u8], package: &str) -> Option<PathBuf> {
    let lib = package.replace('-', "_");
    String::from_utf8_lossy(messages)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == lib.as_str())
        .flat_map(|m| {
            m["filenames"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .filter_map(|f| f.as_str().map(PathBuf::from))
                .collect::<Vec<_>>()
        })
        .rfind(|f| f.extension().is_some_and(|e| e == "wasm"))
}
