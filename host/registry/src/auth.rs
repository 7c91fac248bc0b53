//! Registry credentials from where container tools keep them: the file
//! `REGISTRY_AUTH_FILE` names (podman, skopeo, buildah), else Docker's
//! `config.json` (`$DOCKER_CONFIG/config.json`, else
//! `~/.docker/config.json`), written by `docker login`, `oras login` or
//! by hand. Both hold the same `auths` map; a `credHelpers` or
//! `credsStore` entry runs `docker-credential-<helper> get`, Docker's
//! credential helper protocol.
//!
//! Credentials are read for one pull or push and never written anywhere:
//! not into `hookbox.toml`, not into the store, not into logs.
//!
//! Written here rather than taken from the `docker_credential` crate: that
//! crate reads only Docker's file, and `REGISTRY_AUTH_FILE` is the other
//! half of the convention.

use std::path::PathBuf;

use base64::Engine as _;
use oci_client::secrets::RegistryAuth;
use serde::Deserialize;

use crate::Error;

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct AuthFile {
    #[serde(default)]
    auths: std::collections::HashMap<String, AuthEntry>,
    #[serde(default)]
    cred_helpers: std::collections::HashMap<String, String>,
    #[serde(default)]
    creds_store: Option<String>,
}

#[derive(Default, Deserialize)]
struct AuthEntry {
    #[serde(default)]
    auth: Option<String>,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<String>,
    #[serde(default, rename = "identitytoken")]
    identity_token: Option<String>,
}

/// The auth file in use, if any.
fn auth_file() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("REGISTRY_AUTH_FILE") {
        return Some(path.into());
    }
    let dir = match std::env::var_os("DOCKER_CONFIG") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("HOME")?).join(".docker"),
    };
    Some(dir.join("config.json"))
}

/// The credentials for `registry` (`host[:port]`); anonymous when none are
/// kept for it.
///
/// # Errors
/// [`Error::Credentials`] when the auth file exists but cannot be read or
/// parsed, or holds an entry for the registry that is not usable.
pub fn for_registry(registry: &str) -> Result<RegistryAuth, Error> {
    let Some(path) = auth_file() else {
        return Ok(RegistryAuth::Anonymous);
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(RegistryAuth::Anonymous),
        Err(e) => {
            return Err(Error::Credentials(format!(
                "cannot read {}: {e}",
                path.display()
            )));
        }
    };
    let file: AuthFile = serde_json::from_str(&text).map_err(|e| {
        Error::Credentials(format!(
            "{} is not a registry auth file: {e}",
            path.display()
        ))
    })?;
    let keys = [
        registry.to_owned(),
        format!("https://{registry}"),
        format!("http://{registry}"),
    ];
    if let Some(entry) = keys.iter().find_map(|k| file.auths.get(k)) {
        return entry_auth(entry).map_err(|why| {
            Error::Credentials(format!(
                "{}: the entry for {registry} {why}",
                path.display()
            ))
        });
    }
    let helper = file
        .cred_helpers
        .get(registry)
        .or(file.creds_store.as_ref());
    match helper {
        Some(helper) => helper_auth(helper, registry),
        None => Ok(RegistryAuth::Anonymous),
    }
}

fn entry_auth(entry: &AuthEntry) -> Result<RegistryAuth, String> {
    if let Some(token) = &entry.identity_token {
        return Ok(RegistryAuth::Bearer(token.clone()));
    }
    if let (Some(user), Some(password)) = (&entry.username, &entry.password) {
        return Ok(RegistryAuth::Basic(user.clone(), password.clone()));
    }
    let Some(auth) = &entry.auth else {
        return Ok(RegistryAuth::Anonymous);
    };
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(auth.trim())
        .map_err(|_| "has an `auth` that is not base64".to_owned())?;
    let decoded =
        String::from_utf8(decoded).map_err(|_| "has an `auth` that is not text".to_owned())?;
    let (user, password) = decoded
        .split_once(':')
        .ok_or_else(|| "has an `auth` that is not `user:password`".to_owned())?;
    Ok(RegistryAuth::Basic(user.to_owned(), password.to_owned()))
}

/// Asks `docker-credential-<helper>` for `registry`'s credentials.
fn helper_auth(helper: &str, registry: &str) -> Result<RegistryAuth, Error> {
    use std::io::Write as _;
    let program = format!("docker-credential-{helper}");
    let failed = |why: String| Error::Credentials(format!("{program} get ({registry}): {why}"));
    let mut child = std::process::Command::new(&program)
        .arg("get")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| failed(format!("cannot run it: {e}")))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(registry.as_bytes())
            .map_err(|e| failed(e.to_string()))?;
    }
    let output = child
        .wait_with_output()
        .map_err(|e| failed(e.to_string()))?;
    if !output.status.success() {
        // "credentials not found in native keychain": no login for it.
        return Ok(RegistryAuth::Anonymous);
    }
    #[derive(Deserialize)]
    struct Answer {
        #[serde(rename = "Username")]
        username: String,
        // The helper's `Secret`: a password or a token.
        #[serde(rename = "Secret")]
        value: String,
    }
    let answer: Answer = serde_json::from_slice(&output.stdout)
        .map_err(|e| failed(format!("its answer is not credentials: {e}")))?;
    Ok(if answer.username == "<token>" {
        RegistryAuth::Bearer(answer.value)
    } else {
        RegistryAuth::Basic(answer.username, answer.value)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_auth_entry_is_user_and_password_in_base64_or_fields() {
        let entry = AuthEntry {
            auth: Some(base64::engine::general_purpose::STANDARD.encode("ann:s3cret")),
            ..AuthEntry::default()
        };
        assert!(
            matches!(entry_auth(&entry), Ok(RegistryAuth::Basic(u, p)) if u == "ann" && p == "s3cret")
        );
        let fields = AuthEntry {
            username: Some("bob".into()),
            password: Some("pw".into()),
            ..AuthEntry::default()
        };
        assert!(matches!(entry_auth(&fields), Ok(RegistryAuth::Basic(u, _)) if u == "bob"));
        let bad = AuthEntry {
            auth: Some("!!".into()),
            ..AuthEntry::default()
        };
        assert!(entry_auth(&bad).unwrap_err().contains("base64"));
    }
}
