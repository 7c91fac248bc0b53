//! The C bindings of a WIT world, as `wit-bindgen c WIT --world WORLD
//! --out-dir OUT` (wit-bindgen-cli 0.63) writes them, generated in-process
//! by the same library: `WORLD.h`, `WORLD.c` and `WORLD_component_type.o`
//! (the world's type, linked into the module so that encoding it as a
//! component knows its interface).
//!
//! `hookbox build` uses it for C guards; `languages/build.sh` runs the
//! `hookbox-c-bindings` binary (`cargo run -p hookbox-c-bindings -- WIT
//! WORLD OUT`). Neither needs `cargo install wit-bindgen-cli`.

use std::path::{Path, PathBuf};

use wit_bindgen_core::wit_parser::Resolve;

/// Why the bindings could not be written.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The WIT does not parse, or has no such world.
    #[error("the WIT in {} cannot be read: {reason}", path.display())]
    Wit {
        /// The WIT folder or file.
        path: PathBuf,
        /// What the parser said.
        reason: String,
    },
    /// The generator refused the world.
    #[error("wit-bindgen-c could not generate C bindings for world `{world}`: {reason}")]
    Generate {
        /// The world asked for.
        world: String,
        /// What the generator said.
        reason: String,
    },
    /// A file could not be written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// Writes the C bindings of `world` (a world of the WIT package at `wit`, a
/// folder or a file) into `out`, creating it, and returns the paths written,
/// in the generator's order.
///
/// # Errors
/// [`Error::Wit`] when the WIT does not parse or has no `world`,
/// [`Error::Generate`] when the generator refuses it, [`Error::Io`] when a
/// file cannot be written.
pub fn generate(wit: &Path, world: &str, out: &Path) -> Result<Vec<PathBuf>, Error> {
    let wit_error = |e: anyhow::Error| Error::Wit {
        path: wit.to_path_buf(),
        reason: format!("{e:#}"),
    };
    let mut resolve = Resolve::default();
    let (package, _) = resolve.push_path(wit).map_err(wit_error)?;
    let world_id = resolve
        .select_world(&[package], Some(world))
        .map_err(wit_error)?;
    let mut files = wit_bindgen_core::Files::default();
    wit_bindgen_c::Opts::default()
        .build()
        .generate(&mut resolve, world_id, &mut files)
        .map_err(|e| Error::Generate {
            world: world.to_string(),
            reason: format!("{e:#}"),
        })?;
    std::fs::create_dir_all(out).map_err(|source| Error::Io {
        path: out.to_path_buf(),
        source,
    })?;
    let mut written = Vec::new();
    for (name, contents) in files.iter() {
        let path = out.join(name);
        std::fs::write(&path, contents).map_err(|source| Error::Io {
            path: path.clone(),
            source,
        })?;
        written.push(path);
    }
    Ok(written)
}
