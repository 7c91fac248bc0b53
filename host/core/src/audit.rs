//! Decision logs: one JSON line per decision that matters, for audit.
//!
//! A [`DecisionLog`] writes a record for every hook answer other than
//! continue and for every failure (with [`DecisionLog::all`], for every
//! answer), shadow plugins' included, on a thread of its own. Recording
//! never waits: past [`DecisionLog::CAPACITY`] records queued, a record is
//! dropped and counted ([`DecisionLog::dropped`]), so a slow or stuck sink
//! cannot stall a decision.
//!
//! A record (one line; absent fields are left out):
//!
//! | field | meaning |
//! |---|---|
//! | `decision_id` | unique: this log's random prefix and a sequence number |
//! | `time` | when the answer was checked, RFC 3339 UTC with milliseconds |
//! | `run_id` | the run |
//! | `generation` | the stack generation the run is on |
//! | `plugin` | the hook that answered |
//! | `sha256` | the digest of the plugin's bytes, as loaded (plugins of a directory) |
//! | `event` | the event kind |
//! | `flow` | the hook's own answer (`terminate` for a failure) |
//! | `reason` | a terminate's or skip's reason, a retry's feedback, a repair's tool |
//! | `latency_us` | the hook's time on this event, its instantiation included |
//! | `cause` | for a failure: the fail-closed cause (`trap`, `deadline` ...) |
//! | `detail` | for a failure: what happened |
//! | `shadow` | `true` for a shadow plugin: not acted on |
//!
//! Give each run its observer with [`DecisionLog::for_run`] and
//! [`crate::Run::observe`].

use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::decision::{Decided, Observe};

