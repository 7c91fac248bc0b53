//! Run state that spans a session whose agent starts a process per hook
//! call: each plugin's scratchpad, saved after a call and restored into the
//! next call's run. Guest instances stay fresh per call; only what a guest
//! put in its scratchpad (already bounded by its quota) carries over.
//!
//! One file per session (and subagent) in a directory only its owner can
//! write, named by a hash of the agent, session and subagent ids (an id
//! never becomes a path). A call holds the file's lock from reading it to
//! writing it back, so concurrent hook processes of one session take turns
//! and never lose each other's updates. A save writes a new file and renames
//! it over the old one, so the state on disk is always a whole one; a lock
//! is only taken as held once the path still names the file it locked. A
//! file untouched for longer than the store's age limit is an ended
//! session: it reads as empty, and is removed under its lock.
//!
//! There is no size limit here: what a session keeps is bounded where the
//! guests write it, by each plugin's scratchpad quota, which counts an
//! entry as this file stores it (JSON-escaped). A write past the quota
//! fails that guest closed, naming it and `limit`; a state is never cut to
//! fit.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::{Saved, Scratchpads, SessionBackend, SessionHold, StoreError, session_name};
use crate::Session;

/// A directory of sessions' run state.
#[derive(Clone, Debug)]
pub struct SessionStore {
    dir: PathBuf,
    max_age: Duration,
}

/// One session's state, locked until dropped.
#[derive(Debug)]
pub struct SessionLock {
    file: File,
    path: PathBuf,
    /// Untouched past the age limit: an ended session, read as empty.
    ended: bool,
    /// The file's bytes as [`SessionLock::load_pads`] read them: a save of the
    /// same state only marks the session used.
    read: Option<Vec<u8>>,
}

impl SessionStore {
    /// Sessions idle longer than this are over.
    pub const DEFAULT_MAX_AGE: Duration = super::DEFAULT_MAX_AGE;

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
    /// age limit, and removes the state of sessions over it.
    ///
    /// # Errors
    /// [`StoreError`] when the directory cannot be made, or others could
    /// write to it.
    pub fn open(dir: &Path) -> Result<SessionStore, StoreError> {
        let store = SessionStore {
            dir: dir.to_path_buf(),
            max_age: Self::DEFAULT_MAX_AGE,
        };
        std::fs::create_dir_all(dir).map_err(|e| store.error(dir, e))?;
        os::check_private_dir(dir).map_err(|reason| StoreError {
            place: dir.display().to_string(),
            reason,
        })?;
        store.prune();
        Ok(store)
    }

    /// The same store with another age limit.
    pub fn with_max_age(mut self, max_age: Duration) -> SessionStore {
        self.max_age = max_age;
        self
    }

    /// Locks the state of `session` of `agent`, waiting for other hook
    /// processes of the same session to finish with it.
    ///
    /// # Errors
    /// [`StoreError`] when the file cannot be opened or locked.
    pub fn lock(&self, agent: &str, session: &Session) -> Result<SessionLock, StoreError> {
        let name = session_name(agent, session);
        let path = self.dir.join(format!("{name}.json"));
        // The file locked may have been replaced (a save) or removed (a
        // prune) while this call waited for it: then lock the one the path
        // names now.
        let file = loop {
            let file = os::open_private(&path).map_err(|e| self.error(&path, e))?;
            os::lock(&file).map_err(|e| self.error(&path, e))?;
            if os::names(&path, &file) {
                break file;
            }
        };
        Ok(SessionLock {
            ended: self.is_stale(&file),
            file,
            path,
            read: None,
        })
    }

    fn is_stale(&self, file: &File) -> bool {
        file.metadata().is_ok_and(|m| self.is_old(&m))
    }

    /// Whether what `metadata` describes was last changed past the age limit.
    fn is_old(&self, metadata: &std::fs::Metadata) -> bool {
        metadata
            .modified()
            .ok()
            .and_then(|modified| SystemTime::now().duration_since(modified).ok())
            .is_some_and(|age| age > self.max_age)
    }

    /// Removes the files of sessions over the age limit: each under its
    /// lock, and only if it is still over the limit once locked (a call of
    /// the session holding it goes on with it). Also a save's leftover
    /// (a process that died between writing and renaming).
    fn prune(&self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.contains(".json.saving-") {
                if entry.metadata().is_ok_and(|m| self.is_old(&m)) {
                    let _ = std::fs::remove_file(&path);
                }
                continue;
            }
            if !name.ends_with(".json") {
                continue;
            }
            let Ok(file) = File::open(&path) else {
                continue;
            };
            if self.is_stale(&file)
                && os::try_lock(&file)
                && os::names(&path, &file)
                && self.is_stale(&file)
            {
                let _ = std::fs::remove_file(&path);
            }
        }
    }

    fn error(&self, path: &Path, e: std::io::Error) -> StoreError {
        StoreError {
            place: path.display().to_string(),
            reason: e.to_string(),
        }
    }
}

