//! The compile cache: compiled components stored by content hash and engine
//! fingerprint, so a warm start skips compilation.
//!
//! Loading precompiled code means trusting it as native code, so only
//! artifacts hookbox wrote itself are loaded:
//! - each entry carries an HMAC-SHA256 tag under a random per-cache key
//!   (`key`, mode 0600) over its name and bytes; a tag that does not verify
//!   is a miss, never a load (the check is against the user's own cache:
//!   whoever can write there as that user can also read the key);
//! - the cache directory must belong to the current user and not be writable
//!   by anyone else; otherwise the cache is off (with a warning);
//! - entries are written to a temporary file of their own (a new name per
//!   write, created exclusively) and renamed into place, so hookbox never
//!   writes to a file that has an entry's name: a load maps it, checks the
//!   tag over the mapping, and has wasmtime map the same file (through its
//!   open descriptor, so a rename cannot swap it) rather than copying it
//!   twice into memory. Where a file cannot be mapped it is read instead;
//! - a damaged or incompatible entry is recompiled and replaced. Plugin
//!   directories are never searched for precompiled files.
//!
//! Because entries are mapped, code and memory images are read from the
//! file while plugins run: a cache on storage that fails or is truncated
//! under a running hookbox (by another tool) ends that process with
//! `SIGBUS`, as for any mapped executable. Point `HOOKBOX_CACHE_DIR` at
//! local storage.
//!
//! The ownership and permission checks need Unix file permissions: on other
//! systems the cache stays off (every load compiles).

use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

const TAG: usize = 32;

/// Hits and misses since the runtime started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Loads served from the cache.
    pub hits: u64,
    /// Loads that found no usable entry and compiled.
    pub misses: u64,
    /// Entries found but refused (bad tag, incompatible, unreadable).
    pub rejected: u64,
}

pub(crate) struct CompileCache {
    dir: PathBuf,
    key: [u8; 32],
    fingerprint: String,
    hits: AtomicU64,
    misses: AtomicU64,
    rejected: AtomicU64,
}

/// The default cache directory: `$XDG_CACHE_HOME/hookbox`, else
/// `$HOME/.cache/hookbox`.
pub fn default_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))?;
    Some(base.join("hookbox"))
}

impl CompileCache {
    /// Opens (creating if needed) the cache at `dir`, or explains why not.
    pub fn open(dir: &Path, engine: &Engine) -> Result<CompileCache, String> {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        os::check_private_dir(dir)?;
        let key = load_or_create_key(&dir.join("key"))?;
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        Ok(CompileCache {
            dir: dir.to_path_buf(),
            key,
            fingerprint: format!("{:016x}", hasher.finish()),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
        })
    }

