//! `hookbox new`: a guard project that builds, passes its own cases and
//! loads, out of the box, in any language of [`Language::ALL`].
//!
//! Every template is the same guard (skip calls to the tools `deny` names,
//! default `shell`) with the same cases, so the languages can be compared
//! and each template is tested the same way. The templates are files in
//! `host/author/templates/`, with `{{name}}`, `{{crate}}`, `{{language}}`
//! and `{{sdk}}` filled in.

use std::path::{Path, PathBuf};

use crate::Error;
use crate::lang::{Language, Project};

/// What `hookbox new` is told besides the name and language.
#[derive(Clone, Debug, Default)]
pub struct NewOptions {
    /// A Rust guard's `hookbox-sdk` dependency: a path to the SDK's folder.
    /// Default: the SDK this hookbox was built from, if it is still there,
    /// else the crates.io release of the same version.
    pub sdk: Option<PathBuf>,
}

/// The contract, for the languages whose bindings are generated from it.
const WIT: &str = include_str!("../../../wit/hook.wit");

/// The files every project gets.
const COMMON: &[(&str, &str)] = &[
    ("README.md", include_str!("../templates/common/README.md")),
    (
        "cases/deny.json",
        include_str!("../templates/common/cases/deny.json"),
    ),
];

/// Each language's own files.
fn files(language: Language) -> &'static [(&'static str, &'static str)] {
    match language {
        Language::Rust => &[
            ("Cargo.toml", include_str!("../templates/rust/Cargo.toml")),
            ("src/lib.rs", include_str!("../templates/rust/src/lib.rs")),
            (
                "rust-toolchain.toml",
                include_str!("../../../rust-toolchain.toml"),
            ),
            (".gitignore", include_str!("../templates/rust/.gitignore")),
            (
                ".cargo/config.toml",
                include_str!("../templates/rust/.cargo/config.toml"),
            ),
        ],
        Language::JavaScript => crate::lang::javascript_template(),
        Language::Python => crate::lang::python_template(),
        Language::C => crate::lang::c_template(),
        Language::Go => crate::lang::go_template(),
    }
}

/// Makes the project `name` in a new folder `parent/name`.
///
/// # Errors
/// [`Error::Usage`] for a name that is not a plugin name or a folder that
/// exists and is not empty; [`Error::Io`] when a file cannot be written.
pub fn new(
    parent: &Path,
    name: &str,
    language: Language,
    options: &NewOptions,
) -> Result<Project, Error> {
    check_name(name)?;
    let dir = parent.join(name);
    if dir.exists() && std::fs::read_dir(&dir).map_or(true, |mut d| d.next().is_some()) {
        return Err(Error::Usage(format!(
            "{} exists and is not empty; choose another name or remove it",
            dir.display()
        )));
    }
    let sdk = sdk_dependency(options);
    let fill = |text: &str| {
        text.replace("{{name}}", name)
            .replace("{{crate}}", &name.replace('-', "_"))
            .replace("{{language}}", display_name(language))
            .replace("{{sdk}}", &sdk)
    };
    let wit: &[(&str, &str)] = if language == Language::Rust {
        &[]
    } else {
        &[("wit/hook.wit", WIT)]
    };
    for (file, text) in COMMON.iter().chain(files(language)).chain(wit) {
        let path = dir.join(file);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
        }
        std::fs::write(&path, fill(text)).map_err(|e| Error::io(&path, e))?;
    }
    Project::open(&dir)
}

fn display_name(language: Language) -> &'static str {
    match language {
        Language::Rust => "Rust",
        Language::JavaScript => "JavaScript",
        Language::Python => "Python",
        Language::C => "C",
        Language::Go => "Go",
    }
}

/// A plugin name works as a folder, a crate, an npm package and a Go
/// module: lowercase ASCII letters, digits and dashes, a letter first.
fn check_name(name: &str) -> Result<(), Error> {
    let ok = name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err(Error::Usage(format!(
            "`{name}` is not a plugin name: use lowercase letters, digits and dashes, starting with a letter (e.g. `no-shell`)"
        )))
    }
}

/// The `hookbox-sdk = ...` dependency of a Rust template, as TOML.
fn sdk_dependency(options: &NewOptions) -> String {
    let built_from = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../sdk");
    let path = options.sdk.clone().or_else(|| {
        built_from
            .join("Cargo.toml")
            .is_file()
            .then_some(built_from)
    });
    match path.and_then(|p| std::path::absolute(p).ok()) {
        Some(path) => {
            let path = path.canonicalize().unwrap_or(path);
            format!(
                "{{ path = {} }}",
                toml_edit::Value::from(path.display().to_string())
            )
        }
        None => format!("\"{}\"", env!("CARGO_PKG_VERSION")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plugin_name_is_lowercase_letters_digits_and_dashes() {
        for good in ["no-shell", "guard2", "a"] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in [
            "", "NoShell", "2guard", "no_shell", "no shell", "../x", "guard-",
        ] {
            let err = check_name(bad).unwrap_err().to_string();
            assert!(err.contains("not a plugin name"), "{bad}: {err}");
        }
    }
}
