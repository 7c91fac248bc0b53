//! What a component is, whatever language made it: its imports, exports,
//! size and producers ([`PluginInfo`]), and, when it cannot be a hookbox
//! plugin, why, in words that say how to fix the build.

use wasmparser::{KnownCustom, Parser, Payload};
use wasmtime::component::Component;
use wasmtime::component::types::ComponentItem;

use crate::engine::Runtime;
use crate::error::LoadError;

/// The version of the `hookbox:hook` package this host implements.
pub const WIT_VERSION: &str = "0.1.0";

/// What `hookbox check` reports about a component.
#[derive(Clone, Debug)]
pub struct PluginInfo {
    /// The component's size in bytes.
    pub size_bytes: usize,
    /// Import names, e.g. `hookbox:hook/config@0.1.0`, `log`, `wasi:cli/stdout@0.2.6`.
    pub imports: Vec<String>,
    /// Export names; a non-function export is marked `(not a function)`.
    pub exports: Vec<String>,
    /// Whether it imports any WASI interface (and so gets an empty WASI context).
    pub uses_wasi: bool,
    /// The toolchain, from the `producers` sections of the component and of
    /// the modules inside it: (field, value), e.g. (`language`, `JavaScript`),
    /// (`processed-by`, `wit-component 0.239.0`). Deduplicated, in order.
    pub producers: Vec<(String, String)>,
}

/// Compiles `bytes` and reports its facts, without linking or starting it:
/// what `hookbox check` shows for a component that does not load.
///
/// # Errors
/// [`LoadError`] in the `compile` phase when it is not a valid component,
/// `limits` when it took too long to compile.
pub fn inspect(runtime: &Runtime, name: &str, bytes: &[u8]) -> Result<PluginInfo, LoadError> {
    let component = runtime
        .compile(bytes, None)
        .map_err(|(phase, reason)| LoadError::new(name, phase, reason))?;
    Ok(describe(&component, runtime, bytes))
}

pub(crate) fn describe(component: &Component, runtime: &Runtime, bytes: &[u8]) -> PluginInfo {
    let ty = component.component_type();
    let engine = runtime.engine();
    let imports: Vec<String> = ty
        .imports(engine)
        .map(|(name, _)| name.to_owned())
        .collect();
    let exports = ty
        .exports(engine)
        .map(|(name, item)| match item.ty {
            ComponentItem::ComponentFunc(_) => name.to_owned(),
            _ => format!("{name} (not a function)"),
        })
        .collect();
    let uses_wasi = imports.iter().any(|name| name.starts_with("wasi:"));
    PluginInfo {
        size_bytes: bytes.len(),
        imports,
        exports,
        uses_wasi,
        producers: producers(bytes),
    }
}

/// The `producers` custom sections, at every level of nesting.
fn producers(bytes: &[u8]) -> Vec<(String, String)> {
    let mut found: Vec<(String, String)> = Vec::new();
    for payload in Parser::new(0).parse_all(bytes) {
        let Ok(Payload::CustomSection(section)) = payload else {
            continue;
        };
        let KnownCustom::Producers(fields) = section.as_known() else {
            continue;
        };
        for field in fields.into_iter().flatten() {
            for value in field.values.into_iter().flatten() {
                let text = if value.version.is_empty() {
                    value.name.to_owned()
                } else {
                    format!("{} {}", value.name, value.version)
                };
                let entry = (field.name.to_owned(), text);
                if !found.contains(&entry) {
                    found.push(entry);
                }
            }
        }
    }
    found
}

/// The WASI 0.2 interfaces hookbox links (all empty: no files, environment,
/// network or time), by package.
const WASI_PROVIDED: [(&str, &[&str]); 6] = [
    (
        "cli",
        &[
            "environment",
            "exit",
            "stdin",
            "stdout",
            "stderr",
            "terminal-input",
            "terminal-output",
            "terminal-stdin",
            "terminal-stdout",
            "terminal-stderr",
        ],
    ),
    ("clocks", &["monotonic-clock", "wall-clock"]),
    ("filesystem", &["types", "preopens"]),
    ("io", &["error", "poll", "streams"]),
    ("random", &["random", "insecure", "insecure-seed"]),
    (
        "sockets",
        &[
            "network",
            "instance-network",
            "tcp",
            "tcp-create-socket",
            "udp",
            "udp-create-socket",
            "ip-name-lookup",
        ],
    ),
];

/// The WASI version hookbox links (any 0.2.x).
const WASI_VERSION: &str = "0.2.0";

/// The WASI packages hookbox links, for messages: "cli, clocks, ...".
fn wasi_packages() -> String {
    WASI_PROVIDED.map(|(package, _)| package).join(", ")
}