    /// Hits, misses and refusals so far.
    pub fn stats(&self) -> CacheStats {
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            rejected: self.rejected.load(Ordering::Relaxed),
        }
    }

    /// An entry is the artifact, then its tag (so wasmtime can map the
    /// artifact where it lies in the file).
    fn entry_name(&self, sha256: &str) -> String {
        format!("{sha256}-{}.v2.cwasm", self.fingerprint)
    }

    /// The cached component for the bytes whose digest is `sha256`
    /// ([`sha256_hex`], computed once per load by the caller), if a
    /// verified entry exists.
    pub(crate) fn load(&self, engine: &Engine, sha256: &str) -> Option<Component> {
        let name = self.entry_name(sha256);
        let path = self.dir.join(&name);
        let Ok(file) = std::fs::File::open(&path) else {
            self.misses.fetch_add(1, Ordering::Relaxed);
            return None;
        };
        let verify = |bytes: &[u8]| {
            let (artifact, tag) = bytes.split_at(bytes.len().checked_sub(TAG)?);
            let verified = !artifact.is_empty()
                && constant_time_eq(tag, &hmac(&self.key, name.as_bytes(), artifact));
            verified.then_some(artifact.len())
        };
        let component = match os::Mapped::of(&file) {
            Ok(mapped) => verify(mapped.bytes()).map(|len| {
                // SAFETY: the artifact verified under our key, so hookbox
                // itself serialized it with an engine of this fingerprint;
                // wasmtime still checks compatibility and refuses a
                // mismatched artifact. The file is the one verified (its
                // descriptor, not its name), and hookbox never writes to a
                // named entry.
                unsafe { deserialize(engine, &file, &mapped.bytes()[..len]) }
            }),
            // Storage that cannot be mapped: the entry is read instead.
            Err(_) => std::fs::read(&path).ok().and_then(|bytes| {
                let len = verify(&bytes)?;
                // SAFETY: as above; these bytes are a verified copy.
                Some(unsafe { Component::deserialize(engine, &bytes[..len]) })
            }),
        };
        match component {
            Some(Ok(component)) => {
                self.hits.fetch_add(1, Ordering::Relaxed);
                Some(component)
            }
            _ => {
                tracing::warn!(entry = %path.display(), "compile cache entry refused; recompiling");
                self.rejected.fetch_add(1, Ordering::Relaxed);
                self.misses.fetch_add(1, Ordering::Relaxed);
                let _ = std::fs::remove_file(&path);
                None
            }
        }
    }

    /// Stores `component` as the compiled form of the bytes whose digest is
    /// `sha256`. Failures are logged: the cache is an optimisation.
    pub(crate) fn store(&self, sha256: &str, component: &Component) {
        let name = self.entry_name(sha256);
        let result = component
            .serialize()
            .map_err(|e| e.to_string())
            .and_then(|artifact| {
                let tag = hmac(&self.key, name.as_bytes(), &artifact);
                // A name no other write uses, in this process or another:
                // the file renamed into place is only ever written here.
                static WRITES: AtomicU64 = AtomicU64::new(0);
                let temp = self.dir.join(format!(
                    ".{name}.{}.{}.tmp",
                    std::process::id(),
                    WRITES.fetch_add(1, Ordering::Relaxed)
                ));
                let mut file = os::create_new_private(&temp).map_err(|e| e.to_string())?;
                file.write_all(&artifact)
                    .and_then(|()| file.write_all(&tag))
                    .map_err(|e| e.to_string())?;
                let renamed = std::fs::rename(&temp, self.dir.join(&name));
                if renamed.is_err() {
                    let _ = std::fs::remove_file(&temp);
                }
                // The entry of the format before `.v2`, if any: replaced.
                let _ = std::fs::remove_file(
                    self.dir
                        .join(format!("{sha256}-{}.cwasm", self.fingerprint)),
                );
                renamed.map_err(|e| e.to_string())
            });
        if let Err(e) = result {
            tracing::warn!(cache = %self.dir.display(), "cannot write a compile cache entry: {e}");
        }
    }
}

/// The component in a verified entry: wasmtime maps the file itself where
/// it can (the artifact is read where it lies, and its memory images are
/// mapped from the file), else copies the verified `artifact`.
///
/// # Safety
/// As [`Component::deserialize`]: `file` must hold, and go on holding, an
/// artifact this engine's kind serialized, followed by its tag.
unsafe fn deserialize(
    engine: &Engine,
    file: &std::fs::File,
    artifact: &[u8],
) -> wasmtime::Result<Component> {
    if let Some(path) = os::descriptor_path(file) {
        // SAFETY: as this function's.
        match unsafe { Component::deserialize_file(engine, &path) } {
            Ok(component) => return Ok(component),
            Err(e) => tracing::debug!("compile cache: mapping refused ({e:#}); copying"),
        }
    }
    // SAFETY: as this function's.
    unsafe { Component::deserialize(engine, artifact) }
}

fn load_or_create_key(path: &Path) -> Result<[u8; 32], String> {
    if let Ok(bytes) = std::fs::read(path)
        && let Ok(key) = <[u8; 32]>::try_from(bytes.as_slice())
    {
        return Ok(key);
    }
    let mut key = [0u8; 32];
    getrandom::fill(&mut key).map_err(|e| format!("no randomness for the cache key: {e}"))?;
    let mut file =
        os::create_private(path).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    file.write_all(&key).map_err(|e| e.to_string())?;
    Ok(key)
}

/// What the cache needs of the file system: a directory only its owner can
/// write, and files only its owner can read.
#[cfg(unix)]
mod os {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
    use std::path::{Path, PathBuf};

    /// A read-only private mapping of a whole file, unmapped when dropped.
    pub struct Mapped {
        ptr: *mut libc::c_void,
        len: usize,
    }

