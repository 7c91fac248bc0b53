//! The crate's one error type: every variant names what failed and what to
//! do about it.

use std::path::PathBuf;

/// What went wrong in an author command.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file or directory could not be read or written.
    #[error("{}: {reason}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What failed.
        reason: String,
    },
    /// The folder is not a guard project hookbox can build.
    #[error("{}: {reason}", dir.display())]
    NotAProject {
        /// The folder.
        dir: PathBuf,
        /// Why, and what would make it one.
        reason: String,
    },
    /// A tool the language's build needs is not installed.
    #[error("{language}: `{tool}` is needed and was not found; {install}")]
    MissingTool {
        /// The guard's language.
        language: &'static str,
        /// The command that was looked for.
        tool: String,
        /// How to install it.
        install: String,
    },
    /// A build step failed.
    #[error("{language}: {step} failed: {output}")]
    Build {
        /// The guard's language.
        language: &'static str,
        /// The step (the command, or the in-process encoding).
        step: String,
        /// What the step printed, or why it failed.
        output: String,
    },
    /// The component built is not a plugin hookbox loads (why: its source).
    #[error("the component built is refused")]
    Refused(#[from] hookbox::LoadError),
    /// A case file does not parse.
    #[error("{}: {reason}", path.display())]
    Cases {
        /// The case file.
        path: PathBuf,
        /// What is wrong, with where.
        reason: String,
    },
    /// Bad usage: a name, a language, a target that does not exist.
    #[error("{0}")]
    Usage(String),
    /// The plugin directory could not be loaded.
    #[error(transparent)]
    Directory(#[from] hookbox::Error),
}

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>, e: impl std::fmt::Display) -> Error {
        Error::Io {
            path: path.into(),
            reason: e.to_string(),
        }
    }
}
