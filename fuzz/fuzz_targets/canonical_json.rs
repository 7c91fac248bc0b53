//! The `canonical_json` property (tests/fuzz/src/canonical_json.rs), under coverage-guided search.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hookbox_fuzz_properties::canonical_json::check(data));
