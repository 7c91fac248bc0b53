//! Guards from OCI registries: `hookbox pull`, `hookbox push`, and the
//! network half of `hookbox lock`.
//!
//! Guards travel as the WebAssembly ecosystem ships components: the CNCF
//! Wasm OCI artifact layout (config `application/vnd.wasm.config.v0+json`,
//! one `application/wasm` layer), so what `wkg oci push`, ORAS or Spin's
//! tooling publish, hookbox pulls, and what `hookbox push` publishes, they
//! pull. Signatures are cosign's (see [`hookbox::oci::signature`]).
//!
//! | step | what it does | what it refuses |
//! |---|---|---|
//! | [`pull`] | fetches the manifest (by tag or digest), its one component, its config and its cosign signatures; checks them as a load would; then writes them into the directory's [`Store`] | a manifest that is not a guard, past [`MAX_MANIFEST_BYTES`], or not the digest asked for; a component past the plugin size bound or not its digest; a missing or bad signature under the directory's `trust`. Nothing is written then |
//! | [`push`] | publishes a component file in the CNCF layout | a file that is not a WebAssembly component |
//!
//! The network is used here only: loading a directory reads its store,
//! offline ([`hookbox::directory`]).
//!
//! Plain HTTP is used for loopback registries only (`localhost`,
//! `127.0.0.1`, `[::1]`), as Docker does; every other registry is HTTPS.
//! Credentials come from the usual files ([`auth`]).

pub mod auth;

use std::path::Path;
use std::time::Duration;

use hookbox::oci::signature::{SIGNATURE_ANNOTATION, Signed};
use hookbox::oci::{
    Descriptor, GuardManifest, ImageManifest, MANIFEST_MEDIA_TYPE, MAX_MANIFEST_BYTES,
    MAX_SMALL_BLOB_BYTES, Reference, Store, WASM_CONFIG_MEDIA_TYPE, WASM_LAYER_MEDIA_TYPE,
    digest_of,
};
use oci_client::errors::{OciDistributionError, OciErrorCode};
use oci_client::secrets::RegistryAuth;

/// What went wrong talking to a registry or writing the store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The registry could not be reached, or answered with an error.
    #[error("{reference}: the registry {what}")]
    Registry {
        /// The reference asked for.
        reference: String,
        /// What it did, and what to do.
        what: String,
    },
    /// The registry answered, but with something that is not what was
    /// asked for (not a guard, too large, another digest, bad signature).
    #[error("{reference}: refused: {why}")]
    Refused {
        /// The reference asked for.
        reference: String,
        /// Why.
        why: String,
    },
    /// Credentials could not be read.
    #[error("registry credentials: {0}")]
    Credentials(String),
    /// The plugin directory, its manifest or a file could not be read, or
    /// the store written.
    #[error("{0}")]
    Local(String),
}

/// What [`pull`] fetched.
#[derive(Clone, Debug)]
pub struct Pulled {
    /// The reference pulled, pinned to the digest it resolved to.
    pub reference: Reference,
    /// The component's size in bytes.
    pub size: u64,
    /// The trusted key whose signature verified, if the directory's
    /// `trust` asked for one.
    pub signer: Option<String>,
    /// How many cosign signatures came with it.
    pub signatures: usize,
}

/// An OCI image index's media type (a multi-platform image).
const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
/// Docker's manifest list, the same for Docker's formats.
const DOCKER_LIST: &str = "application/vnd.docker.distribution.manifest.list.v2+json";

/// Bounds of one pull.
#[derive(Clone, Debug)]
pub struct Options {
    /// The largest component accepted (the runtime's plugin size bound).
    pub max_plugin_bytes: usize,
    /// The longest a connection may take to open.
    pub connect_timeout: Duration,
    /// The longest the registry may be silent while answering.
    pub read_timeout: Duration,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            max_plugin_bytes: hookbox::RuntimeConfig::default().max_plugin_bytes,
            connect_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(30),
        }
    }
}

/// One registry conversation: a client, the reference, its credentials.
struct Session {
    client: oci_client::Client,
    auth: RegistryAuth,
    reference: Reference,
}

