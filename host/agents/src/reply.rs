//! What a command hook answers: an exit code, JSON on stdout, a note on
//! stderr. The same JSON is an HTTP hook's 2xx body.

use serde_json::Value;

/// A hook's answer to its agent.
#[derive(Clone, Debug, PartialEq)]
pub struct Reply {
    /// The process's exit code (command hooks).
    pub exit_code: u8,
    /// The JSON to print on stdout (and to answer an HTTP hook with);
    /// `None` prints nothing.
    pub stdout: Option<Value>,
    /// A line for stderr: a note, or what the agent shows on a blocking exit
    /// code.
    pub stderr: Option<String>,
}

impl Reply {
    /// Exit 0 and no output: the agent goes on as if there were no hook.
    pub fn no_opinion() -> Reply {
        Reply {
            exit_code: 0,
            stdout: None,
            stderr: None,
        }
    }

    /// Exit 0 with `json` on stdout.
    pub fn json(json: Value) -> Reply {
        Reply {
            exit_code: 0,
            stdout: Some(json),
            stderr: None,
        }
    }

    /// The same reply with `note` on stderr.
    pub fn with_note(mut self, note: impl Into<String>) -> Reply {
        self.stderr = Some(note.into());
        self
    }

    /// The body of an HTTP hook's answer: the stdout JSON, or `{}`.
    pub fn http_body(&self) -> Value {
        self.stdout
            .clone()
            .unwrap_or_else(|| Value::Object(Default::default()))
    }
}
