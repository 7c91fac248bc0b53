//! The store of pulled guards: an OCI image layout (version 1.0.0) in the
//! plugin directory's `.oci` folder.
//!
//! - `blobs/sha256/<hex>` holds every manifest, config, component and
//!   signature payload, named by its digest and checked against it on
//!   every read: a damaged or altered blob is refused, never loaded;
//! - `index.json` names what was pulled: each manifest's descriptor with
//!   `org.opencontainers.image.ref.name` set to `registry/repository:tag`
//!   (or `…@sha256:…` for a pull by digest), and cosign's signature
//!   manifests under their `sha256-<hex>.sig` tags.
//!
//! Writes are atomic: a blob is written to a temporary file and renamed
//! into place once whole, and `index.json` is replaced the same way after
//! every blob it names is in place, so an interrupted pull leaves nothing
//! half-written that a load could see.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::signature::{SIGNATURE_ANNOTATION, Signed};
use super::{
    Descriptor, GuardManifest, ImageManifest, MAX_MANIFEST_BYTES, MAX_SMALL_BLOB_BYTES, Reference,
    digest_of,
};
use crate::safe_read::{Unread, read_regular_within};

/// The store's folder inside a plugin directory.
pub const STORE_DIR: &str = ".oci";
const REF_NAME: &str = "org.opencontainers.image.ref.name";
const INDEX_MEDIA_TYPE: &str = "application/vnd.oci.image.index.v1+json";
/// The largest `index.json` read: thousands of pulled names.
const MAX_INDEX_BYTES: usize = 4 << 20;

/// A plugin directory's store of pulled guards.
///
/// Every file of it is read by the plugin directory's own rules
/// (`crate::safe_read`): a regular file only, never
/// a FIFO or a device, nothing resolving outside the plugin directory,
/// bounded before and while reading. A store entry that breaks them fails
/// the guard that needs it (phase `provenance`), and never holds up a
/// load, a hook or the reload thread.
#[derive(Clone, Debug)]
pub struct Store {
    /// The plugin directory.
    dir: PathBuf,
    root: PathBuf,
}

/// A guard read from the store, every digest checked.
#[derive(Clone, Debug)]
pub struct StoredGuard {
    /// The manifest's digest (`sha256:…`): what was pulled, and what a
    /// signature signs.
    pub digest: String,
    /// The manifest.
    pub manifest: GuardManifest,
    /// The component's bytes.
    pub wasm: Vec<u8>,
}

#[derive(Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Index {
    schema_version: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    media_type: Option<String>,
    #[serde(default)]
    manifests: Vec<Descriptor>,
}

impl Store {
    /// The store of the plugin directory `dir` (`dir/.oci`), whether or
    /// not anything was pulled into it yet.
    pub fn in_dir(dir: &Path) -> Store {
        Store {
            dir: dir.to_owned(),
            root: dir.join(STORE_DIR),
        }
    }

    /// The store's file at `relative` (under `.oci`), read by the plugin
    /// directory's rules.
    fn read(&self, relative: &Path, max_bytes: usize) -> Result<Vec<u8>, Unread> {
        read_regular_within(&self.dir, &Path::new(STORE_DIR).join(relative), max_bytes)
    }

