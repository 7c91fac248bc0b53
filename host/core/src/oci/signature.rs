//! cosign's key-pair signatures, as registries carry them.
//!
//! cosign stores the signatures of the manifest `sha256:<hex>` as another
//! manifest in the same repository, tagged `sha256-<hex>.sig`. Each of its
//! layers is one signature: a *simple signing* payload
//! (`application/vnd.dev.cosign.simplesigning.v1+json`),
//!
//! ```json
//! {"critical":{"identity":{"docker-reference":"registry/repository"},
//!  "image":{"docker-manifest-digest":"sha256:<hex>"},
//!  "type":"cosign container image signature"},"optional":null}
//! ```
//!
//! and, in the layer's `dev.cosignproject.cosign/signature` annotation,
//! the base64 of an ECDSA P-256 / SHA-256 signature (ASN.1 DER) of those
//! payload bytes. The public key is a PEM `PUBLIC KEY` (what `cosign
//! generate-key-pair` writes to `cosign.pub`).
//!
//! A guard is signed by a key when one of its signature payloads names the
//! guard's manifest digest, with that type, and the guard's own
//! repository as its `docker-reference` (or one the trust policy names as
//! a mirror's origin), and its signature verifies with the key. Binding
//! the repository, as containers/image (podman, skopeo) does and cosign's
//! CLI does not, keeps a trusted key's signature over one guard from
//! vouching for its bytes copied into another guard's repository. A
//! `docker-reference` with a tag binds the tag too, when the guard is
//! pulled by one. A signature manifest holds at most [`MAX_SIGNATURES`].
//!
//! Why this format: it is what cosign 2 writes by default, what cosign 3
//! writes with `--new-bundle-format=false`, and what any registry serves
//! by a plain tag lookup (the newer sigstore bundle needs the OCI referrers
//! API, which the CNCF distribution registry 2.8 does not have).

use p256::ecdsa::signature::Verifier as _;
use p256::ecdsa::{DerSignature, VerifyingKey};
use p256::pkcs8::DecodePublicKey as _;

/// The media type of a cosign signature layer's payload.
pub const SIMPLE_SIGNING_MEDIA_TYPE: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// The layer annotation holding a cosign signature, in base64.
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// The `critical.type` of a cosign image signature payload.
pub const PAYLOAD_TYPE: &str = "cosign container image signature";
/// The most signatures read for one guard: a signature manifest with more
/// layers is refused (each layer is a payload to fetch and keep).
pub const MAX_SIGNATURES: usize = 16;

/// The signature layers of a cosign signature manifest: its simple
/// signing layers, at most [`MAX_SIGNATURES`], each payload once (a
/// manifest naming one payload many times costs one read of it).
///
/// # Errors
/// When it has more signatures than hookbox reads.
pub fn signature_layers(
    manifest: &super::ImageManifest,
) -> Result<Vec<&super::Descriptor>, String> {
    let mut layers: Vec<&super::Descriptor> = Vec::new();
    for layer in manifest
        .layers
        .iter()
        .filter(|l| l.media_type == SIMPLE_SIGNING_MEDIA_TYPE)
    {
        if layers.iter().any(|seen| {
            seen.digest == layer.digest
                && seen.annotations.get(SIGNATURE_ANNOTATION)
                    == layer.annotations.get(SIGNATURE_ANNOTATION)
        }) {
            continue;
        }
        if layers.len() == MAX_SIGNATURES {
            return Err(format!(
                "it holds more than {MAX_SIGNATURES} signatures, the most hookbox reads for one guard"
            ));
        }
        layers.push(layer);
    }
    Ok(layers)
}

/// Whose artifact a signature must say it signed.
#[derive(Clone, Copy, Debug)]
pub struct Identity<'a> {
    /// The guard's reference: its `registry/repository` (and its tag,
    /// when pulled by one).
    pub reference: &'a super::Reference,
    /// Other repositories (`registry/repository`) a signature may name:
    /// the origins the trust policy's mirrors copy.
    pub also: &'a [String],
}