impl SessionLock {
    /// The state saved by the session's last call; empty for a new session,
    /// an ended one, or a file that does not parse.
    pub fn load_pads(&mut self) -> Scratchpads {
        let mut bytes = Vec::new();
        let read = if self.ended {
            Ok(0)
        } else {
            self.file
                .seek(SeekFrom::Start(0))
                .and_then(|_| self.file.read_to_end(&mut bytes))
        };
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

    /// Replaces the session's state with `state`: written whole to a new
    /// file, flushed, and renamed over the old one, so a call that fails
    /// half-way leaves the last state as it was. A state the file holds
    /// already (what [`SessionLock::load_pads`] read, as most hook calls leave
    /// it) is not written again: the file is only marked used, so the
    /// session does not age out, and no `fdatasync` is paid.
    ///
    /// # Errors
    /// [`StoreError`] when it cannot be written; the last state is then
    /// kept.
    pub fn save_pads(&mut self, state: &Scratchpads) -> Result<(), StoreError> {
        let text = serde_json::to_vec(state).unwrap_or_default();
        // Where the mark cannot be set, the state is written as before.
        if self.read.as_deref() == Some(text.as_slice())
            && self.file.set_modified(SystemTime::now()).is_ok()
        {
            return Ok(());
        }
        let error = |e: std::io::Error| StoreError {
            place: self.path.display().to_string(),
            reason: e.to_string(),
        };
        let mut saving = self.path.clone().into_os_string();
        saving.push(format!(".saving-{}", std::process::id()));
        let saving = PathBuf::from(saving);
        let _ = std::fs::remove_file(&saving);
        let written = os::create_private(&saving).and_then(|mut file| {
            file.write_all(&text)?;
            file.sync_data()?;
            // Locked before it takes the path: a call that opens it next
            // waits for this one.
            os::lock(&file)?;
            std::fs::rename(&saving, &self.path)?;
            Ok(file)
        });
        match written {
            Ok(file) => {
                self.file = file;
                self.ended = false;
                self.read = Some(text);
                Ok(())
            }
            Err(e) => {
                let _ = std::fs::remove_file(&saving);
                Err(error(e))
            }
        }
    }
}

/// The file store keeps no pin: on one machine, a `serve` session's live
/// run keeps its stack, and each `hookbox hook` process runs the directory
/// as it is.
impl SessionBackend for SessionStore {
    fn lock(&self, agent: &str, session: &Session) -> Result<Box<dyn SessionHold>, StoreError> {
        Ok(Box::new(SessionStore::lock(self, agent, session)?))
    }

    fn describe(&self) -> String {
        format!("files in {}", self.dir.display())
    }

    fn shared(&self) -> bool {
        false
    }
}

impl SessionHold for SessionLock {
    fn load(&mut self) -> Result<Saved, StoreError> {
        Ok(Saved {
            scratchpads: self.load_pads(),
            ..Saved::default()
        })
    }

    fn save(&mut self, saved: &Saved) -> Result<(), StoreError> {
        self.save_pads(&saved.scratchpads)
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

    /// A new file only its owner can read or write; an existing one is an
    /// error.
    pub fn create_private(path: &Path) -> std::io::Result<File> {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)
    }

    /// Whether `path` still names `file` (not a file renamed over it, nor
    /// nothing, since it was opened).
    pub fn names(path: &Path, file: &File) -> bool {
        match (std::fs::symlink_metadata(path), file.metadata()) {
            (Ok(named), Ok(open)) => named.dev() == open.dev() && named.ino() == open.ino(),
            _ => false,
        }
    }

