//! Python guards: componentize-py generates the `wit_world` bindings from the
//! project's `wit/` and builds the component, CPython with `app.py` inside
//! (~18 MB), with WASI stubbed out (`--stub-wasi`: it imports none).

use std::process::Command;

use super::{Language, Project, find_tool, run};
use crate::Error;

const INSTALL_COMPONENTIZE_PY: &str = "pip install componentize-py==0.25.1";

/// The project `hookbox new --lang python` writes (with wit/, README.md and
/// cases/ from [`crate::new()`]).
pub(super) const TEMPLATE: &[(&str, &str)] = &[
    ("app.py", include_str!("../../templates/python/app.py")),
    (
        ".gitignore",
        include_str!("../../templates/python/.gitignore"),
    ),
];

pub(super) fn build(project: &Project) -> Result<Vec<u8>, Error> {
    let componentize = find_tool(Language::Python, "componentize-py", INSTALL_COMPONENTIZE_PY)?;
    let scratch = project.scratch()?;
    let out = scratch.join(format!("{}.wasm", project.name));
    // `componentize` writes the bindings itself (no `bindings` step), to a
    // folder of its own: the project keeps none to go stale.
    run(
        Language::Python,
        "componentize-py componentize",
        Command::new(&componentize)
            .args([
                "-d",
                "wit",
                "-w",
                "hook",
                "componentize",
                "app",
                "--stub-wasi",
                "-o",
            ])
            .arg(&out)
            // Its errors without a Rust backtrace of componentize-py itself.
            .env("RUST_LIB_BACKTRACE", "0")
            .current_dir(&project.dir),
    )
    // Other componentize-py versions generate other bindings.
    .map_err(|e| super::version_hint(e, &componentize, "0.25.1", INSTALL_COMPONENTIZE_PY))?;
    std::fs::read(&out).map_err(|e| Error::io(&out, e))
}
