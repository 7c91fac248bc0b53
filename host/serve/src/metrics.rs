//! The server's counters, in the Prometheus text format.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, SystemTime};

use hookbox::audit::DecisionLog;
use hookbox::{Cause, Decided, EventKind, Observe, Outcome};

/// Upper bounds of the latency histogram, in microseconds.
const BUCKETS_US: [u64; 10] = [10, 50, 100, 250, 500, 1_000, 5_000, 10_000, 50_000, 100_000];

const FLOWS: [&str; 9] = [
    "continue",
    "terminate",
    "skip",
    "rewrite-args",
    "rewrite-result",
    "patch-request",
    "fail",
    "retry",
    "repair",
];

/// Counters of a server, lock-free but for shadow plugins' answers, which
/// are counted by plugin (and only taken when a shadow did not continue),
/// and the table of plugins (written once per plugin name).
#[derive(Default)]
pub struct Metrics {
    events: [AtomicU64; 9],
    flows: [AtomicU64; 9],
    fail_closed: [AtomicU64; Cause::ALL.len()],
    latency: Histogram,
    /// Each plugin's own answers, by name.
    plugins: RwLock<BTreeMap<String, Arc<PluginCounters>>>,
    /// The decision log, whose drops are shown.
    decision_log: Option<Arc<DecisionLog>>,
    pub(crate) runs_created: AtomicU64,
    pub(crate) runs_expired: AtomicU64,
    pub(crate) runs_shed: AtomicU64,
    /// What shadow plugins would have done: by plugin, then by flow (or
    /// `fail-closed:CAUSE`).
    shadow: Mutex<BTreeMap<String, BTreeMap<String, u64>>>,
    /// The session store's health.
    pub(crate) store: StoreStats,
}

/// How the session store fares: hooks that used it and failures (with the
/// last one), the time it took per hook, and sessions its pins moved or
/// refused.
#[derive(Default)]
pub(crate) struct StoreStats {
    ok: AtomicU64,
    errors: AtomicU64,
    pub(crate) moved: AtomicU64,
    pub(crate) refused: AtomicU64,
    latency: Histogram,
    /// Whether the last hook reached it.
    down: AtomicBool,
    last_error: Mutex<Option<(String, SystemTime)>>,
}

impl StoreStats {
    /// A hook whose state was read and written in `took`.
    pub(crate) fn reached(&self, took: Duration) {
        self.ok.fetch_add(1, Ordering::Relaxed);
        self.latency.record(took);
        self.down.store(false, Ordering::Relaxed);
    }

    /// A hook the store failed.
    pub(crate) fn failed(&self, why: &str) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        self.down.store(true, Ordering::Relaxed);
        *self.last_error.lock().unwrap_or_else(|p| p.into_inner()) =
            Some((why.to_owned(), SystemTime::now()));
    }

    /// The store's part of `/status`.
    pub(crate) fn status(&self, store: &dyn hookbox_agents::SessionBackend) -> serde_json::Value {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let last = self.last_error.lock().unwrap_or_else(|p| p.into_inner());
        let last_error = last.as_ref().map(|(why, at)| {
            let ago = at.elapsed().unwrap_or_default().as_secs();
            serde_json::json!({"error": why, "seconds_ago": ago})
        });
        serde_json::json!({
            "at": store.describe(),
            "shared": store.shared(),
            "up": !self.down.load(Ordering::Relaxed),
            "hooks": get(&self.ok),
            "errors": get(&self.errors),
            "last_error": last_error,
            "sessions_moved": get(&self.moved),
            "sessions_refused": get(&self.refused),
        })
    }

    fn render(&self, out: &mut String) {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let _ = writeln!(
            out,
            "# HELP hookbox_session_store_up Whether the session store answered the last hook that asked it.\n# TYPE hookbox_session_store_up gauge\nhookbox_session_store_up {}",
            u8::from(!self.down.load(Ordering::Relaxed))
        );
        let _ = writeln!(
            out,
            "# HELP hookbox_session_store_total Hooks that asked the session store, by result (error: the hook was blocked).\n# TYPE hookbox_session_store_total counter\nhookbox_session_store_total{{result=\"ok\"}} {}\nhookbox_session_store_total{{result=\"error\"}} {}",
            get(&self.ok),
            get(&self.errors)
        );
        let _ = writeln!(
            out,
            "# HELP hookbox_session_pins_total Sessions of a shared store whose pinned stack was not this instance's: moved to it (it is newer) or refused (it is older).\n# TYPE hookbox_session_pins_total counter\nhookbox_session_pins_total{{result=\"moved\"}} {}\nhookbox_session_pins_total{{result=\"refused\"}} {}",
            get(&self.moved),
            get(&self.refused)
        );
        let _ = writeln!(
            out,
            "# HELP hookbox_session_store_seconds Time a hook spent in the session store (taking the session and giving it back).\n# TYPE hookbox_session_store_seconds histogram"
        );
        self.latency
            .render(out, "hookbox_session_store_seconds", "");
    }
}

