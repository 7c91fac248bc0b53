//! The plugin directory's manifest, `hookbox.toml`: the stack's order and,
//! per plugin, its file, name, config, limits and whether it is required.
//!
//! ```toml
//! # Plugins run in the order they are listed.
//! [[plugin]]
//! file = "deny-tools.wasm"        # inside the directory; required
//! name = "deny"                   # default: the file stem
//! required = true                 # default: true. A required plugin that
//!                                 # cannot load makes every run fail closed.
//! mode = "enforce"                # default. "shadow": asked and logged,
//!                                 # but its answers never change a run
//! sha256 = "f7e4c02fa2448dcd54812e49d926b4491f1d8ec76a2481c17faf64eca047ca37"   # optional pin
//! tools = ["shell", "net_*"]      # optional: asked about these tools only
//! [plugin.config]                 # handed to the guest's `config` import
//! deny = "shell, net_*"
//! max_calls = 10                  # numbers and booleans become text
//! [plugin.limits]                 # any subset; the rest keep their defaults
//! deadline_ms = 50
//! memory_mib = 32
//! table_elements = 20000
//! answer_kib = 256
//! log_kib_per_run = 64
//! log_message_bytes = 2048
//! scratchpad_kib = 128
//! ```
//!
//! Unknown keys are errors naming the key and its line.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

use crate::limits::Limits;

/// The manifest's file name inside a plugin directory.
pub const MANIFEST: &str = "hookbox.toml";

/// A parsed `hookbox.toml`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Whose signatures the plugins from registries must carry, unless a
    /// plugin names its own.
    #[serde(default)]
    pub trust: Option<Trust>,
    /// The stack, in order.
    #[serde(default, rename = "plugin")]
    pub plugins: Vec<PluginEntry>,
}

/// Who may have published a guard from a registry: the publishers' public
/// keys (cosign's PEM `PUBLIC KEY` files, relative to the directory) and
/// whether a signature by one of them is required. See [`crate::oci::signature`].
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Trust {
    /// The key files.
    pub keys: Vec<String>,
    /// Whether a guard without a signature by one of `keys` is refused;
    /// default true. When false, a signer is reported but not required.
    #[serde(default = "yes")]
    pub require_signature: bool,
    /// Repositories (`registry/repository`) besides each guard's own that
    /// a signature may say it signed: the origins of the mirrors guards
    /// are pulled from. A signature made for any other repository is
    /// refused, though the bytes be the same.
    #[serde(default)]
    pub identities: Vec<String>,
}

/// One `[[plugin]]` entry: a plugin file (or a registry reference) and its
/// settings.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginEntry {
    /// The component, relative to the directory. For a plugin with a
    /// `source`, the reference as text (what messages name it by).
    #[serde(default)]
    pub file: String,
    /// A guard from a registry, `oci://registry/repository:tag` or
    /// `…@sha256:<digest>`, loaded from the directory's store (what
    /// `hookbox pull` fetched), never from the network: in place of `file`.
    #[serde(default)]
    pub source: Option<crate::oci::Reference>,
    /// Whose signature a plugin with a `source` must carry: this entry's
    /// own, else the manifest's `[trust]`.
    #[serde(default)]
    pub trust: Option<Trust>,
    /// Defaults to the file stem.
    pub name: Option<String>,
    /// Whether a plugin that cannot load makes every run fail closed; default true.
    #[serde(default = "yes")]
    pub required: bool,
    /// Handed to the guest's `config` import.
    #[serde(default)]
    pub config: BTreeMap<String, ConfigValue>,
    /// Overrides of the default limits.
    #[serde(default)]
    pub limits: LimitsEntry,
    /// Enforce (the default) or shadow: see [`Mode`].
    #[serde(default)]
    pub mode: Mode,
    /// The sha256 of the file's bytes, in hex: a file with other bytes is
    /// refused (a required one makes runs fail closed, as for any load
    /// failure). `hookbox lock` writes it.
    #[serde(default, deserialize_with = "digest")]
    pub sha256: Option<String>,
    /// The tools (names, or globs with `*` and `?`) whose tool-call,
    /// tool-result and invalid-tool-call events the plugin is asked about;
    /// all when absent. See [`crate::matcher`].
    #[serde(default, deserialize_with = "tools")]
    pub tools: Option<Vec<String>>,
}

