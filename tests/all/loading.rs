//! Loading plugins: what is refused, and how the refusal reads.

use hookbox::{LoadError, LoadPhase, Plugin, PluginOptions};

use super::support::runtime;
use super::wat;

fn load(bytes: &[u8]) -> Result<Plugin, LoadError> {
    Plugin::from_bytes(runtime(), "candidate", bytes, PluginOptions::default())
}

fn refused(bytes: &[u8], phase: LoadPhase, says: &str) {
    match load(bytes) {
        Err(LoadError {
            plugin,
            phase: got,
            reason,
        }) => {
            assert_eq!((plugin.as_str(), got), ("candidate", phase), "{reason}");
            assert!(reason.contains(says), "`{reason}` should say `{says}`");
        }
        Ok(_) => panic!("must be refused"),
    }
}

#[test]
fn a_core_module_is_refused_with_how_to_make_a_component() {
    refused(
        &wat::parse("(module)"),
        LoadPhase::Compile,
        "core WebAssembly module, not a component",
    );
}

#[test]
fn a_corrupt_file_is_refused() {
    refused(b"\0asm\x0d\0\x01\0garbage", LoadPhase::Compile, "");
    refused(b"not wasm at all", LoadPhase::Compile, "");
}

#[test]
fn a_truncated_component_is_refused() {
    let bytes = std::fs::read(hookbox_tests::guests::DENY_TOOLS).unwrap();
    refused(&bytes[..bytes.len() / 2], LoadPhase::Compile, "");
}

#[test]
fn a_component_of_another_world_is_refused() {
    let other_world = r#"(component
        (core module $m (func (export "f")))
        (core instance $i (instantiate $m))
        (func (export "hello") (canon lift (core func $i "f"))))"#;
    refused(
        &wat::parse(other_world),
        LoadPhase::World,
        "does not export `on-event`",
    );
}

#[test]
fn an_on_event_of_the_wrong_type_is_refused() {
    let wrong_type = r#"(component
        (core module $m (func (export "f")) (func (export "s") (result i32) (i32.const 0)) (memory (export "memory") 1))
        (core instance $i (instantiate $m))
        (func (export "on-event") (canon lift (core func $i "f")))
        (type $kinds (list u8))
        (func (export "subscriptions") (result $kinds) (canon lift (core func $i "s") (memory (core memory $i "memory")))))"#;
    refused(
        &wat::parse(wrong_type),
        LoadPhase::World,
        "does not match the contract",
    );
}

#[test]
fn a_component_importing_what_the_host_does_not_provide_is_refused() {
    let importer = r#"(component (import "evil:net/socket" (instance (export "connect" (func)))))"#;
    refused(&wat::parse(importer), LoadPhase::Link, "evil:net/socket");
}

#[test]
fn a_component_built_against_another_version_of_the_world_is_told_to_regenerate() {
    let newer =
        r#"(component (import "hookbox:hook/config@0.2.0" (instance (export "get" (func)))))"#;
    refused(
        &wat::parse(newer),
        LoadPhase::Link,
        "`hookbox:hook/config@0.2.0` (built against hookbox:hook@0.2.0, this host implements hookbox:hook@0.1.0: regenerate the bindings from its wit/hook.wit)",
    );
}

#[test]
fn a_component_importing_wasi_http_is_refused_with_every_offending_import() {
    let http = r#"(component
        (import "wasi:cli/stdout@0.2.0" (instance))
        (import "wasi:http/types@0.2.0" (instance (export "new-fields" (func))))
        (import "wasi:http/outgoing-handler@0.2.0" (instance (export "handle" (func)))))"#;
    refused(
        &wat::parse(http),
        LoadPhase::Link,
        "`wasi:http/types@0.2.0` (guests get no network",
    );
    refused(
        &wat::parse(http),
        LoadPhase::Link,
        "`wasi:http/outgoing-handler@0.2.0`",
    );
    let Err(LoadError { reason, .. }) = load(&wat::parse(http)) else {
        panic!("refused")
    };
    assert!(
        !reason.contains("`wasi:cli/stdout@0.2.0`"),
        "provided, not blamed: {reason}"
    );
}

