//! `hookbox lock`: pins each plugin of a directory to the bytes it has now,
//! writing their sha256 into `hookbox.toml`, so the bytes reviewed are the
//! bytes that run.
//!
//! Every file that loads (as a plugin, pins aside) is pinned, its entry
//! otherwise untouched: comments, order and formatting stay. A file that
//! does not load keeps its entry as it was and is reported. A directory
//! without a manifest gets one listing every `*.wasm` in the order they
//! load, with the same meaning (each required, default settings).

use std::path::{Path, PathBuf};

use hookbox::manifest::MANIFEST;
use hookbox::{LoadError, Runtime};

use crate::Error;

/// What `lock` did.
#[derive(Debug)]
pub struct Locked {
    /// The manifest written.
    pub manifest: PathBuf,
    /// Each plugin pinned: its name, file and digest; `changed` when the pin
    /// is new or other than before.
    pub pinned: Vec<Pinned>,
    /// The plugins that did not load, not pinned.
    pub refused: Vec<LoadError>,
}

/// One pin written.
#[derive(Debug)]
pub struct Pinned {
    /// The plugin's name.
    pub name: String,
    /// Its file.
    pub file: String,
    /// The sha256 of its bytes, in hex.
    pub sha256: String,
    /// Whether the manifest pinned something else (or nothing) before.
    pub changed: bool,
}

/// Pins every plugin of `dir` that loads.
///
/// # Errors
/// [`Error::Directory`] when the directory or its manifest cannot be read,
/// [`Error::Io`] when the manifest cannot be written.
pub fn lock(runtime: &Runtime, dir: &Path) -> Result<Locked, Error> {
    let loaded = hookbox::directory::load_unpinned(runtime, dir)?;
    let path = dir.join(MANIFEST);
    let mut doc: toml_edit::DocumentMut = if loaded.has_manifest {
        let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
        text.parse().map_err(|e| Error::io(&path, e))?
    } else {
        let mut doc = toml_edit::DocumentMut::new();
        doc.decor_mut().set_prefix(
            "# Written by `hookbox lock`: every plugin of this directory, in the order\n\
             # they run, pinned to the sha256 of its bytes. Run it again after\n\
             # reviewing a new version.\n",
        );
        let mut plugins = toml_edit::ArrayOfTables::new();
        for status in &loaded.plugins {
            let mut table = toml_edit::Table::new();
            table["file"] = toml_edit::value(&status.file);
            plugins.push(table);
        }
        doc["plugin"] = toml_edit::Item::ArrayOfTables(plugins);
        doc
    };
    let tables = doc
        .get_mut("plugin")
        .and_then(toml_edit::Item::as_array_of_tables_mut)
        .ok_or_else(|| Error::Usage(format!("{}: no [[plugin]] entries to pin", path.display())))?;
    let mut pinned = Vec::new();
    let mut refused = Vec::new();
    // The manifest's entries are the load's plugins, in the same order.
    for (table, status) in tables.iter_mut().zip(&loaded.plugins) {
        match (&status.result, &status.sha256) {
            // A registry's plugin: its source pinned to the manifest digest
            // it was loaded from (which pins the component too).
            (Ok(_), _) if status.source.is_some() => {
                let Some(source) = &status.source else {
                    continue;
                };
                let Ok(reference) = source.reference.parse::<hookbox::oci::Reference>() else {
                    continue;
                };
                let before = table
                    .get("source")
                    .and_then(|v| v.as_str())
                    .map(str::to_owned);
                let pinned_source = reference.with_digest(&source.digest).to_string();
                table["source"] = toml_edit::value(&pinned_source);
                pinned.push(Pinned {
                    name: status.name.clone(),
                    file: pinned_source.clone(),
                    sha256: source.digest.clone(),
                    changed: before.as_deref() != Some(&pinned_source),
                });
            }
            (Ok(_), Some(digest)) => {
                let before = table
                    .get("sha256")
                    .and_then(|v| v.as_str())
                    .map(str::to_ascii_lowercase);
                table["sha256"] = toml_edit::value(digest);
                pinned.push(Pinned {
                    name: status.name.clone(),
                    file: status.file.clone(),
                    sha256: digest.clone(),
                    changed: before.as_deref() != Some(digest),
                });
            }
            (Err(error), _) => refused.push(error.clone()),
            (Ok(_), None) => {}
        }
    }
    std::fs::write(&path, doc.to_string()).map_err(|e| Error::io(&path, e))?;
    Ok(Locked {
        manifest: path,
        pinned,
        refused,
    })
}
