//! Shared helpers: one runtime per test binary, plugins compiled once.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, OnceLock};

use hookbox::{
    CompletionCall, Decision, HookStack, InvalidToolCall, Limits, Outcome, Plugin, PluginOptions,
    Run, Runtime, RuntimeConfig, StepEvent, TextDelta, ToolCall, ToolResult,
};

pub fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| Runtime::new(RuntimeConfig::default()).expect("runtime"))
}

/// The component `hookbox build` makes of the guest core module at
/// `module` (pre-initialised when it asks to be), written once per test
/// binary; its path.
pub fn built_as_hookbox_builds(module: &str) -> String {
    static BUILT: OnceLock<Mutex<HashMap<String, String>>> = OnceLock::new();
    let mut built = BUILT.get_or_init(Default::default).lock().unwrap();
    if let Some(path) = built.get(module) {
        return path.clone();
    }
    let bytes = std::fs::read(module).expect("the guest's core module");
    let component = hookbox_author::component_of_module(&bytes).expect("hookbox build's encoding");
    let name = std::path::Path::new(module).file_name().unwrap();
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::write(&path, component).unwrap();
    let path = path.display().to_string();
    built.insert(module.to_owned(), path.clone());
    path
}

/// The guest at `path` with `config`, compiled once per test binary.
pub fn plugin(path: &str, config: &[(&str, &str)]) -> Arc<Plugin> {
    plugin_with(path, config, None)
}

pub fn plugin_with(path: &str, config: &[(&str, &str)], limits: Option<Limits>) -> Arc<Plugin> {
    type Cache = Mutex<HashMap<String, Arc<Plugin>>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let key = format!("{path}{config:?}{limits:?}");
    if let Some(found) = CACHE
        .get_or_init(Default::default)
        .lock()
        .unwrap()
        .get(&key)
    {
        return found.clone();
    }
    let config: BTreeMap<String, String> = config
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let options = PluginOptions { limits, config };
    let plugin =
        Arc::new(Plugin::from_file(runtime(), path.as_ref(), options).expect("plugin loads"));
    CACHE
        .get()
        .unwrap()
        .lock()
        .unwrap()
        .insert(key, plugin.clone());
    plugin
}

/// A puppet named `name`, as a plugin too (its decisions name it),
/// answering to `name:...`.
pub fn named_puppet(name: &str) -> Arc<Plugin> {
    let bytes = std::fs::read(hookbox_tests::guests::PUPPET).unwrap();
    let options = PluginOptions {
        config: [("name".to_string(), name.to_string())].into(),
        ..PluginOptions::default()
    };
    Arc::new(Plugin::from_bytes(runtime(), name, &bytes, options).unwrap())
}

/// A puppet answering to `name` (commands `name:...`).
pub fn puppet(name: &str) -> Arc<Plugin> {
    plugin(hookbox_tests::guests::PUPPET, &[("name", name)])
}

pub fn stack(plugins: &[Arc<Plugin>]) -> HookStack {
    let mut stack = HookStack::new();
    for p in plugins {
        stack.push_plugin(p.clone());
    }
    stack
}

/// Dispatches one event in a fresh run.
pub fn once(stack: &HookStack, event: &StepEvent) -> Outcome {
    let mut run = stack.start_run("test-run");
    dispatch(&mut run, event)
}

pub fn dispatch(run: &mut Run, event: &StepEvent) -> Outcome {
    let ctx = run.context(1);
    run.dispatch(&ctx, event)
}

pub fn decided(outcome: Outcome) -> Decision {
    outcome
        .unwrap_or_else(|failure| panic!("expected a decision, the run failed closed: {failure}"))
}

pub fn tool_call(name: &str, args: &str) -> StepEvent {
    StepEvent::ToolCall(ToolCall {
        tool_name: name.into(),
        tool_call_id: Some("call-1".into()),
        internal_call_id: "i-1".into(),
        args: args.into(),
    })
}

pub fn tool_result(name: &str, result: &str) -> StepEvent {
    StepEvent::ToolResult(ToolResult {
        tool_name: name.into(),
        internal_call_id: "i-1".into(),
        args: "{}".into(),
        result: result.into(),
        extensions: "{}".into(),
        ..Default::default()
    })
}

pub fn completion_call(prompt: &str) -> StepEvent {
    StepEvent::CompletionCall(CompletionCall {
        prompt: prompt.into(),
        history: vec![],
        turn: 1,
    })
}

pub fn invalid_tool_call(name: &str, allowed: &[&str]) -> StepEvent {
    StepEvent::InvalidToolCall(InvalidToolCall {
        tool_name: name.into(),
        available_tools: allowed.iter().map(|s| s.to_string()).collect(),
        allowed_tools: allowed.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    })
}

pub fn text_delta(delta: &str) -> StepEvent {
    StepEvent::TextDelta(TextDelta {
        delta: delta.into(),
        aggregated: delta.into(),
    })
}
