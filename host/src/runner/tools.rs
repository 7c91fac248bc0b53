//! Tools behind one trait, with JSON-Schema arguments, and the workspace
//! tools of the demo: read, list and write files inside one directory, and a
//! shell that is off unless enabled.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::{Value, json};

use crate::Error;
use crate::event::{ToolError, ToolErrorKind, ToolOutcome};
use crate::runner::model::ToolSpec;

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

    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.get(name)
    }

    /// Tool names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.keys().map(String::as_str)
    }

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

/// Checks arguments against the subset of JSON Schema tools here use: an
/// object with typed `properties`, `required`, and `additionalProperties`.
pub fn check_args(schema: &Value, args: &Value) -> Result<(), String> {
    let Some(object) = args.as_object() else {
        return Err("arguments must be a JSON object".into());
    };
    let properties = schema.get("properties").and_then(Value::as_object);
    for required in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if !object.contains_key(required) {
            return Err(format!("missing required argument `{required}`"));
        }
    }
    let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
    for (key, value) in object {
        match properties.and_then(|p| p.get(key)) {
            Some(property) => {
                if let Some(expected) = property.get("type").and_then(Value::as_str)
                    && !has_type(value, expected)
                {
                    return Err(format!("argument `{key}` must be of type {expected}"));
                }
            }
            None if closed => return Err(format!("unknown argument `{key}`")),
            None => {}
        }
    }
    Ok(())
}

fn has_type(value: &Value, expected: &str) -> bool {
    match expected {
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "null" => value.is_null(),
        _ => true,
    }
}

/// A directory the file tools are confined to.
#[derive(Clone, Debug)]
pub struct Workspace {
    root: PathBuf,
}

/// Largest file `read_file` returns whole; longer ones are cut.
const READ_LIMIT: usize = 256 * 1024;
/// Most bytes of shell output the model sees.
const SHELL_OUTPUT_LIMIT: usize = 64 * 1024;

