//! The `guest_answer` property (tests/fuzz/src/guest_answer.rs), under coverage-guided search.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hookbox_fuzz_properties::guest_answer::check(data));
