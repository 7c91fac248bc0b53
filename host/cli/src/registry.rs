//! `hookbox pull` and `hookbox push`: guards from and to OCI registries,
//! on `hookbox-registry`.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context as _, Result};
use hookbox::oci::Reference;

use crate::terminal::say;

/// `hookbox pull`'s arguments (its help is on [`crate`]'s `Command`).
#[derive(clap::Args)]
pub(crate) struct PullArgs {
    /// `oci://registry/repository:tag` or `…@sha256:<digest>`.
    reference: String,
    /// The plugin directory.
    #[arg(long = "plugins", default_value = ".")]
    dir: std::path::PathBuf,
}

impl PullArgs {
    pub(crate) fn execute(self) -> Result<ExitCode> {
        pull(&self.reference, &self.dir)
    }
}

/// `hookbox push`'s arguments (its help is on [`crate`]'s `Command`).
#[derive(clap::Args)]
pub(crate) struct PushArgs {
    /// The component (`.wasm`).
    file: std::path::PathBuf,
    /// `oci://registry/repository:tag`.
    reference: String,
}

impl PushArgs {
    pub(crate) fn execute(self) -> Result<ExitCode> {
        push(&self.file, &self.reference)
    }
}

fn block_on<T>(work: impl std::future::Future<Output = T>) -> Result<T> {
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    Ok(tokio.block_on(work))
}

fn reference(text: &str) -> Result<Reference> {
    text.parse::<Reference>().map_err(anyhow::Error::msg)
}

/// Pulls `reference` into `dir`'s store; prints the pinned reference and
/// the manifest line that runs it.
pub(crate) fn pull(text: &str, dir: &Path) -> Result<ExitCode> {
    let reference = reference(text)?;
    let pulled = pull_into(dir, &reference)?;
    let signed = match &pulled.signer {
        Some(key) => format!("signed by {key}"),
        None if pulled.signatures > 0 => {
            format!("{} signature(s), none required", pulled.signatures)
        }
        None => "unsigned".to_owned(),
    };
    say!(
        "pulled {} ({} bytes, {signed}) into {}",
        pulled.reference,
        pulled.size,
        hookbox::oci::Store::in_dir(dir).root().display()
    );
    let manifest = dir.join(hookbox::manifest::MANIFEST);
    match locked(dir, &reference) {
        Some(pinned) if pulled.reference.digest.as_deref() == Some(pinned.as_str()) => say!(
            "{} already runs it: its entry pins it to {pinned}",
            manifest.display()
        ),
        Some(pinned) => say!(
            "{} pins it to {pinned}, which keeps running: to run the version just pulled, run `hookbox lock {}` (or change the pin)",
            manifest.display(),
            dir.display()
        ),
        None => say!(
            "run it with, in {}:\n[[plugin]]\nsource = \"{}\"",
            manifest.display(),
            pulled.reference
        ),
    }
    Ok(ExitCode::SUCCESS)
}

/// The digest `dir`'s manifest pins `reference`'s tag to, if an entry
/// names the same repository and tag with a digest (`hookbox lock`'s).
fn locked(dir: &Path, reference: &Reference) -> Option<String> {
    let (entries, ..) = hookbox::directory::plan(dir).ok()?;
    entries.into_iter().find_map(|entry| {
        let source = entry.source?;
        let same = source.registry == reference.registry
            && source.repository == reference.repository
            && source.tag == reference.tag;
        source.digest.filter(|_| same)
    })
}

pub(crate) fn pull_into(dir: &Path, reference: &Reference) -> Result<hookbox_registry::Pulled> {
    if !dir.is_dir() {
        anyhow::bail!("{} is not a plugin directory", dir.display());
    }
    let options = hookbox_registry::Options {
        max_plugin_bytes: hookbox::RuntimeConfig::default().max_plugin_bytes,
        ..Default::default()
    };
    Ok(block_on(hookbox_registry::pull(dir, reference, &options))??)
}

/// Pushes the component `file` to `reference`; prints the digest.
pub(crate) fn push(file: &Path, text: &str) -> Result<ExitCode> {
    let reference = reference(text)?;
    if reference.tag.is_none() {
        anyhow::bail!("push to a tag (`{text}` has a digest only)");
    }
    let pushed = block_on(hookbox_registry::push(
        file,
        &reference,
        &hookbox_registry::Options::default(),
    ))??;
    say!("pushed {}", pushed.reference);
    Ok(ExitCode::SUCCESS)
}

/// Pulls each `source` of `dir`'s manifest that names a tag the store does
/// not have yet, so `hookbox lock` can pin it: a tag already pulled is
/// pinned as pulled (to move to a newer version, pull it first).
pub(crate) fn pull_unpulled(dir: &Path) -> Result<()> {
    let (entries, ..) = hookbox::directory::plan(dir)?;
    let store = hookbox::oci::Store::in_dir(dir);
    for entry in entries {
        let Some(source) = &entry.source else {
            continue;
        };
        if store.guard(source, usize::MAX).is_err() {
            let pulled = pull_into(dir, source)?;
            say!("pulled    {} ({})", entry.name(), pulled.reference);
        }
    }
    Ok(())
}
