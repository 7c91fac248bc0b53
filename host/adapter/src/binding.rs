//! What a language binding's `Stack` and `Run` are (Python's, Node's), so
//! that a binding only converts values and raises its language's errors:
//!
//! | a binding's | here | underneath |
//! |---|---|---|
//! | stack from a directory | [`Stack::directory`] | [`StackSource::watch`] (hot-reloaded, each run pinned to its snapshot), or [`hookbox::directory::load`] once |
//! | stack from files | [`Stack::files`] | [`Plugin::from_file`] into one fixed [`HookStack`], each plugin named for its file stem |
//! | the runtime | [`shared_runtime`] | one per `max_instances` setting in the process |
//! | start a run | [`Stack::start_run`] | a [`Door`] on the newest snapshot |
//! | a run's events | [`Run::door`] | its door: once closed, an ended run gives its end again, any other fails closed naming the host |
//! | a tool call's verdict | [`CallAnswer`] | [`Call`], flattened to `run` / `skip` / `refuse` |

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use hookbox::watch::{Snapshot, StackSource};
use hookbox::{
    Error, EventKinds, HookStack, LoadError, LoadPhase, Plugin, PluginOptions, Runtime,
    RuntimeConfig,
};

use crate::door::Door;
use crate::verdict::Call;

/// The process's runtime for `max_instances` (`None`: the default): stacks
/// made with the same setting share one engine and one pool of instance
/// slots. A runtime reserves address space for every slot up front
/// (terabytes with the default 1000), so one per stack would run a process
/// out of it after a dozen stacks.
///
/// # Errors
/// The engine's, if wasmtime refuses the configuration.
pub fn shared_runtime(max_instances: Option<u32>) -> Result<Runtime, Error> {
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
    let runtime = Runtime::new(config)?;
    runtimes.insert(max_instances, runtime.clone());
    Ok(runtime)
}

/// A stack of guard plugins that runs start on.
pub struct Stack {
    source: StackSource,
    /// The plugins' names, for a stack of files (a directory's snapshot
    /// lists its own).
    names: Vec<String>,
    /// Numbers the runs started without an id.
    next_run: AtomicU64,
}

/// One plugin of a stack and how it loaded.
#[derive(Clone, Debug, PartialEq)]
pub struct PluginInfo {
    /// Its name.
    pub name: String,
    /// Its file, as a directory's manifest names it (`None` for a stack of
    /// files).
    pub file: Option<String>,
    /// Whether a failure to load it fails every run closed (a directory's).
    pub required: Option<bool>,
    /// `enforce` or `shadow` (a directory's).
    pub mode: Option<&'static str>,
    /// Whether it loaded.
    pub loaded: bool,
    /// Why it did not.
    pub error: Option<String>,
}

impl Stack {
    /// The plugins of `directory` (its `hookbox.toml`, or every `*.wasm`):
    /// watched with `debounce` when given (a change loads in the
    /// background and new runs take it, while runs already started keep
    /// the plugins they started with), else loaded once.
    ///
    /// # Errors
    /// The runtime's or the directory's.
    pub fn directory(
        directory: &Path,
        debounce: Option<Duration>,
        max_instances: Option<u32>,
    ) -> Result<Stack, Error> {
        let runtime = shared_runtime(max_instances)?;
        let source = match debounce {
            Some(debounce) => StackSource::watch(&runtime, directory, debounce)?,
            None => {
                let loaded = hookbox::directory::load(&runtime, directory)?;
                StackSource::Fixed(Arc::new(Snapshot {
                    plugins: loaded.plugins,
                    ..Snapshot::of_stack(loaded.stack)
                }))
            }
        };
        Ok(Stack::new(source, Vec::new()))
    }

    /// The plugins at `paths`, in order, each named for its file stem;
    /// `config` gives a plugin (by that name) its configuration.
    ///
    /// # Errors
    /// The first plugin that does not load; a `config` entry that names no
    /// plugin here.
    pub fn files(
        paths: &[PathBuf],
        mut config: HashMap<String, BTreeMap<String, String>>,
        max_instances: Option<u32>,
    ) -> Result<Stack, Error> {
        let runtime = shared_runtime(max_instances)?;
        let mut stack = HookStack::new();
        let mut names = Vec::new();
        for path in paths {
            let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
            let options = PluginOptions {
                config: stem.and_then(|s| config.remove(&s)).unwrap_or_default(),
                ..PluginOptions::default()
            };
            let plugin = Plugin::from_file(&runtime, path, options)?;
            names.push(plugin.name().to_owned());
            stack.push_plugin(Arc::new(plugin));
        }
        if let Some(unknown) = config.into_keys().next() {
            let reason = format!(
                "the config names a plugin `{unknown}`, and no file here is named so (plugins: {}); a plugin's name is its file stem",
                names.join(", ")
            );
            return Err(LoadError::new(unknown, LoadPhase::Read, reason).into());
        }
        Ok(Stack::new(StackSource::fixed(stack), names))
    }

