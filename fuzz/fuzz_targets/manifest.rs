//! The `manifest` property (tests/fuzz/src/manifest.rs), under coverage-guided search.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hookbox_fuzz_properties::manifest::check(data));
