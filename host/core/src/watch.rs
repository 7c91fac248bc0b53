//! Hot reload: a watched plugin directory whose stack is swapped atomically.
//!
//! Rules (each has a test in `tests/all/reload.rs`):
//! - a run keeps the snapshot it started with to its end; new runs get the
//!   newest one ([`DirWatcher::snapshot`]);
//! - a file caught mid-write, or corrupt, never replaces a working version:
//!   the old plugin stays live and the error is reported;
//! - a removed plugin leaves the stack; a required plugin that cannot load
//!   (with no earlier good version) makes new runs fail closed, naming it;
//! - a manifest change takes effect like a file change; a manifest that does
//!   not parse keeps the whole previous stack live;
//! - changes are debounced and handled one reload at a time, off the hot
//!   path: a storm of writes settles on the last good version;
//! - a plugin whose newest version failed while an older one stays live is
//!   marked so in the snapshot ([`PluginStatus::newer_version_failed`]), as
//!   is a directory that could not be reloaded ([`Snapshot::directory_error`]);
//! - a reload that failed in a way that could pass (a file not readable
//!   yet, a plugin that did not start in time) is retried, after 1 s and
//!   then twice as long each time up to a minute, until it loads or the
//!   directory changes; loading never waits on live runs (it has instance
//!   slots of its own);
//! - a pinned plugin (`sha256` in the manifest) whose file changes to other
//!   bytes is refused and its previous version stays live;
//! - a plugin from a registry reloads when its store's index changes (a
//!   pull) or its manifest entry does (a lock); a new version that fails
//!   its digest or signature checks is refused and the previous verified
//!   version stays live, if the manifest's trust still accepts it and its
//!   entry still names it (re-pinned to another digest, it does not stay,
//!   as a file's `sha256` pin takes its old version down);
//! - a reload that changes nothing keeps the generation.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use notify::{RecursiveMode, Watcher as _};

use crate::directory::{self, PluginStatus};
use crate::engine::Runtime;
use crate::error::{Error, LoadError, LoadPhase};
use crate::plugin::{Plugin, PluginOptions};
use crate::stack::HookStack;

/// One version of the directory's stack.
pub struct Snapshot {
    /// 1 for the first load, +1 per reload.
    pub generation: u64,
    /// The stack new runs start on.
    pub stack: HookStack,
    /// Each plugin of the directory and how it fared.
    pub plugins: Vec<PluginStatus>,
    /// Each loaded plugin's name and the sha256 of the bytes it runs, as a
    /// decision log records them ([`crate::audit::DecisionLog::for_run`]):
    /// built once per snapshot, shared by its runs.
    pub digests: Arc<std::collections::HashMap<String, String>>,
    /// Why the directory's latest change could not be loaded (a manifest
    /// that does not parse ...): this snapshot is the previous stack, kept
    /// live. Retried until it loads.
    pub directory_error: Option<String>,
    /// When this stack was loaded (a reload that fails keeps the time of
    /// the stack it keeps).
    pub loaded_at: std::time::SystemTime,
}

impl Snapshot {
    /// A first snapshot of a stack that is not a directory's.
    pub fn of_stack(stack: HookStack) -> Snapshot {
        Snapshot {
            generation: 1,
            stack,
            plugins: Vec::new(),
            digests: Arc::default(),
            directory_error: None,
            loaded_at: std::time::SystemTime::now(),
        }
    }

    /// The digest of the policy this stack is
    /// ([`crate::directory::stack_digest`] of its plugins).
    pub fn stack_digest(&self) -> String {
        crate::directory::stack_digest(&self.plugins)
    }
}

/// Where runs get their stack: a watched directory's newest snapshot, or
/// one fixed stack. What a server or a framework adapter is built from.
pub enum StackSource {
    /// A plugin directory, watched and hot-reloaded: new runs take the
    /// newest snapshot, live runs keep theirs.
    Watched(Arc<DirWatcher>),
    /// One stack for the source's life (generation 1).
    Fixed(Arc<Snapshot>),
}

impl StackSource {
    /// Loads and watches `dir`.
    ///
    /// # Errors
    /// [`Error::Directory`] when the directory cannot be loaded or watched.
    pub fn watch(runtime: &Runtime, dir: &Path, debounce: Duration) -> Result<StackSource, Error> {
        Ok(StackSource::Watched(Arc::new(DirWatcher::start(
            runtime, dir, debounce,
        )?)))
    }

