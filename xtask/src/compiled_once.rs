//! `cargo xtask compiled-once [--since FILE] DIR...`: fails when a library
//! was compiled more than once into the same `deps` directory, for example
//! wasmtime built once for the tests and again, with other features, for
//! the Python wheel; with `--since`, also when one was compiled again in
//! place after `--record FILE DIR...` noted it (a build script that ran
//! again because a later build's environment differed).
//!
//! CI's builds (the tests, the wheel, the Node module, the benchmarks, the
//! MCP test server) each select other packages, and cargo resolves features
//! per selection: a dependency that ends with other features in one of them
//! is compiled again, minutes for the large ones. `hookbox-workspace-hack`
//! (kept by `cargo hakari generate`) gives them all one feature set; this
//! check, run on CI's cold target directory after every build, is what
//! notices when it no longer does.
//!
//! A library is told apart by its name and its package's folder (a registry
//! crate's folder names its version), both read from the dep-info file cargo
//! writes next to each artifact, so two versions of one crate are two
//! libraries, not a duplicate.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

/// Workspace crates that are meant to be built twice, and why.
const EXPECTED: &[(&str, &str)] = &[(
    "hookbox_adapter",
    "the Python and Node bindings take it without its `tokio` feature",
)];

/// `xtask compiled-once` with its arguments.
pub fn main(root: &Path, mut args: impl Iterator<Item = String>) -> Result<()> {
    const USAGE: &str = "usage: xtask compiled-once [--record FILE | --since FILE] DEPS_DIR...";
    let (record_to, since) = match args.next() {
        Some(flag) if flag == "--record" => (Some(args.next().context(USAGE)?), None),
        Some(flag) if flag == "--since" => (None, Some(args.next().context(USAGE)?)),
        Some(dir) => {
            let dirs: Vec<PathBuf> = std::iter::once(dir)
                .chain(args)
                .map(PathBuf::from)
                .collect();
            return run(root, &dirs, None);
        }
        None => bail!(USAGE),
    };
    let dirs: Vec<PathBuf> = args.map(PathBuf::from).collect();
    if dirs.is_empty() {
        bail!(USAGE);
    }
    match record_to {
        Some(file) => record(root, &dirs, Path::new(&file)),
        None => run(root, &dirs, since.as_deref().map(Path::new)),
    }
}

/// Notes every library in `dirs` with its modification time, for a later
/// `--since`.
fn record(root: &Path, dirs: &[PathBuf], file: &Path) -> Result<()> {
    let mut lines = String::new();
    for dir in dirs {
        for (_, _, artifact) in libraries(root, dir)? {
            lines.push_str(&format!(
                "{} {}\n",
                modified(&artifact)?,
                artifact.display()
            ));
        }
    }
    std::fs::write(file, lines).with_context(|| format!("writing {}", file.display()))
}

/// An artifact's modification time, in nanoseconds since the epoch.
fn modified(artifact: &Path) -> Result<u128> {
    let time = std::fs::metadata(artifact)
        .and_then(|m| m.modified())
        .with_context(|| format!("reading {}", artifact.display()))?;
    Ok(time
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos())
}

