//! Tools behind one trait, with JSON-Schema arguments, and the workspace
//! tools of the demo: read, list and write files inside one directory, and a
//! shell that is off unless enabled.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

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
        // Walk it from the root: every symlink on the way must lead to
        // something that exists inside the root (a dangling link could be
        // followed out by a write).
        let mut walked = self.root.clone();
        for part in inside.iter() {
            walked.push(part);
            match std::fs::symlink_metadata(&walked) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    let target = walked.canonicalize().map_err(|_| {
                        format!("`{relative}` goes through a symlink that leads nowhere")
                    })?;
                    if !target.starts_with(&self.root) {
                        return Err(format!("`{relative}` leads outside the workspace"));
                    }
                }
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
                Err(e) => return Err(format!("`{relative}`: {e}")),
            }
        }
        Ok(self.root.join(&inside))
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
            FileOp::Read => {
                // Regular files only (a FIFO would block forever), and never
                // more than the limit in memory.
                let size = match tokio::fs::metadata(&full).await {
                    Ok(meta) if meta.is_file() => meta.len(),
                    Ok(_) => {
                        return ToolOutput::error(
                            ToolErrorKind::InvalidArgs,
                            format!("{path} is not a regular file"),
                        );
                    }
                    Err(e) => return io(e),
                };
                let mut bytes = Vec::new();
                let read = match tokio::fs::File::open(&full).await {
                    Ok(file) => file.take(READ_LIMIT as u64).read_to_end(&mut bytes).await,
                    Err(e) => Err(e),
                };
                if let Err(e) = read {
                    return io(e);
                }
                let mut text = String::from_utf8_lossy(&bytes).into_owned();
                if size > READ_LIMIT as u64 {
                    text.push_str(&format!("\n[cut: {size} bytes in all]"));
                }
                ToolOutput::success(text).with_extensions(json!({"bytes": size}))
            }
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
                // O_NOFOLLOW: a symlink swapped in since `resolve` is not
                // followed.
                let opened = tokio::fs::OpenOptions::new()
                    .write(true)
                    .create(true)
                    .truncate(true)
                    .custom_flags(libc::O_NOFOLLOW)
                    .open(&full)
                    .await;
                let written = match opened {
                    Ok(mut file) => file.write_all(content.as_bytes()).await,
                    Err(e) => Err(e),
                };
                match written {
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
/// (PATH only), a time limit, and its output capped; its process group is
/// killed when it ends. Only added when enabled, and **not a sandbox**: the
/// command runs with the host user's rights, so guard it with hooks
/// (deny-tools) or run hookbox itself confined.
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
        // Its own process group, so the command and anything it started in
        // the background end with it.
        let spawned = tokio::process::Command::new("sh")
            .arg("-c")
            .arg(command)
            .current_dir(self.workspace.root())
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .process_group(0)
            .kill_on_drop(true)
            .spawn();
        let mut child = match spawned {
            Ok(child) => child,
            Err(e) => {
                return ToolOutput::error(ToolErrorKind::Execution, format!("cannot run sh: {e}"));
            }
        };
        let group = child.id();
        // Never more than the limit in memory, however much it prints.
        let stdout = tokio::spawn(capped(child.stdout.take()));
        let stderr = tokio::spawn(capped(child.stderr.take()));
        let waited = tokio::time::timeout(self.timeout, child.wait()).await;
        if let Some(group) = group {
            // The command is over (or out of time): so is everything it
            // started, which also closes the pipes for the readers.
            // SAFETY: killpg only sends a signal, to the group the child leads.
            unsafe { libc::killpg(group as libc::pid_t, libc::SIGKILL) };
        }
        let _ = child.wait().await;
        let stdout = stdout.await.unwrap_or_default();
        let stderr = stderr.await.unwrap_or_default();
        let status = match waited {
            Ok(Ok(status)) => status,
            Ok(Err(e)) => {
                return ToolOutput::error(ToolErrorKind::Execution, format!("sh: {e}"));
            }
            Err(_) => {
                return ToolOutput::error(
                    ToolErrorKind::Timeout,
                    format!("`{command}` ran longer than {:?}", self.timeout),
                );
            }
        };
        let mut text = String::from_utf8_lossy(&stdout).into_owned();
        text.push_str(&String::from_utf8_lossy(&stderr));
        if stdout.len() + stderr.len() > SHELL_OUTPUT_LIMIT {
            let mut cut = SHELL_OUTPUT_LIMIT.min(text.len());
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
            text.push_str("\n[output cut]");
        }
        let code = status.code();
        let extensions = json!({"exit_code": code});
        if status.success() {
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

/// Reads a pipe to its end, keeping at most one byte more than the limit
/// (so a cut can be told from an exact fit); the rest is drained unseen.
async fn capped<R: tokio::io::AsyncRead + Unpin>(pipe: Option<R>) -> Vec<u8> {
    let mut kept = Vec::new();
    if let Some(mut pipe) = pipe {
        let mut chunk = [0u8; 8192];
        while let Ok(n) = pipe.read(&mut chunk).await {
            if n == 0 {
                break;
            }
            let room = (SHELL_OUTPUT_LIMIT + 1).saturating_sub(kept.len());
            kept.extend_from_slice(&chunk[..n.min(room)]);
        }
    }
    kept
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

    #[tokio::test]
    async fn the_shell_keeps_its_output_and_its_children_in_bounds() {
        let dir = scratch("shell-bounds");
        let ws = Workspace::new(&dir).unwrap();
        let shell = ShellTool::new(&ws, Duration::from_secs(10));
        // A background child holding the pipe neither keeps the call open
        // nor outlives it.
        let started = shell
            .call(json!({"command": "sleep 30 & echo started"}))
            .await;
        assert_eq!(started.outcome, ToolOutcome::Success);
        assert_eq!(started.result, "started\n");
        // However much it prints, only the limit is kept.
        let out = shell
            .call(json!({"command": "yes | head -c 10000000"}))
            .await;
        assert!(
            out.result.len() < SHELL_OUTPUT_LIMIT + 100,
            "{}",
            out.result.len()
        );
        assert!(out.result.ends_with("[output cut]"));
    }

    #[tokio::test]
    async fn a_dangling_symlink_cannot_be_written_through() {
        let dir = scratch("dangling");
        let ws = Workspace::new(&dir).unwrap();
        let outside = std::env::temp_dir().join(format!("hookbox-outside-{}", std::process::id()));
        let _ = std::fs::remove_file(&outside);
        std::os::unix::fs::symlink(&outside, dir.join("notes.md")).unwrap();
        assert!(
            ws.resolve("notes.md")
                .unwrap_err()
                .contains("leads nowhere")
        );
        let mut tools = ToolSet::new();
        for tool in ws.file_tools() {
            tools.add(tool).unwrap();
        }
        let out = tools
            .call("write_file", r#"{"path":"notes.md","content":"x"}"#)
            .await;
        assert!(matches!(out.outcome, ToolOutcome::Error(_)), "{out:?}");
        assert!(!outside.exists(), "nothing was written outside");
    }

    #[tokio::test]
    async fn only_regular_files_are_read() {
        let dir = scratch("fifo");
        let ws = Workspace::new(&dir).unwrap();
        let path = std::ffi::CString::new(dir.join("pipe").to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
        let [read, ..] = ws.file_tools();
        let out = read.call(json!({"path": "pipe"})).await;
        assert!(out.result.contains("not a regular file"), "{out:?}");
    }
}
