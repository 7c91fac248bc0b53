//! `shell`: a command in the workspace, off unless enabled.

use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;

use hookbox::{ToolError, ToolErrorKind, ToolOutcome};

use crate::model::ToolSpec;
use crate::tools::{Tool, ToolOutput, Workspace};

/// Most bytes of shell output the model sees.
const SHELL_OUTPUT_LIMIT: usize = 64 * 1024;

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
    /// A shell running in `workspace`; a command is killed after `timeout`.
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
    use crate::tools::scratch;

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
}
