//! Generates the names every guest needs from the contract itself
//! (`wit/hook.wit`): `EventKind::ALL` and `EventKind::name`, `Flow::name`
//! and `StepEvent::kind`, so a case added to the WIT cannot be forgotten
//! here.

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    let wit = Path::new("wit/hook.wit");
    println!("cargo:rerun-if-changed={}", wit.display());
    let text = std::fs::read_to_string(wit).expect("sdk/wit/hook.wit is readable");
    let kinds = cases(&text, "enum event-kind");
    let events = cases(&text, "variant step-event");
    let flows = cases(&text, "variant flow");
    assert_eq!(
        kinds.iter().map(|(name, _)| name).collect::<Vec<_>>(),
        events.iter().map(|(name, _)| name).collect::<Vec<_>>(),
        "every step-event case has the event-kind of the same name"
    );

    let mut out = String::new();
    let all: Vec<String> = kinds
        .iter()
        .map(|(name, _)| format!("EventKind::{}", camel(name)))
        .collect();
    writeln!(
        out,
        "impl EventKind {{\n    /// Every kind, in WIT order.\n    pub const ALL: [EventKind; {}] = [{}];\n",
        all.len(),
        all.join(", ")
    )
    .unwrap();
    writeln!(out, "{}", name_fn("EventKind", "kind", "self", &kinds)).unwrap();
    writeln!(out, "}}\n\nimpl StepEvent {{").unwrap();
    writeln!(out, "    /// The kind of this event.\n    pub fn kind(&self) -> EventKind {{\n        match self {{").unwrap();
    for (name, _) in &events {
        let case = camel(name);
        writeln!(
            out,
            "            StepEvent::{case}(_) => EventKind::{case},"
        )
        .unwrap();
    }
    writeln!(out, "        }}\n    }}\n}}\n\nimpl Flow {{").unwrap();
    writeln!(out, "{}", name_fn("Flow", "flow", "&self", &flows)).unwrap();
    writeln!(out, "}}").unwrap();

    let dest = Path::new(&std::env::var_os("OUT_DIR").expect("OUT_DIR")).join("names.rs");
    std::fs::write(dest, out).expect("OUT_DIR is writable");
}

/// `pub fn name(RECEIVER) -> &'static str` over `cases`.
fn name_fn(ty: &str, what: &str, receiver: &str, cases: &[(String, bool)]) -> String {
    let mut f = format!(
        "    /// The {what}'s name, as in WIT and the JSON forms (`{}`).\n    pub fn name({receiver}) -> &'static str {{\n        match self {{\n",
        cases[0].0
    );
    for (name, payload) in cases {
        let pattern = if *payload { "(_)" } else { "" };
        writeln!(
            f,
            "            {ty}::{}{pattern} => \"{name}\",",
            camel(name)
        )
        .unwrap();
    }
    f.push_str("        }\n    }");
    f
}

/// The cases of the WIT type declared as `header { ... }`: each name, and
/// whether it carries a payload.
fn cases(wit: &str, header: &str) -> Vec<(String, bool)> {
    let start = wit
        .find(&format!("{header} {{"))
        .unwrap_or_else(|| panic!("`{header}` is in the WIT"));
    let body = &wit[start + header.len() + 2..];
    let body = &body[..body.find('}').expect("the block ends")];
    body.lines()
        .map(|line| line.split("//").next().unwrap_or("").trim())
        .flat_map(|line| line.split(','))
        .map(str::trim)
        .filter(|case| !case.is_empty())
        .map(|case| match case.split_once('(') {
            Some((name, _)) => (name.trim().to_owned(), true),
            None => (case.to_owned(), false),
        })
        .collect()
}

/// `tool-call` → `ToolCall`.
fn camel(kebab: &str) -> String {
    kebab
        .split('-')
        .map(|part| {
            let mut chars = part.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_ascii_uppercase().to_string() + chars.as_str()
            })
        })
        .collect()
}
