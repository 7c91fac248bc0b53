//! `cargo xtask public-api [--check]`: the public surface of the crates
//! embedders depend on, one line per item, written to (or, with `--check`,
//! compared with) `host/<crate>/public-api.txt`.
//!
//! Read from rustdoc's JSON output (`--output-format json`, unstable:
//! enabled with `RUSTC_BOOTSTRAP=1` on the pinned stable toolchain, so CI
//! needs no nightly). Not `cargo public-api`: it needs a nightly toolchain
//! whose JSON format matches the version it was built for, and a second
//! toolchain download in every cold run. The listing names items (and their
//! paths, fields, variants and methods), not their signatures: what it
//! catches is an item made public, or a path added, that was not meant to
//! be.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde_json::Value;

/// The crates whose surface is listed, and where.
const CRATES: [(&str, &str); 2] = [
    ("hookbox", "host/core"),
    ("hookbox-adapter", "host/adapter"),
];

pub fn run(root: &Path, check: bool) -> Result<()> {
    let doc_dir = document(root)?;
    let mut changed = Vec::new();
    for (name, dir) in CRATES {
        let listing = listing(&doc_dir, name)?;
        let path = root.join(dir).join("public-api.txt");
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        if committed == listing {
            continue;
        }
        if check {
            changed.push((path, committed, listing));
        } else {
            std::fs::write(&path, &listing).with_context(|| path.display().to_string())?;
            println!("wrote {}", path.display());
        }
    }
    if changed.is_empty() {
        return Ok(());
    }
    for (path, committed, listing) in &changed {
        let before: BTreeSet<&str> = committed.lines().collect();
        let after: BTreeSet<&str> = listing.lines().collect();
        eprintln!("{} is not the crate's public API:", path.display());
        for line in after.difference(&before) {
            eprintln!("  + {line}");
        }
        for line in before.difference(&after) {
            eprintln!("  - {line}");
        }
    }
    bail!(
        "the public API changed; if that is meant, run `cargo xtask public-api` and commit the listing"
    )
}

/// Writes rustdoc's JSON of every crate in [`CRATES`], in one `cargo doc`.
///
/// With `hookbox-workspace-hack` selected, the dependencies are checked with
/// the features CI's docs step checked them with, so this reuses them. Only
/// rustdoc is told it may use unstable options (`RUSTC_BOOTSTRAP`, through
/// [`RUSTDOC_WRAPPER`]): in cargo's own environment it would reach every
/// build script, and those that probe the compiler (anyhow, proc-macro2 ...)
/// would rebuild their crates and everything above them.
fn document(root: &Path) -> Result<PathBuf> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let rustdoc = std::env::var_os("RUSTDOC").unwrap_or_else(|| "rustdoc".into());
    let mut command = Command::new(cargo);
    command
        .current_dir(root)
        .env(
            "RUSTDOC",
            std::env::current_exe().context("xtask's own path")?,
        )
        .env(RUSTDOC_WRAPPER, rustdoc)
        .env("RUSTDOCFLAGS", "-Z unstable-options --output-format json")
        .args([
            "doc",
            "--quiet",
            "--no-deps",
            "-p",
            "hookbox-workspace-hack",
        ]);
    for (name, _) in CRATES {
        command.args(["-p", name]);
    }
    let status = command.status().context("running cargo doc")?;
    if !status.success() {
        bail!("cargo doc (rustdoc's JSON) failed");
    }
    // Where cargo writes docs: by target when one is set.
    let target_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(|dir| root.join(dir))
        .unwrap_or_else(|| root.join("target"));
    Ok(match std::env::var_os("CARGO_BUILD_TARGET") {
        Some(triple) => target_dir.join(triple).join("doc"),
        None => target_dir.join("doc"),
    })
}

/// Set to the real rustdoc when xtask is run as cargo's `RUSTDOC`.
pub const RUSTDOC_WRAPPER: &str = "HOOKBOX_XTASK_RUSTDOC";

/// xtask as cargo's `RUSTDOC`: the real rustdoc, allowed unstable options.
pub fn rustdoc(real: std::ffi::OsString) -> Result<()> {
    let status = Command::new(real)
        .args(std::env::args_os().skip(1))
        .env("RUSTC_BOOTSTRAP", "1")
        .status()
        .context("running rustdoc")?;
    std::process::exit(status.code().unwrap_or(1));
}

/// The crate's public items, one per line, sorted, from rustdoc's JSON in
/// `doc`.
fn listing(doc_dir: &Path, name: &str) -> Result<String> {
    let file = doc_dir.join(format!("{}.json", name.replace('-', "_")));
    let text = std::fs::read_to_string(&file).with_context(|| file.display().to_string())?;
    let doc: Value = serde_json::from_str(&text).context("rustdoc's JSON")?;
    let mut lines = BTreeSet::new();
    let crate_name = name.replace('-', "_");
    Walk {
        index: &doc["index"],
        lines: &mut lines,
    }
    .module(&doc["root"], &crate_name);
    Ok(lines.into_iter().map(|l| l + "\n").collect())
}

struct Walk<'a> {
    index: &'a Value,
    lines: &'a mut BTreeSet<String>,
}