    /// Its folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn blob_path(&self, digest: &str) -> Result<PathBuf, String> {
        Ok(self.root.join(Self::blob_name(digest)?))
    }

    /// A blob's path inside the store.
    fn blob_name(digest: &str) -> Result<PathBuf, String> {
        let hex = digest
            .strip_prefix("sha256:")
            .and_then(crate::cache::parse_sha256)
            .ok_or_else(|| format!("`{digest}` is not a sha256 digest"))?;
        Ok(Path::new("blobs/sha256").join(hex))
    }

    /// The blob with `digest`, refused when it is missing, larger than
    /// `max_bytes` or not the bytes its digest names.
    ///
    /// # Errors
    /// Why it cannot be read, and what to do.
    pub fn blob(&self, digest: &str, max_bytes: usize) -> Result<Vec<u8>, String> {
        let bytes = self
            .read(&Self::blob_name(digest)?, max_bytes)
            .map_err(|unread| match unread {
                Unread::Missing(e) => format!(
                    "blob {digest} is missing from the store {} ({e}); pull the guard again",
                    self.root.display()
                ),
                Unread::TooLarge(size) => format!(
                    "blob {digest} is {size} bytes, more than the {max_bytes} allowed for it"
                ),
                Unread::Refused(why) => format!(
                    "blob {digest} cannot be read from the store ({why}); remove it and pull the guard again"
                ),
            })?;
        let actual = digest_of(&bytes);
        if actual != digest {
            return Err(format!(
                "the store's copy of blob {digest} has been altered (its bytes are {actual}); pull the guard again"
            ));
        }
        Ok(bytes)
    }

    fn index(&self) -> Result<Index, String> {
        let path = self.root.join("index.json");
        match self.read(Path::new("index.json"), MAX_INDEX_BYTES) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map_err(|e| format!("{} is not an OCI image index: {e}", path.display())),
            Err(Unread::Missing(_)) => Ok(Index::default()),
            Err(Unread::TooLarge(size)) => Err(format!(
                "{} is {size} bytes, more than the {MAX_INDEX_BYTES} an index of pulled guards may be",
                path.display()
            )),
            Err(Unread::Refused(why)) => Err(format!("cannot read {}: {why}", path.display())),
        }
    }

    /// The digest recorded under `name` (`registry/repository:tag`), if any.
    ///
    /// # Errors
    /// When the index cannot be read.
    pub fn recorded(&self, name: &str) -> Result<Option<String>, String> {
        Ok(self
            .index()?
            .manifests
            .into_iter()
            .find(|d| d.annotations.get(REF_NAME).map(String::as_str) == Some(name))
            .map(|d| d.digest))
    }

    /// Every name the store records, with its manifest's digest.
    ///
    /// # Errors
    /// When the index cannot be read.
    pub fn names(&self) -> Result<Vec<(String, String)>, String> {
        Ok(self
            .index()?
            .manifests
            .into_iter()
            .filter_map(|d| Some((d.annotations.get(REF_NAME)?.clone(), d.digest)))
            .collect())
    }

    /// The manifest digest `reference` means here: its own digest, else
    /// what was last pulled under its tag. Never asks a registry.
    ///
    /// # Errors
    /// When a tag was never pulled.
    pub fn resolve(&self, reference: &Reference) -> Result<String, String> {
        if let Some(digest) = &reference.digest {
            return Ok(digest.clone());
        }
        self.recorded(&reference.name())?.ok_or_else(|| {
            format!(
                "{reference} has not been pulled into {}; run `hookbox pull {reference} --plugins <this directory>`",
                self.root.display()
            )
        })
    }

    /// The guard `reference` means, read and checked: the manifest by its
    /// digest, its shape, and its component by its digest and size.
    ///
    /// # Errors
    /// Why it cannot be loaded from the store.
    pub fn guard(&self, reference: &Reference, max_bytes: usize) -> Result<StoredGuard, String> {
        let digest = self.resolve(reference)?;
        let bytes = self.blob(&digest, MAX_MANIFEST_BYTES).map_err(|e| {
            if reference.digest.is_some() && e.contains("missing") {
                format!(
                    "{reference} has not been pulled into {}; run `hookbox pull {reference} --plugins <this directory>`",
                    self.root.display()
                )
            } else {
                e
            }
        })?;
        let manifest = GuardManifest::parse(&bytes, max_bytes)?;
        // Its config is checked too, as every blob is on every load.
        self.blob(&manifest.manifest.config.digest, MAX_SMALL_BLOB_BYTES)?;
        let wasm = self.blob(&manifest.component.digest, max_bytes)?;
        if wasm.len() as u64 != manifest.component.size {
            return Err(format!(
                "its component is {} bytes, but its manifest says {}",
                wasm.len(),
                manifest.component.size
            ));
        }
        Ok(StoredGuard {
            digest,
            manifest,
            wasm,
        })
    }

    /// The cosign signatures pulled with the manifest `digest` of
    /// `reference`'s repository (none when none were).
    ///
    /// # Errors
    /// When a signature manifest or payload the index names is missing,
    /// altered or malformed.
    pub fn signatures(&self, reference: &Reference, digest: &str) -> Result<Vec<Signed>, String> {
        let Some(signatures) = self.recorded(&reference.signatures_of(digest).name())? else {
            return Ok(Vec::new());
        };
        let manifest = ImageManifest::parse(&self.blob(&signatures, MAX_MANIFEST_BYTES)?)
            .map_err(|e| format!("its signature manifest: {e}"))?;
        let layers = super::signature::signature_layers(&manifest)
            .map_err(|e| format!("its signature manifest: {e}"))?;
        let mut signed = Vec::new();
        for layer in layers {
            let payload = self.blob(&layer.digest, MAX_SMALL_BLOB_BYTES)?;
            signed.push(Signed {
                payload,
                signature: layer
                    .annotations
                    .get(SIGNATURE_ANNOTATION)
                    .cloned()
                    .unwrap_or_default(),
            });
        }
        Ok(signed)
    }

    /// Writes `bytes` as a blob (atomically) and returns its digest.
    ///
    /// # Errors
    /// When the store cannot be written.
    pub fn put_blob(&self, bytes: &[u8]) -> std::io::Result<String> {
        let digest = digest_of(bytes);
        let path = self.blob_path(&digest).map_err(std::io::Error::other)?;
        let name = Self::blob_name(&digest).map_err(std::io::Error::other)?;
        if self.read(&name, bytes.len()).is_ok_and(|b| b == bytes) {
            return Ok(digest);
        }
        self.init()?;
        atomic_write(&path, bytes)?;
        Ok(digest)
    }

    /// Records `descriptor` (a manifest already in the store) under `name`,
    /// replacing what was recorded under it.
    ///
    /// # Errors
    /// When the index cannot be read or written.
    pub fn record(&self, name: &str, mut descriptor: Descriptor) -> std::io::Result<()> {
        self.init()?;
        let mut index = self.index().map_err(std::io::Error::other)?;
        index.schema_version = 2;
        index.media_type = Some(INDEX_MEDIA_TYPE.into());
        index
            .manifests
            .retain(|d| d.annotations.get(REF_NAME).map(String::as_str) != Some(name));
        descriptor.annotations = BTreeMap::from([(REF_NAME.to_owned(), name.to_owned())]);
        index.manifests.push(descriptor);
        let text = serde_json::to_vec_pretty(&index).map_err(std::io::Error::other)?;
        atomic_write(&self.root.join("index.json"), &text)
    }

    fn init(&self) -> std::io::Result<()> {
        std::fs::create_dir_all(self.root.join("blobs/sha256"))?;
        let layout = self.root.join("oci-layout");
        if !layout.exists() {
            atomic_write(&layout, br#"{"imageLayoutVersion":"1.0.0"}"#)?;
        }
        Ok(())
    }
}

