//! Loading a plugin directory: the manifest (or every `*.wasm` in file-name
//! order), path safety, and a stack built from what loaded.
//!
//! Rules:
//! - a plugin's file must stay inside the directory: no absolute paths, no
//!   `..`, no symlink resolving outside it; it must be a regular `.wasm` file;
//! - two plugins may not share a name;
//! - only components are loaded, compiled from their bytes: a precompiled
//!   artifact found in the directory is never loaded;
//! - a required plugin that cannot load stays in the stack as unloadable, so
//!   every run fails closed naming it; an optional one is left out;
//! - a plugin whose manifest entry pins a `sha256` is refused (phase `pin`,
//!   both digests named) unless its bytes have that digest;
//! - a plugin with a `source` (a registry reference) is read from the
//!   directory's store of pulled guards ([`crate::oci::Store`]), never from
//!   the network: its manifest and component are checked against their
//!   digests, and, under a `trust` policy, its cosign signature against the
//!   trusted keys; any failure is phase `provenance`, naming the reference;
//! - a `mode = "shadow"` plugin goes into the stack as a shadow
//!   ([`HookStack::push_shadow`]); one that cannot load is left out, as
//!   shadows never fail a run closed.
//!
//! Every problem is reported with the file and the reason.

use std::collections::BTreeMap;
use std::path::{Component as PathPart, Path};
use std::sync::Arc;

use crate::engine::Runtime;
use crate::error::{Error, LoadError, LoadPhase};
use crate::manifest::{MANIFEST, Manifest, Mode, PluginEntry, Trust};
use crate::oci::Provenance;
use crate::plugin::{Plugin, PluginOptions};
use crate::safe_read::{Unread, read_regular_within};
use crate::stack::HookStack;

/// What became of one plugin of the directory.
#[derive(Clone, Debug)]
pub struct PluginStatus {
    /// The plugin's name (the manifest's, else the file stem).
    pub name: String,
    /// The file as the manifest names it (or the file name).
    pub file: String,
    /// Whether a failure to load fails every run closed.
    pub required: bool,
    /// Enforce, or shadow.
    pub mode: Mode,
    /// The tools it is scoped to (`None`: every tool).
    pub tools: Option<Vec<String>>,
    /// The sha256 (hex) of the bytes it was loaded from; `None` when the
    /// file could not be read.
    pub sha256: Option<String>,
    /// For a plugin from a registry: its reference, digest and signer.
    pub source: Option<Provenance>,
    /// The loaded plugin, or why it could not be loaded.
    pub result: Result<Arc<Plugin>, LoadError>,
    /// After a reload: the plugin's newest file (or settings) failed to
    /// load, and `result` is the previous version, still live. The reload
    /// is retried while the failure could pass.
    pub newer_version_failed: Option<LoadError>,
}

