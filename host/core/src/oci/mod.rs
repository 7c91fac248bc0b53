//! Guards from registries: OCI references, the artifact layout guards
//! travel in, the content-addressed store pulled guards live in, and the
//! cosign signatures that say who published them.
//!
//! | piece | what it is | where |
//! |---|---|---|
//! | [`Reference`] | `oci://registry/repository:tag@sha256:…` | a manifest's `source`, `hookbox pull` |
//! | [`GuardManifest`] | the CNCF Wasm OCI artifact: config `application/vnd.wasm.config.v0+json`, one `application/wasm` layer | what `wkg`, ORAS and `hookbox push` publish |
//! | [`Store`] | an OCI image layout (`DIR/.oci`): `index.json` names what was pulled, `blobs/sha256/…` holds it | what loading reads, offline |
//! | [`signature`] | cosign's key-pair signatures (`sha256-<hex>.sig`, simple signing) | `[trust]` in `hookbox.toml` |
//!
//! This module never touches the network: `hookbox pull` (the
//! `hookbox-registry` crate) fetches into the store, and loading reads the
//! store only, verifying every blob's digest on every load. A tag is
//! resolved by what was last pulled under it, so what runs changes only
//! when an operator pulls or locks.

mod reference;
pub mod signature;
mod store;

use serde::Deserialize;

pub use reference::Reference;
pub use store::{STORE_DIR, Store, StoredGuard};

/// An OCI image manifest's media type.
pub const MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
/// The config media type of the CNCF Wasm OCI artifact layout.
pub const WASM_CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
/// The layer media type of the CNCF Wasm OCI artifact layout.
pub const WASM_LAYER_MEDIA_TYPE: &str = "application/wasm";
/// Layer media types of older WebAssembly artifacts (Istio's and
/// wasm-to-oci's), pulled as well: one such layer is the component.
pub const OTHER_WASM_LAYER_MEDIA_TYPES: [&str; 2] = [
    "application/vnd.module.wasm.content.layer.v1+wasm",
    "application/vnd.wasm.content.layer.v1+wasm",
];
/// The largest manifest (of a guard or a signature) hookbox reads, as the
/// distribution registry's own bound.
pub const MAX_MANIFEST_BYTES: usize = 4 << 20;
/// The largest config or signature payload blob hookbox reads.
pub const MAX_SMALL_BLOB_BYTES: usize = 256 << 10;

/// A content descriptor: what a manifest says of a blob.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    /// Its media type.
    pub media_type: String,
    /// `sha256:<hex>`.
    pub digest: String,
    /// Its size in bytes.
    pub size: u64,
    /// Its annotations.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub annotations: std::collections::BTreeMap<String, String>,
}

/// An OCI image manifest, as far as hookbox reads one.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageManifest {
    /// 2.
    pub schema_version: u32,
    /// [`MANIFEST_MEDIA_TYPE`] (absent in some clients' manifests).
    #[serde(default)]
    pub media_type: Option<String>,
    /// The config blob.
    pub config: Descriptor,
    /// The layers.
    #[serde(default)]
    pub layers: Vec<Descriptor>,
}

impl ImageManifest {
    /// Parses a manifest's bytes.
    ///
    /// # Errors
    /// Why it is not an OCI image manifest.
    pub fn parse(bytes: &[u8]) -> Result<ImageManifest, String> {
        if bytes.len() > MAX_MANIFEST_BYTES {
            return Err(format!(
                "the manifest is {} bytes, more than the {MAX_MANIFEST_BYTES} hookbox reads",
                bytes.len()
            ));
        }
        let manifest: ImageManifest = serde_json::from_slice(bytes)
            .map_err(|e| format!("the manifest is not an OCI image manifest: {e}"))?;
        if manifest.schema_version != 2 {
            return Err(format!(
                "the manifest has schemaVersion {}, not 2",
                manifest.schema_version
            ));
        }
        if let Some(media_type) = &manifest.media_type
            && media_type != MANIFEST_MEDIA_TYPE
        {
            return Err(format!(
                "the manifest is a `{media_type}`, not an OCI image manifest (a multi-platform index is not a guard)"
            ));
        }
        for blob in std::iter::once(&manifest.config).chain(&manifest.layers) {
            if crate::cache::parse_sha256(blob.digest.strip_prefix("sha256:").unwrap_or("-"))
                .is_none()
            {
                return Err(format!(
                    "the manifest names a blob by `{}`, not a sha256 digest",
                    blob.digest
                ));
            }
        }
        Ok(manifest)
    }
}

