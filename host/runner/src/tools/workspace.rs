//! A directory the file tools are confined to, and the tools: read, list and
//! write files inside it.

use std::path::{Component, Path, PathBuf};

use futures_util::future::BoxFuture;
use serde_json::{Value, json};

use crate::Error;
use hookbox::ToolErrorKind;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::model::ToolSpec;
use crate::tools::{Tool, ToolOutput};

/// Paths `write_file` never writes: version-control and tool configuration
/// that can make the user's next command run something (`core.fsmonitor`,
/// hooks).
const PROTECTED: [&str; 6] = [".git", ".hg", ".svn", ".jj", ".husky", ".envrc"];

/// A directory the file tools are confined to.
#[derive(Clone, Debug)]
pub struct Workspace {
    root: PathBuf,
}

/// Largest file `read_file` returns whole; longer ones are cut.
const READ_LIMIT: usize = 256 * 1024;

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

    /// The workspace directory, canonicalized.
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
                if let Some(part) = Path::new(path)
                    .components()
                    .find_map(|c| PROTECTED.iter().find(|p| c.as_os_str() == **p))
                {
                    return ToolOutput::error(
                        ToolErrorKind::InvalidArgs,
                        format!(
                            "not written: `{part}` holds version-control or tool configuration, which can run commands; edit it yourself"
                        ),
                    );
                }
                if let Some(parent) = full.parent()
                    && let Err(e) = tokio::fs::create_dir_all(parent).await
                {
                    return io(e);
                }
                // O_NOFOLLOW: a symlink swapped in since `resolve` is not
                // followed. Not truncated on open: a file with a second hard
                // link may be one outside the workspace, and is refused
                // before anything is written.
                let opened = tokio::fs::OpenOptions::new()
                    .write(true)
                    .create(true)
                    .truncate(false)
                    .custom_flags(libc::O_NOFOLLOW)
                    .open(&full)
                    .await;
                let mut file = match opened {
                    Ok(file) => file,
                    Err(e) => return io(e),
                };
                match file.metadata().await {
                    Ok(meta) if std::os::unix::fs::MetadataExt::nlink(&meta) > 1 => {
                        return ToolOutput::error(
                            ToolErrorKind::InvalidArgs,
                            format!(
                                "not written: {path} has another hard link, which may lead outside the workspace"
                            ),
                        );
                    }
                    Ok(_) => {}
                    Err(e) => return io(e),
                }
                let written = match file.set_len(0).await {
                    Ok(()) => file.write_all(content.as_bytes()).await,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::{ToolSet, scratch};
    use hookbox::{ToolError, ToolOutcome};

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
    async fn a_hard_link_to_a_file_outside_is_not_written_through() {
        let dir = scratch("hardlink");
        let ws = Workspace::new(&dir).unwrap();
        let outside = std::env::temp_dir().join(format!("hookbox-hard-{}", std::process::id()));
        std::fs::write(&outside, "precious").unwrap();
        let _ = std::fs::remove_file(dir.join("linked.txt"));
        std::fs::hard_link(&outside, dir.join("linked.txt")).unwrap();
        let mut tools = ToolSet::new();
        for tool in ws.file_tools() {
            tools.add(tool).unwrap();
        }
        let out = tools
            .call(
                "write_file",
                r#"{"path":"linked.txt","content":"overwritten"}"#,
            )
            .await;
        assert!(matches!(out.outcome, ToolOutcome::Error(_)), "{out:?}");
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "precious");
    }

    #[tokio::test]
    async fn version_control_configuration_is_not_written() {
        let dir = scratch("vcs");
        let ws = Workspace::new(&dir).unwrap();
        let mut tools = ToolSet::new();
        for tool in ws.file_tools() {
            tools.add(tool).unwrap();
        }
        for path in [".git/config", "sub/.git/hooks/pre-commit", ".envrc"] {
            let args = serde_json::json!({"path": path, "content": "[core]\nfsmonitor = touch /tmp/pwned"});
            let out = tools.call("write_file", &args.to_string()).await;
            assert!(
                matches!(out.outcome, ToolOutcome::Error(_)),
                "{path}: {out:?}"
            );
            assert!(!dir.join(path).exists(), "{path}");
        }
        let out = tools
            .call(
                "write_file",
                r#"{"path":"src/gitignore.rs","content":"ok"}"#,
            )
            .await;
        assert_eq!(out.outcome, ToolOutcome::Success, "{out:?}");
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
