//! `hookbox new`, `build`, `test` and `lock`: the guard author's and the
//! operator's commands, on `hookbox-author`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use hookbox::Plugin;
use hookbox_author::cases::{self, Target};
use hookbox_author::{Language, NewOptions, Project};

use crate::terminal::{say, tell};

/// `hookbox new`'s arguments (its help is on [`crate`]'s `Command`).
#[derive(clap::Args)]
pub(crate) struct NewArgs {
    /// The plugin's name, and its folder's: lowercase letters, digits, dashes.
    name: String,
    /// rust, javascript, python, c or go.
    #[arg(long, default_value = "rust")]
    lang: String,
    /// Where to make the folder.
    #[arg(long, default_value = ".")]
    dir: std::path::PathBuf,
    /// A Rust guard's `hookbox-sdk`: the path of the SDK's folder
    /// (default: the SDK this hookbox was built from).
    #[arg(long, value_name = "PATH")]
    sdk: Option<std::path::PathBuf>,
}

impl NewArgs {
    pub(crate) fn execute(self) -> Result<ExitCode> {
        new(&self.name, &self.lang, &self.dir, self.sdk)
    }
}

/// `hookbox build`'s arguments (its help is on [`crate`]'s `Command`).
#[derive(clap::Args)]
pub(crate) struct BuildArgs {
    /// The project's folder.
    #[arg(default_value = ".")]
    dir: std::path::PathBuf,
    /// Where to write the component (default: DIR/NAME.wasm).
    #[arg(short, long, value_name = "FILE")]
    out: Option<std::path::PathBuf>,
}

impl BuildArgs {
    pub(crate) fn execute(self) -> Result<ExitCode> {
        build(&self.dir, self.out.as_deref())
    }
}

/// `hookbox test`'s arguments (its help is on [`crate`]'s `Command`).
#[derive(clap::Args)]
pub(crate) struct TestArgs {
    /// Guard projects, components (`.wasm`) or plugin directories
    /// (default: the current folder).
    paths: Vec<std::path::PathBuf>,
    /// A case file, or a folder of them, instead of the default place.
    #[arg(long, value_name = "PATH")]
    cases: Option<std::path::PathBuf>,
}

impl TestArgs {
    pub(crate) fn execute(self) -> Result<ExitCode> {
        test(&self.paths, self.cases.as_deref())
    }
}

/// `hookbox lock`'s arguments (its help is on [`crate`]'s `Command`).
#[derive(clap::Args)]
pub(crate) struct LockArgs {
    /// The plugin directory.
    dir: std::path::PathBuf,
}

impl LockArgs {
    pub(crate) fn execute(self) -> Result<ExitCode> {
        crate::registry::pull_unpulled(&self.dir).and_then(|()| lock(&self.dir))
    }
}

/// `hookbox new NAME --lang LANG`.
pub(crate) fn new(name: &str, lang: &str, parent: &Path, sdk: Option<PathBuf>) -> Result<ExitCode> {
    let language = Language::from_name(lang)?;
    let project = hookbox_author::new(parent, name, language, &NewOptions { sdk })?;
    say!(
        "created {} ({language} guard `{}`)",
        project.dir.display(),
        project.name
    );
    say!("next:");
    say!("  cd {}", project.dir.display());
    say!("  hookbox test      # builds it and runs cases/*.json");
    say!(
        "  hookbox build     # writes {}.wasm, checked as hookbox loads it",
        project.name
    );
    Ok(ExitCode::SUCCESS)
}

/// `hookbox build [DIR] [-o OUT]`.
pub(crate) fn build(dir: &Path, out: Option<&Path>) -> Result<ExitCode> {
    let runtime = crate::runtime()?;
    let built = hookbox_author::build(&runtime, dir, out)?;
    say!(
        "built {} ({}) in {:.1} s: {}",
        built.project.name,
        built.project.language,
        built.took.as_secs_f64(),
        built.path.display()
    );
    crate::check::describe(&built.plugin);
    Ok(ExitCode::SUCCESS)
}

/// `hookbox test [PATH...] [--cases PATH]`.
pub(crate) fn test(paths: &[PathBuf], cases_path: Option<&Path>) -> Result<ExitCode> {
    let runtime = crate::runtime()?;
    let here = [PathBuf::from(".")];
    let paths = if paths.is_empty() { &here[..] } else { paths };
    let mut failed = false;
    for path in paths {
        let (target, default_cases) = target(&runtime, path)?;
        let cases_dir = cases_path.map_or(default_cases, Path::to_path_buf);
        let files = cases::read_cases(&cases_dir).with_context(|| {
            format!(
                "the cases for {}: put case files in {} or name them with --cases",
                path.display(),
                cases_dir.display()
            )
        })?;
        let report = cases::run(&target, &files);
        for failure in &report.failures {
            say!("{failure}");
        }
        let verdict = if report.passed() { "PASS" } else { "FAIL" };
        say!(
            "{verdict} {}: {} case file(s), {} run(s), {} step(s), {} failure(s)",
            path.display(),
            files.len(),
            report.runs,
            report.steps,
            report.failures.len()
        );
        failed |= !report.passed();
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// What `path` is to test, and where its cases are by default: a guard
/// project (built first), a component, or a plugin directory.
fn target(runtime: &hookbox::Runtime, path: &Path) -> Result<(Target, PathBuf)> {
    if path.is_file() {
        let plugin = Plugin::from_file(runtime, path, Default::default())?;
        let cases = path.with_extension("cases");
        return Ok((Target::Guard(plugin), cases));
    }
    if !path.is_dir() {
        bail!(
            "{}: no such guard project, component or plugin directory",
            path.display()
        );
    }
    match Project::open(path) {
        Ok(project) => {
            tell!("building {} ({})", project.name, project.language);
            let built = hookbox_author::build(runtime, path, None)?;
            tell!(
                "built {} in {:.1} s",
                built.path.display(),
                built.took.as_secs_f64()
            );
            Ok((Target::Guard(built.plugin), path.join("cases")))
        }
        Err(_) if is_plugin_dir(path) => {
            let loaded = hookbox::directory::load(runtime, path)?;
            for (status, error) in loaded.failures() {
                tell!(
                    "{}: {} ({}): {}: {}; runs that reach it fail closed",
                    path.display(),
                    status.name,
                    status.file,
                    error.phase,
                    error.reason
                );
            }
            Ok((Target::Stack(loaded.stack), path.join("cases")))
        }
        Err(not_a_project) => Err(not_a_project.into()),
    }
}

fn is_plugin_dir(path: &Path) -> bool {
    path.join(hookbox::manifest::MANIFEST).is_file()
        || std::fs::read_dir(path).is_ok_and(|entries| {
            entries
                .filter_map(Result::ok)
                .any(|e| e.path().extension().is_some_and(|x| x == "wasm"))
        })
}

/// `hookbox lock DIR`.
pub(crate) fn lock(dir: &Path) -> Result<ExitCode> {
    let runtime = crate::runtime()?;
    let locked = hookbox_author::lock::lock(&runtime, dir)?;
    for pin in &locked.pinned {
        let mark = if pin.changed { "pinned" } else { "unchanged" };
        say!(
            "{mark:9} {} ({}): sha256 {}",
            pin.name,
            pin.file,
            pin.sha256
        );
    }
    for error in &locked.refused {
        tell!(
            "not pinned: {}: {}: {}",
            error.plugin,
            error.phase,
            error.reason
        );
    }
    say!("wrote {}", locked.manifest.display());
    Ok(if locked.refused.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