/// One digest (sha256, hex) of the policy `plugins` make up: each plugin's
/// name, bytes, mode, scope, settings and limits, in order, and why one
/// failed. Two loads of the same directory on any machine (by the same
/// hookbox) have the same digest; a change to any plugin or to its
/// manifest entry gives another. What a session shared between instances
/// is pinned to.
pub fn stack_digest(plugins: &[PluginStatus]) -> String {
    use sha2::{Digest, Sha256};
    let mut hash = Sha256::new();
    for plugin in plugins {
        let (config, limits, failed) = match &plugin.result {
            Ok(loaded) => (
                Some(loaded.config()),
                format!("{:?}", loaded.limits()),
                None,
            ),
            Err(e) => (None, String::new(), Some(e.to_string())),
        };
        let part = serde_json::json!([
            plugin.name,
            plugin.file,
            plugin.required,
            plugin.mode.name(),
            plugin.tools,
            plugin.sha256,
            config,
            limits,
            failed,
        ]);
        let part = part.to_string();
        hash.update((part.len() as u64).to_le_bytes());
        hash.update(part);
    }
    hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// A loaded directory: the stack to run, and how each plugin fared.
#[derive(Clone)]
pub struct LoadedDir {
    /// The stack of every plugin that loaded, in order (a required one that did not is an unloadable entry).
    pub stack: HookStack,
    /// Each plugin of the directory and how it fared, in order.
    pub plugins: Vec<PluginStatus>,
    /// Whether a `hookbox.toml` was found.
    pub has_manifest: bool,
    /// `*.wasm` files the manifest does not list (not loaded).
    pub unlisted: Vec<String>,
}

impl LoadedDir {
    /// The plugins that failed to load, each with why.
    pub fn failures(&self) -> impl Iterator<Item = (&PluginStatus, &LoadError)> {
        self.plugins
            .iter()
            .filter_map(|p| p.result.as_ref().err().map(|e| (p, e)))
    }
}

/// Reads the directory's plan: the manifest's entries, or every `*.wasm` in
/// file-name order with defaults.
///
/// # Errors
/// [`Error::Directory`] when the directory or its manifest cannot be read,
/// the manifest is invalid, or two plugins share a name.
pub fn plan(dir: &Path) -> Result<(Vec<PluginEntry>, bool, Vec<String>), Error> {
    let dir_error = |reason: String| Error::Directory {
        path: dir.display().to_string(),
        reason,
    };
    let wasm_files =
        wasm_files(dir).map_err(|e| dir_error(format!("cannot read the directory: {e}")))?;
    let manifest_path = dir.join(MANIFEST);
    let (entries, has_manifest) = if manifest_path.exists() {
        let text = std::fs::read_to_string(&manifest_path)
            .map_err(|e| dir_error(format!("cannot read {MANIFEST}: {e}")))?;
        let manifest = Manifest::parse(&text).map_err(|e| dir_error(format!("{MANIFEST}: {e}")))?;
        let mut plugins = manifest.plugins;
        for plugin in &mut plugins {
            if plugin.source.is_some() && plugin.trust.is_none() {
                plugin.trust.clone_from(&manifest.trust);
            }
        }
        (plugins, true)
    } else {
        let entries = wasm_files
            .iter()
            .map(|file| PluginEntry {
                file: file.clone(),
                source: None,
                trust: None,
                name: None,
                required: true,
                config: BTreeMap::new(),
                limits: Default::default(),
                mode: Mode::Enforce,
                sha256: None,
                tools: None,
            })
            .collect();
        (entries, false)
    };
    let mut seen: BTreeMap<String, &str> = BTreeMap::new();
    for entry in &entries {
        if let Some(first) = seen.insert(entry.name(), &entry.file) {
            return Err(dir_error(format!(
                "two plugins are named `{}` ({first} and {}); give one a `name` in {MANIFEST}",
                entry.name(),
                entry.file
            )));
        }
    }
    let listed: Vec<&str> = entries.iter().map(|e| e.file.as_str()).collect();
    let unlisted = wasm_files
        .into_iter()
        .filter(|f| !listed.contains(&f.as_str()))
        .collect();
    Ok((entries, has_manifest, unlisted))
}

/// Loads every plugin of `dir` and builds the stack.
///
/// `reuse` is asked first for each entry (with its path and bytes), so a
/// caller can keep plugins that did not change; see the `watch` module.
///
/// # Errors
/// As [`plan`]; a plugin that fails to load is not an error but a
/// [`PluginStatus`] with the reason.
pub fn load(runtime: &Runtime, dir: &Path) -> Result<LoadedDir, Error> {
    load_with(runtime, dir, Pins::Check, |_, _, _| None)
}

/// Loads `dir` as [`load`] does, but with every `sha256` pin of its
/// manifest ignored: what `hookbox lock` pins, and nothing to run.
///
/// # Errors
/// As [`load`].
pub fn load_unpinned(runtime: &Runtime, dir: &Path) -> Result<LoadedDir, Error> {
    load_with(runtime, dir, Pins::Ignore, |_, _, _| None)
}

/// Whether a load checks the manifest's pins.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pins {
    Check,
    Ignore,
}

