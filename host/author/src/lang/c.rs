//! C guards: wit-bindgen-c writes the bindings (`hook.h`, `hook.c` and the
//! world's type as an object file) from the project's `wit/`, in-process
//! (no wit-bindgen CLI to install: [`hookbox_c_bindings`]), zig's clang
//! compiles them with the project's `.c` files against wasi-libc into a
//! reactor module, and the module is encoded as a component here,
//! in-process. A guard that does no I/O imports no WASI (~5 KB).

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{Language, Project, encode, find_tool, run};
use crate::Error;

const INSTALL_ZIG: &str =
    "pip install ziglang==0.17.1 (used as `python3 -m ziglang cc`), or put zig 0.17 on PATH";

/// The project `hookbox new --lang c` writes (with wit/, README.md and
/// cases/ from [`crate::new()`]).
pub(super) const TEMPLATE: &[(&str, &str)] = &[
    ("guard.c", include_str!("../../templates/c/guard.c")),
    (".gitignore", include_str!("../../templates/c/.gitignore")),
];

pub(super) fn build(project: &Project) -> Result<Vec<u8>, Error> {
    let mut cc = zig_cc()?;
    let scratch = project.scratch()?;
    let gen_dir = scratch.join("gen");
    if gen_dir.exists() {
        std::fs::remove_dir_all(&gen_dir).map_err(|e| Error::io(&gen_dir, e))?;
    }
    hookbox_c_bindings::generate(&project.dir.join("wit"), "hook", &gen_dir).map_err(|e| {
        Error::Build {
            language: Language::C.name(),
            step: "the C bindings (wit-bindgen-c)".into(),
            output: e.to_string(),
        }
    })?;

    let module = scratch.join(format!("{}.core.wasm", project.name));
    // A reactor: a library of exports, not a command with `main`.
    cc.args([
        "--target=wasm32-wasi",
        "-mexec-model=reactor",
        "-Os",
        "-Wall",
    ])
    .arg("-I")
    .arg(&gen_dir)
    .args(sources(&project.dir)?)
    .arg(gen_dir.join("hook.c"))
    .arg(gen_dir.join("hook_component_type.o"))
    .arg("-o")
    .arg(&module)
    .env("ZIG_LOCAL_CACHE_DIR", scratch.join("zig-cache"))
    .current_dir(&project.dir);
    run(Language::C, "zig cc", &mut cc)?;
    let bytes = std::fs::read(&module).map_err(|e| Error::io(&module, e))?;
    encode(Language::C, &bytes, None)
}

/// `zig cc`: zig from `PATH`, else the `ziglang` Python package's (its
/// `python-zig` script, or `python3 -m ziglang`).
fn zig_cc() -> Result<Command, Error> {
    if let Some(zig) = ["zig", "python-zig"]
        .into_iter()
        .find_map(|tool| find_tool(Language::C, tool, INSTALL_ZIG).ok())
    {
        let mut command = Command::new(zig);
        command.arg("cc");
        return Ok(command);
    }
    let python = find_tool(Language::C, "python3", INSTALL_ZIG).map_err(|_| missing_zig())?;
    let importable = Command::new(&python)
        .args(["-c", "import ziglang"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !importable {
        return Err(missing_zig());
    }
    let mut command = Command::new(python);
    command.args(["-m", "ziglang", "cc"]);
    Ok(command)
}
fn missing_zig() -> Error {
    Error::MissingTool {
        language: "c",
        tool: "zig".into(),
        install: INSTALL_ZIG.into(),
    }
}

/// The project's own `.c` files (its top folder), in name order, relative to it.
fn sources(dir: &Path) -> Result<Vec<PathBuf>, Error> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| Error::io(dir, e))?
        .filter_map(Result::ok)
        .filter(|entry| entry.path().is_file())
        .map(|entry| PathBuf::from(entry.file_name()))
        .filter(|name| name.extension().is_some_and(|e| e == "c"))
        .collect();
    files.sort();
    Ok(files)
}