impl Session {
    fn open(reference: &Reference, options: &Options) -> Result<Session, Error> {
        // reqwest (rustls without a default provider) uses the process's.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let host = reference
            .registry
            .rsplit_once(':')
            .filter(|(_, port)| port.bytes().all(|b| b.is_ascii_digit()))
            .map_or(reference.registry.as_str(), |(host, _)| host);
        let loopback = matches!(host, "localhost" | "127.0.0.1" | "[::1]");
        let config = oci_client::client::ClientConfig {
            protocol: if loopback {
                oci_client::client::ClientProtocol::HttpsExcept(vec![reference.registry.clone()])
            } else {
                oci_client::client::ClientProtocol::Https
            },
            connect_timeout: Some(options.connect_timeout),
            read_timeout: Some(options.read_timeout),
            // A guard is one manifest; an index is refused, not resolved.
            platform_resolver: None,
            ..Default::default()
        };
        let client = oci_client::Client::try_from(config).map_err(|e| Error::Registry {
            reference: reference.to_string(),
            what: format!("client could not be set up: {e}"),
        })?;
        Ok(Session {
            client,
            auth: auth::for_registry(&reference.registry)?,
            reference: reference.clone(),
        })
    }

    fn oci(&self, reference: &Reference) -> oci_client::Reference {
        let (registry, repository) = (reference.registry.clone(), reference.repository.clone());
        match (&reference.tag, &reference.digest) {
            (_, Some(digest)) => {
                oci_client::Reference::with_digest(registry, repository, digest.clone())
            }
            (Some(tag), None) => oci_client::Reference::with_tag(registry, repository, tag.clone()),
            (None, None) => unreachable!("a Reference has a tag or a digest"),
        }
    }

    fn failed(&self, e: &OciDistributionError) -> Error {
        let what = match e {
            OciDistributionError::RequestError(e) if e.is_connect() || e.is_timeout() => {
                format!("cannot be reached ({e}); check the address, or that it is running")
            }
            OciDistributionError::UnauthorizedError { .. }
            | OciDistributionError::AuthenticationFailure(_)
            | OciDistributionError::ServerError {
                code: 401 | 403, ..
            } => format!(
                "refused the credentials ({e}); log in with `docker login` or `oras login`, or set REGISTRY_AUTH_FILE"
            ),
            _ => format!("answered with an error: {e}"),
        };
        Error::Registry {
            reference: self.reference.to_string(),
            what,
        }
    }

    fn refused(&self, why: impl Into<String>) -> Error {
        Error::Refused {
            reference: self.reference.to_string(),
            why: why.into(),
        }
    }

    /// The manifest `reference` names, its digest computed here (never
    /// taken from a header), `None` when the registry has no such manifest.
    async fn manifest(&self, reference: &Reference) -> Result<Option<(Vec<u8>, String)>, Error> {
        // Indexes are accepted too, to say what one is rather than answer
        // "no such guard" for a tag that names one.
        let accepted = [MANIFEST_MEDIA_TYPE, OCI_INDEX, DOCKER_LIST];
        let answer = self
            .client
            .pull_manifest_raw(&self.oci(reference), &self.auth, &accepted)
            .await;
        let bytes = match answer {
            Ok((bytes, _)) => bytes.to_vec(),
            Err(e) if not_found(&e) => return Ok(None),
            Err(OciDistributionError::DigestError(e)) => {
                return Err(self.refused(format!("the manifest is not the digest asked for: {e}")));
            }
            Err(e) => return Err(self.failed(&e)),
        };
        if bytes.len() > MAX_MANIFEST_BYTES {
            return Err(self.refused(format!(
                "the manifest is {} bytes, more than the {MAX_MANIFEST_BYTES} hookbox reads",
                bytes.len()
            )));
        }
        let media_type = serde_json::from_slice::<serde_json::Value>(&bytes)
            .ok()
            .and_then(|m| m["mediaType"].as_str().map(str::to_owned));
        if let Some(kind) = media_type.filter(|t| t == OCI_INDEX || t == DOCKER_LIST) {
            return Err(self.refused(format!(
                "it is a multi-platform index (`{kind}`), not a guard: a guard is one manifest with one `application/wasm` layer; pull the guard's own manifest by its digest (`oci://…@sha256:…`), or push the guard as a single manifest"
            )));
        }
        let digest = digest_of(&bytes);
        if let Some(wanted) = &reference.digest
            && *wanted != digest
        {
            return Err(self.refused(format!(
                "the registry served a manifest with digest {digest} for {wanted}"
            )));
        }
        Ok(Some((bytes, digest)))
    }