pub(crate) fn load_with(
    runtime: &Runtime,
    dir: &Path,
    pins: Pins,
    mut reuse: impl FnMut(
        &PluginEntry,
        Result<(&[u8], &str), &LoadError>,
        &PluginOptions,
    ) -> Option<Arc<Plugin>>,
) -> Result<LoadedDir, Error> {
    let (mut entries, has_manifest, unlisted) = plan(dir)?;
    if pins == Pins::Ignore {
        for entry in &mut entries {
            entry.sha256 = None;
        }
    }
    // Read every file and ask `reuse` first, in order; then compile what is
    // left in parallel (compilation dominates a cold start).
    let prepared: Vec<Prepared> = entries
        .into_iter()
        .map(|entry| {
            let name = entry.name();
            let options = PluginOptions {
                limits: Some(entry.limits.apply(&runtime.config().default_limits)),
                config: entry.config_text(),
            };
            let max = runtime.config().max_plugin_bytes;
            let (read, source) = match &entry.source {
                None => (
                    read_inside(dir, &entry.file, &[".wasm"], max)
                        .map_err(|reason| LoadError::new(&name, LoadPhase::Read, reason)),
                    None,
                ),
                Some(reference) => match read_source(dir, &entry, reference, max) {
                    Ok((bytes, provenance)) => (Ok(bytes), Some(provenance)),
                    Err(reason) => (
                        Err(LoadError::new(
                            &name,
                            LoadPhase::Provenance,
                            format!("{reference}: {reason}"),
                        )),
                        None,
                    ),
                },
            };
            let (state, sha256) = match read {
                // A plugin from a registry that fails its checks may keep
                // a previous, verified version live (the watcher's choice).
                Err(error) if entry.source.is_some() => {
                    match reuse(&entry, Err(&error), &options) {
                        Some(plugin) => (Ready(Ok(plugin)), None),
                        None => (Ready(Err(error)), None),
                    }
                }
                Err(error) => (Ready(Err(error)), None),
                Ok(bytes) => {
                    // Hashed once: for the status, the pin and the
                    // compile cache's key.
                    let digest = crate::cache::sha256_hex(&bytes);
                    match reuse(&entry, Ok((&bytes, &digest)), &options) {
                        Some(plugin) => (Ready(Ok(plugin)), Some(digest)),
                        None => (Compile(bytes, options), Some(digest)),
                    }
                }
            };
            Prepared {
                entry,
                name,
                state,
                sha256,
                source,
            }
        })
        .collect();
    let results = compile_all(runtime, prepared);

    let mut stack = HookStack::new();
    let mut plugins = Vec::with_capacity(results.len());
    for (entry, name, (sha256, source), result) in results {
        let shadow = entry.mode == Mode::Shadow;
        match (&result, &entry.tools) {
            (Ok(plugin), Some(tools)) => {
                let tools = crate::matcher::ToolMatcher::new(tools.iter().cloned());
                stack.push_scoped(plugin.clone(), tools, shadow);
            }
            (Ok(plugin), None) if shadow => {
                stack.push_shadow(plugin.clone());
            }
            (Ok(plugin), None) => {
                stack.push_plugin(plugin.clone());
            }
            (Err(reason), _) if entry.required && entry.mode == Mode::Enforce => {
                tracing::error!(
                    plugin = name,
                    file = entry.file,
                    "cannot load required plugin: {}: {}",
                    reason.phase,
                    reason.reason
                );
                stack.push_unloadable(
                    &name,
                    format!("{}: {}: {}", entry.file, reason.phase, reason.reason),
                );
            }
            (Err(reason), _) => {
                tracing::warn!(
                    plugin = name,
                    file = entry.file,
                    "{} plugin left out: {}: {}",
                    if entry.mode == Mode::Shadow {
                        "shadow"
                    } else {
                        "optional"
                    },
                    reason.phase,
                    reason.reason
                );
            }
        }
        plugins.push(PluginStatus {
            name,
            file: entry.file,
            required: entry.required,
            mode: entry.mode,
            tools: entry.tools.clone(),
            sha256,
            source,
            result,
            newer_version_failed: None,
        });
    }
    Ok(LoadedDir {
        stack,
        plugins,
        has_manifest,
        unlisted,
    })
}

/// A directory entry on its way to a plugin.
struct Prepared {
    entry: PluginEntry,
    name: String,
    state: PreparedState,
    sha256: Option<String>,
    source: Option<Provenance>,
}

enum PreparedState {
    /// Reused, or failed before compiling.
    Ready(Loaded),
    Compile(Vec<u8>, PluginOptions),
}

use PreparedState::{Compile, Ready};

/// A plugin, or why it could not be loaded.
type Loaded = Result<Arc<Plugin>, LoadError>;