    fn new(source: StackSource, names: Vec<String>) -> Stack {
        Stack {
            source,
            names,
            next_run: AtomicU64::new(0),
        }
    }

    /// Starts a run on the newest version of the stack; it keeps that
    /// version to its end. Without a `run_id`, the run is named
    /// `<prefix>-<pid>-<n>`. A run that cannot have its plugin instances
    /// (the runtime's `max_instances` are taken) fails every event closed,
    /// naming the host, cause `limit`.
    pub fn start_run(&self, run_id: Option<String>, prefix: &str) -> Run {
        let run_id = run_id.unwrap_or_else(|| {
            let n = self.next_run.fetch_add(1, Ordering::Relaxed);
            format!("{prefix}-{}-{n}", std::process::id())
        });
        let snapshot = self.source.snapshot();
        let door = Door::open(&snapshot.stack, run_id);
        let took = Arc::new(Took::default());
        // A run that could not start has no guards to time.
        let _ = door.with_run(|run| run.observe(took.clone()));
        Run {
            door,
            generation: snapshot.generation,
            took,
        }
    }

    /// The version of the stack new runs start on: 1, and one more per
    /// reload of a watched directory.
    pub fn generation(&self) -> u64 {
        self.source.snapshot().generation
    }

    /// How many plugins new runs get.
    pub fn len(&self) -> usize {
        self.source.snapshot().stack.len()
    }

    /// Whether new runs get no plugin at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Each plugin and how it loaded: a directory's as its manifest says,
    /// a stack of files' by name.
    pub fn plugins(&self) -> Vec<PluginInfo> {
        let snapshot = self.source.snapshot();
        if snapshot.plugins.is_empty() {
            return self
                .names
                .iter()
                .map(|name| PluginInfo {
                    name: name.clone(),
                    file: None,
                    required: None,
                    mode: None,
                    loaded: true,
                    error: None,
                })
                .collect();
        }
        snapshot
            .plugins
            .iter()
            .map(|p| PluginInfo {
                name: p.name.clone(),
                file: Some(p.file.clone()),
                required: Some(p.required),
                mode: Some(p.mode.name()),
                loaded: p.result.is_ok(),
                error: p.result.as_ref().err().map(ToString::to_string),
            })
            .collect()
    }

    /// The plugins of the newest version that subscribe to none of the
    /// events in `sent` (those a binding's framework guard sends): guards
    /// that would never be asked there. A framework guard refuses such a
    /// stack, or warns, as its operator chose.
    pub fn unheard(&self, sent: EventKinds) -> Vec<String> {
        self.source
            .snapshot()
            .stack
            .subscribers()
            .into_iter()
            .filter(|(_, wants)| wants.iter().all(|kind| !sent.contains(kind)))
            .map(|(name, _)| name)
            .collect()
    }

    /// Why the directory's latest change could not be loaded (the previous
    /// stack stays live), if it could not.
    pub fn directory_error(&self) -> Option<String> {
        self.source.snapshot().directory_error.clone()
    }

    /// Reloads a watched directory now, without waiting for the watcher;
    /// the new generation.
    pub fn reload(&self) -> u64 {
        if let StackSource::Watched(watcher) = &self.source {
            watcher.reload_now();
        }
        self.generation()
    }
}

/// One agent run's guards, pinned to the stack version it started on,
/// until it is closed.
pub struct Run {
    door: Door,
    generation: u64,
    took: Arc<Took>,
}

/// The guards' time, summed over their answers.
#[derive(Default)]
struct Took(AtomicU64);

impl hookbox::Observe for Took {
    fn decided(&self, decided: &hookbox::Decided<'_>) {
        let nanos = u64::try_from(decided.took.as_nanos()).unwrap_or(u64::MAX);
        self.0.fetch_add(nanos, Ordering::Relaxed);
    }
}

impl Run {
    /// The run's door, which every event of the run is asked through.
    pub fn door(&self) -> &Door {
        &self.door
    }

    /// Ends the run now and gives its plugin instances back to the
    /// runtime: a run that had ended gives every later event its end
    /// again, one that had not fails them closed.
    pub fn close(&self) {
        self.door.close();
    }

    /// The run's id.
    pub fn run_id(&self) -> &str {
        self.door.run_id()
    }