    impl Mapped {
        pub fn of(file: &std::fs::File) -> std::io::Result<Mapped> {
            let len = usize::try_from(file.metadata()?.len())
                .map_err(|_| std::io::Error::other("too large to map"))?;
            if len == 0 {
                return Err(std::io::Error::other("empty"));
            }
            // SAFETY: a new read-only mapping of an open file, at an address
            // the kernel picks; nothing else is touched.
            let ptr = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ,
                    libc::MAP_PRIVATE,
                    file.as_raw_fd(),
                    0,
                )
            };
            if ptr == libc::MAP_FAILED {
                return Err(std::io::Error::last_os_error());
            }
            Ok(Mapped { ptr, len })
        }

        pub fn bytes(&self) -> &[u8] {
            // SAFETY: `len` readable bytes are mapped at `ptr` until drop. A
            // cache entry's file is never written once it has a name.
            unsafe { std::slice::from_raw_parts(self.ptr.cast(), self.len) }
        }
    }

    impl Drop for Mapped {
        fn drop(&mut self) {
            // SAFETY: the mapping made in `of`, unmapped once.
            unsafe { libc::munmap(self.ptr, self.len) };
        }
    }

    /// A path that opens `file` itself, whatever its name now points at.
    pub fn descriptor_path(file: &std::fs::File) -> Option<PathBuf> {
        let base = if cfg!(target_os = "linux") {
            "/proc/self/fd"
        } else {
            "/dev/fd"
        };
        let path = Path::new(base).join(file.as_raw_fd().to_string());
        path.exists().then_some(path)
    }

    pub fn check_private_dir(dir: &Path) -> Result<(), String> {
        let meta = std::fs::metadata(dir).map_err(|e| e.to_string())?;
        // SAFETY: geteuid has no preconditions and cannot fail.
        let uid = unsafe { libc::geteuid() };
        if meta.uid() != uid || meta.mode() & 0o022 != 0 {
            return Err(format!(
                "{} must belong to you and not be writable by others (it is {:o}, owner {})",
                dir.display(),
                meta.mode() & 0o777,
                meta.uid()
            ));
        }
        let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
        Ok(())
    }

    pub fn create_private(path: &Path) -> std::io::Result<std::fs::File> {
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(path)
    }

    /// A new file only its owner can read; an error if `path` exists.
    pub fn create_new_private(path: &Path) -> std::io::Result<std::fs::File> {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
    }
}

#[cfg(not(unix))]
mod os {
    use std::path::{Path, PathBuf};

    /// No mapping: the cache is off here (see `check_private_dir`).
    pub struct Mapped;

    impl Mapped {
        pub fn of(_file: &std::fs::File) -> std::io::Result<Mapped> {
            Err(std::io::Error::other("no compile cache here"))
        }

        pub fn bytes(&self) -> &[u8] {
            &[]
        }
    }

    pub fn descriptor_path(_file: &std::fs::File) -> Option<PathBuf> {
        None
    }

    pub fn check_private_dir(dir: &Path) -> Result<(), String> {
        Err(format!(
            "{}: the compile cache checks Unix ownership and permissions, which this system lacks",
            dir.display()
        ))
    }

    pub fn create_private(path: &Path) -> std::io::Result<std::fs::File> {
        Err(std::io::Error::other(format!(
            "{}: no private files here",
            path.display()
        )))
    }

    pub fn create_new_private(path: &Path) -> std::io::Result<std::fs::File> {
        create_private(path)
    }
}

/// HMAC-SHA256(key, name || 0 || data).
fn hmac(key: &[u8; 32], name: &[u8], data: &[u8]) -> [u8; 32] {
    let mut inner_pad = [0x36u8; 64];
    let mut outer_pad = [0x5cu8; 64];
    for (i, byte) in key.iter().enumerate() {
        inner_pad[i] ^= byte;
        outer_pad[i] ^= byte;
    }
    let inner = Sha256::new()
        .chain_update(inner_pad)
        .chain_update(name)
        .chain_update([0])
        .chain_update(data)
        .finalize();
    Sha256::new()
        .chain_update(outer_pad)
        .chain_update(inner)
        .finalize()
        .into()
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The sha256 of `bytes`, in lowercase hex: the digest a manifest pins.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// A sha256 digest written as 64 hex digits, with or without a `sha256:`
/// prefix, in lowercase hex; `None` when it is not one.
pub fn parse_sha256(text: &str) -> Option<String> {
    let hex = text
        .strip_prefix("sha256:")
        .unwrap_or(text)
        .to_ascii_lowercase();
    (hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit())).then_some(hex)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tag_changes_with_the_key_the_name_and_the_data() {
        let key = [7u8; 32];
        let tag = hmac(&key, b"name", b"data");
        assert_eq!(tag, hmac(&key, b"name", b"data"));
        assert_ne!(tag, hmac(&key, b"name", b"datA"));
        assert_ne!(tag, hmac(&key, b"other", b"data"));
        assert_ne!(tag, hmac(&[8u8; 32], b"name", b"data"));
    }
}
