//! `hookbox replay`: recorded events through a stack, and the stack
//! `--plugin`, `--plugins` and `--config` build (which `run` uses too).

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use hookbox::{HookStack, Plugin, PluginOptions, Runtime, StepEvent};

use crate::runtime;

/// `hookbox replay`'s arguments (its help is on [`crate`]'s `Command`).
#[derive(clap::Args)]
pub(crate) struct ReplayArgs {
    /// A plugin, in stack order (repeatable).
    #[arg(long = "plugin")]
    plugins: Vec<std::path::PathBuf>,
    /// A plugin directory: its hookbox.toml, or every *.wasm in file-name
    /// order (stacked after the --plugin ones).
    #[arg(long = "plugins")]
    dir: Option<std::path::PathBuf>,
    /// Replay the file this many times, each a separate run.
    #[arg(long, default_value_t = 1)]
    runs: u32,
    /// Also print, after each event, what every plugin keeps in its
    /// scratchpad (`"scratchpads": {PLUGIN: {KEY: VALUE}}`).
    #[arg(long)]
    scratchpad: bool,
    /// A setting for a --plugin file, `PLUGIN.KEY=VALUE` (repeatable);
    /// directory plugins take theirs from hookbox.toml.
    #[arg(long = "config", value_name = "PLUGIN.KEY=VALUE")]
    config: Vec<String>,
    /// Events, one JSON object per line; `-` reads stdin.
    events: std::path::PathBuf,
}

impl ReplayArgs {
    pub(crate) fn execute(self) -> Result<ExitCode> {
        replay(
            self.plugins,
            self.dir,
            self.runs,
            self.scratchpad,
            &self.config,
            &self.events,
        )
    }
}

pub(crate) fn replay(
    paths: Vec<PathBuf>,
    dir: Option<PathBuf>,
    runs: u32,
    scratchpad: bool,
    settings: &[String],
    events_path: &Path,
) -> Result<ExitCode> {
    let mut configs = parse_settings(settings)?;
    let events = read_events(events_path)?;
    let runtime = runtime()?;
    let (stack, _) = build_stack(&runtime, &paths, dir.as_deref(), &mut configs)?;

    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for run_number in 1..=runs {
        let mut run = stack.start_run(format!("replay-{run_number}"));
        for event in &events {
            let outcome = run.step(event);
            let mut line = hookbox::outcome_json(&outcome);
            if runs > 1 {
                line["run"] = run_number.into();
            }
            if scratchpad {
                line["scratchpads"] = serde_json::json!(run.scratchpads());
            }
            writeln!(out, "{line}")?;
            if run.is_over() {
                break;
            }
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// A stack of `--plugin` files (with their `--config` settings), then the
/// `--plugins` directory nested as one stack; and the sha256 of each
/// plugin's bytes, by name.
pub(crate) fn build_stack(
    runtime: &Runtime,
    paths: &[PathBuf],
    dir: Option<&Path>,
    configs: &mut BTreeMap<String, BTreeMap<String, String>>,
) -> Result<(HookStack, Arc<std::collections::HashMap<String, String>>)> {
    let mut stack = HookStack::new();
    let mut digests = std::collections::HashMap::new();
    for path in paths {
        if !path.is_file() {
            bail!("{}: no such plugin file", path.display());
        }
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let options = PluginOptions {
            config: configs.remove(&name).unwrap_or_default(),
            ..Default::default()
        };
        if let Ok(bytes) = std::fs::read(path) {
            digests.insert(name.clone(), hookbox::cache::sha256_hex(&bytes));
        }
        match Plugin::from_file(runtime, path, options) {
            Ok(plugin) => {
                stack.push_plugin(Arc::new(plugin));
            }
            Err(e) => {
                // A required plugin that cannot load makes the run fail closed.
                tracing::error!("{e}");
                stack.push_unloadable(&name, e.to_string());
            }
        }
    }
    if let Some(unknown) = configs.keys().next() {
        bail!("--config names plugin `{unknown}`, which is not among the --plugin files");
    }
    if let Some(dir) = dir {
        // The directory's plugins follow, with its manifest's order, config
        // and limits; a nested stack composes exactly like its plugins would.
        let loaded = hookbox::directory::load(runtime, dir)?;
        digests.extend(
            hookbox::audit::DecisionLog::digests(&loaded.plugins)
                .iter()
                .map(|(k, v)| (k.clone(), v.clone())),
        );
        stack.push_stack(loaded.stack);
    }
    Ok((stack, Arc::new(digests)))
}

/// `PLUGIN.KEY=VALUE` settings, grouped by plugin.
pub(crate) fn parse_settings(
    settings: &[String],
) -> Result<BTreeMap<String, BTreeMap<String, String>>> {
    let mut configs: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for setting in settings {
        let parsed = setting.split_once('=').and_then(|(name, value)| {
            let (plugin, key) = name.split_once('.')?;
            Some((plugin, key, value))
        });
        let Some((plugin, key, value)) = parsed else {
            bail!("--config {setting}: expected PLUGIN.KEY=VALUE, e.g. deny-tools.deny=shell");
        };
        configs
            .entry(plugin.to_owned())
            .or_default()
            .insert(key.to_owned(), value.to_owned());
    }
    Ok(configs)
}

/// Opens an events file, or stdin for `-`; returns a name for messages.
pub(crate) fn open_events(path: &Path) -> Result<(String, Box<dyn BufRead>)> {
    if path == Path::new("-") {
        return Ok(("stdin".into(), Box::new(std::io::stdin().lock())));
    }
    let file = std::fs::File::open(path)
        .with_context(|| format!("cannot open events file {}", path.display()))?;
    Ok((
        path.display().to_string(),
        Box::new(std::io::BufReader::new(file)),
    ))
}

/// Reads and parses every line before anything runs, so a typo on line 40
/// does not leave a half-replayed session.
fn read_events(path: &Path) -> Result<Vec<StepEvent>> {
    let (name, reader) = open_events(path)?;
    let mut events = Vec::new();
    for (index, line) in reader.lines().enumerate() {
        let line = line.with_context(|| format!("{name}: cannot read line {}", index + 1))?;
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with("//") {
            continue;
        }
        let event = serde_json::from_str(trimmed).with_context(|| {
            format!(
                "{name}:{}: not an event in hookbox's JSON form (docs/contract.md#json-forms)",
                index + 1
            )
        })?;
        events.push(event);
    }
    Ok(events)
}