#[test]
fn a_command_is_told_it_is_not_a_hook() {
    let command = r#"(component
        (core module $m (func (export "run") (result i32) (i32.const 0)))
        (core instance $i (instantiate $m))
        (func $run (result (result)) (canon lift (core func $i "run")))
        (instance $cli (export "run" (func $run)))
        (export "wasi:cli/run@0.2.0" (instance $cli)))"#;
    refused(&wat::parse(command), LoadPhase::World, "so it is a command");
}

#[test]
fn inspect_reports_the_facts_of_a_component_that_would_not_load() {
    let newer =
        r#"(component (import "hookbox:hook/config@0.2.0" (instance (export "get" (func)))))"#;
    let info = hookbox::inspect(runtime(), "candidate", &wat::parse(newer)).unwrap();
    assert_eq!(info.imports, ["hookbox:hook/config@0.2.0"]);
    assert!(info.exports.is_empty());
    assert!(!hookbox::inspect::provided(&info.imports[0]));
}

#[test]
fn with_options_reuses_the_compiled_plugin_and_asks_subscriptions_again() {
    let compiled = super::support::plugin(hookbox_tests::guests::DIRECTOR, &[]);
    assert!(compiled.subscriptions().iter().next().is_none());
    // The director subscribes to the kinds its config names.
    let config = [("tool-result".to_string(), "continue".to_string())].into();
    let plugin = compiled
        .with_options(PluginOptions {
            config,
            ..PluginOptions::default()
        })
        .unwrap();
    let kinds: Vec<&str> = plugin.subscriptions().iter().map(|k| k.name()).collect();
    assert_eq!(kinds, ["tool-result"]);
}

#[test]
fn a_guest_that_traps_while_answering_subscriptions_is_refused() {
    let bytes = wat::hook_with_subscriptions("(i32.const 3072)", "(unreachable)");
    refused(&bytes, LoadPhase::Instantiate, "subscriptions");
}

#[test]
fn a_good_plugin_reports_its_facts() {
    let plugin = super::support::plugin(hookbox_tests::guests::DENY_TOOLS, &[]);
    let info = plugin.info();
    assert_eq!(plugin.name(), "deny-tools");
    assert_eq!(
        plugin
            .subscriptions()
            .iter()
            .map(|k| k.name())
            .collect::<Vec<_>>(),
        ["tool-call"]
    );
    assert!(
        !info.uses_wasi,
        "SDK guests import no WASI: {:?}",
        info.imports
    );
    assert!(info.exports.contains(&"on-event".to_string()));
}

#[test]
fn a_file_that_is_not_webassembly_is_refused_in_one_short_line() {
    let text = "definitely not a component\n".repeat(100_000);
    let error = load(text.as_bytes()).expect_err("refused");
    assert_eq!(error.phase, LoadPhase::Compile);
    assert!(error.reason.contains("not a WebAssembly binary"), "{error}");
    assert!(
        error.to_string().len() < 300,
        "nothing of the file is quoted: {error}"
    );
}

#[test]
fn a_plugin_past_the_size_bound_is_refused_before_it_is_read() {
    let runtime = hookbox::Runtime::new(hookbox::RuntimeConfig {
        max_plugin_bytes: 1024,
        ..hookbox::RuntimeConfig::default()
    })
    .unwrap();
    let path = std::path::Path::new(hookbox_tests::guests::DENY_TOOLS);
    let error = Plugin::from_file(&runtime, path, PluginOptions::default()).unwrap_err();
    assert_eq!(error.phase, LoadPhase::Read, "{error}");
    assert!(error.reason.contains("max_plugin_bytes"), "{error}");
}
