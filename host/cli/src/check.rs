//! `hookbox check`: whether components and plugin directories load, and
//! what each one is.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use hookbox::{EventKinds, LoadPhase, Plugin, PluginInfo, PluginOptions, Runtime};

use crate::{runtime, terminal};

/// `hookbox check`'s arguments (its help is on [`crate`]'s `Command`).
#[derive(clap::Args)]
pub(crate) struct CheckArgs {
    /// Plugin components (`.wasm`) or plugin directories.
    #[arg(required = true)]
    plugins: Vec<std::path::PathBuf>,
}

impl CheckArgs {
    pub(crate) fn execute(self) -> Result<ExitCode> {
        check(&self.plugins)
    }
}

pub(crate) fn check(paths: &[PathBuf]) -> Result<ExitCode> {
    let runtime = runtime()?;
    let mut failed = false;
    for path in paths {
        let ok = if path.is_dir() {
            check_dir(&runtime, path)
        } else if path.is_file() {
            check_file(&runtime, path)
        } else {
            terminal::tell!("{}: no such file or directory", path.display());
            false
        };
        failed |= !ok;
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// One component: its facts, and whether it loads (if not, why).
fn check_file(runtime: &Runtime, path: &Path) -> bool {
    match Plugin::from_file(runtime, path, PluginOptions::default()) {
        Ok(plugin) => {
            terminal::say!("{}: ok", path.display());
            describe(&plugin);
            true
        }
        Err(e) => {
            terminal::tell!("{}: refused: {e}", path.display());
            if let Some(hint) = crate::shared::hint(&e.to_string()) {
                terminal::tell!("{hint}");
            }
            if !matches!(e.phase, LoadPhase::Read | LoadPhase::Compile) {
                refused_facts(runtime, &e.plugin, path);
            }
            false
        }
    }
}

/// Validates a whole plugin directory with its manifest.
fn check_dir(runtime: &Runtime, dir: &Path) -> bool {
    let loaded = match hookbox::directory::load(runtime, dir) {
        Ok(loaded) => loaded,
        Err(e) => {
            terminal::tell!("{e}");
            return false;
        }
    };
    let source = if loaded.has_manifest {
        "hookbox.toml"
    } else {
        "no manifest: every *.wasm in file-name order"
    };
    terminal::say!(
        "{}: {} plugin(s) ({source})",
        dir.display(),
        loaded.plugins.len()
    );
    for status in &loaded.plugins {
        let mut required = String::from(if status.required {
            "required"
        } else {
            "optional"
        });
        if status.mode == hookbox::manifest::Mode::Shadow {
            required.push_str(", shadow: asked, never acted on");
        }
        match &status.result {
            Ok(plugin) => {
                terminal::say!("- {} ({}, {required}): ok", status.name, status.file);
                describe(plugin);
                if let Some(source) = &status.source {
                    terminal::say!("  reference:     {}", source.reference);
                    terminal::say!("  digest:        {}", source.digest);
                    terminal::say!(
                        "  signer:        {}",
                        source
                            .signer
                            .as_deref()
                            .unwrap_or("none (no trust policy asks for one)")
                    );
                }
                if let Some(digest) = &status.sha256 {
                    terminal::say!("  sha256:        {digest}");
                }
            }
            Err(error) => {
                terminal::tell!(
                    "- {} ({}, {required}): {}: {}",
                    status.name,
                    status.file,
                    error.phase,
                    error.reason
                );
                if status.source.is_none() && error.phase != hookbox::LoadPhase::Provenance {
                    refused_facts(runtime, &status.name, &dir.join(&status.file));
                }
            }
        }
    }
    for file in &loaded.unlisted {
        terminal::say!("- {file}: not in hookbox.toml, not loaded");
    }
    loaded.failures().next().is_none()
}

/// What a refused component is, even though it is not a hook (nothing when
/// it is not a component at all).
fn refused_facts(runtime: &Runtime, name: &str, path: &Path) {
    if let Ok(bytes) = std::fs::read(path)
        && let Ok(info) = hookbox::inspect(runtime, name, &bytes)
    {
        facts(&info, None);
    }
}

pub(crate) fn describe(plugin: &Plugin) {
    terminal::say!("  name:          {}", plugin.name());
    facts(plugin.info(), Some(plugin.subscriptions()));
}

/// The language-agnostic facts of a component.
fn facts(info: &PluginInfo, subscriptions: Option<EventKinds>) {
    terminal::say!("  size:          {} bytes", info.size_bytes);
    // Outermost first: the last producers section is the component's own.
    let produced = |fields: &[&str]| -> String {
        let values: Vec<&str> = info
            .producers
            .iter()
            .rev()
            .filter(|(field, _)| fields.contains(&field.as_str()))
            // "clang 21.1.4 (https://... commit)" -> "clang 21.1.4"
            .map(|(_, value)| value.split(" (").next().unwrap_or(value))
            .collect();
        or_none(&values.join(", ")).to_owned()
    };
    terminal::say!("  languages:     {}", produced(&["language"]));
    terminal::say!("  built with:    {}", produced(&["processed-by", "sdk"]));
    if let Some(kinds) = subscriptions {
        let kinds: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
        terminal::say!("  subscriptions: {}", or_none(&kinds.join(", ")));
    }
    let imports: Vec<String> = info
        .imports
        .iter()
        .map(|name| {
            if hookbox::inspect::provided(name) {
                name.clone()
            } else {
                format!("{name} (NOT PROVIDED)")
            }
        })
        .collect();
    terminal::say!("  imports:       {}", or_none(&imports.join(", ")));
    terminal::say!("  exports:       {}", or_none(&info.exports.join(", ")));
    if info.uses_wasi {
        terminal::say!(
            "  wasi:          imported; the guest gets an empty WASI (no files, env, network)"
        );
    }
}

fn or_none(s: &str) -> &str {
    if s.is_empty() { "none" } else { s }
}