/// A non-empty list of tool patterns.
fn tools<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    let tools = Vec::<String>::deserialize(d)?;
    if tools.is_empty() || tools.iter().any(|t| t.trim().is_empty()) {
        return Err(serde::de::Error::custom(
            "tools lists tool names or globs (`[\"shell\", \"net_*\"]`); an empty list or name would match nothing: leave `tools` out to be asked about every tool",
        ));
    }
    Ok(Some(tools))
}

/// How a plugin's answers count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Its answers compose into the run's net flow; its failures fail the
    /// run closed.
    #[default]
    Enforce,
    /// It is asked like any plugin and what it answered (or how it failed)
    /// is logged, counted and reported with the decision
    /// ([`crate::Decision::shadow`]), but it never changes the net flow and
    /// never makes a run fail closed: a new guard's trial run.
    Shadow,
}

impl Mode {
    /// `enforce` or `shadow`, as the manifest writes it.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Enforce => "enforce",
            Mode::Shadow => "shadow",
        }
    }
}

/// A sha256 digest in hex: 64 hex digits, read in lowercase.
fn digest<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let text = String::deserialize(d)?;
    match crate::cache::parse_sha256(&text) {
        Some(hex) => Ok(Some(hex)),
        None => Err(serde::de::Error::custom(format!(
            "sha256 must be 64 hex digits (the file's digest, as `sha256sum` or `hookbox lock` print it), not `{text}`"
        ))),
    }
}

fn yes() -> bool {
    true
}

/// A config value: text, or a number or boolean written as TOML.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum ConfigValue {
    /// A string.
    Text(String),
    /// An integer.
    Integer(i64),
    /// A float.
    Float(f64),
    /// A boolean.
    Bool(bool),
}

impl std::fmt::Display for ConfigValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfigValue::Text(s) => f.write_str(s),
            ConfigValue::Integer(i) => write!(f, "{i}"),
            ConfigValue::Float(x) => write!(f, "{x}"),
            ConfigValue::Bool(b) => write!(f, "{b}"),
        }
    }
}

/// Limits in the units people write; unset fields keep the defaults.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsEntry {
    /// Budget for one call into the guest, in milliseconds of the calling
    /// thread's CPU time (its wall time is bounded at ten times this).
    pub deadline_ms: Option<u64>,
    /// Linear memory across the guest's memories, in MiB.
    pub memory_mib: Option<u64>,
    /// Elements across the guest's tables.
    pub table_elements: Option<u64>,
    /// Text in one answer, in KiB.
    pub answer_kib: Option<u64>,
    /// What a guest may log in one run, in KiB.
    pub log_kib_per_run: Option<u64>,
    /// Longer log messages are truncated to this many bytes.
    pub log_message_bytes: Option<u64>,
    /// Keys and values a guest may keep in its scratchpad, in KiB.
    pub scratchpad_kib: Option<u64>,
}

