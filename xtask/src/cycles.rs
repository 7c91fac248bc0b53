//! `cargo xtask cycles`: no cycle between the top-level modules of a host
//! crate (docs/architecture.md#layers). A module is a file of `src/` or a
//! folder with its `mod.rs`; it uses another where its code (not its
//! comments) names `crate::other` (or `super::other` from a top-level
//! file), `use crate::{other, ...}` too. A cycle is printed as the path
//! around it, with a file that closes each step.
//!
//! A scan of paths rather than a compiler pass: a module is a unit of
//! reading, and what the code names is what a reader follows. It needs no
//! build, so it runs in a second (rust-analyzer's module graph would need
//! the whole workspace loaded).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

/// Which modules each module uses, and a file where it does.
type Graph = BTreeMap<String, BTreeMap<String, PathBuf>>;

pub fn run(root: &Path) -> Result<()> {
    let mut found = Vec::new();
    let mut crates = 0;
    for entry in std::fs::read_dir(root.join("host")).context("reading host/")? {
        let src = entry?.path().join("src");
        if !src.is_dir() {
            continue;
        }
        crates += 1;
        let graph = graph(&src)?;
        for cycle in cycles(&graph) {
            let steps: Vec<String> = cycle
                .windows(2)
                .map(|pair| {
                    let file = &graph[&pair[0]][&pair[1]];
                    let file = file.strip_prefix(root).unwrap_or(file);
                    format!("{} → {} ({})", pair[0], pair[1], file.display())
                })
                .collect();
            let at = src.strip_prefix(root).unwrap_or(&src);
            found.push(format!("{}: {}", at.display(), steps.join(", ")));
        }
    }
    if !found.is_empty() {
        bail!(
            "{} module cycle(s); move what both sides need into a module of its own, or pass it in:\n{}",
            found.len(),
            found.join("\n")
        );
    }
    println!("no module cycle in {crates} host crates");
    Ok(())
}

/// The module graph of the crate whose sources are `src`.
fn graph(src: &Path) -> Result<Graph> {
    let mut modules = BTreeMap::new();
    for entry in std::fs::read_dir(src)? {
        let path = entry?.path();
        let name = path
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        if path.is_dir() {
            modules.insert(name, files_under(&path)?);
        } else if path.extension().is_some_and(|e| e == "rs") && name != "lib" && name != "main" {
            modules.insert(name, vec![path]);
        }
    }
    let names: BTreeSet<String> = modules.keys().cloned().collect();
    let mut graph = Graph::new();
    for (module, files) in &modules {
        let uses = graph.entry(module.clone()).or_default();
        for file in files {
            let text = std::fs::read_to_string(file)
                .with_context(|| format!("reading {}", file.display()))?;
            let top_level = file.parent() == Some(src);
            for used in named(&code_of(&text), top_level) {
                if used != *module && names.contains(&used) {
                    uses.entry(used).or_insert_with(|| file.clone());
                }
            }
        }
    }
    Ok(graph)
}

fn files_under(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            files.extend(files_under(&path)?);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    Ok(files)
}

/// `text` without its `//` comments (doc comments too: an intra-doc link
/// is a pointer for the reader, not a use).
fn code_of(text: &str) -> String {
    text.lines()
        .map(|line| match line.find("//") {
            // Not inside a string: a quote count before it that is even.
            Some(at) if line[..at].matches('"').count() % 2 == 0 => &line[..at],
            _ => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The top-level modules `code` names: `crate::x`, each first name of a
/// `crate::{x, y::z}` group, and (in a top-level file) `super::x`.
fn named(code: &str, top_level: bool) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut prefixes = vec!["crate::"];
    if top_level {
        prefixes.push("super::");
    }
    for prefix in prefixes {
        for (at, _) in code.match_indices(prefix) {
            let before = code[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue; // `my_crate::`, not `crate::`
            }
            let rest = code[at + prefix.len()..].trim_start();
            match rest.strip_prefix('{') {
                Some(group) => found.extend(group_heads(group)),
                None => found.extend(ident(rest)),
            }
        }
    }
    found
}

/// The first name of each item of a `{...}` group (from after its `{`).
fn group_heads(group: &str) -> Vec<String> {
    let mut heads = Vec::new();
    let mut depth = 0;
    let mut item_start = true;
    for (at, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => item_start = true,
            c if item_start && !c.is_whitespace() => {
                item_start = false;
                heads.extend(ident(&group[at..]));
            }
            _ => {}
        }
    }
    heads
}

fn ident(text: &str) -> Option<String> {
    let end = text
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    (end > 0).then(|| text[..end].to_owned())
}

/// Each cycle of `graph`, once, as the path around it (first module last
/// again), from its smallest module.
fn cycles(graph: &Graph) -> Vec<Vec<String>> {
    let mut found = BTreeSet::new();
    for start in graph.keys() {
        let mut path = vec![start.clone()];
        walk(graph, start, &mut path, &mut found);
    }
    found.into_iter().collect()
}

fn walk(graph: &Graph, start: &str, path: &mut Vec<String>, found: &mut BTreeSet<Vec<String>>) {
    let here = path.last().cloned().unwrap_or_default();
    for next in graph.get(&here).into_iter().flat_map(BTreeMap::keys) {
        if next == start {
            // Found once, from its smallest module.
            if path.iter().all(|m| m.as_str() >= start) {
                let mut cycle = path.clone();
                cycle.push(start.to_owned());
                found.insert(cycle);
            }
        } else if !path.contains(next) && next.as_str() > start {
            path.push(next.clone());
            walk(graph, start, path, found);
            path.pop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_groups_name_modules_and_comments_do_not() {
        let code = code_of(
            "use crate::{a::X, b, c::{d, e}};\nlet x = crate::f::g(); // crate::h\n/// [`crate::i`]\nmy_crate::j();\nsuper::k();",
        );
        let names: Vec<String> = named(&code, true).into_iter().collect();
        assert_eq!(names, ["a", "b", "c", "f", "k"]);
        assert!(!named(&code, false).contains("k"));
    }

    #[test]
    fn a_cycle_is_found_once_and_a_chain_is_none() {
        let edge = |a: &str, b: &str| (a.to_owned(), b.to_owned());
        let mut graph = Graph::new();
        for (from, to) in [
            edge("a", "b"),
            edge("b", "c"),
            edge("c", "a"),
            edge("c", "d"),
        ] {
            graph.entry(from).or_default().insert(to, PathBuf::new());
        }
        assert_eq!(cycles(&graph), [["a", "b", "c", "a"]]);
        graph.get_mut("c").unwrap().remove("a");
        assert!(cycles(&graph).is_empty());
    }
}