    /// A fixed stack.
    pub fn fixed(stack: HookStack) -> StackSource {
        StackSource::Fixed(Arc::new(Snapshot::of_stack(stack)))
    }

    /// The snapshot a run starting now takes.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        match self {
            StackSource::Watched(watcher) => watcher.snapshot(),
            StackSource::Fixed(snapshot) => snapshot.clone(),
        }
    }
}

impl From<HookStack> for StackSource {
    fn from(stack: HookStack) -> StackSource {
        StackSource::fixed(stack)
    }
}

impl From<DirWatcher> for StackSource {
    fn from(watcher: DirWatcher) -> StackSource {
        StackSource::Watched(Arc::new(watcher))
    }
}

impl From<Arc<DirWatcher>> for StackSource {
    fn from(watcher: Arc<DirWatcher>) -> StackSource {
        StackSource::Watched(watcher)
    }
}

/// What a reload did.
#[derive(Clone, Debug)]
pub struct ReloadReport {
    /// The generation now live.
    pub generation: u64,
    /// Time from the first change seen to the swap (or to giving up).
    pub took: Duration,
    /// Plugins compiled anew, by name.
    pub compiled: Vec<String>,
    /// Plugins removed since the previous generation.
    pub removed: Vec<String>,
    /// Plugins that failed to load. One listed here kept its previous
    /// version when it had one (the reason says so).
    pub errors: Vec<LoadError>,
    /// Why the directory itself could not be reloaded (the previous stack
    /// then stays live).
    pub directory_error: Option<String>,
}

impl ReloadReport {
    /// Whether trying again could give another result without a change to
    /// the directory: a file caught mid-write, a plugin that did not start
    /// in time on a busy machine, a directory that could not be read. A
    /// plugin that does not compile, link or fit its limits fails the same
    /// way until its file changes.
    pub fn worth_retrying(&self) -> bool {
        self.directory_error.is_some()
            || self
                .errors
                .iter()
                .any(|e| matches!(e.phase, LoadPhase::Read | LoadPhase::Instantiate))
    }
}

/// The first wait before retrying a reload that failed, doubled each time
/// up to [`RETRY_MAX`].
const RETRY_FIRST: Duration = Duration::from_secs(1);
const RETRY_MAX: Duration = Duration::from_secs(60);

/// Keeps a directory loaded and its stack current.
pub struct DirWatcher {
    current: Arc<ArcSwap<Snapshot>>,
    reports: Mutex<Receiver<ReloadReport>>,
    state: Arc<Mutex<Reloader>>,
    watches: Arc<Watches>,
    counts: Arc<ReloadCounts>,
    runtime: Runtime,
}

/// Reloads so far, by how they ended.
#[derive(Default)]
struct ReloadCounts {
    ok: std::sync::atomic::AtomicU64,
    failed: std::sync::atomic::AtomicU64,
}