    /// The blob `descriptor` names, refused past `max_bytes` (before and
    /// while it downloads) or when its bytes are not its digest.
    async fn blob(&self, descriptor: &Descriptor, max_bytes: usize) -> Result<Vec<u8>, Error> {
        if descriptor.size > max_bytes as u64 {
            return Err(self.refused(format!(
                "blob {} is {} bytes, more than the {max_bytes} allowed for it",
                descriptor.digest, descriptor.size
            )));
        }
        let mut out = Capped {
            bytes: Vec::new(),
            max: max_bytes,
        };
        // The digest, not the descriptor: a descriptor's `urls` would let
        // a manifest send the download to another host.
        let answer = self
            .client
            .pull_blob(
                &self.oci(&self.reference),
                descriptor.digest.as_str(),
                &mut out,
            )
            .await;
        match answer {
            Ok(()) => {}
            Err(OciDistributionError::IoError(e))
                if e.kind() == std::io::ErrorKind::FileTooLarge =>
            {
                return Err(self.refused(format!(
                    "blob {} is larger than the {max_bytes} bytes allowed for it",
                    descriptor.digest
                )));
            }
            Err(OciDistributionError::DigestError(e)) => {
                return Err(
                    self.refused(format!("blob {} is not its digest: {e}", descriptor.digest))
                );
            }
            Err(e) => return Err(self.failed(&e)),
        }
        let bytes = out.bytes;
        let actual = digest_of(&bytes);
        if actual != descriptor.digest || bytes.len() as u64 != descriptor.size {
            return Err(self.refused(format!(
                "blob {} came as {} bytes with digest {actual}, not the {} bytes its manifest names",
                descriptor.digest,
                bytes.len(),
                descriptor.size
            )));
        }
        Ok(bytes)
    }
}

/// Whether the registry said it has no such manifest.
fn not_found(e: &OciDistributionError) -> bool {
    match e {
        OciDistributionError::ImageManifestNotFoundError(_) => true,
        OciDistributionError::RegistryError { envelope, .. } => envelope.errors.iter().any(|e| {
            matches!(
                e.code,
                OciErrorCode::ManifestUnknown | OciErrorCode::NotFound
            )
        }),
        OciDistributionError::ServerError { code, .. } => *code == 404,
        _ => false,
    }
}

/// A writer that holds at most `max` bytes, failing past them.
struct Capped {
    bytes: Vec<u8>,
    max: usize,
}

impl tokio::io::AsyncWrite for Capped {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        if self.bytes.len() + buf.len() > self.max {
            return std::task::Poll::Ready(Err(std::io::ErrorKind::FileTooLarge.into()));
        }
        self.bytes.extend_from_slice(buf);
        std::task::Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}

/// The trust policy `dir`'s manifest applies to `reference`: that of the
/// plugin whose `source` is the same repository, else the directory's.
fn trust_for(dir: &Path, reference: &Reference) -> Result<Option<hookbox::manifest::Trust>, Error> {
    let path = dir.join(hookbox::manifest::MANIFEST);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::Local(format!("cannot read {}: {e}", path.display()))),
    };
    let manifest = hookbox::manifest::Manifest::parse(&text)
        .map_err(|e| Error::Local(format!("{}: {e}", path.display())))?;
    let own = manifest.plugins.iter().find_map(|p| {
        let source = p.source.as_ref()?;
        (source.registry == reference.registry && source.repository == reference.repository)
            .then(|| p.trust.clone())
    });
    Ok(own.flatten().or(manifest.trust))
}

