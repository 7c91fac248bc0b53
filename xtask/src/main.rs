//! `cargo demo`: builds the example plugins (through `hookbox-tests`, whose
//! build script compiles every guest), copies them into
//! `target/demo/plugins/` with the manifest of `examples/demo/`, makes a
//! scratch project in `target/demo/workspace/`, and runs the scripted coding
//! agent of `examples/demo/session.json` on it with `hookbox run`.
//!
//! `cargo xtask plugins DIR` only copies the built example plugins to DIR;
//! `cargo xtask guests DIR` copies every guest, the test guests (the
//! misbehaving `puppet` ...) too, for test suites outside cargo (the Python
//! binding's).
//! `cargo xtask public-api [--check]` lists the public API of the crates
//! embedders depend on ([`public_api`]).
//! `cargo xtask compiled-once [--record FILE | --since FILE] DEPS_DIR...`
//! fails when a library was compiled twice into one of those folders, or
//! again in place ([`compiled_once`]; CI runs it).
//! `cargo xtask links` checks the relative links of the repository's
//! Markdown, anchors too ([`links`]; CI runs it).
//! `cargo xtask cycles` fails on a cycle between the top-level modules of a
//! host crate ([`cycles`]; CI runs it).
//! Benchmarks: `cargo bench -p hookbox-bench` (BENCHMARKS.md).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use hookbox_tests::guests;

mod compiled_once;
mod cycles;
mod links;
mod public_api;

fn main() -> Result<()> {
    if let Some(real) = std::env::var_os(public_api::RUSTDOC_WRAPPER) {
        return public_api::rustdoc(real);
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .context("workspace root")?;
    let mut args = std::env::args().skip(1);
    match args.next().as_deref() {
        Some("demo") | None => demo(root),
        Some("plugins") => {
            let dir = args
                .next()
                .map(PathBuf::from)
                .unwrap_or_else(|| root.join("target/demo/plugins"));
            copy_plugins(&dir).map(drop)
        }
        Some("guests") => {
            let dir = args
                .next()
                .map(PathBuf::from)
                .context("usage: xtask guests DIR")?;
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
            for (name, path) in guests::ALL {
                std::fs::copy(path, dir.join(format!("{name}.wasm")))
                    .with_context(|| format!("copying {name}"))?;
            }
            Ok(())
        }
        Some("public-api") => public_api::run(root, args.next().as_deref() == Some("--check")),
        Some("compiled-once") => compiled_once::main(root, args),
        Some("links") => links::run(root),
        Some("cycles") => cycles::run(root),
        Some(other) => {
            bail!(
                "unknown task `{other}`; tasks: demo, plugins [DIR], guests DIR, public-api [--check], compiled-once [--record FILE | --since FILE] DEPS_DIR..., links, cycles"
            )
        }
    }
}

fn demo(root: &Path) -> Result<()> {
    let demo = root.join("target/demo");
    let plugins = demo.join("plugins");
    let workspace = demo.join("workspace");
    copy_plugins(&plugins)?;
    scratch_workspace(&workspace)?;
    let workspace = workspace.canonicalize()?;
    // The manifest: order, and each guardrail's settings.
    std::fs::copy(
        root.join("examples/demo/hookbox.toml"),
        plugins.join("hookbox.toml"),
    )?;
    let session = root.join("examples/demo/session.json");
    let prompt = "Tidy up this project: check its configuration and clean the build directory.";
    println!(
        "$ hookbox run --plugins {} --model scripted:{} --workspace {} --enable-shell {prompt:?}\n",
        rel(root, &plugins),
        rel(root, &session),
        rel(root, &workspace)
    );
    // The `hookbox` command itself, in-process.
    let model = format!("scripted:{}", session.display());
    let args: [&std::ffi::OsStr; 10] = [
        "hookbox".as_ref(),
        "run".as_ref(),
        "--plugins".as_ref(),
        plugins.as_os_str(),
        "--model".as_ref(),
        model.as_ref(),
        "--workspace".as_ref(),
        workspace.as_os_str(),
        "--enable-shell".as_ref(),
        prompt.as_ref(),
    ];
    let code = hookbox_cli::main(args);
    if code != std::process::ExitCode::SUCCESS {
        bail!("the demo run did not finish");
    }
    Ok(())
}

/// A small project to tidy: a README, a `.env` with a (fake) secret, an
/// on-call page with a phone number, and a stale build directory.
fn scratch_workspace(dir: &Path) -> Result<()> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).with_context(|| format!("clearing {}", dir.display()))?;
    }
    std::fs::create_dir_all(dir.join("build"))?;
    std::fs::create_dir_all(dir.join("src"))?;
    std::fs::write(
        dir.join("README.md"),
        "# acme-service\n\nA small web service. Run it with `cargo run`.\n",
    )?;
    std::fs::write(
        dir.join("src/main.rs"),
        "fn main() {\n    println!(\"hello\");\n}\n",
    )?;
    // The demo's planted secret, for redact-secrets to find.
    std::fs::write(
        dir.join(".env"),
        "DATABASE_URL=postgres://db/app\nOPENAI_API_KEY=sk-live-4f9a8b7c6d5e4f3a2b1c\nmaintainer: alice@example.com\n", // gitleaks:allow
    )?;
    // Someone's phone number, for pii to find.
    std::fs::write(
        dir.join("ONCALL.md"),
        "# On call\n\nEscalations: Ada Lovelace, +44 20 7946 0958.\n",
    )?;
    std::fs::write(dir.join("build/app.o"), "stale")?;
    Ok(())
}

fn rel(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// Copies the example plugins (not the test guests) into `dir`.
fn copy_plugins(dir: &Path) -> Result<Vec<&'static str>> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    // Built as `hookbox build` builds them: a guard that names a start-up
    // (redact-secrets) ships pre-initialised.
    for (name, module) in guests::MODULES
        .iter()
        .filter(|(name, _)| guests::EXAMPLES.contains(name))
    {
        let core = std::fs::read(module).with_context(|| format!("reading {module}"))?;
        let component = hookbox_author::component_of_module(&core)
            .with_context(|| format!("building {name}"))?;
        std::fs::write(dir.join(format!("{name}.wasm")), component)
            .with_context(|| format!("writing {name}"))?;
    }
    Ok(guests::EXAMPLES.to_vec())
}
