//! Loading plugins: what is refused, and how the refusal reads.

use hookbox::{Error, LoadPhase, Plugin, PluginOptions};

use super::support::runtime;
use super::wat;

fn load(bytes: &[u8]) -> Result<Plugin, Error> {
    Plugin::from_bytes(runtime(), "candidate", bytes, PluginOptions::default())
}

fn refused(bytes: &[u8], phase: LoadPhase, says: &str) {
    match load(bytes) {
        Err(Error::Load {
            plugin,
            phase: got,
            reason,
        }) => {
            assert_eq!((plugin.as_str(), got), ("candidate", phase), "{reason}");
            assert!(reason.contains(says), "`{reason}` should say `{says}`");
        }
        Err(other) => panic!("wrong error: {other}"),
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
        other_world.as_bytes(),
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
        wrong_type.as_bytes(),
        LoadPhase::World,
        "does not match the contract",
    );
}

#[test]
fn a_component_importing_what_the_host_does_not_provide_is_refused() {
    let importer = r#"(component (import "evil:net/socket" (instance (export "connect" (func)))))"#;
    refused(importer.as_bytes(), LoadPhase::Link, "evil:net/socket");
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
