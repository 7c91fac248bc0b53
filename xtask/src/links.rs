//! `cargo xtask links`: every relative link in the repository's Markdown
//! points at a file that exists, and every `#anchor` at a heading of the
//! page it names (GitHub's anchors). CI runs it; links to other sites are
//! not followed (CI has no network but the package registries).
//!
//! The pages are the Markdown files git tracks, but the vendored advisory
//! database and the project templates `hookbox new` copies (their links are
//! relative to the new project, not to this repository). pulldown-cmark
//! reads them, so a link is what GitHub renders as one: not text in a code
//! span or block.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

use anyhow::{Context, Result, bail};
use pulldown_cmark::{Event, Parser, Tag, TagEnd};

/// Tracked Markdown under these folders is not checked (see above).
const NOT_CHECKED: &[&str] = &["supply-chain/advisory-db/", "host/author/templates/"];

/// `xtask links`.
pub fn run(root: &Path) -> Result<()> {
    let listed = std::process::Command::new("git")
        .args(["ls-files", "-z", "--", "*.md"])
        .current_dir(root)
        .output()
        .context("running `git ls-files` (xtask links reads the pages git tracks)")?;
    if !listed.status.success() {
        bail!(
            "`git ls-files` failed: {}",
            String::from_utf8_lossy(&listed.stderr)
        );
    }
    let pages: Vec<PathBuf> = listed
        .stdout
        .split(|&b| b == 0)
        .filter(|name| !name.is_empty())
        .map(|name| PathBuf::from(String::from_utf8_lossy(name).into_owned()))
        .filter(|page| !NOT_CHECKED.iter().any(|dir| page.starts_with(dir)))
        .collect();

    let mut anchors: BTreeMap<PathBuf, BTreeSet<String>> = BTreeMap::new();
    let mut broken = Vec::new();
    let mut checked = 0;
    for page in &pages {
        let text = std::fs::read_to_string(root.join(page))
            .with_context(|| format!("reading {}", page.display()))?;
        for (line, target) in links(&text) {
            checked += 1;
            if let Err(why) = check(root, page, &target, &mut anchors) {
                broken.push(format!("  {}:{line}: {target}: {why}", page.display()));
            }
        }
    }
    println!("{checked} relative links in {} pages", pages.len());
    if broken.is_empty() {
        return Ok(());
    }
    bail!(
        "{} broken links:\n{}\nFix the path or the anchor (a heading's anchor is its text in lower case, \
         spaces as `-`, other punctuation dropped).",
        broken.len(),
        broken.join("\n")
    )
}

/// The relative link and image targets of a page, with their lines.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (event, range) in Parser::new(text).into_offset_iter() {
        let target = match event {
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => dest_url,
            _ => continue,
        };
        if target.is_empty() || has_scheme(&target) {
            continue;
        }
        let line = text[..range.start].matches('\n').count() + 1;
        found.push((line, target.into_string()));
    }
    found
}

/// `https:`, `mailto:` ...: a link out of the repository.
fn has_scheme(target: &str) -> bool {
    target.split_once(':').is_some_and(|(scheme, _)| {
        !scheme.is_empty()
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    })
}

/// Whether `target`, written in `page`, names an existing file (and
/// heading).
fn check(
    root: &Path,
    page: &Path,
    target: &str,
    anchors: &mut BTreeMap<PathBuf, BTreeSet<String>>,
) -> Result<(), String> {
    let (path, anchor) = match target.split_once('#') {
        Some((path, anchor)) => (path, Some(anchor)),
        None => (target, None),
    };
    let file = if path.is_empty() {
        page.to_path_buf()
    } else {
        let joined = page.parent().unwrap_or(Path::new("")).join(path);
        normal(&joined).ok_or("points above the repository")?
    };
    let on_disk = root.join(&file);
    if !on_disk.exists() {
        return Err(format!("no such file ({})", file.display()));
    }
    let Some(anchor) = anchor else {
        return Ok(());
    };
    if on_disk.extension().is_none_or(|ext| ext != "md") {
        // A line anchor into source (`#L10`) or the like: GitHub's, not a heading.
        return Ok(());
    }
    if !anchors.contains_key(&file) {
        let text = std::fs::read_to_string(&on_disk).map_err(|e| e.to_string())?;
        anchors.insert(file.clone(), headings(&text));
    }
    if anchors[&file].contains(anchor) {
        Ok(())
    } else {
        Err(format!(
            "{} has no heading with this anchor",
            file.display()
        ))
    }
}

/// `a/b/../c` as `a/c`; `None` when it leaves the repository.
fn normal(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::Normal(name) => out.push(name),
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

/// The anchors GitHub gives a page's headings: the heading's text in lower
/// case, spaces as `-`, punctuation but `-` and `_` dropped; a repeated
/// anchor gets `-1`, `-2` ...
fn headings(text: &str) -> BTreeSet<String> {
    let mut anchors = BTreeSet::new();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut heading: Option<String> = None;
    for event in Parser::new(text) {
        match event {
            Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
            Event::Text(t) | Event::Code(t) => {
                if let Some(h) = heading.as_mut() {
                    h.push_str(&t);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                let slug = slug(&heading.take().unwrap_or_default());
                let n = seen.entry(slug.clone()).or_insert(0);
                anchors.insert(if *n == 0 {
                    slug.clone()
                } else {
                    format!("{slug}-{n}")
                });
                *n += 1;
            }
            _ => {}
        }
    }
    anchors
}

fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anchors_are_github_s() {
        let page =
            "# hookbox\n## More than one `hookbox serve`: sessions in Redis\n## Notes\n## Notes\n";
        let anchors = headings(page);
        for anchor in [
            "hookbox",
            "more-than-one-hookbox-serve-sessions-in-redis",
            "notes",
            "notes-1",
        ] {
            assert!(anchors.contains(anchor), "{anchor}: {anchors:?}");
        }
    }

    #[test]
    fn links_are_what_markdown_renders_as_links() {
        let page = "See [a](docs/a.md#x) and ![img](i.png).\n\n`[not](b.md)`\n\n```\n[nor](c.md)\n```\n[out](https://example.com) [mail](mailto:a@b.c)\n";
        let found: Vec<String> = links(page).into_iter().map(|(_, t)| t).collect();
        assert_eq!(found, ["docs/a.md#x", "i.png"]);
    }

    #[test]
    fn a_missing_file_and_a_missing_heading_are_broken() {
        let root = std::env::temp_dir().join(format!("xtask-links-{}", std::process::id()));
        std::fs::create_dir_all(root.join("docs")).unwrap();
        std::fs::write(root.join("docs/a.md"), "# A page\n").unwrap();
        let page = Path::new("README.md");
        let mut anchors = BTreeMap::new();
        assert!(check(&root, page, "docs/a.md#a-page", &mut anchors).is_ok());
        assert!(check(&root, Path::new("docs/b.md"), "a.md", &mut anchors).is_ok());
        let missing = check(&root, page, "docs/b.md", &mut anchors).unwrap_err();
        assert!(missing.contains("no such file"), "{missing}");
        let no_heading = check(&root, page, "docs/a.md#b-page", &mut anchors).unwrap_err();
        assert!(no_heading.contains("no heading"), "{no_heading}");
        assert!(check(&root, page, "../outside.md", &mut anchors).is_err());
        std::fs::remove_dir_all(&root).unwrap();
    }
}