/// An import name's package, interface and version:
/// `wasi:cli/stdout@0.2.6` is (`wasi:cli`, `stdout`, `Some("0.2.6")`).
fn split_name(import: &str) -> Option<(&str, &str, Option<&str>)> {
    let (package, rest) = import.split_once('/')?;
    Some(match rest.split_once('@') {
        Some((interface, version)) => (package, interface, Some(version)),
        None => (package, rest, None),
    })
}

/// The interfaces of our package a hook may import.
const HOOKBOX_INTERFACES: [&str; 3] = ["types", "config", "scratchpad"];

/// Whether hookbox links an import of this name. Versions match as the
/// linker matches them: the same `0.minor`, any patch, no pre-release.
pub fn provided(import: &str) -> bool {
    if import == "log" {
        return true;
    }
    let Some((package, interface, Some(version))) = split_name(import) else {
        return false;
    };
    match package {
        "hookbox:hook" => {
            HOOKBOX_INTERFACES.contains(&interface) && same_minor(version, WIT_VERSION)
        }
        _ => package.strip_prefix("wasi:").is_some_and(|package| {
            same_minor(version, WASI_VERSION)
                && WASI_PROVIDED
                    .iter()
                    .any(|(p, interfaces)| *p == package && interfaces.contains(&interface))
        }),
    }
}

/// `0.M.x` against `0.M.y`: semver-compatible, as wasmtime's linker resolves
/// imports (a pre-release never is).
fn same_minor(version: &str, ours: &str) -> bool {
    let minor = |v: &str| -> Option<(u64, u64)> {
        let mut parts = v.split('.');
        let major = parts.next()?.parse().ok()?;
        let minor = parts.next()?.parse().ok()?;
        let patch = parts.next()?;
        (parts.next().is_none() && patch.parse::<u64>().is_ok()).then_some((major, minor))
    };
    minor(version).is_some_and(|v| Some(v) == minor(ours))
}

/// Why a component whose imports failed to link is refused: every import
/// hookbox does not provide, each with what to change in the build.
pub(crate) fn link_failure(info: &PluginInfo, wasmtime_says: &str) -> String {
    let unprovided: Vec<String> = info
        .imports
        .iter()
        .filter(|import| !provided(import))
        .map(|import| explain(import, info))
        .collect();
    let allowed = format!(
        "a hook may import only `log`, `hookbox:hook/config@{WIT_VERSION}`, \
         `hookbox:hook/scratchpad@{WIT_VERSION}`, `hookbox:hook/types@{WIT_VERSION}` \
         and WASI 0.2 ({}; all empty)",
        wasi_packages()
    );
    if unprovided.is_empty() {
        // Every name is one we provide, so a type does not match.
        let ours = info
            .imports
            .iter()
            .any(|i| i == "log" || i.starts_with("hookbox:hook/"));
        let hint = if ours {
            "; if the guest's own hookbox:hook imports differ from this host's, regenerate its \
             bindings from this host's wit/hook.wit"
        } else {
            ""
        };
        return format!(
            "an import does not match what this host provides ({wasmtime_says}){hint}; {allowed}"
        );
    }
    format!(
        "imports what hookbox does not provide: {}; {allowed}",
        unprovided.join("; ")
    )
}

fn explain(import: &str, info: &PluginInfo) -> String {
    let Some((package, interface, version)) = split_name(import) else {
        return format!("`{import}`");
    };
    let why = match (package, version) {
        ("hookbox:hook", None) => format!(
            "its WIT package has no version: generate the bindings from this host's \
             wit/hook.wit (hookbox:hook@{WIT_VERSION})"
        ),
        ("hookbox:hook", Some(version)) if !same_minor(version, WIT_VERSION) => format!(
            "built against hookbox:hook@{version}, this host implements \
             hookbox:hook@{WIT_VERSION}: regenerate the bindings from its wit/hook.wit"
        ),
        ("hookbox:hook", Some(_)) => {
            format!("`{interface}` is not an interface of the hookbox:hook/hook world")
        }
        ("wasi:http", _) => "guests get no network; componentize-js adds it unless built \
             with `-d http fetch-event`"
            .to_owned(),
        (wasi, version) if wasi.starts_with("wasi:") => {
            let fix = if built_by_componentize_py(info) {
                "componentize-py guests avoid WASI with `--stub-wasi`"
            } else {
                "leave WASI out of the build, or build for WASI 0.2 (wasm32-wasip2)"
            };
            let what = match version {
                None => "WASI without a version".to_owned(),
                Some(v) if v.contains('-') => format!("a pre-release of WASI ({v})"),
                Some(v) if !same_minor(v, WASI_VERSION) => format!("WASI {v}"),
                Some(_) => "not one of the interfaces hookbox provides".to_owned(),
            };
            format!(
                "{what}; hookbox provides WASI 0.2's {}, all empty: {fix}",
                wasi_packages()
            )
        }
        _ => return format!("`{import}`"),
    };
    format!("`{import}` ({why})")
}