/// Pulls the guard `reference` names into `dir`'s store, with its cosign
/// signatures, after checking it as loading will: one WebAssembly layer
/// within the size bound, every digest, and the signature `dir`'s
/// `hookbox.toml` asks for. Records it under its tag (and its digest), so
/// a manifest entry naming the tag loads this version until the next pull.
///
/// # Errors
/// [`Error::Registry`] when the registry cannot be reached or fails;
/// [`Error::Refused`] when what it serves is refused (nothing is written
/// then); [`Error::Local`] when the directory cannot be read or written.
pub async fn pull(dir: &Path, reference: &Reference, options: &Options) -> Result<Pulled, Error> {
    let session = Session::open(reference, options)?;
    let trust = trust_for(dir, reference)?;
    let Some((manifest_bytes, digest)) = session.manifest(reference).await? else {
        return Err(Error::Registry {
            reference: reference.to_string(),
            what: "has no such guard (manifest unknown); check the repository and tag".into(),
        });
    };
    let guard = GuardManifest::parse(&manifest_bytes, options.max_plugin_bytes)
        .map_err(|why| session.refused(why))?;
    let config = session
        .blob(&guard.manifest.config, MAX_SMALL_BLOB_BYTES)
        .await?;
    let wasm = session
        .blob(&guard.component, options.max_plugin_bytes)
        .await?;
    if !wasmparser::Parser::is_component(&wasm) {
        return Err(session.refused("its layer is not a WebAssembly component"));
    }

    // cosign's signatures, under `sha256-<hex>.sig` (none: unsigned).
    let signatures_ref = reference.signatures_of(&digest);
    let mut signatures = Vec::new();
    let mut signature_blobs = Vec::new();
    let signature_manifest = session.manifest(&signatures_ref).await?;
    if let Some((bytes, _)) = &signature_manifest {
        let manifest = ImageManifest::parse(bytes)
            .map_err(|why| session.refused(format!("its signature manifest: {why}")))?;
        let layers = hookbox::oci::signature::signature_layers(&manifest)
            .map_err(|why| session.refused(format!("its signature manifest: {why}")))?;
        for layer in layers {
            let payload = session.blob(layer, MAX_SMALL_BLOB_BYTES).await?;
            signatures.push(Signed {
                payload: payload.clone(),
                signature: layer
                    .annotations
                    .get(SIGNATURE_ANNOTATION)
                    .cloned()
                    .unwrap_or_default(),
            });
            signature_blobs.push(payload);
        }
        // The signature manifest's config, so the store is a complete
        // image layout.
        signature_blobs.push(session.blob(&manifest.config, MAX_SMALL_BLOB_BYTES).await?);
    }
    let signed = (digest.as_str(), reference);
    let signer = hookbox::directory::check_trust(dir, trust.as_ref(), &signatures, signed)
        .map_err(|why| session.refused(why))?;

    // Every blob first, then the index that names them.
    let store = Store::in_dir(dir);
    let written = |e: std::io::Error| {
        Error::Local(format!(
            "cannot write the store {}: {e}",
            store.root().display()
        ))
    };
    for blob in [&config, &wasm].into_iter().chain(&signature_blobs) {
        store.put_blob(blob).map_err(written)?;
    }
    let descriptor = |bytes: &[u8]| Descriptor {
        media_type: MANIFEST_MEDIA_TYPE.into(),
        digest: digest_of(bytes),
        size: bytes.len() as u64,
        annotations: Default::default(),
    };
    if let Some((bytes, _)) = &signature_manifest {
        store.put_blob(bytes).map_err(written)?;
        store
            .record(&signatures_ref.name(), descriptor(bytes))
            .map_err(written)?;
    }
    store.put_blob(&manifest_bytes).map_err(written)?;
    store
        .record(&reference.name(), descriptor(&manifest_bytes))
        .map_err(written)?;
    if reference.tag.is_some() {
        let by_digest = Reference {
            tag: None,
            ..reference.with_digest(&digest)
        };
        store
            .record(&by_digest.name(), descriptor(&manifest_bytes))
            .map_err(written)?;
    }
    Ok(Pulled {
        reference: reference.with_digest(&digest),
        size: wasm.len() as u64,
        signer,
        signatures: signatures.len(),
    })
}

