//! Link flags for the `hookbox` binary.

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=HOOKBOX_NO_RELR");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" && std::env::var_os("HOOKBOX_NO_RELR").is_none() {
        // An agent's command hook starts the binary once per event. Packed
        // relative relocations (DT_RELR) shrink the 51 000 entries the
        // dynamic loader reads at every start from 1.2 MB to a few KiB. The
        // binary then needs glibc 2.36 or later to start (it requires
        // GLIBC_ABI_DT_RELR): set HOOKBOX_NO_RELR=1 when building one to
        // run on an older system.
        println!("cargo::rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}
