//! The `event_json` property (tests/fuzz/src/event_json.rs), under coverage-guided search.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hookbox_fuzz_properties::event_json::check(data));