impl ReloadCounts {
    /// Counts `report`: failed when a plugin or the directory could not be
    /// loaded.
    fn count(&self, report: &ReloadReport) {
        let failed = report.directory_error.is_some() || !report.errors.is_empty();
        let counter = if failed { &self.failed } else { &self.ok };
        counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// What is watched: the directory, and each subdirectory a manifest entry
/// lives in (not the whole tree, where caches and editors' files churn).
struct Watches {
    dir: PathBuf,
    watcher: Mutex<notify::RecommendedWatcher>,
    covered: Mutex<std::collections::HashSet<PathBuf>>,
}

impl Watches {
    /// Watches the subdirectories `snapshot`'s plugins live in, if not yet.
    fn cover(&self, snapshot: &Snapshot) {
        let (Ok(mut watcher), Ok(mut covered)) = (self.watcher.lock(), self.covered.lock()) else {
            return;
        };
        for status in &snapshot.plugins {
            // A registry's plugin lives in the store, whose index a pull
            // rewrites: watch the store's folder.
            let file = match &status.source {
                Some(_) => Path::new(crate::oci::STORE_DIR).join("index.json"),
                None => PathBuf::from(&status.file),
            };
            let Some(parent) = file.parent() else {
                continue;
            };
            if parent.as_os_str().is_empty() || covered.contains(parent) {
                continue;
            }
            match watcher.watch(&self.dir.join(parent), RecursiveMode::NonRecursive) {
                Ok(()) => {
                    covered.insert(parent.to_path_buf());
                }
                Err(e) => tracing::warn!(
                    dir = %self.dir.join(parent).display(),
                    "cannot watch a plugin's subdirectory; it reloads with the directory only: {e}"
                ),
            }
        }
    }
}

/// The plugins of the live generation, by name, with what they were built
/// from, so an unchanged plugin is never recompiled.
struct Reloader {
    runtime: Runtime,
    dir: PathBuf,
    generation: u64,
    built: HashMap<String, Built>,
}

/// The options a plugin was built with, comparable.
type PluginOptionsKey = String;

/// A plugin as the last reload built it: its bytes, their sha256, its
/// options, the plugin, and where it came from (a registry's).
type Built = (
    Vec<u8>,
    String,
    PluginOptionsKey,
    Arc<Plugin>,
    Option<crate::oci::Provenance>,
);

fn options_key(options: &PluginOptions) -> PluginOptionsKey {
    format!("{:?}", (&options.limits, &options.config))
}

impl DirWatcher {
    /// Loads `dir` and starts watching it. Changes are picked up after
    /// `debounce` of quiet.
    ///
    /// # Errors
    /// As [`directory::load`] for the first load, or when the directory
    /// cannot be watched.
    pub fn start(runtime: &Runtime, dir: &Path, debounce: Duration) -> Result<DirWatcher, Error> {
        let watch_error = |e: notify::Error| Error::Directory {
            path: dir.display().to_string(),
            reason: format!("cannot watch it: {e}"),
        };
        let mut reloader = Reloader {
            runtime: runtime.clone(),
            dir: dir.to_path_buf(),
            generation: 0,
            built: HashMap::new(),
        };
        let first = reloader.reload(Instant::now())?;
        let first_retry = first.1.worth_retrying().then_some(RETRY_FIRST);
        let current = Arc::new(ArcSwap::from_pointee(first.0));
        let state = Arc::new(Mutex::new(reloader));

        let (events_tx, events_rx) = mpsc::channel::<()>();
        let mut watcher =
            notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                if event.is_ok_and(|e| !e.kind.is_access()) {
                    let _ = events_tx.send(());
                }
            })
            .map_err(watch_error)?;
        watcher
            .watch(dir, RecursiveMode::NonRecursive)
            .map_err(watch_error)?;
        let watches = Arc::new(Watches {
            dir: dir.to_path_buf(),
            watcher: Mutex::new(watcher),
            covered: Mutex::default(),
        });
        watches.cover(&current.load());

        let (reports_tx, reports_rx) = mpsc::channel();
        let counts = Arc::new(ReloadCounts::default());
        let (thread_current, thread_state, thread_counts) =
            (current.clone(), state.clone(), counts.clone());
        // Weak: the watcher (the events' sender) must drop with the
        // DirWatcher, which ends this thread.
        let thread_watches = Arc::downgrade(&watches);
        std::thread::Builder::new()
            .name("hookbox-reload".into())
            .spawn(move || {
                // Ends when the watcher (the sender) is dropped. A reload
                // that failed in a way that could pass is retried, with a
                // growing wait, until one succeeds or the directory changes.
                let mut retry = first_retry;
                loop {
                    let woke = match retry {
                        None => events_rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
                        Some(wait) => events_rx.recv_timeout(wait),
                    };
                    match woke {
                        Ok(()) => {}
                        Err(RecvTimeoutError::Timeout) => {} // time to retry
                        Err(RecvTimeoutError::Disconnected) => return,
                    }
                    let first_change = Instant::now();
                    // Debounce: wait for `debounce` without events.
                    loop {
                        match events_rx.recv_timeout(debounce) {
                            Ok(()) => continue,
                            Err(RecvTimeoutError::Timeout) => break,
                            Err(RecvTimeoutError::Disconnected) => return,
                        }
                    }
                    let report = match thread_state.lock() {
                        Ok(mut state) => state.reload_into(&thread_current, first_change),
                        Err(_) => return,
                    };
                    log_report(&report);
                    thread_counts.count(&report);
                    retry = report.worth_retrying().then(|| match (woke, retry) {
                        (Err(_), Some(wait)) => (wait * 2).min(RETRY_MAX),
                        _ => RETRY_FIRST,
                    });
                    if let Some(watches) = thread_watches.upgrade() {
                        watches.cover(&thread_current.load());
                    }
                    if reports_tx.send(report).is_err() {
                        // Nobody reads the reports; keep reloading anyway.
                    }
                }
            })
            .map_err(|e| Error::Directory {
                path: dir.display().to_string(),
                reason: format!("cannot start: {e}"),
            })?;

        Ok(DirWatcher {
            current,
            reports: Mutex::new(reports_rx),
            state,
            watches,
            counts,
            runtime: runtime.clone(),
        })
    }