/// componentize-py's builds carry no `language` field; its pre-initialiser
/// names itself.
fn built_by_componentize_py(info: &PluginInfo) -> bool {
    info.producers.iter().any(|(field, value)| {
        (field == "language" && value.starts_with("Python"))
            || value.starts_with("component-init-transform")
    })
}

/// Why a component that links is not a hook: a missing or mistyped export.
pub(crate) fn world_hint(info: &PluginInfo) -> String {
    let mut hint = format!(
        "a hook targets the world `hook` of hookbox:hook@{WIT_VERSION} (wit/hook.wit), \
         exporting `subscriptions` and `on-event`; its exports: {}",
        list_or_none(&info.exports)
    );
    if info.exports.iter().any(|e| e.starts_with("wasi:cli/run")) {
        hint.push_str(
            "; it exports `wasi:cli/run`, so it is a command (a program with `main`): \
             build a library/reactor instead",
        );
    }
    hint
}

pub(crate) fn list_or_none(items: &[String]) -> String {
    if items.is_empty() {
        "none".into()
    } else {
        items.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_hookbox_provides() {
        for name in [
            "log",
            "hookbox:hook/types@0.1.0",
            "hookbox:hook/config@0.1.0",
            "hookbox:hook/scratchpad@0.1.0",
            "wasi:cli/stdout@0.2.0",
            "wasi:io/streams@0.2.6",
            "wasi:sockets/tcp@0.2.3",
            "hookbox:hook/config@0.1.7",
        ] {
            assert!(provided(name), "{name}");
        }
        for name in [
            "hookbox:hook/config@0.2.0",
            "hookbox:hook/net@0.1.0",
            "wasi:http/outgoing-handler@0.2.0",
            "wasi:cli/stdout@0.3.0",
            "wasi:keyvalue/store@0.2.0-draft",
            "evil:net/socket",
            "logger",
            "wasi:cli/stdout@0.2.0-rc-2023-11-10",
            "wasi:cli/run@0.2.0",
            "wasi:clocks/timezone@0.2.0",
            "hookbox:hook/config@0.1",
        ] {
            assert!(!provided(name), "{name}");
        }
    }

    #[test]
    fn a_link_failure_names_every_import_with_its_fix() {
        let info = PluginInfo {
            size_bytes: 0,
            imports: vec![
                "hookbox:hook/config@0.2.0".into(),
                "log".into(),
                "wasi:http/types@0.2.0".into(),
                "wasi:cli/stdout@0.2.0".into(),
            ],
            exports: vec![],
            uses_wasi: true,
            producers: vec![],
        };
        let why = link_failure(&info, "wasmtime's words");
        assert!(why.contains("`hookbox:hook/config@0.2.0` (built against hookbox:hook@0.2.0, this host implements hookbox:hook@0.1.0"), "{why}");
        assert!(why.contains("`wasi:http/types@0.2.0` (guests get no network; componentize-js adds it unless built with `-d http fetch-event`)"), "{why}");
        assert!(
            !why.contains("`log`;") && !why.contains("`wasi:cli/stdout"),
            "{why}"
        );
    }

    #[test]
    fn each_kind_of_unprovided_import_gets_its_own_reason() {
        let mut info = PluginInfo {
            size_bytes: 0,
            imports: vec![],
            exports: vec![],
            uses_wasi: true,
            producers: vec![("processed-by".into(), "wit-component 0.245.1".into())],
        };
        for (import, reason) in [
            ("hookbox:hook/config", "its WIT package has no version"),
            (
                "hookbox:hook/net@0.1.0",
                "`net` is not an interface of the hookbox:hook/hook world",
            ),
            (
                "wasi:cli/stdout@0.2.0-rc-2023-11-10",
                "a pre-release of WASI (0.2.0-rc-2023-11-10)",
            ),
            ("wasi:cli/stdout", "WASI without a version"),
            ("wasi:cli/stdout@0.3.0", "WASI 0.3.0;"),
            (
                "wasi:clocks/timezone@0.2.0",
                "not one of the interfaces hookbox provides",
            ),
            ("evil:net/socket@1.0.0", ""),
        ] {
            let why = explain(import, &info);
            assert!(
                why.starts_with(&format!("`{import}`")) && why.contains(reason),
                "{why}"
            );
            assert!(
                !why.contains("componentize-py"),
                "not a Python build: {why}"
            );
        }
        info.producers.push((
            "processed-by".into(),
            "component-init-transform 0.2.0".into(),
        ));
        let why = explain("wasi:cli/stdout@0.3.0", &info);
        assert!(
            why.contains("componentize-py guests avoid WASI with `--stub-wasi`"),
            "{why}"
        );
    }
}
