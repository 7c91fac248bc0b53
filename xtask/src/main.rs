//! `cargo demo`: builds the example plugins (through `hookbox-tests`, whose
//! build script compiles every guest), copies them into
//! `target/demo/plugins/`, and replays `examples/session.jsonl` through them
//! with the `hookbox` CLI.
//!
//! `cargo xtask plugins DIR` only copies the built example plugins to DIR;
//! `cargo run --release -p xtask -- bench` prints the core's figures.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use hookbox_tests::guests;

mod bench;

fn main() -> Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .context("workspace root")?;
    let mut args = std::env::args().skip(1);
    match args.next().as_deref() {
        Some("demo") | None => demo(root),
        Some("plugins") => {
            let dir = args
                .next()
                .map(PathBuf::from)
                .unwrap_or_else(|| root.join("target/demo/plugins"));
            copy_plugins(&dir).map(drop)
        }
        Some("bench") => bench::run(),
        Some(other) => bail!("unknown task `{other}`; tasks: demo, plugins [DIR], bench"),
    }
}

fn demo(root: &Path) -> Result<()> {
    let dir = root.join("target/demo/plugins");
    let names = copy_plugins(&dir)?;
    println!("example plugins in {}: {}", dir.display(), names.join(", "));
    let session = root.join("examples/session.jsonl");
    println!("replaying {}:\n", session.display());
    for line in std::fs::read_to_string(&session)?
        .lines()
        .filter(|l| l.starts_with("//"))
    {
        println!("{line}");
    }
    // The `hookbox` command itself, in-process:
    // hookbox replay --plugins target/demo/plugins examples/session.jsonl
    let args = [
        "hookbox".as_ref(),
        "replay".as_ref(),
        "--plugins".as_ref(),
        dir.as_os_str(),
        session.as_os_str(),
    ];
    if hookbox::cli::main(args) != std::process::ExitCode::SUCCESS {
        bail!("hookbox replay failed");
    }
    Ok(())
}

/// Copies the example plugins (not the test guests) into `dir`.
fn copy_plugins(dir: &Path) -> Result<Vec<&'static str>> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    for (name, path) in guests::ALL
        .iter()
        .filter(|(name, _)| guests::EXAMPLES.contains(name))
    {
        std::fs::copy(path, dir.join(format!("{name}.wasm")))
            .with_context(|| format!("copying {name}"))?;
    }
    Ok(guests::EXAMPLES.to_vec())
}