/// Every library in `dirs` compiled once, and (with `since`) none of those
/// recorded compiled again.
pub fn run(root: &Path, dirs: &[PathBuf], since: Option<&Path>) -> Result<()> {
    let mut builds: BTreeMap<(String, PathBuf), Vec<PathBuf>> = BTreeMap::new();
    for dir in dirs {
        for (name, package, artifact) in libraries(root, dir)? {
            builds.entry((name, package)).or_default().push(artifact);
        }
    }
    let mut twice = Vec::new();
    if let Some(since) = since {
        let text = std::fs::read_to_string(since)
            .with_context(|| format!("reading {}", since.display()))?;
        for line in text.lines() {
            let (time, artifact) = line
                .split_once(' ')
                .with_context(|| format!("{}: not a record", since.display()))?;
            let artifact = Path::new(artifact);
            if modified(artifact)?.to_string() != time {
                twice.push(format!("  {}, compiled again in place", artifact.display()));
            }
        }
    }
    for ((name, package), artifacts) in &builds {
        if artifacts.len() < 2 || EXPECTED.iter().any(|(expected, _)| expected == name) {
            continue;
        }
        twice.push(format!(
            "  {name} ({}), {} times: {}",
            package.display(),
            artifacts.len(),
            artifacts
                .iter()
                .filter_map(|a| a.file_name())
                .map(|f| f.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    println!(
        "{} libraries, each compiled once ({} allowed twice: {})",
        builds.len() - twice.len(),
        EXPECTED.len(),
        EXPECTED
            .iter()
            .map(|(name, why)| format!("{name}, {why}"))
            .collect::<Vec<_>>()
            .join("; ")
    );
    if twice.is_empty() {
        return Ok(());
    }
    bail!(
        "compiled more than once:\n{}\n\
         Twice beside each other: a build selected packages whose features differ from the \
         tests'. Run `cargo hakari generate` and commit host/workspace-hack/Cargo.toml; a new \
         build in .ci/run must select hookbox-workspace-hack too. Again in place: a build ran \
         in an environment that made a build script run again (docs/ci.md).",
        twice.join("\n")
    )
}

/// Every library compiled into `dir` (rlibs and proc-macros): its crate
/// name, its package's folder and the artifact.
fn libraries(root: &Path, dir: &Path) -> Result<Vec<(String, PathBuf, PathBuf)>> {
    let mut found = Vec::new();
    let entries = std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))?;
    for entry in entries {
        let path = entry?.path();
        let Some(file) = path.file_name().and_then(|f| f.to_str()) else {
            continue;
        };
        let Some((name, hash)) = artifact_name(file) else {
            continue;
        };
        let dep_info = dir.join(format!("{name}-{hash}.d"));
        let text = std::fs::read_to_string(&dep_info)
            .with_context(|| format!("reading {}", dep_info.display()))?;
        let package = package_of(root, &text, &path)
            .with_context(|| format!("{} names no crate root", dep_info.display()))?;
        found.push((name.to_owned(), package, path));
    }
    Ok(found)
}

/// `libNAME-HASH.rlib` or `libNAME-HASH.so` (a proc-macro) as (NAME, HASH).
fn artifact_name(file: &str) -> Option<(&str, &str)> {
    let stem = file.strip_prefix("lib")?;
    let stem = stem
        .strip_suffix(".rlib")
        .or_else(|| stem.strip_suffix(".so"))?;
    let (name, hash) = stem.rsplit_once('-')?;
    (hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit())).then_some((name, hash))
}

/// The package folder of the crate whose dep-info this is: the nearest
/// folder with a `Cargo.toml` above the first source of the artifact's rule
/// (cargo gives a workspace crate's sources relative to the workspace root).
fn package_of(root: &Path, dep_info: &str, artifact: &Path) -> Option<PathBuf> {
    let artifact = artifact.to_str()?;
    let rule = dep_info
        .lines()
        .find_map(|line| line.strip_prefix(artifact)?.strip_prefix(':'))?;
    let source = root.join(rule.split_whitespace().next()?);
    source
        .ancestors()
        .skip(1)
        .find(|dir| dir.join("Cargo.toml").is_file())
        .map(Path::to_path_buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn artifacts_are_named_with_a_cargo_hash() {
        assert_eq!(
            artifact_name("libwasmtime-0123456789abcdef.rlib"),
            Some(("wasmtime", "0123456789abcdef"))
        );
        assert_eq!(
            artifact_name("libserde_derive-fedcba9876543210.so"),
            Some(("serde_derive", "fedcba9876543210"))
        );
        assert_eq!(artifact_name("libwasmtime-0123456789abcdef.rmeta"), None);
        assert_eq!(artifact_name("lib_native.so"), None);
        assert_eq!(artifact_name("wasmtime-0123456789abcdef.d"), None);
    }

    #[test]
    fn two_builds_of_one_package_are_found_and_two_versions_are_not() {
        let dir = std::env::temp_dir().join(format!("compiled-once-{}", std::process::id()));
        let deps = dir.join("deps");
        std::fs::create_dir_all(&deps).unwrap();
        let lib = |package: &str, name: &str, hash: &str| {
            let src = dir.join(package).join("src");
            std::fs::create_dir_all(&src).unwrap();
            std::fs::write(dir.join(package).join("Cargo.toml"), "").unwrap();
            let artifact = deps.join(format!("lib{name}-{hash}.rlib"));
            std::fs::write(&artifact, "").unwrap();
            std::fs::write(
                deps.join(format!("{name}-{hash}.d")),
                format!(
                    "{}: {}/lib.rs {}/more.rs\n",
                    artifact.display(),
                    src.display(),
                    src.display()
                ),
            )
            .unwrap();
        };
        lib("hashbrown-0.16.1", "hashbrown", "0000000000000001");
        lib("hashbrown-0.17.0", "hashbrown", "0000000000000002");
        assert!(run(&dir, std::slice::from_ref(&deps), None).is_ok());
        let record_file = dir.join("record");
        record(&dir, std::slice::from_ref(&deps), &record_file).unwrap();
        assert!(run(&dir, std::slice::from_ref(&deps), Some(&record_file)).is_ok());
        let rebuilt = deps.join("libhashbrown-0000000000000001.rlib");
        let later = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
        std::fs::File::options()
            .write(true)
            .open(&rebuilt)
            .unwrap()
            .set_modified(later)
            .unwrap();
        let error = run(&dir, std::slice::from_ref(&deps), Some(&record_file))
            .unwrap_err()
            .to_string();
        assert!(error.contains("compiled again in place"), "{error}");
        lib("wasmtime-48.0.8", "wasmtime", "0000000000000003");
        lib("wasmtime-48.0.8", "wasmtime", "0000000000000004");
        let error = run(&dir, std::slice::from_ref(&deps), None)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("wasmtime") && error.contains("2 times"),
            "{error}"
        );
        assert!(!error.contains("hashbrown"), "{error}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