    /// An exclusive lock on `file` if no one holds one now.
    pub fn try_lock(file: &File) -> bool {
        // SAFETY: the descriptor is open for the duration of the call.
        unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
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

    pub fn create_private(_: &Path) -> std::io::Result<File> {
        Err(std::io::Error::other("no session state on this system"))
    }

    pub fn names(_: &Path, _: &File) -> bool {
        false
    }

    pub fn try_lock(_: &File) -> bool {
        false
    }

    pub fn lock(_: &File) -> std::io::Result<()> {
        Err(std::io::Error::other("no file locks on this system"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

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
        assert!(lock.load_pads().is_empty());
        lock.save_pads(&state("1")).unwrap();
        drop(lock);
        assert_eq!(
            store
                .lock("claude-code", &session("s1"))
                .unwrap()
                .load_pads(),
            state("1")
        );
        assert!(
            store
                .lock("claude-code", &session("s2"))
                .unwrap()
                .load_pads()
                .is_empty()
        );
        assert!(
            store
                .lock("codex", &session("s1"))
                .unwrap()
                .load_pads()
                .is_empty()
        );
        let sub = Session {
            id: Some("s1".into()),
            subagent: Some("a1".into()),
        };
        assert!(
            store
                .lock("claude-code", &sub)
                .unwrap()
                .load_pads()
                .is_empty()
        );
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
                            .load_pads()
                            .get("budget")
                            .and_then(|b| b.get("calls"))
                            .map_or(0, |n| n.parse().unwrap());
                        lock.save_pads(&state(&(n + 1).to_string())).unwrap();
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        assert_eq!(
            store
                .lock("claude-code", &session("s"))
                .unwrap()
                .load_pads(),
            state("80")
        );
    }

    #[test]
    fn an_old_session_reads_as_new() {
        let store = SessionStore::open(&scratch("ended"))
            .unwrap()
            .with_max_age(Duration::ZERO);
        let mut lock = store.lock("claude-code", &session("s")).unwrap();
        lock.save_pads(&state("1")).unwrap();
        drop(lock);
        std::thread::sleep(Duration::from_millis(20));
        let mut lock = store.lock("claude-code", &session("s")).unwrap();
        assert!(lock.load_pads().is_empty());
        lock.save_pads(&state("2")).unwrap();
        drop(lock);
        assert_eq!(files(&store), 1, "one file per session, no leftovers");
    }

    #[test]
    fn a_state_is_kept_whole_however_large() {
        let store = SessionStore::open(&scratch("large")).unwrap();
        let big = BTreeMap::from([(
            "p".to_owned(),
            BTreeMap::from([("k".to_owned(), "\u{1}\"".repeat(1 << 20))]),
        )]);
        let mut lock = store.lock("claude-code", &session("s")).unwrap();
        lock.save_pads(&big).unwrap();
        drop(lock);
        assert_eq!(
            store
                .lock("claude-code", &session("s"))
                .unwrap()
                .load_pads(),
            big
        );
    }

    #[test]
    fn a_prune_leaves_a_session_a_call_holds_alone() {
        let dir = scratch("prune");
        let store = SessionStore::open(&dir).unwrap();
        let mut lock = store.lock("claude-code", &session("s")).unwrap();
        lock.save_pads(&state("1")).unwrap();
        drop(lock);
        std::thread::sleep(Duration::from_millis(20));
        // The session is past the age limit of the store below; a call of
        // it holds its file while another process opens that store.
        let held = store.lock("claude-code", &session("s")).unwrap();
        let pruning = SessionStore::open(&dir)
            .unwrap()
            .with_max_age(Duration::ZERO);
        pruning.prune();
        assert_eq!(files(&store), 1, "a held session's file is not removed");
        drop(held);
        pruning.prune();
        assert_eq!(files(&store), 0, "an idle, ended one is");
    }

    fn files(store: &SessionStore) -> usize {
        std::fs::read_dir(&store.dir).unwrap().flatten().count()
    }

    #[test]
    fn a_call_that_leaves_the_state_as_it_was_keeps_the_session_alive_without_rewriting_it() {
        let store = SessionStore::open(&scratch("unchanged"))
            .unwrap()
            .with_max_age(Duration::from_secs(2));
        let mut lock = store.lock("claude-code", &session("s")).unwrap();
        lock.load_pads();
        lock.save_pads(&state("1")).unwrap();
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
            let saved = lock.load_pads();
            assert_eq!(saved, state("1"), "the session aged out while in use");
            lock.save_pads(&saved).unwrap();
            drop(lock);
            assert_eq!(std::fs::read(&file).unwrap(), written);
            assert!(std::fs::metadata(&file).unwrap().modified().unwrap() > before);
        }
        // A changed state is written.
        let mut lock = store.lock("claude-code", &session("s")).unwrap();
        lock.load_pads();
        lock.save_pads(&state("2")).unwrap();
        drop(lock);
        assert_eq!(
            store
                .lock("claude-code", &session("s"))
                .unwrap()
                .load_pads(),
            state("2")
        );
    }
}