    /// The version of the stack the run is pinned to.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Whether the run has ended (a fail-closed, a terminate, a close).
    pub fn is_over(&self) -> bool {
        self.door.is_over()
    }

    /// The time the run's guards have taken so far: every answer's, from
    /// asking the guest to its checked answer (an instance's start
    /// included on its first event), as the decision log's `latency_us`
    /// counts it, summed. What the door and the language around it take
    /// is not in it.
    pub fn guards_took(&self) -> Duration {
        Duration::from_nanos(self.took.0.load(Ordering::Relaxed))
    }
}

/// A tool call's verdict, flat: what a binding hands its language.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallAnswer {
    /// `run`, `skip` or `refuse`.
    pub kind: &'static str,
    /// `run`: the arguments to run the tool with, JSON object text (a
    /// guard's rewrite, or what was asked in canonical form). `skip`: what
    /// the skipping guard saw.
    pub args: Option<String>,
    /// `skip`: the answer the model gets instead of the tool's result.
    /// `refuse`: why the call did not run, for the model or the user.
    pub reason: Option<String>,
    /// The plugin that rewrote (`run`), skipped or refused the call.
    pub by: Option<String>,
}

impl CallAnswer {
    /// Whether a guard rewrote the arguments.
    pub fn rewritten(&self) -> bool {
        self.kind == "run" && self.by.is_some()
    }
}

impl From<Call> for CallAnswer {
    fn from(call: Call) -> CallAnswer {
        match call {
            Call::Run { args, rewritten_by } => CallAnswer {
                kind: "run",
                args: Some(args),
                reason: None,
                by: rewritten_by.map(|by| by.to_string()),
            },
            Call::Skip { reason, args, by } => CallAnswer {
                kind: "skip",
                args: Some(args),
                reason: Some(reason),
                by: Some(by.to_string()),
            },
            Call::Refuse { by, why } => CallAnswer {
                kind: "refuse",
                args: None,
                reason: Some(why),
                by: Some(by.to_string()),
            },
            // [`Door::tool_call`] returns a stop as its error instead.
            Call::Stop(stop) => CallAnswer {
                kind: "refuse",
                args: None,
                reason: Some(stop.reason()),
                by: Some(hookbox::HOST.to_owned()),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hookbox::{Cause, Stopped};

    #[test]
    fn a_closed_run_fails_every_event_closed_naming_the_host() {
        let stack = Stack::new(StackSource::fixed(HookStack::new()), Vec::new());
        let run = stack.start_run(None, "t");
        assert!(run.run_id().starts_with("t-"), "{}", run.run_id());
        assert!(!run.is_over());
        run.close();
        assert!(run.is_over());
        let Some(Stopped::FailedClosed(failure)) = run.door().stopped() else {
            panic!("a closed run let an event through");
        };
        assert_eq!(
            (&*failure.plugin, failure.cause),
            (hookbox::HOST, Cause::Limit)
        );
    }

    #[test]
    fn a_plugin_that_waits_for_events_never_sent_is_named() {
        use hookbox::{EventKind, Flow, HookContext, StepEvent};

        struct Watching(&'static str, EventKinds);
        impl hookbox::Hook for Watching {
            fn name(&self) -> &str {
                self.0
            }
            fn subscriptions(&self) -> EventKinds {
                self.1
            }
            fn on_event(&self, _: &HookContext, _: &StepEvent) -> Flow {
                Flow::Continue
            }
        }
        let mut stack = HookStack::new();
        stack.push_hook(Watching(
            "output-pii",
            EventKinds::NONE.with(EventKind::CompletionResponse),
        ));
        stack.push_hook(Watching("deny", EventKinds::NONE.with(EventKind::ToolCall)));
        let mut nested = HookStack::new();
        nested.push_hook(Watching(
            "deltas",
            EventKinds::NONE.with(EventKind::TextDelta),
        ));
        stack.push_stack(nested);
        let stack = Stack::new(StackSource::fixed(stack), Vec::new());
        let sent = [
            EventKind::CompletionCall,
            EventKind::ToolCall,
            EventKind::ToolResult,
        ];
        assert_eq!(
            stack.unheard(sent.into_iter().collect()),
            ["output-pii", "deltas"]
        );
    }

    #[test]
    fn a_config_for_no_plugin_is_refused() {
        let config = HashMap::from([("nobody".to_owned(), BTreeMap::new())]);
        let Err(Error::Load(refused)) = Stack::files(&[], config, Some(4)) else {
            panic!("a config for no plugin loaded");
        };
        assert_eq!(refused.plugin, "nobody");
        assert!(refused.reason.contains("file stem"), "{}", refused.reason);
    }
}