impl Workspace {
    /// # Errors
    /// [`Error::Setup`] when `root` is not an existing directory.
    pub fn new(root: impl AsRef<Path>) -> Result<Workspace, Error> {
        let root = root.as_ref();
        let canonical = root.canonicalize().map_err(|e| {
            Error::Setup(format!(
                "workspace {}: {e}; create it or pass another --workspace",
                root.display()
            ))
        })?;
        if !canonical.is_dir() {
            return Err(Error::Setup(format!(
                "workspace {} is not a directory",
                root.display()
            )));
        }
        Ok(Workspace { root: canonical })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves a path inside the workspace: relative to it, or absolute
    /// under it. Other absolute paths, `..` that climbs out, and symlinks
    /// that lead out are refused.
    pub fn resolve(&self, relative: &str) -> Result<PathBuf, String> {
        let mut path = Path::new(relative);
        if path.is_absolute() {
            path = path.strip_prefix(&self.root).map_err(|_| {
                format!("`{relative}` is outside the workspace; paths are relative to it")
            })?;
        }
        let mut inside = PathBuf::new();
        for component in path.components() {
            match component {
                Component::Normal(part) => inside.push(part),
                Component::CurDir => {}
                Component::ParentDir => {
                    if !inside.pop() {
                        return Err(format!("`{relative}` is outside the workspace"));
                    }
                }
                Component::RootDir | Component::Prefix(_) => {
                    return Err(format!("`{relative}` is outside the workspace"));
                }
            }
        }
        let full = self.root.join(&inside);
        // The deepest part that exists must resolve (symlinks followed) to
        // somewhere inside the root.
        let mut existing = full.as_path();
        while !existing.exists() {
            existing = match existing.parent() {
                Some(parent) => parent,
                None => break,
            };
        }
        let real = existing
            .canonicalize()
            .map_err(|e| format!("`{relative}`: {e}"))?;
        if !real.starts_with(&self.root) {
            return Err(format!("`{relative}` leads outside the workspace"));
        }
        Ok(full)
    }

    /// `read_file`, `list_files` and `write_file` on this workspace.
    pub fn file_tools(&self) -> [WorkspaceTool; 3] {
        [
            WorkspaceTool::new(self, FileOp::Read),
            WorkspaceTool::new(self, FileOp::List),
            WorkspaceTool::new(self, FileOp::Write),
        ]
    }
}

#[derive(Clone, Copy, Debug)]
enum FileOp {
    Read,
    List,
    Write,
}

/// One of the workspace's file tools.
pub struct WorkspaceTool {
    workspace: Workspace,
    op: FileOp,
    spec: ToolSpec,
}

impl WorkspaceTool {
    fn new(workspace: &Workspace, op: FileOp) -> WorkspaceTool {
        let (name, description, parameters) = match op {
            FileOp::Read => (
                "read_file",
                "Read a text file of the workspace.",
                json!({"type": "object", "properties": {"path": {"type": "string", "description": "relative to the workspace"}}, "required": ["path"], "additionalProperties": false}),
            ),
            FileOp::List => (
                "list_files",
                "List a directory of the workspace (directories end with /).",
                json!({"type": "object", "properties": {"path": {"type": "string", "description": "relative to the workspace; default ."}}, "additionalProperties": false}),
            ),
            FileOp::Write => (
                "write_file",
                "Write a text file of the workspace, creating or replacing it.",
                json!({"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}, "required": ["path", "content"], "additionalProperties": false}),
            ),
        };
        WorkspaceTool {
            workspace: workspace.clone(),
            op,
            spec: ToolSpec {
                name: name.into(),
                description: description.into(),
                parameters,
            },
        }
    }

    async fn run(&self, args: Value) -> ToolOutput {
        let path = args.get("path").and_then(Value::as_str).unwrap_or(".");
        let full = match self.workspace.resolve(path) {
            Ok(full) => full,
            Err(problem) => return ToolOutput::error(ToolErrorKind::InvalidArgs, problem),
        };
        let io = |e: std::io::Error| {
            let kind = match e.kind() {
                std::io::ErrorKind::NotFound => ToolErrorKind::NotFound,
                _ => ToolErrorKind::Execution,
            };
            ToolOutput::error(kind, format!("{path}: {e}"))
        };
        match self.op {
            FileOp::Read => match tokio::fs::read(&full).await {
                Ok(bytes) => {
                    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(READ_LIMIT)]);
                    let mut text = text.into_owned();
                    if bytes.len() > READ_LIMIT {
                        text.push_str(&format!("\n[cut: {} bytes in all]", bytes.len()));
                    }
                    ToolOutput::success(text).with_extensions(json!({"bytes": bytes.len()}))
                }
                Err(e) => io(e),
            },
            FileOp::List => {
                let mut entries = match tokio::fs::read_dir(&full).await {
                    Ok(entries) => entries,
                    Err(e) => return io(e),
                };
                let mut names = Vec::new();
                loop {
                    match entries.next_entry().await {
                        Ok(Some(entry)) => {
                            let mut name = entry.file_name().to_string_lossy().into_owned();
                            if entry.file_type().await.is_ok_and(|t| t.is_dir()) {
                                name.push('/');
                            }
                            names.push(name);
                        }
                        Ok(None) => break,
                        Err(e) => return io(e),
                    }
                }
                names.sort();
                ToolOutput::success(names.join("\n"))
            }
            FileOp::Write => {
                let content = args.get("content").and_then(Value::as_str).unwrap_or("");
                if let Some(parent) = full.parent()
                    && let Err(e) = tokio::fs::create_dir_all(parent).await
                {
                    return io(e);
                }
                match tokio::fs::write(&full, content).await {
                    Ok(()) => {
                        ToolOutput::success(format!("wrote {} bytes to {path}", content.len()))
                    }
                    Err(e) => io(e),
                }
            }
        }
    }
}

impl Tool for WorkspaceTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call(&self, args: Value) -> BoxFuture<'_, ToolOutput> {
        Box::pin(self.run(args))
    }
}

/// `shell`: runs `sh -c COMMAND` in the workspace, with a clean environment
/// (PATH only) and a time limit. Only added when enabled.
pub struct ShellTool {
    workspace: Workspace,
    timeout: Duration,
    spec: ToolSpec,
}

impl ShellTool {
    pub fn new(workspace: &Workspace, timeout: Duration) -> ShellTool {
        ShellTool {
            workspace: workspace.clone(),
            timeout,
            spec: ToolSpec {
                name: "shell".into(),
                description: "Run a shell command in the workspace; returns its output.".into(),
                parameters: json!({"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"], "additionalProperties": false}),
            },
        }
    }

    async fn run(&self, args: Value) -> ToolOutput {
        let command = args.get("command").and_then(Value::as_str).unwrap_or("");
        let child = tokio::process::Command::new("sh")
            .arg("-c")
            .arg(command)
            .current_dir(self.workspace.root())
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .output();
        let output = match tokio::time::timeout(self.timeout, child).await {
            Ok(Ok(output)) => output,
            Ok(Err(e)) => {
                return ToolOutput::error(ToolErrorKind::Execution, format!("cannot run sh: {e}"));
            }
            Err(_) => {
                return ToolOutput::error(
                    ToolErrorKind::Timeout,
                    format!("`{command}` ran longer than {:?}", self.timeout),
                );
            }
        };
        let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
        text.push_str(&String::from_utf8_lossy(&output.stderr));
        if text.len() > SHELL_OUTPUT_LIMIT {
            let mut cut = SHELL_OUTPUT_LIMIT;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
            text.push_str("\n[output cut]");
        }
        let code = output.status.code();
        let extensions = json!({"exit_code": code});
        if output.status.success() {
            ToolOutput::success(text).with_extensions(extensions)
        } else {
            let status = code.map_or("a signal".to_owned(), |c| format!("exit status {c}"));
            ToolOutput {
                result: format!("{text}\n[{status}]"),
                outcome: ToolOutcome::Error(ToolError {
                    kind: ToolErrorKind::Execution,
                    message: format!("`{command}` ended with {status}"),
                }),
                extensions,
            }
        }
    }
}