/// Writes `bytes` to `path` through a temporary file in the same folder,
/// renamed into place once whole and synced.
fn atomic_write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = dir.join(format!(
        ".tmp-{}-{}",
        std::process::id(),
        path.file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default()
    ));
    let result = (|| {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blob_reads_back_and_an_altered_one_is_refused() {
        let dir = tempdir();
        let store = Store::in_dir(&dir);
        let digest = store.put_blob(b"component").unwrap();
        assert_eq!(store.blob(&digest, 100).unwrap(), b"component");
        assert!(
            store
                .blob(&digest, 3)
                .unwrap_err()
                .contains("more than the 3")
        );
        std::fs::write(store.blob_path(&digest).unwrap(), b"Component").unwrap();
        assert!(store.blob(&digest, 100).unwrap_err().contains("altered"));
        let missing = digest_of(b"other");
        assert!(store.blob(&missing, 100).unwrap_err().contains("missing"));
        assert!(
            store
                .blob("sha256:../../etc", 100)
                .unwrap_err()
                .contains("not a sha256")
        );
    }

    #[test]
    fn a_tag_resolves_to_what_was_last_recorded_under_it() {
        let dir = tempdir();
        let store = Store::in_dir(&dir);
        let reference: Reference = "oci://localhost:5000/guards/deny:1".parse().unwrap();
        assert!(
            store
                .resolve(&reference)
                .unwrap_err()
                .contains("hookbox pull")
        );
        for content in [&b"one"[..], b"two"] {
            let digest = store.put_blob(content).unwrap();
            let descriptor = Descriptor {
                media_type: crate::oci::MANIFEST_MEDIA_TYPE.into(),
                digest: digest.clone(),
                size: content.len() as u64,
                annotations: BTreeMap::new(),
            };
            store.record(&reference.name(), descriptor).unwrap();
            assert_eq!(store.resolve(&reference).unwrap(), digest);
        }
        assert_eq!(store.names().unwrap().len(), 1);
        let pinned = reference.with_digest(&digest_of(b"one"));
        assert_eq!(store.resolve(&pinned).unwrap(), digest_of(b"one"));
    }

    /// A store entry that is not a regular file inside the plugin
    /// directory (a FIFO, a device, a symlink out of it) is refused at
    /// once, as the directory refuses such a plugin: never waited on,
    /// never read without end.
    #[cfg(unix)]
    #[test]
    fn a_store_entry_that_is_no_regular_file_inside_is_refused_at_once() {
        let dir = tempdir();
        let store = Store::in_dir(&dir);
        let digest = store.put_blob(b"component").unwrap();
        let path = store.blob_path(&digest).unwrap();
        let outside = dir.with_extension("outside");
        std::fs::write(&outside, b"component").unwrap();
        let fifo = |path: &Path| {
            let name = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
            // SAFETY: a valid, NUL-terminated path.
            assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        };
        let started = std::time::Instant::now();
        for entry in ["fifo", "device", "symlink out"] {
            std::fs::remove_file(&path).unwrap();
            match entry {
                "fifo" => fifo(&path),
                "device" => std::os::unix::fs::symlink("/dev/zero", &path).unwrap(),
                _ => std::os::unix::fs::symlink(&outside, &path).unwrap(),
            }
            let refused = store.blob(&digest, 1 << 20).unwrap_err();
            assert!(
                refused.contains("cannot be read from the store"),
                "{entry}: {refused}"
            );
        }
        // index.json as a FIFO: the index is refused, not waited on.
        fifo(&store.root().join("index.json"));
        let refused = store.names().unwrap_err();
        assert!(refused.contains("not a regular file"), "{refused}");
        assert!(started.elapsed() < std::time::Duration::from_secs(30));
    }

    fn tempdir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "hookbox-store-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}