impl LimitsEntry {
    /// `defaults` with this entry's fields applied.
    pub fn apply(&self, defaults: &Limits) -> Limits {
        let bytes =
            |v: u64, unit: u64| usize::try_from(v.saturating_mul(unit)).unwrap_or(usize::MAX);
        let mut limits = defaults.clone();
        if let Some(ms) = self.deadline_ms {
            limits.deadline = Duration::from_millis(ms);
        }
        if let Some(v) = self.memory_mib {
            limits.memory_bytes = bytes(v, 1 << 20);
        }
        if let Some(v) = self.table_elements {
            limits.table_elements = bytes(v, 1);
        }
        if let Some(v) = self.answer_kib {
            limits.answer_bytes = bytes(v, 1 << 10);
        }
        if let Some(v) = self.log_kib_per_run {
            limits.log_bytes_per_run = bytes(v, 1 << 10);
        }
        if let Some(v) = self.log_message_bytes {
            limits.log_message_bytes = bytes(v, 1);
        }
        if let Some(v) = self.scratchpad_kib {
            limits.scratchpad_bytes = bytes(v, 1 << 10);
        }
        limits
    }
}

impl PluginEntry {
    /// The plugin's name: as given, or the file stem (a source's
    /// repository's last part).
    pub fn name(&self) -> String {
        if let (None, Some(source)) = (&self.name, &self.source) {
            return source.plugin_name().to_owned();
        }
        self.name.clone().unwrap_or_else(|| {
            std::path::Path::new(&self.file)
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| self.file.clone())
        })
    }

    /// The config as the guest sees it: every value as text.
    pub fn config_text(&self) -> BTreeMap<String, String> {
        self.config
            .iter()
            .map(|(k, v)| (k.clone(), v.to_string()))
            .collect()
    }
}

