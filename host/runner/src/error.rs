//! The runner's error: setting up an agent, calling a model.

/// What can go wrong before or outside a run's hooks: the run's own ending
/// (a hook's terminate, a fail-closed stack) is a [`RunStatus`](crate::RunStatus).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A model call failed: unreachable server, HTTP error, bad answer.
    #[error("model `{model}`: {reason}")]
    Model {
        /// The model's name.
        model: String,
        /// What went wrong, for a person.
        reason: String,
    },
    /// The runner was set up wrong: a bad scripted-model file, a workspace
    /// that does not exist, a tool defined twice.
    #[error("{0}")]
    Setup(String),
    /// The hook layer could not be set up (engine, plugins).
    #[error(transparent)]
    Hookbox(#[from] hookbox::Error),
}
