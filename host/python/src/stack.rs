//! `hookbox.Stack`: where runs get their plugins, a watched directory or a
//! fixed list of files.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::time::Duration;

use hookbox_adapter::binding;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors;
use crate::run::Run;

/// A stack of guard plugins that runs start on.
#[pyclass(frozen, module = "hookbox")]
pub struct Stack(binding::Stack);

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
        let debounce = watch.then(|| Duration::from_millis(debounce_ms));
        py.detach(|| binding::Stack::directory(&directory, debounce, max_instances))
            .map(Stack)
            .map_err(|e| errors::load(py, e.to_string()))
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
        let config = config.unwrap_or_default();
        py.detach(|| binding::Stack::files(&paths, config, max_instances))
            .map(Stack)
            .map_err(|e| errors::load(py, e.to_string()))
    }

    /// Starts a run on the newest version of the stack; it keeps that
    /// version to its end. A run that cannot have its plugin instances
    /// (the runtime's `max_instances` are taken) raises `FailedClosed`
    /// naming hookbox, cause `limit`, on every event.
    #[pyo3(signature = (run_id = None))]
    fn start_run(&self, py: Python<'_>, run_id: Option<String>) -> Run {
        Run(py.detach(|| self.0.start_run(run_id, "py")))
    }

    /// The version of the stack new runs start on: 1, and one more per
    /// reload of a watched directory.
    #[getter]
    fn generation(&self) -> u64 {
        self.0.generation()
    }

    /// Each plugin of a directory and how it loaded: dicts of `name`,
    /// `file`, `required`, `mode`, `loaded`, and `error` where it did not.
    /// A stack of files lists its plugins by name.
    #[getter]
    fn plugins<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        self.0
            .plugins()
            .into_iter()
            .map(|p| {
                let entry = PyDict::new(py);
                entry.set_item("name", p.name)?;
                if let (Some(file), Some(required), Some(mode)) = (p.file, p.required, p.mode) {
                    entry.set_item("file", file)?;
                    entry.set_item("required", required)?;
                    entry.set_item("mode", mode)?;
                }
                entry.set_item("loaded", p.loaded)?;
                if let Some(error) = p.error {
                    entry.set_item("error", error)?;
                }
                Ok(entry)
            })
            .collect()
    }

    /// The plugins new runs get that subscribe to none of the events named
    /// in `sent` (kebab-case, `tool-call` ...): guards a caller sending
    /// only those would never ask.
    fn unheard(&self, py: Python<'_>, sent: Vec<String>) -> PyResult<Vec<String>> {
        let kinds = sent
            .iter()
            .map(|name| {
                serde_json::from_value::<hookbox::EventKind>(serde_json::Value::String(
                    name.clone(),
                ))
                .map_err(|_| errors::invalid(py, format!("`{name}` is not an event kind")))
            })
            .collect::<PyResult<hookbox::EventKinds>>()?;
        Ok(self.0.unheard(kinds))
    }

    /// Why the directory's latest change could not be loaded (the previous
    /// stack stays live), if it could not.
    #[getter]
    fn directory_error(&self) -> Option<String> {
        self.0.directory_error()
    }

    /// Reloads a watched directory now, without waiting for the watcher;
    /// returns the new generation.
    fn reload(&self, py: Python<'_>) -> u64 {
        py.detach(|| self.0.reload())
    }

    fn __repr__(&self) -> String {
        format!(
            "<hookbox.Stack generation {} of {} plugins>",
            self.0.generation(),
            self.0.len()
        )
    }
}
