//! A guard's registry reference: `oci://registry/repository[:tag][@sha256:…]`.

use std::fmt;
use std::str::FromStr;

/// Where a guard is published: a registry host (with its port), a
/// repository, and a tag, a digest, or both (the tag is then only a
/// label: the digest decides).
///
/// The registry must be named (`ghcr.io/…`, `localhost:5000/…`): there is no
/// default registry, so a reference never means another host than it says.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Reference {
    /// `host` or `host:port`.
    pub registry: String,
    /// `name/name…`, lowercase.
    pub repository: String,
    /// A tag, if the reference has one.
    pub tag: Option<String>,
    /// `sha256:<64 hex>`, if the reference has one.
    pub digest: Option<String>,
}

impl Reference {
    /// The reference the store records a pull of this one under:
    /// `registry/repository:tag`, or `registry/repository@digest` without a
    /// tag.
    pub fn name(&self) -> String {
        match (&self.tag, &self.digest) {
            (Some(tag), _) => format!("{}/{}:{tag}", self.registry, self.repository),
            (None, Some(digest)) => format!("{}/{}@{digest}", self.registry, self.repository),
            (None, None) => format!("{}/{}", self.registry, self.repository),
        }
    }

    /// This reference pinned to `digest` (its tag kept as a label).
    pub fn with_digest(&self, digest: &str) -> Reference {
        Reference {
            digest: Some(digest.to_owned()),
            ..self.clone()
        }
    }

    /// The same repository at `tag`, without a digest.
    pub fn with_tag(&self, tag: &str) -> Reference {
        Reference {
            tag: Some(tag.to_owned()),
            digest: None,
            ..self.clone()
        }
    }

    /// The tag under which cosign stores the signatures of the manifest
    /// with `digest` (`sha256-<hex>.sig`), in this repository.
    pub fn signatures_of(&self, digest: &str) -> Reference {
        self.with_tag(&format!("{}.sig", digest.replacen(':', "-", 1)))
    }

    /// The name a plugin from this reference gets when the manifest gives
    /// none: the repository's last part.
    pub fn plugin_name(&self) -> &str {
        self.repository
            .rsplit('/')
            .next()
            .unwrap_or(&self.repository)
    }
}

impl fmt::Display for Reference {
    /// `oci://registry/repository[:tag][@digest]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "oci://{}/{}", self.registry, self.repository)?;
        if let Some(tag) = &self.tag {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = &self.digest {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

impl FromStr for Reference {
    type Err = String;

    /// Parses `[oci://]registry/repository[:tag][@sha256:<hex>]`.
    fn from_str(text: &str) -> Result<Reference, String> {
        let bad = |why: &str| {
            Err(format!(
                "`{text}` is not a registry reference ({why}); write `oci://registry/repository:tag`, `…@sha256:<digest>` or both"
            ))
        };
        let rest = text.strip_prefix("oci://").unwrap_or(text);
        let (rest, digest) = match rest.split_once('@') {
            Some((rest, digest)) => (rest, Some(digest)),
            None => (rest, None),
        };
        let Some((registry, path)) = rest.split_once('/') else {
            return bad("no repository");
        };
        if !(registry.contains('.') || registry.contains(':') || registry == "localhost") {
            return bad("name the registry host first, as in `ghcr.io/owner/guard`");
        }
        if registry.is_empty()
            || !registry
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b))
        {
            return bad("the registry is not a host name with an optional port");
        }
        // The tag is after the last `:` of the last path part.
        let (repository, tag) = match path.rsplit_once(':') {
            Some((repo, tag)) if !tag.contains('/') => (repo, Some(tag)),
            _ => (path, None),
        };
        let part_ok = |part: &str| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b))
                && part.as_bytes()[0].is_ascii_alphanumeric()
        };
        if !repository.split('/').all(part_ok) {
            return bad(
                "a repository is lowercase letters, digits and `._-`, in parts split by `/`",
            );
        }
        if let Some(tag) = tag
            && (tag.is_empty()
                || tag.len() > 128
                || !tag
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
                || tag.starts_with(['.', '-']))
        {
            return bad("a tag is up to 128 letters, digits and `._-`");
        }
        let digest = match digest {
            None => None,
            Some(d) => match crate::cache::parse_sha256(d) {
                Some(hex) => Some(format!("sha256:{hex}")),
                None => return bad("a digest is `sha256:` and 64 hex digits"),
            },
        };
        if tag.is_none() && digest.is_none() {
            return bad("give a tag or a digest");
        }
        Ok(Reference {
            registry: registry.to_owned(),
            repository: repository.to_owned(),
            tag: tag.map(str::to_owned),
            digest,
        })
    }
}

impl<'de> serde::Deserialize<'de> for Reference {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Reference, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: &str = "sha256:f7e4c02fa2448dcd54812e49d926b4491f1d8ec76a2481c17faf64eca047ca37";

    #[test]
    fn a_tag_a_digest_or_both_parse_and_print_back() {
        for text in [
            "oci://ghcr.io/acme/guards/deny-tools:1.2",
            &format!("oci://127.0.0.1:5000/deny-tools@{D}"),
            &format!("oci://localhost/deny-tools:v1@{D}"),
        ] {
            let reference: Reference = text.parse().unwrap();
            assert_eq!(reference.to_string(), text);
        }
        let r: Reference = "127.0.0.1:5000/a/b:1".parse().unwrap();
        assert_eq!(
            (r.registry.as_str(), r.repository.as_str(), r.tag.as_deref()),
            ("127.0.0.1:5000", "a/b", Some("1"))
        );
        assert_eq!(r.plugin_name(), "b");
        assert_eq!(
            r.signatures_of(D).tag.as_deref(),
            Some(&*format!("{}.sig", D.replace(':', "-")))
        );
    }

    #[test]
    fn a_reference_without_registry_tag_or_valid_parts_is_refused() {
        for text in [
            "deny-tools:1",
            "acme/deny-tools:1",
            "oci://ghcr.io/acme/deny-tools",
            "oci://ghcr.io/Acme/deny:1",
            "oci://ghcr.io/acme/deny:-1",
            "oci://ghcr.io/acme/deny@sha256:abc",
            "oci://ghcr.io//deny:1",
        ] {
            let err = text.parse::<Reference>().unwrap_err();
            assert!(err.contains("not a registry reference"), "{text}: {err}");
        }
    }
}
