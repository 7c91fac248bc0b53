//! Run state that spans a session whose agent starts a process per hook
//! call: each plugin's scratchpad, saved after a call and restored into the
//! next call's run. Guest instances stay fresh per call; only what a guest
//! put in its scratchpad (already bounded by its quota) carries over.
//!
//! One file per session (and subagent) in a directory only its owner can
//! write, named by a hash of the agent, session and subagent ids (an id
//! never becomes a path). A call holds the file's lock from reading it to
//! writing it back, so concurrent hook processes of one session take turns
//! and never lose each other's updates. A file untouched for longer than
//! the store's age limit is an ended session: it reads as empty and is
//! removed; so is a file past the size limit.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};

use crate::Session;

/// Each plugin's scratchpad, by plugin name (as `Run::scratchpads` names
/// them).
pub type Scratchpads = BTreeMap<String, BTreeMap<String, String>>;

/// Why session state could not be kept.
#[derive(Debug, thiserror::Error)]
#[error("session state in {path}: {reason}")]
pub struct StoreError {
    /// The file or directory.
    pub path: PathBuf,
    /// What went wrong.
    pub reason: String,
}

/// A directory of sessions' run state.
#[derive(Clone, Debug)]
pub struct SessionStore {
    dir: PathBuf,
    max_age: Duration,
    max_bytes: u64,
}

/// One session's state, locked until dropped.
#[derive(Debug)]
pub struct SessionLock {
    file: File,
    path: PathBuf,
    max_bytes: u64,
    /// The file's bytes as [`SessionLock::load`] read them: a save of the
    /// same state only marks the session used.
    read: Option<Vec<u8>>,
}

impl SessionStore {
    /// Sessions idle longer than this are over.
    pub const DEFAULT_MAX_AGE: Duration = Duration::from_secs(24 * 3600);
    /// The largest state kept for a session.
    pub const DEFAULT_MAX_BYTES: u64 = 8 << 20;

    /// The default directory: `$HOOKBOX_STATE_DIR`, else
    /// `$XDG_STATE_HOME/hookbox/sessions`, else
    /// `$HOME/.local/state/hookbox/sessions`.
    pub fn default_dir() -> Option<PathBuf> {
        if let Some(dir) = std::env::var_os("HOOKBOX_STATE_DIR") {
            return Some(PathBuf::from(dir));
        }
        let base = std::env::var_os("XDG_STATE_HOME")
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".local/state"))
            })?;
        Some(base.join("hookbox/sessions"))
    }

    /// Opens (creating it if needed) the store at `dir`, with the default
    /// limits, and removes the state of sessions over the age limit.
    ///
    /// # Errors
    /// [`StoreError`] when the directory cannot be made, or others could
    /// write to it.
    pub fn open(dir: &Path) -> Result<SessionStore, StoreError> {
        let store = SessionStore {
            dir: dir.to_path_buf(),
            max_age: Self::DEFAULT_MAX_AGE,
            max_bytes: Self::DEFAULT_MAX_BYTES,
        };
        std::fs::create_dir_all(dir).map_err(|e| store.error(dir, e))?;
        os::check_private_dir(dir).map_err(|reason| StoreError {
            path: dir.to_path_buf(),
            reason,
        })?;
        store.prune();
        Ok(store)
    }

    /// The same store with other limits.
    pub fn with_limits(mut self, max_age: Duration, max_bytes: u64) -> SessionStore {
        self.max_age = max_age;
        self.max_bytes = max_bytes;
        self
    }

    /// Locks the state of `session` of `agent`, waiting for other hook
    /// processes of the same session to finish with it.
    ///
    /// # Errors
    /// [`StoreError`] when the file cannot be opened or locked.
    pub fn lock(&self, agent: &str, session: &Session) -> Result<SessionLock, StoreError> {
        let mut hash = Sha256::new();
        for part in [
            agent,
            session.id.as_deref().unwrap_or(""),
            session.subagent.as_deref().unwrap_or(""),
        ] {
            hash.update((part.len() as u64).to_le_bytes());
            hash.update(part);
        }
        let name: String = hash.finalize()[..16]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let path = self.dir.join(format!("{name}.json"));
        let file = os::open_private(&path).map_err(|e| self.error(&path, e))?;
        os::lock(&file).map_err(|e| self.error(&path, e))?;
        if self.is_stale(&file) {
            file.set_len(0).map_err(|e| self.error(&path, e))?;
        }
        Ok(SessionLock {
            file,
            path,
            max_bytes: self.max_bytes,
            read: None,
        })
    }

    fn is_stale(&self, file: &File) -> bool {
        file.metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|modified| SystemTime::now().duration_since(modified).ok())
            .is_some_and(|age| age > self.max_age)
    }

    /// Removes the files of sessions over the age limit.
    fn prune(&self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        for entry in entries.flatten() {
            let old = entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|modified| SystemTime::now().duration_since(modified).ok())
                .is_some_and(|age| age > self.max_age);
            if old && entry.file_name().to_string_lossy().ends_with(".json") {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }

    fn error(&self, path: &Path, e: std::io::Error) -> StoreError {
        StoreError {
            path: path.to_path_buf(),
            reason: e.to_string(),
        }
    }
}

