//! Links the addon as Node-API wants (undefined symbols resolved by the
//! `node` that loads it).

fn main() {
    napi_build::setup();
}