/// A latency histogram, in microseconds.
#[derive(Default)]
struct Histogram {
    buckets: [AtomicU64; 10],
    count: AtomicU64,
    sum_us: AtomicU64,
}

impl Histogram {
    fn record(&self, took: Duration) {
        let us = took.as_micros().min(u64::MAX as u128) as u64;
        for (bound, bucket) in BUCKETS_US.iter().zip(&self.buckets) {
            if us <= *bound {
                bucket.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_us.fetch_add(us, Ordering::Relaxed);
    }

    /// The histogram `name` in the text format, with `labels` (`k="v",`).
    fn render(&self, out: &mut String, name: &str, labels: &str) {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        for (bound, count) in BUCKETS_US.iter().zip(&self.buckets) {
            let _ = writeln!(
                out,
                "{name}_bucket{{{labels}le=\"{}\"}} {}",
                *bound as f64 / 1e6,
                get(count)
            );
        }
        let count = get(&self.count);
        let _ = writeln!(out, "{name}_bucket{{{labels}le=\"+Inf\"}} {count}");
        let labels = labels.trim_end_matches(',');
        let braces = |l: &str| {
            if l.is_empty() {
                String::new()
            } else {
                format!("{{{l}}}")
            }
        };
        let _ = writeln!(
            out,
            "{name}_sum{} {}\n{name}_count{} {count}",
            braces(labels),
            get(&self.sum_us) as f64 / 1e6,
            braces(labels)
        );
    }
}

/// One plugin's answers: how long each took, its flows, its failures.
#[derive(Default)]
struct PluginCounters {
    latency: Histogram,
    flows: [AtomicU64; 9],
    fail_closed: [AtomicU64; Cause::ALL.len()],
}

/// What a run tells the server of each answer: per-plugin metrics, and the
/// run's decision log.
pub(crate) struct RunObserver {
    metrics: Arc<Metrics>,
    log: Option<Arc<dyn Observe>>,
}

impl RunObserver {
    pub(crate) fn new(metrics: Arc<Metrics>, log: Option<Arc<dyn Observe>>) -> RunObserver {
        RunObserver { metrics, log }
    }
}

impl Observe for RunObserver {
    fn decided(&self, decided: &Decided<'_>) {
        self.metrics.plugin_answered(decided);
        if let Some(log) = &self.log {
            log.decided(decided);
        }
    }
}

impl Metrics {
    /// Counters that also show `decision_log`'s dropped records.
    pub(crate) fn new(decision_log: Option<Arc<DecisionLog>>) -> Metrics {
        Metrics {
            decision_log,
            ..Metrics::default()
        }
    }

    /// One plugin's answer. A shadow's time is counted; its flows are the
    /// shadow counters' (from the decision), not the plugin's.
    fn plugin_answered(&self, decided: &Decided<'_>) {
        let found = self
            .plugins
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&**decided.plugin)
            .cloned();
        let counters = found.unwrap_or_else(|| {
            let mut plugins = self.plugins.write().unwrap_or_else(|p| p.into_inner());
            plugins
                .entry(decided.plugin.to_string())
                .or_default()
                .clone()
        });
        counters.latency.record(decided.took);
        if decided.shadow {
            return;
        }
        match decided.outcome {
            Ok(flow) => {
                if let Some(i) = FLOWS.iter().position(|f| *f == flow.name()) {
                    counters.flows[i].fetch_add(1, Ordering::Relaxed);
                }
            }
            Err(failure) => {
                if let Some(i) = Cause::ALL.iter().position(|c| *c == failure.cause) {
                    counters.fail_closed[i].fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }

    pub(crate) fn record(&self, kind: EventKind, outcome: &Outcome, took: Duration) {
        self.events[kind as usize].fetch_add(1, Ordering::Relaxed);
        match outcome {
            Ok(decision) => {
                if !decision.shadow.is_empty() {
                    let mut shadow = self.shadow.lock().unwrap_or_else(|p| p.into_inner());
                    for answer in &decision.shadow {
                        let what = match &answer.outcome {
                            Ok(flow) => flow.name().to_owned(),
                            Err(failure) => format!("fail-closed:{}", failure.cause.name()),
                        };
                        *shadow
                            .entry(answer.plugin.to_string())
                            .or_default()
                            .entry(what)
                            .or_default() += 1;
                    }
                }
                let name = decision.flow.name();
                if let Some(i) = FLOWS.iter().position(|f| *f == name) {
                    self.flows[i].fetch_add(1, Ordering::Relaxed);
                }
            }
            Err(failure) => {
                if let Some(i) = Cause::ALL.iter().position(|c| *c == failure.cause) {
                    self.fail_closed[i].fetch_add(1, Ordering::Relaxed);
                }
                self.flows[1].fetch_add(1, Ordering::Relaxed); // a terminate
            }
        }
        self.latency.record(took);
    }

    /// What each shadow plugin would have done so far: by plugin, then by
    /// flow name or `fail-closed:CAUSE`.
    pub fn shadow_counts(&self) -> BTreeMap<String, BTreeMap<String, u64>> {
        self.shadow
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Events decided so far.
    pub fn events(&self) -> u64 {
        self.events.iter().map(|e| e.load(Ordering::Relaxed)).sum()
    }

    pub(crate) fn render(
        &self,
        live_runs: usize,
        generation: u64,
        (slots_used, slots): (usize, usize),
        source: &hookbox::watch::StackSource,
        with_store: bool,
    ) -> String {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let mut out = String::new();
        let _ = writeln!(
            out,
            "# HELP hookbox_events_total Events decided, by kind.\n# TYPE hookbox_events_total counter"
        );
        for kind in EventKind::ALL {
            let _ = writeln!(
                out,
                "hookbox_events_total{{kind=\"{}\"}} {}",
                kind.name(),
                get(&self.events[kind as usize])
            );
        }
        let _ = writeln!(
            out,
            "# HELP hookbox_flows_total Net flows answered, by flow.\n# TYPE hookbox_flows_total counter"
        );
        for (name, count) in FLOWS.iter().zip(&self.flows) {
            let _ = writeln!(out, "hookbox_flows_total{{flow=\"{name}\"}} {}", get(count));
        }
        let _ = writeln!(
            out,
            "# HELP hookbox_fail_closed_total Runs ended fail-closed, by cause.\n# TYPE hookbox_fail_closed_total counter"
        );
        for (cause, count) in Cause::ALL.iter().zip(&self.fail_closed) {
            let _ = writeln!(
                out,
                "hookbox_fail_closed_total{{cause=\"{}\"}} {}",
                cause.name(),
                get(count)
            );
        }
        let _ = writeln!(
            out,
            "# HELP hookbox_shadow_decisions_total What shadow plugins would have done instead of continuing (not acted on), by plugin and flow.\n# TYPE hookbox_shadow_decisions_total counter\n# HELP hookbox_shadow_fail_closed_total Shadow plugins' failures that would have failed the run closed (the run went on), by plugin and cause.\n# TYPE hookbox_shadow_fail_closed_total counter"
        );
        for (plugin, counts) in self.shadow_counts() {
            let plugin = label(&plugin);
            for (what, count) in counts {
                let _ = match what.strip_prefix("fail-closed:") {
                    Some(cause) => writeln!(
                        out,
                        "hookbox_shadow_fail_closed_total{{plugin=\"{plugin}\",cause=\"{cause}\"}} {count}"
                    ),
                    None => writeln!(
                        out,
                        "hookbox_shadow_decisions_total{{plugin=\"{plugin}\",flow=\"{what}\"}} {count}"
                    ),
                };
            }
        }
        let _ = writeln!(
            out,
            "# HELP hookbox_event_seconds Time to decide an event.\n# TYPE hookbox_event_seconds histogram"
        );
        self.latency.render(&mut out, "hookbox_event_seconds", "");
        self.render_plugins(&mut out);
        if let Some(log) = &self.decision_log {
            let _ = writeln!(
                out,
                "# HELP hookbox_decision_log_dropped_total Decision log records dropped because the sink fell behind.\n# TYPE hookbox_decision_log_dropped_total counter\nhookbox_decision_log_dropped_total {}",
                log.dropped()
            );
        }
        let _ = writeln!(
            out,
            "# HELP hookbox_runs_created_total Runs started.\n# TYPE hookbox_runs_created_total counter\nhookbox_runs_created_total {}",
            get(&self.runs_created)
        );
        let _ = writeln!(
            out,
            "# HELP hookbox_runs_expired_total Runs ended for being idle.\n# TYPE hookbox_runs_expired_total counter\nhookbox_runs_expired_total {}",
            get(&self.runs_expired)
        );
        let _ = writeln!(
            out,
            "# HELP hookbox_runs_shed_total Runs refused with 503: too many live runs, or no instance slots free.\n# TYPE hookbox_runs_shed_total counter\nhookbox_runs_shed_total {}",
            get(&self.runs_shed)
        );
        let _ = writeln!(
            out,
            "# HELP hookbox_instance_slots_used Plugin instance slots held by live runs.\n# TYPE hookbox_instance_slots_used gauge\nhookbox_instance_slots_used {slots_used}\n# HELP hookbox_instance_slots Plugin instance slots in all.\n# TYPE hookbox_instance_slots gauge\nhookbox_instance_slots {slots}"
        );
        let _ = writeln!(
            out,
            "# HELP hookbox_live_runs Runs live now.\n# TYPE hookbox_live_runs gauge\nhookbox_live_runs {live_runs}"
        );
        if let hookbox::watch::StackSource::Watched(watcher) = source {
            let (ok, failed) = watcher.reloads();
            let _ = writeln!(
                out,
                "# HELP hookbox_reloads_total Reloads of the plugin directory, by result (failed: a plugin or the directory could not be loaded; what was live stays live).\n# TYPE hookbox_reloads_total counter\nhookbox_reloads_total{{result=\"ok\"}} {ok}\nhookbox_reloads_total{{result=\"failed\"}} {failed}"
            );
            if let Some(cache) = watcher.runtime().cache_stats() {
                let _ = writeln!(
                    out,
                    "# HELP hookbox_compile_cache_total Plugins looked up in the compile cache, by result.\n# TYPE hookbox_compile_cache_total counter\nhookbox_compile_cache_total{{result=\"hit\"}} {}\nhookbox_compile_cache_total{{result=\"miss\"}} {}",
                    cache.hits, cache.misses
                );
            }
        }
        if with_store {
            self.store.render(&mut out);
        }
        let _ = writeln!(
            out,
            "# HELP hookbox_stack_generation Reloads of the plugin directory so far, plus one.\n# TYPE hookbox_stack_generation gauge\nhookbox_stack_generation {generation}"
        );
        out
    }
}

impl Metrics {
    /// Each plugin's latency histogram, flows and fail-closed causes.
    fn render_plugins(&self, out: &mut String) {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let plugins = self.plugins.read().unwrap_or_else(|p| p.into_inner());
        let _ = writeln!(
            out,
            "# HELP hookbox_plugin_decision_seconds Time a plugin took to answer an event (its instantiation included on its first event of a run).\n# TYPE hookbox_plugin_decision_seconds histogram"
        );
        for (name, counters) in plugins.iter() {
            let labels = format!("plugin=\"{}\",", label(name));
            counters
                .latency
                .render(out, "hookbox_plugin_decision_seconds", &labels);
        }
        let _ = writeln!(
            out,
            "# HELP hookbox_plugin_flows_total Each plugin's own answers (not the net flow), by flow; shadows' are hookbox_shadow_*.\n# TYPE hookbox_plugin_flows_total counter"
        );
        for (name, counters) in plugins.iter() {
            for (flow, count) in FLOWS.iter().zip(&counters.flows) {
                let count = get(count);
                if count > 0 {
                    let _ = writeln!(
                        out,
                        "hookbox_plugin_flows_total{{plugin=\"{}\",flow=\"{flow}\"}} {count}",
                        label(name)
                    );
                }
            }
        }
        let _ = writeln!(
            out,
            "# HELP hookbox_plugin_fail_closed_total Runs a plugin failed closed, by cause.\n# TYPE hookbox_plugin_fail_closed_total counter"
        );
        for (name, counters) in plugins.iter() {
            for (cause, count) in Cause::ALL.iter().zip(&counters.fail_closed) {
                let count = get(count);
                if count > 0 {
                    let _ = writeln!(
                        out,
                        "hookbox_plugin_fail_closed_total{{plugin=\"{}\",cause=\"{}\"}} {count}",
                        label(name),
                        cause.name()
                    );
                }
            }
        }
    }
}

/// A label value in the text format: backslash, quote and line feed escaped.
fn label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}