impl Identity<'_> {
    /// Whether the `docker-reference` `named` is this guard's.
    fn admits(&self, named: &str) -> Result<(), String> {
        if named.is_empty() {
            return Err("its payload names no repository (`docker-reference`)".into());
        }
        let without_digest = named.split('@').next().unwrap_or_default();
        let (repository, tag) = match without_digest.rsplit_once(':') {
            Some((repository, tag)) if !tag.contains('/') => (repository, Some(tag)),
            _ => (without_digest, None),
        };
        let repository = repository.to_ascii_lowercase();
        let own = format!("{}/{}", self.reference.registry, self.reference.repository);
        if repository != own
            && !self
                .also
                .iter()
                .any(|r| r.eq_ignore_ascii_case(&repository))
        {
            return Err(format!(
                "it was signed for `{repository}`, not for this guard's `{own}` (a mirror's origin is allowed with `identities` in the trust policy)"
            ));
        }
        match (tag, self.reference.tag.as_deref()) {
            (Some(signed), Some(pulled)) if signed != pulled => Err(format!(
                "it was signed for the tag `{signed}`, not `{pulled}`"
            )),
            _ => Ok(()),
        }
    }
}

/// One signature as pulled: the payload and its base64 signature.
#[derive(Clone, Debug)]
pub struct Signed {
    /// The simple signing payload's bytes (what is signed).
    pub payload: Vec<u8>,
    /// The signature, base64 (empty when the layer had none).
    pub signature: String,
}

/// A publisher's public key that a manifest trusts.
#[derive(Clone, Debug)]
pub struct PublicKey {
    /// How the manifest names it (its file).
    pub name: String,
    key: VerifyingKey,
}

impl PublicKey {
    /// Reads a PEM `PUBLIC KEY` (an ECDSA P-256 key, as cosign makes).
    ///
    /// # Errors
    /// When it is not one.
    pub fn from_pem(name: &str, pem: &str) -> Result<PublicKey, String> {
        let key = VerifyingKey::from_public_key_pem(pem.trim()).map_err(|e| {
            format!(
                "{name} is not an ECDSA P-256 public key in PEM (`-----BEGIN PUBLIC KEY-----`, as `cosign generate-key-pair` writes): {e}"
            )
        })?;
        Ok(PublicKey {
            name: name.to_owned(),
            key,
        })
    }
}

/// The name of the first key in `keys` that signed the manifest `digest`
/// for `identity` (its repository, or a mirror's origin), among
/// `signatures`.
///
/// # Errors
/// Why no signature verifies: none was pulled, or each fails (another
/// digest, another key, a malformed signature), every one named.
pub fn signer<'k>(
    signatures: &[Signed],
    (digest, identity): (&str, Identity<'_>),
    keys: &'k [PublicKey],
) -> Result<&'k str, String> {
    if signatures.is_empty() {
        return Err(format!(
            "it is not signed: no cosign signature (tag `{}.sig`) was pulled with it",
            digest.replacen(':', "-", 1)
        ));
    }
    let mut why = Vec::new();
    for (i, signed) in signatures.iter().enumerate() {
        match check(signed, (digest, identity), keys) {
            Ok(key) => return Ok(key),
            Err(reason) => why.push(format!("signature {}: {reason}", i + 1)),
        }
    }
    Err(format!(
        "no signature verifies with a trusted key ({})",
        why.join("; ")
    ))
}