impl Walk<'_> {
    fn item(&self, id: &Value) -> Option<&Value> {
        let key = match id {
            Value::Number(n) => n.to_string(),
            Value::String(s) => s.clone(),
            _ => return None,
        };
        self.index.get(key)
    }

    /// The public items of the module `id`, at `path`.
    fn module(&mut self, id: &Value, path: &str) {
        let Some(items) = self
            .item(id)
            .and_then(|m| m["inner"]["module"]["items"].as_array())
        else {
            return;
        };
        for child in items.clone() {
            self.member(&child, path);
        }
    }

    /// One item a module holds (or re-exports), under `path`.
    fn member(&mut self, id: &Value, path: &str) {
        let Some(item) = self.item(id).cloned() else {
            return;
        };
        if item["visibility"] != "public" {
            return;
        }
        let Some((kind, inner)) = item["inner"].as_object().and_then(|o| o.iter().next()) else {
            return;
        };
        if kind == "use" {
            let target = &inner["id"];
            let name = inner["name"].as_str().unwrap_or("");
            match self.item(target).cloned() {
                Some(_) if inner["is_glob"] == true => {
                    if self.kind_of(target) == Some("module") {
                        self.module(target, path);
                    }
                }
                Some(_) => self.named(target, &format!("{path}::{name}")),
                // From another crate: named by where it comes from.
                None => {
                    let source = inner["source"].as_str().unwrap_or("?");
                    self.lines
                        .insert(format!("pub use {path}::{name} = {source}"));
                }
            }
            return;
        }
        let Some(name) = item["name"].as_str() else {
            return;
        };
        self.named(id, &format!("{path}::{name}"));
    }

    fn kind_of(&self, id: &Value) -> Option<&str> {
        let object = self.item(id)?["inner"].as_object()?;
        object.keys().next().map(String::as_str)
    }

    /// The item `id`, reachable as `path`, and what hangs off it.
    fn named(&mut self, id: &Value, path: &str) {
        let Some(item) = self.item(id).cloned() else {
            return;
        };
        let Some((kind, inner)) = item["inner"].as_object().and_then(|o| o.iter().next()) else {
            return;
        };
        let keyword = match kind.as_str() {
            "module" => "mod",
            "struct" => "struct",
            "enum" => "enum",
            "union" => "union",
            "trait" => "trait",
            "function" => "fn",
            "constant" | "assoc_const" => "const",
            "static" => "static",
            "type_alias" | "assoc_type" => "type",
            "macro" | "proc_macro" => "macro",
            "trait_alias" => "trait",
            other => other,
        };
        self.lines.insert(format!("pub {keyword} {path}"));
        match kind.as_str() {
            "module" => self.module(id, path),
            "struct" | "union" => {
                let fields = inner["kind"]["plain"]["fields"]
                    .as_array()
                    .or_else(|| inner["fields"].as_array())
                    .cloned()
                    .unwrap_or_default();
                for field in fields {
                    if let Some(field) = self.item(&field).cloned()
                        && field["visibility"] == "public"
                    {
                        let name = field["name"].as_str().unwrap_or("?");
                        self.lines.insert(format!("pub field {path}.{name}"));
                    }
                }
                self.impls(&inner["impls"], path);
            }
            "enum" => {
                for variant in inner["variants"].as_array().cloned().unwrap_or_default() {
                    if let Some(name) = self.item(&variant).and_then(|v| v["name"].as_str()) {
                        self.lines.insert(format!("pub variant {path}::{name}"));
                    }
                }
                self.impls(&inner["impls"], path);
            }
            "trait" => {
                for member in inner["items"].as_array().cloned().unwrap_or_default() {
                    self.associated(&member, path, true);
                }
            }
            _ => {}
        }
    }

    /// The inherent methods and the trait implementations of a type.
    fn impls(&mut self, impls: &Value, path: &str) {
        for id in impls.as_array().cloned().unwrap_or_default() {
            let Some(imp) = self.item(&id).map(|i| i["inner"]["impl"].clone()) else {
                continue;
            };
            if imp["is_synthetic"] == true || !imp["blanket_impl"].is_null() {
                continue;
            }
            match imp["trait"]["path"].as_str() {
                Some(name) => {
                    self.lines.insert(format!("impl {name} for {path}"));
                }
                None => {
                    for member in imp["items"].as_array().cloned().unwrap_or_default() {
                        self.associated(&member, path, false);
                    }
                }
            }
        }
    }

    /// A method, constant or type of a type (public) or trait (all).
    fn associated(&mut self, id: &Value, path: &str, of_trait: bool) {
        let Some(item) = self.item(id).cloned() else {
            return;
        };
        if !of_trait && item["visibility"] != "public" {
            return;
        }
        let kind = item["inner"]
            .as_object()
            .and_then(|o| o.keys().next().cloned())
            .unwrap_or_default();
        let keyword = match kind.as_str() {
            "function" => "fn",
            "assoc_const" | "constant" => "const",
            "assoc_type" | "type_alias" => "type",
            other => other,
        };
        let name = item["name"].as_str().unwrap_or("?");
        self.lines.insert(format!("pub {keyword} {path}::{name}"));
    }
}