impl SessionLock {
    /// The state saved by the session's last call; empty for a new session,
    /// an ended one, or a file that does not parse.
    pub fn load(&mut self) -> Scratchpads {
        let mut bytes = Vec::new();
        let read = self
            .file
            .seek(SeekFrom::Start(0))
            .and_then(|_| (&self.file).take(self.max_bytes).read_to_end(&mut bytes));
        // Kept as read (text only), for `save` to compare with.
        self.read = (read.is_ok() && std::str::from_utf8(&bytes).is_ok()).then_some(bytes);
        match self.read.as_deref() {
            Some(text) if !text.is_empty() => serde_json::from_slice(text).unwrap_or_else(|e| {
                tracing::warn!(path = %self.path.display(), "session state unreadable, starting afresh: {e}");
                Scratchpads::new()
            }),
            _ => Scratchpads::new(),
        }
    }

    /// Replaces the session's state with `state`. A state the file holds
    /// already (what [`SessionLock::load`] read, as most hook calls leave
    /// it) is not written again: the file is only marked used, so the
    /// session does not age out, and no `fdatasync` is paid.
    ///
    /// # Errors
    /// [`StoreError`] when it cannot be written, or is larger than the
    /// store's size limit (the file is then emptied).
    pub fn save(&mut self, state: &Scratchpads) -> Result<(), StoreError> {
        let text = serde_json::to_vec(state).unwrap_or_default();
        let error = |reason: String| StoreError {
            path: self.path.clone(),
            reason,
        };
        // Where the mark cannot be set, the state is written as before.
        if self.read.as_deref() == Some(text.as_slice())
            && self.file.set_modified(SystemTime::now()).is_ok()
        {
            return Ok(());
        }
        // Until the write is through, the file holds neither.
        self.read = None;
        self.file.set_len(0).map_err(|e| error(e.to_string()))?;
        if text.len() as u64 > self.max_bytes {
            return Err(error(format!(
                "{} bytes of state, past the limit of {}",
                text.len(),
                self.max_bytes
            )));
        }
        self.file
            .seek(SeekFrom::Start(0))
            .and_then(|_| self.file.write_all(&text))
            .and_then(|()| self.file.sync_data())
            .map_err(|e| error(e.to_string()))?;
        self.read = Some(text);
        Ok(())
    }
}

#[cfg(unix)]
mod os {
    use std::fs::File;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
    use std::os::unix::io::AsRawFd;
    use std::path::Path;

    pub fn check_private_dir(dir: &Path) -> Result<(), String> {
        let meta = std::fs::metadata(dir).map_err(|e| e.to_string())?;
        // SAFETY: geteuid has no preconditions and cannot fail.
        let uid = unsafe { libc::geteuid() };
        if meta.uid() != uid || meta.mode() & 0o022 != 0 {
            return Err(format!(
                "must belong to you and not be writable by others (it is {:o}, owner {})",
                meta.mode() & 0o777,
                meta.uid()
            ));
        }
        let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
        Ok(())
    }

    pub fn open_private(path: &Path) -> std::io::Result<File> {
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)
    }

    /// An exclusive lock on `file`, released when it is closed.
    pub fn lock(file: &File) -> std::io::Result<()> {
        loop {
            // SAFETY: the descriptor is open for the duration of the call.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0 {
                return Ok(());
            }
            let error = std::io::Error::last_os_error();
            if error.kind() != std::io::ErrorKind::Interrupted {
                return Err(error);
            }
        }
    }
}

#[cfg(not(unix))]
mod os {
    use std::fs::File;
    use std::path::Path;

    pub fn check_private_dir(_: &Path) -> Result<(), String> {
        Err("session state needs Unix file permissions and locks, which this system lacks".into())
    }

    pub fn open_private(_: &Path) -> std::io::Result<File> {
        Err(std::io::Error::other("no session state on this system"))
    }