    /// The live snapshot. Start runs from it; a run keeps its snapshot.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.current.load_full()
    }

    /// Reloads now, without waiting for the watcher.
    pub fn reload_now(&self) -> ReloadReport {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let report = state.reload_into(&self.current, Instant::now());
        self.watches.cover(&self.current.load());
        self.counts.count(&report);
        report
    }

    /// Reloads since the first load: those that loaded everything, and
    /// those where a plugin or the directory could not be loaded.
    pub fn reloads(&self) -> (u64, u64) {
        use std::sync::atomic::Ordering::Relaxed;
        (
            self.counts.ok.load(Relaxed),
            self.counts.failed.load(Relaxed),
        )
    }

    /// The runtime the directory's plugins are compiled on (its compile
    /// cache's counts: [`Runtime::cache_stats`]).
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// Waits up to `timeout` for the next report of a watcher-triggered
    /// reload.
    pub fn next_report(&self, timeout: Duration) -> Option<ReloadReport> {
        let reports = self.reports.lock().ok()?;
        reports.recv_timeout(timeout).ok()
    }
}

impl Reloader {
    /// Reloads and swaps; on a directory-level error keeps the old snapshot.
    fn reload_into(&mut self, current: &ArcSwap<Snapshot>, since: Instant) -> ReloadReport {
        match self.reload(since) {
            Ok((snapshot, mut report)) => {
                let live = current.load();
                if live.directory_error.is_none() && same_plugins(&live.plugins, &snapshot.plugins)
                {
                    // Nothing changed (a retry, a file touched): runs and
                    // sessions stay on the live generation.
                    self.generation -= 1;
                    report.generation = self.generation;
                } else {
                    current.store(Arc::new(snapshot));
                }
                report
            }
            Err(e) => {
                let why = format!("{e}; the previous stack stays live");
                // The live stack stays, and says why it is not the newest.
                let live = current.load();
                current.store(Arc::new(Snapshot {
                    generation: live.generation,
                    stack: live.stack.clone(),
                    plugins: live.plugins.clone(),
                    digests: live.digests.clone(),
                    directory_error: Some(why.clone()),
                    loaded_at: live.loaded_at,
                }));
                ReloadReport {
                    generation: self.generation,
                    took: since.elapsed(),
                    compiled: Vec::new(),
                    removed: Vec::new(),
                    errors: Vec::new(),
                    directory_error: Some(why),
                }
            }
        }
    }

