//! The languages a guard project can be written in: how each is recognised,
//! named and built into a component.
//!
//! | language | recognised by | built with |
//! |---|---|---|
//! | rust | `Cargo.toml` | cargo for `wasm32-unknown-unknown`, encoded in-process (no `wasm-tools`) |
//! | javascript | `package.json` | componentize-js from the project's own `node_modules` |
//! | python | `app.py` | componentize-py |
//! | c | `guard.c` | wit-bindgen-c's bindings (in-process), zig's clang, encoded in-process |
//! | go | `go.mod` | Go's own `wasip1` target, encoded in-process with the WASI stub |
//!
//! Each builder returns the component's bytes; [`crate::build`] checks them
//! by loading them as hookbox would.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::Error;

mod c;
mod go;
mod javascript;
mod python;
mod rust;

/// A guard's language.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Language {
    /// Rust, with `hookbox-sdk`.
    Rust,
    /// JavaScript, with componentize-js.
    JavaScript,
    /// Python, with componentize-py.
    Python,
    /// C, with wit-bindgen-c (in-process) and zig's clang.
    C,
    /// Go, with Go's own `wasip1` target.
    Go,
}

impl Language {
    /// Every language, in the order `hookbox new --help` lists them.
    pub const ALL: [Language; 5] = [
        Language::Rust,
        Language::JavaScript,
        Language::Python,
        Language::C,
        Language::Go,
    ];

    /// The name `--lang` takes.
    pub fn name(self) -> &'static str {
        match self {
            Language::Rust => "rust",
            Language::JavaScript => "javascript",
            Language::Python => "python",
            Language::C => "c",
            Language::Go => "go",
        }
    }

    /// The language named `name` (`js` and `py` too).
    ///
    /// # Errors
    /// [`Error::Usage`] listing the languages there are.
    pub fn from_name(name: &str) -> Result<Language, Error> {
        match name {
            "js" => return Ok(Language::JavaScript),
            "py" => return Ok(Language::Python),
            _ => {}
        }
        Language::ALL
            .into_iter()
            .find(|l| l.name() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = Language::ALL.iter().map(|l| l.name()).collect();
                Error::Usage(format!(
                    "unknown language `{name}`; choose one of {}",
                    names.join(", ")
                ))
            })
    }

    /// The file whose presence marks a project of this language.
    pub fn marker(self) -> &'static str {
        match self {
            Language::Rust => "Cargo.toml",
            Language::JavaScript => "package.json",
            Language::Python => "app.py",
            Language::C => "guard.c",
            Language::Go => "go.mod",
        }
    }
}

