//! The `agent_input` property (tests/fuzz/src/agent_input.rs), under coverage-guided search.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hookbox_fuzz_properties::agent_input::check(data));