    fn reload(&mut self, since: Instant) -> Result<(Snapshot, ReloadReport), Error> {
        let previous = std::mem::take(&mut self.built);
        let mut compiled = Vec::new();
        let mut errors = Vec::new();
        let mut next = HashMap::new();
        let loaded = directory::load_with(
            &self.runtime,
            &self.dir,
            directory::Pins::Check,
            |entry, read, options| {
                let name = entry.name();
                let key = options_key(options);
                let old = previous.get(&name);
                let (bytes, sha256) = match read {
                    Ok(read) => read,
                    // A registry's plugin whose new version fails its
                    // checks: the previous one stays, if it still passes
                    // them (the manifest's trust may have changed).
                    Err(error) => {
                        let old @ (_, old_sha256, _, plugin, provenance) = old?;
                        directory::pin_holds(entry, &name, old_sha256).ok()?;
                        directory::provenance_holds(&self.dir, entry, provenance.as_ref())
                            .then_some(())?;
                        let mut error = error.clone();
                        error.reason.push_str("; the previous version stays live");
                        errors.push(error);
                        let plugin = plugin.clone();
                        next.insert(name, old.clone());
                        return Some(plugin);
                    }
                };
                let result = match old {
                    // Unchanged: the same plugin, if it still passes its pin.
                    Some((old_bytes, _, old_key, plugin, _))
                        if old_bytes == bytes && *old_key == key =>
                    {
                        directory::pin_holds(entry, &name, sha256).map(|()| plugin.clone())
                    }
                    _ => directory::build(&self.runtime, entry, &name, (bytes, sha256), options)
                        .map(|plugin| {
                            compiled.push(name.clone());
                            Arc::new(plugin)
                        }),
                };
                match result {
                    Ok(plugin) => {
                        let built = (bytes.to_vec(), sha256.to_owned(), key, plugin.clone(), None);
                        next.insert(name, built);
                        Some(plugin)
                    }
                    // Never replace a working version with a broken one, nor
                    // with bytes its pin refuses; but an old version the
                    // current pin refuses does not stay either (None: the
                    // load reports the failure).
                    Err(mut e) => {
                        let old @ (_, old_sha256, _, plugin, provenance) = old?;
                        directory::pin_holds(entry, &name, old_sha256).ok()?;
                        directory::provenance_holds(&self.dir, entry, provenance.as_ref())
                            .then_some(())?;
                        e.reason.push_str("; the previous version stays live");
                        errors.push(e);
                        let plugin = plugin.clone();
                        next.insert(name, old.clone());
                        Some(plugin)
                    }
                }
            },
        );
        let mut loaded = match loaded {
            Ok(loaded) => loaded,
            Err(e) => {
                self.built = previous;
                return Err(e);
            }
        };
        for status in &mut loaded.plugins {
            status.newer_version_failed = errors.iter().find(|e| e.plugin == status.name).cloned();
            if status.newer_version_failed.is_some() {
                // The digest and provenance of what runs: the previous
                // version's.
                if let Some((_, sha256, _, _, provenance)) = next.get(&status.name) {
                    status.sha256 = Some(sha256.clone());
                    status.source.clone_from(provenance);
                }
            } else if let Some(built) = next.get_mut(&status.name) {
                built.4.clone_from(&status.source);
            }
        }
        errors.extend(loaded.failures().map(|(_, error)| error.clone()));
        let removed: Vec<String> = previous
            .keys()
            .filter(|name| !next.contains_key(*name))
            .cloned()
            .collect();
        self.generation += 1;
        self.built = next;
        let report = ReloadReport {
            generation: self.generation,
            took: since.elapsed(),
            compiled,
            removed,
            errors,
            directory_error: None,
        };
        let snapshot = Snapshot {
            generation: self.generation,
            stack: loaded.stack,
            digests: crate::audit::DecisionLog::digests(&loaded.plugins),
            plugins: loaded.plugins,
            directory_error: None,
            loaded_at: std::time::SystemTime::now(),
        };
        Ok((snapshot, report))
    }
}

/// Whether two loads of the directory came out the same: the same plugins
/// (the very same compiled ones) with the same failures.
fn same_plugins(live: &[PluginStatus], next: &[PluginStatus]) -> bool {
    live.len() == next.len()
        && live.iter().zip(next).all(|(a, b)| {
            (
                &a.name,
                &a.file,
                a.required,
                a.mode,
                &a.tools,
                &a.newer_version_failed,
            ) == (
                &b.name,
                &b.file,
                b.required,
                b.mode,
                &b.tools,
                &b.newer_version_failed,
            ) && match (&a.result, &b.result) {
                (Ok(a), Ok(b)) => Arc::ptr_eq(a, b),
                (Err(a), Err(b)) => a == b,
                _ => false,
            }
        })
}

fn log_report(report: &ReloadReport) {
    if let Some(why) = &report.directory_error {
        tracing::error!(generation = report.generation, "reload: {why}");
    }
    for error in &report.errors {
        tracing::error!(generation = report.generation, "reload: {error}");
    }
    tracing::info!(
        generation = report.generation,
        took_ms = report.took.as_secs_f64() * 1e3,
        compiled = ?report.compiled,
        removed = ?report.removed,
        "reloaded plugin directory"
    );
}