/// An entry, its name, the sha256 of its bytes and where it came from, and
/// its plugin or load failure.
type Compiled = (
    PluginEntry,
    String,
    (Option<String>, Option<Provenance>),
    Loaded,
);

/// Compiles the entries that need it on up to one thread per core, and
/// returns every entry with its result, in order.
fn compile_all(runtime: &Runtime, prepared: Vec<Prepared>) -> Vec<Compiled> {
    let compile =
        |item: (&PluginEntry, &str, Option<&str>), bytes: &[u8], options: &PluginOptions| {
            let (entry, name, digest) = item;
            build(
                runtime,
                entry,
                name,
                (bytes, digest.unwrap_or_default()),
                options,
            )
            .map(Arc::new)
        };
    let pending = prepared
        .iter()
        .filter(|p| matches!(p.state, Compile(..)))
        .count();
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(pending);
    let compiled: Vec<std::sync::Mutex<Option<Loaded>>> =
        prepared.iter().map(|_| Default::default()).collect();
    if threads > 1 {
        let next = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|scope| {
            for _ in 0..threads {
                scope.spawn(|| {
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(item) = prepared.get(i) else { break };
                        if let Compile(bytes, options) = &item.state {
                            let parts = (&item.entry, item.name.as_str(), item.sha256.as_deref());
                            let result = compile(parts, bytes, options);
                            if let Ok(mut slot) = compiled[i].lock() {
                                *slot = Some(result);
                            }
                        }
                    }
                });
            }
        });
    }
    prepared
        .into_iter()
        .zip(compiled)
        .map(|(item, slot)| {
            let done = slot.into_inner().ok().flatten();
            let parts = (&item.entry, item.name.as_str(), item.sha256.as_deref());
            let result = match (item.state, done) {
                (_, Some(result)) | (Ready(result), None) => result,
                (Compile(bytes, options), None) => compile(parts, &bytes, &options),
            };
            (item.entry, item.name, (item.sha256, item.source), result)
        })
        .collect()
}

/// Compiles one entry's bytes (with their sha256), after checking them
/// against its pin.
pub(crate) fn build(
    runtime: &Runtime,
    entry: &PluginEntry,
    name: &str,
    (bytes, sha256): (&[u8], &str),
    options: &PluginOptions,
) -> Result<Plugin, LoadError> {
    pin_holds(entry, name, sha256)?;
    Plugin::from_digested(runtime, name, (bytes, Some(sha256)), options.clone())
}

/// Whether `bytes` are what `entry` pins (anything, when it pins nothing).
///
/// # Errors
/// A [`LoadError`] in phase [`LoadPhase::Pin`] naming both digests.
pub fn check_pin(entry: &PluginEntry, name: &str, bytes: &[u8]) -> Result<(), LoadError> {
    if entry.sha256.is_none() {
        return Ok(());
    }
    pin_holds(entry, name, &crate::cache::sha256_hex(bytes))
}

/// [`check_pin`] for bytes whose sha256 is `actual`.
pub(crate) fn pin_holds(entry: &PluginEntry, name: &str, actual: &str) -> Result<(), LoadError> {
    let Some(pinned) = &entry.sha256 else {
        return Ok(());
    };
    if actual == pinned {
        return Ok(());
    }
    Err(LoadError::new(
        name,
        LoadPhase::Pin,
        format!(
            "{} has sha256 {actual}, but {MANIFEST} pins {pinned}; if this file is the one you reviewed, `hookbox lock` pins it",
            entry.file
        ),
    ))
}

/// The `*.wasm` file names in `dir`, sorted.
fn wasm_files(dir: &Path) -> std::io::Result<Vec<String>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        if name.ends_with(".wasm") {
            files.push(name);
        }
    }
    files.sort();
    Ok(files)
}

/// A plugin from a registry: its component from the directory's store,
/// with where it came from, every digest and (under a trust policy) its
/// signature checked.
fn read_source(
    dir: &Path,
    entry: &PluginEntry,
    reference: &crate::oci::Reference,
    max_bytes: usize,
) -> Result<(Vec<u8>, Provenance), String> {
    let store = crate::oci::Store::in_dir(dir);
    let guard = store.guard(reference, max_bytes)?;
    let signatures = match &entry.trust {
        Some(_) => store.signatures(reference, &guard.digest)?,
        None => Vec::new(),
    };
    let signer = check_trust(
        dir,
        entry.trust.as_ref(),
        &signatures,
        (&guard.digest, reference),
    )?;
    Ok((
        guard.wasm,
        Provenance {
            reference: reference.to_string(),
            digest: guard.digest,
            signer,
        },
    ))
}

