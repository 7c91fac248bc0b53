//! `hookbox-c-bindings WIT WORLD OUT`: the C bindings of WIT's WORLD, written
//! into OUT (see the library's docs).

use std::path::PathBuf;

use anyhow::{Context, bail};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [wit, world, out] = &args[..] else {
        bail!("usage: hookbox-c-bindings WIT WORLD OUT (for example: wit hook gen)");
    };
    let written = hookbox_c_bindings::generate(&PathBuf::from(wit), world, &PathBuf::from(out))
        .context("writing the C bindings")?;
    for path in written {
        println!("{}", path.display());
    }
    Ok(())
}
