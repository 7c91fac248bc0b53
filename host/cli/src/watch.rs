//! `hookbox watch`: a plugin directory's reloads as they happen, and
//! events asked of its newest stack.

use std::io::{BufRead, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use hookbox::{Run, StepEvent};

use crate::replay::open_events;
use crate::{runtime, terminal};

/// `hookbox watch`'s arguments (its help is on [`crate`]'s `Command`).
#[derive(clap::Args)]
pub(crate) struct WatchArgs {
    /// The plugin directory.
    #[arg(long = "plugins")]
    dir: std::path::PathBuf,
    /// Events to replay, one JSON object per line; `-` reads stdin. The
    /// command ends at their end. A blank line starts a new run.
    #[arg(long)]
    events: Option<std::path::PathBuf>,
    /// Quiet time after a change before reloading, in milliseconds.
    #[arg(long, default_value_t = 100)]
    debounce_ms: u64,
}

impl WatchArgs {
    pub(crate) fn execute(self) -> Result<ExitCode> {
        watch(&self.dir, self.events.as_deref(), self.debounce_ms)
    }
}

pub(crate) fn watch(dir: &Path, events: Option<&Path>, debounce_ms: u64) -> Result<ExitCode> {
    let runtime = runtime()?;
    let started = std::time::Instant::now();
    let watcher = Arc::new(hookbox::watch::DirWatcher::start(
        &runtime,
        dir,
        std::time::Duration::from_millis(debounce_ms),
    )?);
    let first = watcher.snapshot();
    terminal::tell!(
        "watching {}: generation 1, {} plugin(s), loaded in {:.1} ms",
        dir.display(),
        first.plugins.len(),
        started.elapsed().as_secs_f64() * 1e3
    );
    for status in &first.plugins {
        if let Err(error) = &status.result {
            terminal::tell!(
                "  {} ({}): {}: {}",
                status.name,
                status.file,
                error.phase,
                error.reason
            );
        }
    }
    let reporter = watcher.clone();
    std::thread::spawn(move || {
        loop {
            if let Some(report) = reporter.next_report(std::time::Duration::from_secs(3600)) {
                terminal::tell!(
                    "reload: generation {} in {:.1} ms; compiled [{}]; removed [{}]",
                    report.generation,
                    report.took.as_secs_f64() * 1e3,
                    report.compiled.join(", "),
                    report.removed.join(", ")
                );
                if let Some(why) = &report.directory_error {
                    terminal::tell!("  failed: {why}");
                }
                for error in &report.errors {
                    terminal::tell!(
                        "  failed: {}: {}: {}",
                        error.plugin,
                        error.phase,
                        error.reason
                    );
                }
            }
        }
    });
    let Some(events) = events else {
        loop {
            std::thread::park();
        }
    };
    let (name, reader) = open_events(events)?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut runs = 0;
    let mut run: Option<Run> = None;
    for (index, line) in reader.lines().enumerate() {
        let line = line.with_context(|| format!("{name}: cannot read line {}", index + 1))?;
        let trimmed = line.trim();
        if trimmed.is_empty() {
            run = None;
            continue;
        }
        if trimmed.starts_with("//") {
            continue;
        }
        let event: StepEvent = match serde_json::from_str(trimmed) {
            Ok(event) => event,
            Err(e) => {
                terminal::tell!("{name}:{}: not an event: {e}", index + 1);
                continue;
            }
        };
        let current = run.get_or_insert_with(|| {
            runs += 1;
            watcher.snapshot().stack.start_run(format!("watch-{runs}"))
        });
        let outcome = current.step(&event);
        writeln!(out, "{}", hookbox::outcome_json(&outcome))?;
        out.flush()?;
        if current.is_over() {
            run = None;
        }
    }
    Ok(ExitCode::SUCCESS)
}