fn check<'k>(
    signed: &Signed,
    (digest, identity): (&str, Identity<'_>),
    keys: &'k [PublicKey],
) -> Result<&'k str, String> {
    let payload: serde_json::Value = serde_json::from_slice(&signed.payload)
        .map_err(|e| format!("its payload is not JSON: {e}"))?;
    let critical = &payload["critical"];
    if critical["type"] != PAYLOAD_TYPE {
        return Err(format!("its payload is not a `{PAYLOAD_TYPE}`"));
    }
    let signed_digest = critical["image"]["docker-manifest-digest"]
        .as_str()
        .unwrap_or_default();
    if signed_digest != digest {
        return Err(format!(
            "it signs {}, not this manifest",
            if signed_digest.is_empty() {
                "no digest"
            } else {
                signed_digest
            }
        ));
    }
    identity.admits(
        critical["identity"]["docker-reference"]
            .as_str()
            .unwrap_or_default(),
    )?;
    use base64::Engine as _;
    let der = base64::engine::general_purpose::STANDARD
        .decode(signed.signature.trim())
        .map_err(|e| format!("its signature is not base64: {e}"))?;
    let signature =
        DerSignature::from_bytes(&der).map_err(|e| format!("its signature is malformed: {e}"))?;
    keys.iter()
        .find(|k| k.key.verify(&signed.payload, &signature).is_ok())
        .map(|k| k.name.as_str())
        .ok_or_else(|| {
            "it was made by another key than the trusted ones, or its payload was altered".into()
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use p256::ecdsa::SigningKey;
    use p256::ecdsa::signature::Signer as _;
    use p256::pkcs8::{EncodePublicKey as _, LineEnding};

    const DIGEST: &str = "sha256:f7e4c02fa2448dcd54812e49d926b4491f1d8ec76a2481c17faf64eca047ca37";

    fn key(seed: u8) -> (SigningKey, PublicKey) {
        let signing = SigningKey::from_slice(&[seed; 32]).unwrap();
        let pem = signing
            .verifying_key()
            .to_public_key_pem(LineEnding::LF)
            .unwrap();
        (
            signing,
            PublicKey::from_pem(&format!("key{seed}.pub"), &pem).unwrap(),
        )
    }

    fn sign(key: &SigningKey, digest: &str) -> Signed {
        sign_for(key, digest, "localhost/g")
    }

    /// `key`'s signature over `digest` saying it is `identity`'s.
    fn sign_for(key: &SigningKey, digest: &str, identity: &str) -> Signed {
        use base64::Engine as _;
        let payload = format!(
            r#"{{"critical":{{"identity":{{"docker-reference":"{identity}"}},"image":{{"docker-manifest-digest":"{digest}"}},"type":"{PAYLOAD_TYPE}"}},"optional":null}}"#
        );
        let signature: DerSignature = key.sign(payload.as_bytes());
        Signed {
            payload: payload.into_bytes(),
            signature: base64::engine::general_purpose::STANDARD.encode(signature.as_bytes()),
        }
    }

    #[test]
    fn a_signature_by_a_trusted_key_over_this_digest_verifies() {
        let (one, one_pub) = key(1);
        let (_, two_pub) = key(2);
        let keys = [two_pub, one_pub];
        assert_eq!(
            signer(&[sign(&one, DIGEST)], (DIGEST, own()), &keys),
            Ok("key1.pub")
        );
    }

    #[test]
    fn another_key_another_digest_an_altered_payload_or_none_is_refused() {
        let (one, _) = key(1);
        let (_, two_pub) = key(2);
        let trusted = [two_pub];
        let err = signer(&[sign(&one, DIGEST)], (DIGEST, own()), &trusted).unwrap_err();
        assert!(err.contains("another key"), "{err}");

        let (_, one_pub) = key(1);
        let keys = [one_pub];
        let other = DIGEST.replace("f7", "00");
        let err = signer(&[sign(&one, &other)], (DIGEST, own()), &keys).unwrap_err();
        assert!(err.contains("not this manifest"), "{err}");

        let mut altered = sign(&one, DIGEST);
        altered.payload.extend_from_slice(b" ");
        assert!(
            signer(&[altered], (DIGEST, own()), &keys)
                .unwrap_err()
                .contains("altered")
        );

        let mut flipped = sign(&one, DIGEST);
        flipped.signature = flipped
            .signature
            .replacen('A', "B", 1)
            .replacen('M', "N", 1);
        assert!(signer(&[flipped], (DIGEST, own()), &keys).is_err());

        let err = signer(&[], (DIGEST, own()), &keys).unwrap_err();
        assert!(err.contains("not signed"), "{err}");
    }

    /// The guard `localhost/g:1`, its signatures' own identity.
    fn own() -> Identity<'static> {
        static REFERENCE: std::sync::OnceLock<super::super::Reference> = std::sync::OnceLock::new();
        Identity {
            reference: REFERENCE.get_or_init(|| "oci://localhost/g:1".parse().unwrap()),
            also: &[],
        }
    }

    /// A trusted key's signature over these very bytes, made for another
    /// repository (or another tag of this one), does not vouch for this
    /// guard, unless the trust policy names that repository as a mirror's
    /// origin.
    #[test]
    fn a_signature_made_for_another_repository_or_tag_is_refused() {
        let (one, one_pub) = key(1);
        let keys = [one_pub];
        for (identity, refused) in [
            ("localhost/g", None),
            ("LOCALHOST/g", None),
            ("localhost/g:1", None),
            ("localhost/g@sha256:00", None),
            ("localhost/other", Some("signed for `localhost/other`")),
            ("localhost/g/sub", Some("signed for `localhost/g/sub`")),
            ("localhost/g:0", Some("the tag `0`, not `1`")),
            ("", Some("names no repository")),
        ] {
            let signed = [sign_for(&one, DIGEST, identity)];
            let answer = signer(&signed, (DIGEST, own()), &keys);
            match refused {
                None => assert_eq!(answer, Ok("key1.pub"), "{identity}"),
                Some(why) => {
                    let err = answer.unwrap_err();
                    assert!(err.contains(why), "{identity}: {err}");
                }
            }
        }
        let mirrored = ["origin.example/g".to_owned()];
        let from_mirror = Identity {
            also: &mirrored,
            ..own()
        };
        let signed = [sign_for(&one, DIGEST, "origin.example/g")];
        assert_eq!(
            signer(&signed, (DIGEST, from_mirror), &keys),
            Ok("key1.pub")
        );
    }

    /// A signature manifest of many layers naming one payload (646 KB of
    /// it made a pull use a gigabyte) costs one read of the payload; past
    /// [`MAX_SIGNATURES`] distinct signatures it is refused.
    #[test]
    fn a_signature_manifest_is_read_for_a_bounded_number_of_distinct_signatures() {
        let layer = |digest: &str, signature: &str| super::super::Descriptor {
            media_type: SIMPLE_SIGNING_MEDIA_TYPE.into(),
            digest: digest.into(),
            size: 10,
            annotations: [(SIGNATURE_ANNOTATION.to_owned(), signature.to_owned())].into(),
        };
        let manifest = |layers: Vec<super::super::Descriptor>| super::super::ImageManifest {
            schema_version: 2,
            media_type: None,
            config: layer(DIGEST, ""),
            layers,
        };
        let repeated = manifest(vec![layer(DIGEST, "c2ln"); 20_000]);
        assert_eq!(signature_layers(&repeated).unwrap().len(), 1);
        let many = manifest(
            (0..=MAX_SIGNATURES)
                .map(|i| layer(DIGEST, &format!("sig{i}")))
                .collect(),
        );
        let err = signature_layers(&many).unwrap_err();
        assert!(err.contains("more than 16 signatures"), "{err}");
        let most = manifest(many.layers[..MAX_SIGNATURES].to_vec());
        assert_eq!(signature_layers(&most).unwrap().len(), MAX_SIGNATURES);
    }

    #[test]
    fn a_key_that_is_not_a_p256_public_key_is_refused() {
        let err = PublicKey::from_pem(
            "k.pub",
            "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----",
        )
        .unwrap_err();
        assert!(err.contains("k.pub") && err.contains("P-256"), "{err}");
    }
}