    pub fn lock(_: &File) -> std::io::Result<()> {
        Err(std::io::Error::other("no file locks on this system"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("hookbox-store-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    fn state(n: &str) -> Scratchpads {
        BTreeMap::from([(
            "budget".to_owned(),
            BTreeMap::from([("calls".to_owned(), n.to_owned())]),
        )])
    }

    fn session(id: &str) -> Session {
        Session {
            id: Some(id.into()),
            subagent: None,
        }
    }

    #[test]
    fn a_session_finds_what_its_last_call_saved_and_no_other_session_does() {
        let store = SessionStore::open(&scratch("roundtrip")).unwrap();
        let mut lock = store.lock("claude-code", &session("s1")).unwrap();
        assert!(lock.load().is_empty());
        lock.save(&state("1")).unwrap();
        drop(lock);
        assert_eq!(
            store.lock("claude-code", &session("s1")).unwrap().load(),
            state("1")
        );
        assert!(
            store
                .lock("claude-code", &session("s2"))
                .unwrap()
                .load()
                .is_empty()
        );
        assert!(
            store
                .lock("codex", &session("s1"))
                .unwrap()
                .load()
                .is_empty()
        );
        let sub = Session {
            id: Some("s1".into()),
            subagent: Some("a1".into()),
        };
        assert!(store.lock("claude-code", &sub).unwrap().load().is_empty());
    }

    #[test]
    fn concurrent_calls_of_a_session_take_turns_and_lose_no_update() {
        let store = SessionStore::open(&scratch("concurrent")).unwrap();
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let store = store.clone();
                std::thread::spawn(move || {
                    for _ in 0..10 {
                        let mut lock = store.lock("claude-code", &session("s")).unwrap();
                        let n: u32 = lock
                            .load()
                            .get("budget")
                            .and_then(|b| b.get("calls"))
                            .map_or(0, |n| n.parse().unwrap());
                        lock.save(&state(&(n + 1).to_string())).unwrap();
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        assert_eq!(
            store.lock("claude-code", &session("s")).unwrap().load(),
            state("80")
        );
    }

    #[test]
    fn an_old_session_reads_as_new_and_a_state_past_the_limit_is_refused() {
        let store = SessionStore::open(&scratch("limits"))
            .unwrap()
            .with_limits(Duration::ZERO, 64);
        let mut lock = store.lock("claude-code", &session("s")).unwrap();
        lock.save(&state("1")).unwrap();
        drop(lock);
        std::thread::sleep(Duration::from_millis(20));
        assert!(
            store
                .lock("claude-code", &session("s"))
                .unwrap()
                .load()
                .is_empty()
        );
        let big = BTreeMap::from([(
            "p".to_owned(),
            BTreeMap::from([("k".to_owned(), "x".repeat(100))]),
        )]);
        let mut lock = store.lock("claude-code", &session("s")).unwrap();
        assert!(lock.save(&big).is_err());
        assert!(lock.load().is_empty(), "nothing half-written is kept");
    }

    #[test]
    fn a_call_that_leaves_the_state_as_it_was_keeps_the_session_alive_without_rewriting_it() {
        let store = SessionStore::open(&scratch("unchanged"))
            .unwrap()
            .with_limits(Duration::from_secs(2), 1 << 20);
        let mut lock = store.lock("claude-code", &session("s")).unwrap();
        lock.load();
        lock.save(&state("1")).unwrap();
        drop(lock);
        let file = std::fs::read_dir(&store.dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|e| e == "json"))
            .unwrap();
        let written = std::fs::read(&file).unwrap();
        // Each call is younger than the limit apart, all of them together
        // older: the session lives on the marks alone.
        for _ in 0..4 {
            std::thread::sleep(Duration::from_millis(700));
            let before = std::fs::metadata(&file).unwrap().modified().unwrap();
            let mut lock = store.lock("claude-code", &session("s")).unwrap();
            let saved = lock.load();
            assert_eq!(saved, state("1"), "the session aged out while in use");
            lock.save(&saved).unwrap();
            drop(lock);
            assert_eq!(std::fs::read(&file).unwrap(), written);
            assert!(std::fs::metadata(&file).unwrap().modified().unwrap() > before);
        }
        // A changed state is written.
        let mut lock = store.lock("claude-code", &session("s")).unwrap();
        lock.load();
        lock.save(&state("2")).unwrap();
        drop(lock);
        assert_eq!(
            store.lock("claude-code", &session("s")).unwrap().load(),
            state("2")
        );
    }
}
