//! `hookbox.Stack`: where runs get their plugins, a watched directory or a
//! fixed list of files.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use hookbox::watch::{Snapshot, StackSource};
use hookbox::{HookStack, Plugin, PluginOptions, Runtime, RuntimeConfig};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors;
use crate::run::Run;

/// A stack of guard plugins that runs start on.
#[pyclass(frozen, module = "hookbox")]
pub struct Stack {
    source: StackSource,
    /// The plugins' names, for a stack of files (a directory's snapshot
    /// lists its own).
    names: Vec<String>,
    /// Numbers the runs started without an id.
    next_run: AtomicU64,
}

/// The process's runtime for `max_instances`: stacks made with the same
/// setting share one engine and one pool of instance slots. A runtime
/// reserves address space for every slot up front (terabytes, with the
/// default 1000), so one per stack would run a process out of it after a
/// dozen stacks.
fn runtime(py: Python<'_>, max_instances: Option<u32>) -> PyResult<Runtime> {
    static RUNTIMES: OnceLock<Mutex<HashMap<Option<u32>, Runtime>>> = OnceLock::new();
    let mut runtimes = RUNTIMES
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if let Some(runtime) = runtimes.get(&max_instances) {
        return Ok(runtime.clone());
    }
    let mut config = RuntimeConfig::default();
    if let Some(max) = max_instances {
        config.max_instances = max;
    }
    let runtime = Runtime::new(config).map_err(|e| errors::load(py, e.to_string()))?;
    runtimes.insert(max_instances, runtime.clone());
    Ok(runtime)
}

#[pymethods]
impl Stack {
    /// The plugins of `directory` (its `hookbox.toml`, or every `*.wasm`),
    /// watched: a change loads in the background and new runs take it,
    /// while runs already started keep the plugins they started with.
    /// `watch=False` loads the directory once.
    #[staticmethod]
    #[pyo3(signature = (directory, *, watch = true, debounce_ms = 200, max_instances = None))]
    fn from_directory(
        py: Python<'_>,
        directory: PathBuf,
        watch: bool,
        debounce_ms: u64,
        max_instances: Option<u32>,
    ) -> PyResult<Stack> {
        let runtime = runtime(py, max_instances)?;
        let source = py.detach(|| {
            if watch {
                StackSource::watch(&runtime, &directory, Duration::from_millis(debounce_ms))
                    .map_err(|e| e.to_string())
            } else {
                hookbox::directory::load(&runtime, &directory)
                    .map(|loaded| {
                        StackSource::Fixed(Arc::new(Snapshot {
                            plugins: loaded.plugins,
                            ..Snapshot::of_stack(loaded.stack)
                        }))
                    })
                    .map_err(|e| e.to_string())
            }
        });
        let source = source.map_err(|e| errors::load(py, e))?;
        Ok(Stack::new(source, Vec::new()))
    }

    /// The plugins at `paths`, in order, each named for its file stem;
    /// `config` gives a plugin (by that name) its configuration.
    #[staticmethod]
    #[pyo3(signature = (paths, *, config = None, max_instances = None))]
    fn from_files(
        py: Python<'_>,
        paths: Vec<PathBuf>,
        config: Option<HashMap<String, BTreeMap<String, String>>>,
        max_instances: Option<u32>,
    ) -> PyResult<Stack> {
        let runtime = runtime(py, max_instances)?;
        let mut config = config.unwrap_or_default();
        let loaded = py.detach(|| {
            let mut stack = HookStack::new();
            let mut names = Vec::new();
            for path in &paths {
                let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
                let options = PluginOptions {
                    config: stem.and_then(|s| config.remove(&s)).unwrap_or_default(),
                    ..PluginOptions::default()
                };
                let plugin =
                    Plugin::from_file(&runtime, path, options).map_err(|e| e.to_string())?;
                names.push(plugin.name().to_owned());
                stack.push_plugin(Arc::new(plugin));
            }
            if let Some(unknown) = config.keys().next() {
                return Err(format!(
                    "config names a plugin `{unknown}`, and no file here is named so (plugins: {}); a plugin's name is its file stem",
                    names.join(", ")
                ));
            }
            Ok::<_, String>((stack, names))
        });
        let (stack, names) = loaded.map_err(|e| errors::load(py, e))?;
        Ok(Stack::new(StackSource::fixed(stack), names))
    }

    /// Starts a run on the newest version of the stack; it keeps that
    /// version to its end. A run that cannot have its plugin instances
    /// (the runtime's `max_instances` are taken) raises `FailedClosed`
    /// naming hookbox, cause `limit`, on every event.
    #[pyo3(signature = (run_id = None))]
    fn start_run(&self, py: Python<'_>, run_id: Option<String>) -> Run {
        let run_id = run_id.unwrap_or_else(|| {
            let n = self.next_run.fetch_add(1, Ordering::Relaxed);
            format!("py-{}-{n}", std::process::id())
        });
        let snapshot = self.source.snapshot();
        py.detach(|| Run::open(&snapshot, run_id))
    }

    /// The version of the stack new runs start on: 1, and one more per
    /// reload of a watched directory.
    #[getter]
    fn generation(&self) -> u64 {
        self.source.snapshot().generation
    }

    /// Each plugin of a directory and how it loaded: dicts of `name`,
    /// `file`, `required`, `mode`, `loaded`, and `error` where it did not.
    /// A stack of files lists its plugins by name.
    #[getter]
    fn plugins<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let snapshot = self.source.snapshot();
        if snapshot.plugins.is_empty() {
            return self
                .names
                .iter()
                .map(|name| {
                    let entry = PyDict::new(py);
                    entry.set_item("name", name)?;
                    entry.set_item("loaded", true)?;
                    Ok(entry)
                })
                .collect();
        }
        snapshot
            .plugins
            .iter()
            .map(|p| {
                let entry = PyDict::new(py);
                entry.set_item("name", &p.name)?;
                entry.set_item("file", &p.file)?;
                entry.set_item("required", p.required)?;
                entry.set_item("mode", p.mode.name())?;
                entry.set_item("loaded", p.result.is_ok())?;
                if let Err(e) = &p.result {
                    entry.set_item("error", e.to_string())?;
                }
                Ok(entry)
            })
            .collect()
    }

    /// Why the directory's latest change could not be loaded (the previous
    /// stack stays live), if it could not.
    #[getter]
    fn directory_error(&self) -> Option<String> {
        self.source.snapshot().directory_error.clone()
    }

    /// Reloads a watched directory now, without waiting for the watcher;
    /// returns the new generation.
    fn reload(&self, py: Python<'_>) -> u64 {
        if let StackSource::Watched(watcher) = &self.source {
            py.detach(|| watcher.reload_now());
        }
        self.source.snapshot().generation
    }

    fn __repr__(&self) -> String {
        let snapshot = self.source.snapshot();
        format!(
            "<hookbox.Stack generation {} of {} plugins>",
            snapshot.generation,
            snapshot.stack.len()
        )
    }
}

impl Stack {
    fn new(source: StackSource, names: Vec<String>) -> Stack {
        Stack {
            source,
            names,
            next_run: AtomicU64::new(0),
        }
    }
}