/// Whether a registry's plugin loaded earlier from `provenance` still
/// passes `entry`'s trust policy (always, for a plugin from a file).
pub(crate) fn provenance_holds(
    dir: &Path,
    entry: &PluginEntry,
    provenance: Option<&Provenance>,
) -> bool {
    let (Some(reference), Some(provenance)) = (&entry.source, provenance) else {
        return entry.source.is_none();
    };
    // Re-pinned to another digest: the old version is not what the entry
    // names any more, whether or not the new one was pulled (as a file's
    // `sha256` pin takes its old version down).
    if reference
        .digest
        .as_ref()
        .is_some_and(|pinned| *pinned != provenance.digest)
    {
        return false;
    }
    let store = crate::oci::Store::in_dir(dir);
    let signatures = match &entry.trust {
        Some(_) => match store.signatures(reference, &provenance.digest) {
            Ok(signatures) => signatures,
            Err(_) => return false,
        },
        None => Vec::new(),
    };
    let signed = (provenance.digest.as_str(), reference);
    check_trust(dir, entry.trust.as_ref(), &signatures, signed).is_ok()
}

/// The signer of the manifest `digest` of the guard `reference` among
/// `signatures`, as the directory's `trust` policy (keys relative to
/// `dir`) asks: `None` without a trust policy, or when a signature is not
/// required and none verifies.
///
/// # Errors
/// A key that cannot be read, or no verifying signature when one is
/// required: why, each signature named.
pub fn check_trust(
    dir: &std::path::Path,
    trust: Option<&Trust>,
    signatures: &[crate::oci::signature::Signed],
    (digest, reference): (&str, &crate::oci::Reference),
) -> Result<Option<String>, String> {
    let Some(trust) = trust else {
        return Ok(None);
    };
    let keys = trust
        .keys
        .iter()
        .map(|file| {
            let bytes = read_inside(dir, file, &[".pub", ".pem"], 64 << 10)
                .map_err(|e| format!("trusted key {file}: {e}"))?;
            crate::oci::signature::PublicKey::from_pem(file, &String::from_utf8_lossy(&bytes))
        })
        .collect::<Result<Vec<_>, String>>()?;
    let identity = crate::oci::signature::Identity {
        reference,
        also: &trust.identities,
    };
    match crate::oci::signature::signer(signatures, (digest, identity), &keys) {
        Ok(key) => Ok(Some(key.to_owned())),
        Err(why) if trust.require_signature => Err(why),
        Err(why) => {
            tracing::warn!(digest, "signature not required, and none verifies: {why}");
            Ok(None)
        }
    }
}

/// Reads `file` from `dir`, refusing anything that leaves the directory, is
/// not a regular file, does not end in one of `extensions` or is larger
/// than `max_bytes`.
pub(crate) fn read_inside(
    dir: &Path,
    file: &str,
    extensions: &[&str],
    max_bytes: usize,
) -> Result<Vec<u8>, String> {
    let relative = Path::new(file);
    if !extensions.iter().any(|e| file.ends_with(e)) {
        return Err(if extensions == [".wasm"] {
            "only `.wasm` components are loaded".into()
        } else {
            format!("only {} files are read", extensions.join(" or "))
        });
    }
    if relative
        .components()
        .any(|part| !matches!(part, PathPart::Normal(_)))
    {
        return Err(
            "the path must stay inside the plugin directory (no absolute paths, no `..`)".into(),
        );
    }
    let bound = if extensions == [".wasm"] {
        "a plugin may be (RuntimeConfig::max_plugin_bytes)"
    } else {
        "read for it"
    };
    read_regular_within(dir, relative, max_bytes).map_err(|refused| match refused {
        Unread::Missing(e) => format!("cannot open it: {e}"),
        Unread::TooLarge(size) => {
            format!("it is {size} bytes, more than the {max_bytes} {bound}")
        }
        Unread::Refused(why) => why,
    })
}
