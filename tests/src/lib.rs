//! Test support: the guests, built as components by `build.rs`, and WAT
//! guests made into components of the hook world.

/// Paths of the Rust guests, compiled to components.
pub mod guests {
    include!(concat!(env!("OUT_DIR"), "/guests.rs"));
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