impl Tool for ShellTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call(&self, args: Value) -> BoxFuture<'_, ToolOutput> {
        Box::pin(self.run(args))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("hookbox-tools-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("src")).unwrap();
        dir
    }

    #[test]
    fn paths_stay_inside_the_workspace() {
        let dir = scratch("jail");
        let ws = Workspace::new(&dir).unwrap();
        assert!(ws.resolve("src/main.rs").is_ok());
        assert!(ws.resolve("src/../notes.txt").is_ok());
        assert!(ws.resolve("../etc/passwd").unwrap_err().contains("outside"));
        assert!(ws.resolve("/etc/passwd").unwrap_err().contains("outside"));
        let inside = format!("{}/src/main.rs", ws.root().display());
        assert_eq!(ws.resolve(&inside).unwrap(), ws.root().join("src/main.rs"));
        std::os::unix::fs::symlink("/etc", dir.join("etc")).unwrap();
        assert!(
            ws.resolve("etc/passwd")
                .unwrap_err()
                .contains("leads outside")
        );
        assert!(
            ws.resolve("etc/new-file")
                .unwrap_err()
                .contains("leads outside")
        );
    }

    #[test]
    fn arguments_are_checked_against_the_schema() {
        let schema = json!({"type": "object", "properties": {"path": {"type": "string"}, "n": {"type": "integer"}}, "required": ["path"], "additionalProperties": false});
        assert!(check_args(&schema, &json!({"path": "a", "n": 2})).is_ok());
        assert!(
            check_args(&schema, &json!({}))
                .unwrap_err()
                .contains("missing required")
        );
        assert!(
            check_args(&schema, &json!({"path": 1}))
                .unwrap_err()
                .contains("type string")
        );
        assert!(
            check_args(&schema, &json!({"path": "a", "x": 1}))
                .unwrap_err()
                .contains("unknown")
        );
        assert!(
            check_args(&schema, &json!([1]))
                .unwrap_err()
                .contains("object")
        );
    }

    #[tokio::test]
    async fn file_tools_read_list_and_write() {
        let dir = scratch("files");
        let ws = Workspace::new(&dir).unwrap();
        let mut tools = ToolSet::new();
        for tool in ws.file_tools() {
            tools.add(tool).unwrap();
        }
        let wrote = tools
            .call("write_file", r#"{"path":"src/a.txt","content":"hi"}"#)
            .await;
        assert_eq!(wrote.outcome, ToolOutcome::Success, "{wrote:?}");
        let read = tools.call("read_file", r#"{"path":"src/a.txt"}"#).await;
        assert_eq!(read.result, "hi");
        let listed = tools.call("list_files", "{}").await;
        assert_eq!(listed.result, "src/");
        let missing = tools.call("read_file", r#"{"path":"nope"}"#).await;
        assert!(matches!(
            missing.outcome,
            ToolOutcome::Error(ToolError {
                kind: ToolErrorKind::NotFound,
                ..
            })
        ));
        let escape = tools.call("read_file", r#"{"path":"../x"}"#).await;
        assert!(matches!(
            escape.outcome,
            ToolOutcome::Error(ToolError {
                kind: ToolErrorKind::InvalidArgs,
                ..
            })
        ));
        let bad = tools.call("read_file", "{not json").await;
        assert!(bad.result.contains("not JSON"), "{bad:?}");
    }

    #[tokio::test]
    async fn the_shell_runs_in_the_workspace_with_a_time_limit() {
        let dir = scratch("shell");
        let ws = Workspace::new(&dir).unwrap();
        let shell = ShellTool::new(&ws, Duration::from_millis(300));
        let out = shell.call(json!({"command": "ls; echo $HOME"})).await;
        assert_eq!(out.outcome, ToolOutcome::Success);
        assert_eq!(out.result, "src\n\n", "no HOME in a clean environment");
        let failed = shell.call(json!({"command": "exit 3"})).await;
        assert_eq!(failed.extensions, json!({"exit_code": 3}));
        let slow = shell.call(json!({"command": "sleep 5"})).await;
        assert!(matches!(
            slow.outcome,
            ToolOutcome::Error(ToolError {
                kind: ToolErrorKind::Timeout,
                ..
            })
        ));
    }
}
