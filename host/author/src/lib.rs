//! Tools for guard authors and operators, behind `hookbox new`, `build`,
//! `test` and `lock`.
//!
//! | module | job |
//! |---|---|
//! | [`new`](mod@new) | a guard project from a template, in any language of [`Language::ALL`] |
//! | [`lang`] | recognising a project's language and building it into a component |
//! | [`cases`] | test cases: events with the net flow they must get, run against a guard or a directory |
//! | [`lock`] | pinning a plugin directory's files by their sha256 in `hookbox.toml` |
//! | [`preinit`] | running a guard's start-up once at build time, its memory kept as every run's start |
//!
//! A build is checked as hookbox loads plugins: a component that would be
//! refused at load is a failed build, with the same diagnostic.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hookbox::{Plugin, PluginOptions, Runtime};

pub mod cases;
mod error;
pub mod lang;
pub mod lock;
pub mod new;
pub mod preinit;

pub use error::Error;
pub use lang::{Language, Project};
pub use new::{NewOptions, new};

/// A Rust guard's core module (built for `wasm32-unknown-unknown`) as the
/// component `hookbox build` makes of it: pre-initialised if it exports
/// [`preinit::INIT_EXPORT`], then encoded.
///
/// # Errors
/// [`Error::Build`] naming the step that failed.
pub fn component_of_module(module: &[u8]) -> Result<Vec<u8>, Error> {
    lang::encode(Language::Rust, module, None)
}

/// A guard built and checked.
pub struct Built {
    /// The project it was built from.
    pub project: Project,
    /// Where the component was written.
    pub path: PathBuf,
    /// The component, loaded as hookbox loads it.
    pub plugin: Plugin,
    /// How long the build took (toolchain and check).
    pub took: Duration,
}

/// Builds the guard project in `dir` into a component at `out` (default
/// `dir/NAME.wasm`) and checks that hookbox loads it.
///
/// # Errors
/// [`Error::NotAProject`], [`Error::MissingTool`] naming what to install,
/// [`Error::Build`] with the toolchain's output, or [`Error::Refused`] when
/// the component is not a plugin hookbox loads (nothing is written then).
pub fn build(runtime: &Runtime, dir: &Path, out: Option<&Path>) -> Result<Built, Error> {
    let started = Instant::now();
    let project = Project::open(dir)?;
    let bytes = project.compile()?;
    let plugin = Plugin::from_bytes(runtime, &project.name, &bytes, PluginOptions::default())?;
    let path = out.map_or_else(
        || dir.join(format!("{}.wasm", project.name)),
        Path::to_path_buf,
    );
    std::fs::write(&path, &bytes).map_err(|e| Error::io(&path, e))?;
    Ok(Built {
        project,
        path,
        plugin,
        took: started.elapsed(),
    })
}