/// A guard's manifest: an [`ImageManifest`] with exactly one WebAssembly
/// layer, the component.
#[derive(Clone, Debug)]
pub struct GuardManifest {
    /// The manifest.
    pub manifest: ImageManifest,
    /// Its one layer: the component.
    pub component: Descriptor,
}

impl GuardManifest {
    /// Parses a guard's manifest and checks its shape: one layer, of a
    /// WebAssembly media type, no larger than `max_bytes`.
    ///
    /// # Errors
    /// Why it is not a guard (or too large a one).
    pub fn parse(bytes: &[u8], max_bytes: usize) -> Result<GuardManifest, String> {
        let manifest = ImageManifest::parse(bytes)?;
        let component = match &manifest.layers[..] {
            [layer] => layer.clone(),
            layers => {
                return Err(format!(
                    "the artifact has {} layers; a guard is one `{WASM_LAYER_MEDIA_TYPE}` layer (the CNCF Wasm OCI artifact layout)",
                    layers.len()
                ));
            }
        };
        if component.media_type != WASM_LAYER_MEDIA_TYPE
            && !OTHER_WASM_LAYER_MEDIA_TYPES.contains(&component.media_type.as_str())
        {
            return Err(format!(
                "its layer is a `{}`, not a WebAssembly component (`{WASM_LAYER_MEDIA_TYPE}`)",
                component.media_type
            ));
        }
        if component.size > max_bytes as u64 {
            return Err(format!(
                "its component is {} bytes, more than the {max_bytes} a plugin may be (RuntimeConfig::max_plugin_bytes)",
                component.size
            ));
        }
        Ok(GuardManifest {
            manifest,
            component,
        })
    }
}

/// Where a plugin from a registry came from, as loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Provenance {
    /// Its reference, as the manifest writes it.
    pub reference: String,
    /// The digest of the manifest it was loaded from.
    pub digest: String,
    /// The trusted key (its file) whose signature verified, if one did.
    pub signer: Option<String>,
}

/// `sha256:<hex>` of `bytes`.
pub fn digest_of(bytes: &[u8]) -> String {
    format!("sha256:{}", crate::cache::sha256_hex(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(layers: &str) -> String {
        format!(
            r#"{{"schemaVersion":2,"mediaType":"{MANIFEST_MEDIA_TYPE}","config":{{"mediaType":"{WASM_CONFIG_MEDIA_TYPE}","digest":"sha256:{0}","size":2}},"layers":[{layers}]}}"#,
            "a".repeat(64)
        )
    }

    fn layer(media_type: &str, size: u64) -> String {
        format!(
            r#"{{"mediaType":"{media_type}","digest":"sha256:{}","size":{size}}}"#,
            "b".repeat(64)
        )
    }

    #[test]
    fn a_guard_is_one_wasm_layer_within_the_size_bound() {
        let one = manifest(&layer(WASM_LAYER_MEDIA_TYPE, 100));
        let guard = GuardManifest::parse(one.as_bytes(), 100).unwrap();
        assert_eq!(guard.component.size, 100);
        let istio = manifest(&layer(OTHER_WASM_LAYER_MEDIA_TYPES[0], 100));
        assert!(GuardManifest::parse(istio.as_bytes(), 100).is_ok());

        let too_big = GuardManifest::parse(one.as_bytes(), 99).unwrap_err();
        assert!(too_big.contains("more than the 99"), "{too_big}");
        let two = manifest(&format!("{0},{0}", layer(WASM_LAYER_MEDIA_TYPE, 1)));
        assert!(
            GuardManifest::parse(two.as_bytes(), 100)
                .unwrap_err()
                .contains("2 layers")
        );
        let tar = manifest(&layer("application/vnd.oci.image.layer.v1.tar", 1));
        assert!(
            GuardManifest::parse(tar.as_bytes(), 100)
                .unwrap_err()
                .contains("not a WebAssembly")
        );
        for garbage in ["", "{}", "[1]", r#"{"schemaVersion":1,"config":{}}"#] {
            assert!(
                GuardManifest::parse(garbage.as_bytes(), 100).is_err(),
                "{garbage}"
            );
        }
        let index = one.replace(
            MANIFEST_MEDIA_TYPE,
            "application/vnd.oci.image.index.v1+json",
        );
        assert!(
            GuardManifest::parse(index.as_bytes(), 100)
                .unwrap_err()
                .contains("index")
        );
        let bad_digest = one.replace(&format!("sha256:{}", "b".repeat(64)), "md5:00");
        assert!(
            GuardManifest::parse(bad_digest.as_bytes(), 100)
                .unwrap_err()
                .contains("md5:00")
        );
    }
}