/// What [`push`] published.
#[derive(Clone, Debug)]
pub struct Pushed {
    /// The reference pushed, pinned to its manifest's digest.
    pub reference: Reference,
}

/// Publishes the component `file` at `reference` (its tag) in the CNCF
/// Wasm OCI artifact layout.
///
/// # Errors
/// [`Error::Local`] when the file cannot be read or is not a component;
/// [`Error::Registry`] when the registry refuses or cannot be reached.
pub async fn push(file: &Path, reference: &Reference, options: &Options) -> Result<Pushed, Error> {
    let wasm = std::fs::read(file)
        .map_err(|e| Error::Local(format!("cannot read {}: {e}", file.display())))?;
    if !wasmparser::Parser::is_component(&wasm) {
        return Err(Error::Local(format!(
            "{} is not a WebAssembly component (build it with `hookbox build`)",
            file.display()
        )));
    }
    let session = Session::open(reference, options)?;
    let wasm_digest = digest_of(&wasm);
    let (imports, exports) = world_of(&wasm);
    let config = serde_json::to_vec(&serde_json::json!({
        "created": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        "author": null,
        "architecture": "wasm",
        "os": "wasip2",
        "layerDigests": [wasm_digest],
        "component": { "exports": exports, "imports": imports, "target": null },
    }))
    .map_err(|e| Error::Local(e.to_string()))?;
    let title = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let manifest = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2,
        "mediaType": MANIFEST_MEDIA_TYPE,
        "config": Descriptor {
            media_type: WASM_CONFIG_MEDIA_TYPE.into(),
            digest: digest_of(&config),
            size: config.len() as u64,
            annotations: Default::default(),
        },
        "layers": [Descriptor {
            media_type: WASM_LAYER_MEDIA_TYPE.into(),
            digest: wasm_digest.clone(),
            size: wasm.len() as u64,
            annotations: [("org.opencontainers.image.title".to_owned(), title)].into(),
        }],
    }))
    .map_err(|e| Error::Local(e.to_string()))?;
    let target = session.oci(reference);
    session
        .client
        .store_auth_if_needed(target.resolve_registry(), &session.auth)
        .await;
    for blob in [&config, &wasm] {
        session
            .client
            .push_blob(&target, blob.clone(), &digest_of(blob))
            .await
            .map_err(|e| session.failed(&e))?;
    }
    session
        .client
        .push_manifest_raw(
            &target,
            manifest.clone(),
            MANIFEST_MEDIA_TYPE.parse().expect("a valid header value"),
        )
        .await
        .map_err(|e| session.failed(&e))?;
    Ok(Pushed {
        reference: reference.with_digest(&digest_of(&manifest)),
    })
}

/// The component's top-level import and export names, for its config.
fn world_of(wasm: &[u8]) -> (Vec<String>, Vec<String>) {
    use wasmparser::{Parser, Payload};
    let (mut imports, mut exports) = (Vec::new(), Vec::new());
    let mut depth = 0usize;
    for payload in Parser::new(0).parse_all(wasm).flatten() {
        match payload {
            Payload::ModuleSection { .. } | Payload::ComponentSection { .. } => depth += 1,
            Payload::End(_) => depth = depth.saturating_sub(1),
            Payload::ComponentImportSection(section) if depth == 0 => {
                imports.extend(
                    section
                        .into_iter()
                        .flatten()
                        .map(|i| i.name.name.to_owned()),
                );
            }
            Payload::ComponentExportSection(section) if depth == 0 => {
                exports.extend(
                    section
                        .into_iter()
                        .flatten()
                        .map(|e| e.name.name.to_owned()),
                );
            }
            _ => {}
        }
    }
    (imports, exports)
}
