// Reading bench/shell's labelled commands, shared by the shell_guard
// benchmark (`bench/benches/shell_guard.rs`) and shell-guard's own test
// of its rules, which include this file: the data and how it is split are
// read one way. The including module names where bench/shell is from its
// crate (`DATA`).

/// One command of `harmful.jsonl` or `benign.jsonl`.
pub struct Labelled {
    /// Its class: what a harmful one does (`sudo`, `shell-escape`, an
    /// Atomic Red Team technique), a benign one's tldr platform.
    pub label: String,
    /// The page or test it comes from.
    pub source: String,
    /// The command line.
    pub command: String,
}

/// The rows of `name` in bench/shell.
pub fn labelled(name: &str) -> Vec<Labelled> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(super::DATA)
        .join(name);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|line| {
            let row: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
            let field = |key: &str| row[key].as_str().unwrap_or_default().to_owned();
            Labelled {
                label: field("label"),
                source: field("source"),
                command: field("command"),
            }
        })
        .collect()
}

/// Whether `command` escalates (`sudo`, `su`, `doas`, `pkexec`, `run0` as
/// a command word), which shell-guard refuses by design: such benign
/// examples are counted apart.
pub fn escalates(command: &str) -> bool {
    hookbox_sdk::shell::parse(command).is_ok_and(|commands| {
        commands.iter().any(|c| {
            c.wrappers()
                .chain(c.program())
                .any(|p| matches!(p, "sudo" | "su" | "doas" | "pkexec" | "run0"))
        })
    })
}
