//! The `mcp_message` property (tests/fuzz/src/mcp_message.rs), under coverage-guided search.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hookbox_fuzz_properties::mcp_message::check(data));