impl std::fmt::Display for Language {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A guard project on disk.
#[derive(Clone, Debug)]
pub struct Project {
    /// Its folder.
    pub dir: PathBuf,
    /// Its language.
    pub language: Language,
    /// Its name: the plugin's name, and the component's file stem.
    pub name: String,
}

impl Project {
    /// The project in `dir`, recognised by its marker file.
    ///
    /// # Errors
    /// [`Error::NotAProject`] when no marker is there (or two are).
    pub fn open(dir: &Path) -> Result<Project, Error> {
        let found: Vec<Language> = Language::ALL
            .into_iter()
            .filter(|l| dir.join(l.marker()).is_file())
            .collect();
        let language = match found[..] {
            [language] => language,
            [] => {
                return Err(Error::NotAProject {
                    dir: dir.to_path_buf(),
                    reason: format!(
                        "not a guard project: none of {} is here; `hookbox new NAME --lang LANG` makes one",
                        Language::ALL
                            .iter()
                            .map(|l| l.marker())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                });
            }
            _ => {
                return Err(Error::NotAProject {
                    dir: dir.to_path_buf(),
                    reason: format!(
                        "more than one language's marker is here ({}); keep one guard per folder",
                        found
                            .iter()
                            .map(|l| l.marker())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                });
            }
        };
        let name = match language {
            Language::Rust => rust::package_name(dir)?,
            Language::JavaScript => javascript::package_name(dir)?,
            Language::Go => go::module_name(dir)?,
            Language::Python | Language::C => folder_name(dir)?,
        };
        Ok(Project {
            dir: dir.to_path_buf(),
            language,
            name,
        })
    }

    /// Builds the project; the component's bytes, not yet checked.
    pub(crate) fn compile(&self) -> Result<Vec<u8>, Error> {
        match self.language {
            Language::Rust => rust::build(self),
            Language::JavaScript => javascript::build(self),
            Language::Python => python::build(self),
            Language::C => c::build(self),
            Language::Go => go::build(self),
        }
    }

    /// A scratch folder for the build's own files, inside the project.
    /// Absolute, since the tools run in the project's folder.
    pub(crate) fn scratch(&self) -> Result<PathBuf, Error> {
        let dir = self.dir.join("target").join("hookbox");
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        std::path::absolute(&dir).map_err(|e| Error::io(&dir, e))
    }
}

/// The last part of `dir`'s path, as a plugin name.
fn folder_name(dir: &Path) -> Result<String, Error> {
    let absolute = std::path::absolute(dir).map_err(|e| Error::io(dir, e))?;
    absolute
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| Error::NotAProject {
            dir: dir.to_path_buf(),
            reason: "the folder has no name to give the plugin".into(),
        })
}

/// Runs `command` for `language`'s `step`; its output on failure.
pub(crate) fn run(language: Language, step: &str, command: &mut Command) -> Result<(), Error> {
    tracing::debug!(target: "hookbox::author", ?command, "running");
    let output = command.output().map_err(|e| Error::Build {
        language: language.name(),
        step: step.to_owned(),
        output: format!("cannot start it: {e}"),
    })?;
    if output.status.success() {
        return Ok(());
    }
    let mut said = String::from_utf8_lossy(&output.stderr).into_owned();
    said.push_str(&String::from_utf8_lossy(&output.stdout));
    Err(Error::Build {
        language: language.name(),
        step: step.to_owned(),
        output: format!("{} ({})", said.trim_end(), output.status),
    })
}

/// The program `tool` as found on `PATH`, or an error saying how to install it.
pub(crate) fn find_tool(language: Language, tool: &str, install: &str) -> Result<PathBuf, Error> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(tool))
        .find(|candidate| is_executable(candidate))
        .ok_or_else(|| Error::MissingTool {
            language: language.name(),
            tool: tool.to_owned(),
            install: install.to_owned(),
        })
}

fn is_executable(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        path.is_file()
    }
}

/// A core module (with the world's type embedded) encoded as a component,
/// its WASI imports answered by `adapter` if given; pre-initialised first
/// when it exports [`crate::preinit::INIT_EXPORT`].
pub(crate) fn encode(
    language: Language,
    module: &[u8],
    adapter: Option<(&str, &[u8])>,
) -> Result<Vec<u8>, Error> {
    let fail = |e: anyhow::Error| Error::Build {
        language: language.name(),
        step: "encoding the component".into(),
        output: format!("{e:#}"),
    };
    let snapshot;
    let module = if crate::preinit::asks_for_it(module) {
        snapshot = crate::preinit::pre_initialize(module).map_err(|output| Error::Build {
            language: language.name(),
            step: format!(
                "pre-initialising (running `{}` once)",
                crate::preinit::INIT_EXPORT
            ),
            output,
        })?;
        &snapshot[..]
    } else {
        module
    };
    let mut encoder = wit_component::ComponentEncoder::default();
    encoder.module(module).map_err(fail)?;
    if let Some((name, bytes)) = adapter {
        encoder.adapter(name, bytes).map_err(fail)?;
    }
    encoder.validate(true).encode().map_err(fail)
}

/// The template files of the languages built by the modules below.
pub(crate) fn javascript_template() -> &'static [(&'static str, &'static str)] {
    javascript::TEMPLATE
}
/// See [`javascript_template`].
pub(crate) fn python_template() -> &'static [(&'static str, &'static str)] {
    python::TEMPLATE
}
/// See [`javascript_template`].
pub(crate) fn c_template() -> &'static [(&'static str, &'static str)] {
    c::TEMPLATE
}
/// See [`javascript_template`].
pub(crate) fn go_template() -> &'static [(&'static str, &'static str)] {
    go::TEMPLATE
}

/// A failed build step's error, plus a word on `tool`'s version (from
/// `tool --version`) when it is not the `pinned` one the template is
/// written for.
pub(crate) fn version_hint(error: Error, tool: &Path, pinned: &str, install: &str) -> Error {
    let Error::Build {
        language,
        step,
        mut output,
    } = error
    else {
        return error;
    };
    let version = Command::new(tool)
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    if !version.ends_with(pinned) {
        output.push_str(&format!(
            "\n(this is {}, not {pinned}, which the template is written for: {install})",
            if version.is_empty() {
                tool.display().to_string()
            } else {
                version
            }
        ));
    }
    Error::Build {
        language,
        step,
        output,
    }
}
