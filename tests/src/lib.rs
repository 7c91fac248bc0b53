//! Test support: the guests, built as components by `build.rs`, and WAT
//! guests made into components of the hook world.

/// Paths of the Rust guests, compiled to components.
pub mod guests {
    include!(concat!(env!("OUT_DIR"), "/guests.rs"));
}

/// Large tool results, for redact-secrets' deadline test and benchmark.
pub mod results {
    /// 2 MiB of log lines with `token` and a password here and there, and
    /// 2 MiB of one-line JSON (an API body) with the same in a nested
    /// object.
    pub fn two_mib(token: &str) -> [String; 2] {
        let mut log = String::new();
        let mut i = 0;
        while log.len() < 2 << 20 {
            i += 1;
            log.push_str(&format!(
                "2026-12-03T10:00:{:02}Z INFO request id={i} path=/api/v1/items status=200 took=3ms user=u{i}@example.com\n",
                i % 60
            ));
            if i % 5000 == 0 {
                log.push_str(&format!("DEBUG auth token={token} password=hunter2\n"));
            }
        }
        let items: Vec<serde_json::Value> = (0..25_000)
            .map(|i| serde_json::json!({"id": i, "name": format!("item {i}"), "tags": ["a", "b"], "note": "nothing to see here, move along please"}))
            .collect();
        let body =
            serde_json::json!({"items": items, "auth": {"password": "hunter2", "token": token}})
                .to_string();
        [log, body]
    }
}

/// Makes a component of the `hookbox:hook/hook` world from a core module in
/// WAT: embeds the world's type information, then encodes it, as
/// `wit-bindgen` and `wasm-tools component new` do for real guests.
///
/// The core module exports `on-event` (taking and returning an `i32`
/// pointer, as the canonical ABI flattens its large types), `subscriptions`
/// (returning a pointer to `(ptr, len)`), `memory` and `cabi_realloc`.
pub fn component_from_core_wat(core_wat: &str) -> anyhow::Result<Vec<u8>> {
    let mut module = wat::parse_str(core_wat)?;
    let mut resolve = wit_parser::Resolve::default();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../wit");
    let (package, _) = resolve.push_dir(&root)?;
    let world = resolve.select_world(&[package], Some("hook"))?;
    wit_component::embed_component_metadata(
        &mut module,
        &resolve,
        world,
        wit_component::StringEncoding::UTF8,
        false,
    )?;
    wit_component::ComponentEncoder::default()
        .module(&module)?
        .validate(true)
        .encode()
}