/// A JSON-lines decision log on its own writer thread.
pub struct DecisionLog {
    queue: Mutex<Option<SyncSender<Record>>>,
    all: bool,
    prefix: String,
    next: AtomicU64,
    dropped: AtomicU64,
    writer: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl DecisionLog {
    /// Records queued for the writer at most; past it, records are dropped.
    pub const CAPACITY: usize = 4096;

    /// A log appending to the file at `path`, created if missing. On Unix a
    /// new file is the owner's only (mode 0600, whatever the umask): its
    /// records name the plugins, their digests and the tools they stopped.
    /// An existing file keeps the mode its owner gave it.
    ///
    /// # Errors
    /// When the file cannot be opened for appending.
    pub fn to_file(path: &std::path::Path) -> std::io::Result<DecisionLog> {
        let mut options = std::fs::OpenOptions::new();
        options.create(true).append(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let file = options.open(path)?;
        Ok(DecisionLog::to_writer(file))
    }

    /// A log writing to standard output.
    pub fn to_stdout() -> DecisionLog {
        DecisionLog::to_writer(std::io::stdout())
    }

    /// A log writing to `sink`, on a thread of its own.
    pub fn to_writer(sink: impl Write + Send + 'static) -> DecisionLog {
        let (tx, rx) = std::sync::mpsc::sync_channel(DecisionLog::CAPACITY);
        let mut seed = [0u8; 6];
        let prefix: String = match getrandom::fill(&mut seed) {
            Ok(()) => seed.iter().map(|b| format!("{b:02x}")).collect(),
            Err(_) => format!("{:x}", std::process::id()),
        };
        let ids = prefix.clone();
        let writer = std::thread::Builder::new()
            .name("hookbox-decision-log".into())
            .spawn(move || write_all(rx, sink, &ids))
            .ok();
        DecisionLog {
            queue: Mutex::new(writer.is_some().then_some(tx)),
            all: false,
            prefix,
            next: AtomicU64::new(1),
            dropped: AtomicU64::new(0),
            writer: Mutex::new(writer),
        }
    }

    /// Records every answer, continues included.
    pub fn all(mut self) -> DecisionLog {
        self.all = true;
        self
    }

    /// Records dropped so far, because the writer fell behind (or failed).
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// The observer for one run on stack `generation`; `digests` maps
    /// plugin names to the sha256 of their bytes (see
    /// [`DecisionLog::digests`]).
    pub fn for_run(
        self: &Arc<Self>,
        generation: u64,
        digests: Arc<HashMap<String, String>>,
    ) -> Arc<dyn Observe> {
        Arc::new(RunLog {
            log: self.clone(),
            generation,
            digests,
        })
    }

    /// Plugin names to digests, from a directory's plugins.
    pub fn digests(plugins: &[crate::directory::PluginStatus]) -> Arc<HashMap<String, String>> {
        Arc::new(
            plugins
                .iter()
                .filter_map(|p| Some((p.name.clone(), p.sha256.clone()?)))
                .collect(),
        )
    }

    /// Writes out what is queued and stops the writer; later records are
    /// dropped. Also done when the log is dropped.
    pub fn close(&self) {
        drop(self.queue.lock().unwrap_or_else(|p| p.into_inner()).take());
        if let Some(writer) = self.writer.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = writer.join();
        }
    }

    fn record(&self, record: Record) {
        let queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        let sent = match queue.as_ref() {
            Some(tx) => match tx.try_send(record) {
                Ok(()) => true,
                Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => false,
            },
            None => false,
        };
        if !sent {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl std::fmt::Debug for DecisionLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DecisionLog")
            .field("all", &self.all)
            .field("prefix", &self.prefix)
            .field("dropped", &self.dropped())
            .finish_non_exhaustive()
    }
}

impl Drop for DecisionLog {
    fn drop(&mut self) {
        self.close();
    }
}

/// How long the writer lets records gather after writing a batch: while it
/// waits, recording a decision wakes no thread.
const GATHER: std::time::Duration = std::time::Duration::from_millis(5);

/// Writes what is queued as JSON lines, flushes, lets the next records
/// gather for [`GATHER`], and again, until the log closes.
fn write_all(rx: Receiver<Record>, sink: impl Write, prefix: &str) {
    let mut out = std::io::BufWriter::new(sink);
    while let Ok(first) = rx.recv() {
        let mut record = Some(first);
        while let Some(next) = record.take().or_else(|| rx.try_recv().ok()) {
            if writeln!(out, "{}", next.line(prefix)).is_err() {
                return; // the sink is gone: later records count as dropped
            }
        }
        if out.flush().is_err() {
            return;
        }
        std::thread::sleep(GATHER);
    }
}

/// What a decision leaves for the writer: the line is built there, off the
/// decision's path.
struct Record {
    id: u64,
    time: SystemTime,
    run_id: String,
    generation: u64,
    plugin: Arc<str>,
    sha256: Option<String>,
    event: &'static str,
    latency_us: u64,
    outcome: Result<(&'static str, Option<String>), (&'static str, String)>,
    shadow: bool,
}

impl Record {
    fn line(&self, prefix: &str) -> String {
        let mut record = json!({
            "decision_id": format!("{prefix}-{}", self.id),
            "time": rfc3339(self.time),
            "run_id": self.run_id,
            "generation": self.generation,
            "plugin": &*self.plugin,
            "event": self.event,
            "latency_us": self.latency_us,
        });
        let map = record.as_object_mut().expect("an object");
        if let Some(digest) = &self.sha256 {
            map.insert("sha256".into(), json!(digest));
        }
        match &self.outcome {
            Ok((flow, reason)) => {
                map.insert("flow".into(), json!(flow));
                if let Some(reason) = reason {
                    map.insert("reason".into(), json!(reason));
                }
            }
            Err((cause, detail)) => {
                map.insert("flow".into(), json!("terminate"));
                map.insert("cause".into(), json!(cause));
                map.insert("detail".into(), json!(detail));
            }
        }
        if self.shadow {
            map.insert("shadow".into(), Value::Bool(true));
        }
        record.to_string()
    }
}

/// One run's view of the log.
struct RunLog {
    log: Arc<DecisionLog>,
    generation: u64,
    digests: Arc<HashMap<String, String>>,
}

impl Observe for RunLog {
    fn decided(&self, d: &Decided<'_>) {
        let worth = match d.outcome {
            Ok(flow) => self.log.all || !flow.is_continue(),
            Err(_) => true,
        };
        if !worth {
            return;
        }
        let id = self.log.next.fetch_add(1, Ordering::Relaxed);
        self.log.record(Record {
            id,
            time: SystemTime::now(),
            run_id: d.run_id.to_owned(),
            generation: self.generation,
            plugin: d.plugin.clone(),
            sha256: self.digests.get(&**d.plugin).cloned(),
            event: d.kind.name(),
            latency_us: u64::try_from(d.took.as_micros()).unwrap_or(u64::MAX),
            outcome: match d.outcome {
                Ok(flow) => Ok((flow.name(), flow.reason().map(str::to_owned))),
                Err(failure) => Err((failure.cause.name(), failure.detail.clone())),
            },
            shadow: d.shadow,
        });
    }
}

/// `time` as `2026-12-01T08:30:00.123Z`.
fn rfc3339(time: SystemTime) -> String {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_from_days(i64::try_from(days).unwrap_or(0));
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60,
        since.subsec_millis()
    )
}

/// The proleptic Gregorian date of a count of days since 1970-01-01
/// (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_become_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(20_788), (2026, 12, 1));
    }
}
