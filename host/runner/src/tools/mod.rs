//! Tools behind one trait, with JSON-Schema arguments: the trait and the
//! set an agent holds; the argument checks ([`schema`]); the workspace's file
//! tools ([`workspace`]) and a shell that is off unless enabled ([`shell`]).

pub mod schema;
pub mod shell;
pub mod workspace;

use std::collections::BTreeMap;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use hookbox::{ToolError, ToolErrorKind, ToolOutcome};
use serde_json::{Value, json};

use crate::Error;
use crate::model::ToolSpec;
pub use schema::check_args;
pub use shell::ShellTool;
pub use workspace::{Workspace, WorkspaceTool};

/// What a tool returns.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolOutput {
    /// What the model sees (unless a hook rewrites it).
    pub result: String,
    /// What really happened.
    pub outcome: ToolOutcome,
    /// Tool-specific extras (a JSON object), e.g. a shell's exit code.
    pub extensions: Value,
}

impl ToolOutput {
    /// A success: the model sees `result`.
    pub fn success(result: impl Into<String>) -> ToolOutput {
        ToolOutput {
            result: result.into(),
            outcome: ToolOutcome::Success,
            extensions: json!({}),
        }
    }

    /// A failure: the model sees `message`, the outcome says `kind`.
    pub fn error(kind: ToolErrorKind, message: impl Into<String>) -> ToolOutput {
        let message = message.into();
        ToolOutput {
            result: format!("error: {message}"),
            outcome: ToolOutcome::Error(ToolError { kind, message }),
            extensions: json!({}),
        }
    }

    /// The same output with `extensions` (a JSON object) attached.
    pub fn with_extensions(mut self, extensions: Value) -> ToolOutput {
        self.extensions = extensions;
        self
    }
}

/// A tool the model can call.
pub trait Tool: Send + Sync {
    /// Name, description and the JSON Schema of its arguments.
    fn spec(&self) -> &ToolSpec;

    /// Runs the tool. The arguments were checked against the schema.
    fn call(&self, args: Value) -> BoxFuture<'_, ToolOutput>;
}

/// The tools of an agent, by name.
#[derive(Clone, Default)]
pub struct ToolSet {
    tools: BTreeMap<String, Arc<dyn Tool>>,
}

impl ToolSet {
    /// An empty set.
    pub fn new() -> ToolSet {
        ToolSet::default()
    }

    /// Adds a tool.
    ///
    /// # Errors
    /// [`Error::Setup`] when a tool of that name is already there.
    pub fn add(&mut self, tool: impl Tool + 'static) -> Result<&mut Self, Error> {
        let name = tool.spec().name.clone();
        if self.tools.contains_key(&name) {
            return Err(Error::Setup(format!("tool `{name}` is defined twice")));
        }
        self.tools.insert(name, Arc::new(tool));
        Ok(self)
    }

    /// The tool called `name`, if there is one.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.get(name)
    }

    /// Tool names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.keys().map(String::as_str)
    }

    /// The tools' specs, sorted by name.
    pub fn specs(&self) -> impl Iterator<Item = &ToolSpec> {
        self.tools.values().map(|tool| tool.spec())
    }

    /// Checks `args` (JSON text) against the tool's schema, then runs it.
    pub async fn call(&self, name: &str, args: &str) -> ToolOutput {
        let Some(tool) = self.tools.get(name) else {
            return ToolOutput::error(ToolErrorKind::NotFound, format!("no tool `{name}`"));
        };
        let value: Value = match serde_json::from_str(args) {
            Ok(value) => value,
            Err(e) => {
                return ToolOutput::error(
                    ToolErrorKind::InvalidArgs,
                    format!("arguments are not JSON: {e}"),
                );
            }
        };
        if let Err(problem) = check_args(&tool.spec().parameters, &value) {
            return ToolOutput::error(ToolErrorKind::InvalidArgs, problem);
        }
        tool.call(value).await
    }
}

/// A fresh directory for a test, with a `src/` inside.
#[cfg(test)]
fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("hookbox-tools-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("src")).unwrap();
    dir
}