impl Manifest {
    /// Parses a manifest. The error names the line and the key at fault.
    ///
    /// # Errors
    /// A message with the line and column, as the `toml` crate reports them.
    pub fn parse(text: &str) -> Result<Manifest, String> {
        let mut manifest: Manifest =
            toml::from_str(text).map_err(|e| e.to_string().trim_end().to_owned())?;
        for (i, entry) in manifest.plugins.iter_mut().enumerate() {
            match (&entry.source, entry.file.is_empty()) {
                (Some(source), true) => entry.file = source.to_string(),
                (None, false) => {}
                (Some(_), false) => {
                    return Err(format!(
                        "plugin {}: give a `file` or a `source`, not both",
                        i + 1
                    ));
                }
                (None, true) => {
                    return Err(format!(
                        "plugin {}: give its `file` (a .wasm in the directory) or its `source` (oci://registry/repository:tag)",
                        i + 1
                    ));
                }
            }
            if entry.trust.is_some() && entry.source.is_none() {
                return Err(format!(
                    "plugin {} ({}): `trust` is for plugins with a `source`; pin a file with `sha256`",
                    i + 1,
                    entry.file
                ));
            }
        }
        for trust in manifest
            .plugins
            .iter()
            .filter_map(|p| p.trust.as_ref())
            .chain(&manifest.trust)
        {
            if trust.keys.is_empty() && trust.require_signature {
                return Err(
                    "a `trust` that requires a signature names at least one key (`keys = [\"publisher.pub\"]`)".into(),
                );
            }
        }
        Ok(manifest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_complete_manifest_parses_with_defaults_filled_in() {
        let manifest = Manifest::parse(
            r#"
            [[plugin]]
            file = "deny-tools.wasm"
            [plugin.config]
            deny = "shell"
            max = 3
            [plugin.limits]
            deadline_ms = 50

            [[plugin]]
            file = "redact.wasm"
            name = "redactor"
            required = false
            "#,
        )
        .unwrap();
        let [deny, redact] = &manifest.plugins[..] else {
            panic!("{manifest:?}")
        };
        assert_eq!(
            (deny.name(), deny.required),
            ("deny-tools".to_string(), true)
        );
        assert_eq!(deny.config_text().get("max").map(String::as_str), Some("3"));
        let limits = deny.limits.apply(&Limits::default());
        assert_eq!(limits.deadline, Duration::from_millis(50));
        assert_eq!(limits.memory_bytes, Limits::default().memory_bytes);
        assert_eq!(
            (redact.name(), redact.required),
            ("redactor".to_string(), false)
        );
    }

    #[test]
    fn an_unknown_key_is_an_error_naming_the_key_and_the_line() {
        let err = Manifest::parse("[[plugin]]\nfile = \"a.wasm\"\nrequierd = true\n").unwrap_err();
        assert!(err.contains("line 3") && err.contains("requierd"), "{err}");
        let err = Manifest::parse("[[plugin]]\nfile = \"a.wasm\"\n[plugin.limits]\ndeadline = 5\n")
            .unwrap_err();
        assert!(err.contains("line 4") && err.contains("deadline"), "{err}");
        let err = Manifest::parse("[plugins]\n").unwrap_err();
        assert!(err.contains("line 1") && err.contains("plugins"), "{err}");
    }

    #[test]
    fn the_documented_and_module_examples_parse() {
        for page in [
            include_str!("../../../README.md"),
            include_str!("../../../docs/plugins.md"),
        ] {
            let start = page.find("```toml\n").expect("a toml block") + "```toml\n".len();
            let end = start + page[start..].find("```").unwrap();
            let manifest = Manifest::parse(&page[start..end]).unwrap();
            assert_eq!(manifest.plugins.len(), 2);
            assert!(manifest.plugins[0].required && !manifest.plugins[1].required);
        }

        let docs: String = include_str!("manifest.rs")
            .lines()
            .skip_while(|l| !l.starts_with("//! ```toml"))
            .skip(1)
            .take_while(|l| !l.starts_with("//! ```"))
            .map(|l| format!("{}\n", l.trim_start_matches("//!").trim_start()))
            .collect();
        assert_eq!(
            Manifest::parse(&docs).unwrap().plugins[0]
                .limits
                .deadline_ms,
            Some(50)
        );
    }

    #[test]
    fn mode_and_sha256_parse_and_are_checked() {
        let digest = "AB".repeat(32);
        let manifest = Manifest::parse(&format!(
            "[[plugin]]\nfile = \"a.wasm\"\nmode = \"shadow\"\nsha256 = \"sha256:{digest}\"\n[[plugin]]\nfile = \"b.wasm\"\n"
        ))
        .unwrap();
        assert_eq!(manifest.plugins[0].mode, Mode::Shadow);
        assert_eq!(
            manifest.plugins[0].sha256.as_deref(),
            Some(&*"ab".repeat(32))
        );
        assert_eq!(
            (manifest.plugins[1].mode, &manifest.plugins[1].sha256),
            (Mode::Enforce, &None)
        );
        assert_eq!(manifest.plugins[1].tools, None);

        let err = Manifest::parse("[[plugin]]\nfile = \"a.wasm\"\nmode = \"audit\"\n").unwrap_err();
        assert!(err.contains("line 3") && err.contains("shadow"), "{err}");
        let err = Manifest::parse("[[plugin]]\nfile = \"a.wasm\"\nsha256 = \"abc\"\n").unwrap_err();
        assert!(
            err.contains("line 3") && err.contains("64 hex digits"),
            "{err}"
        );
    }

    #[test]
    fn tools_are_a_list_of_names_or_globs() {
        let manifest =
            Manifest::parse("[[plugin]]\nfile = \"a.wasm\"\ntools = [\"shell\", \"net_*\"]\n")
                .unwrap();
        assert_eq!(
            manifest.plugins[0].tools.as_deref(),
            Some(&["shell".to_string(), "net_*".to_string()][..])
        );
        for bad in ["tools = []", "tools = [\"\"]", "tools = \"shell\""] {
            let err =
                Manifest::parse(&format!("[[plugin]]\nfile = \"a.wasm\"\n{bad}\n")).unwrap_err();
            assert!(err.contains("line 3"), "{bad}: {err}");
        }
    }

    #[test]
    fn a_plugin_without_a_file_is_an_error() {
        let err = Manifest::parse("[[plugin]]\nname = \"x\"\n").unwrap_err();
        assert!(err.contains("file"), "{err}");
    }
}
