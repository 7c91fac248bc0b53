//! The `flow_json` property (tests/fuzz/src/flow_json.rs), under coverage-guided search.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hookbox_fuzz_properties::flow_json::check(data));
