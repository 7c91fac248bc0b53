//! `cargo bench -p hookbox-bench --bench registry`: what loading a guard
//! pulled from a registry and signed costs over loading the same component
//! copied into the directory (issue 35: the verification should add under
//! 1 ms). Two plugin directories, one process, loaded in turn with the
//! compile cache warm (as every load after the first):
//!
//! - `file`: `deny-tools.wasm` in the directory, named by `file`;
//! - `pulled, signed`: the same bytes in the directory's store as
//!   `hookbox pull` writes it (manifest, config, component, a cosign
//!   signature manifest and payload), named by `source` under a `[trust]`
//!   that requires a signature: every digest and the ECDSA P-256 signature
//!   are checked on each load.
//!
//! Medians of 41 loads each, interleaved.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use hookbox::oci::{self, Descriptor, Store, signature};
use hookbox::{Runtime, RuntimeConfig};
use p256::ecdsa::signature::Signer as _;
use p256::pkcs8::{EncodePublicKey as _, LineEnding};

fn descriptor(media_type: &str, bytes: &[u8]) -> Descriptor {
    Descriptor {
        media_type: media_type.into(),
        digest: oci::digest_of(bytes),
        size: bytes.len() as u64,
        annotations: BTreeMap::new(),
    }
}

fn manifest(config: &Descriptor, layers: &[Descriptor]) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2,
        "mediaType": oci::MANIFEST_MEDIA_TYPE,
        "config": config,
        "layers": layers,
    }))
    .unwrap()
}

/// A directory whose store holds `wasm` as pulled from
/// `localhost:5000/guards/deny-tools:1`, signed by a key it trusts.
fn pulled(dir: &Path, wasm: &[u8]) {
    let store = Store::in_dir(dir);
    let config = br#"{"architecture":"wasm","os":"wasip2"}"#;
    store.put_blob(config).unwrap();
    store.put_blob(wasm).unwrap();
    let guard = manifest(
        &descriptor(oci::WASM_CONFIG_MEDIA_TYPE, config),
        &[descriptor(oci::WASM_LAYER_MEDIA_TYPE, wasm)],
    );
    store.put_blob(&guard).unwrap();
    let digest = oci::digest_of(&guard);
    let reference: oci::Reference = "oci://localhost:5000/guards/deny-tools:1".parse().unwrap();
    store
        .record(
            &reference.name(),
            descriptor(oci::MANIFEST_MEDIA_TYPE, &guard),
        )
        .unwrap();

    let key = p256::ecdsa::SigningKey::from_slice(&[7; 32]).unwrap();
    let public = key
        .verifying_key()
        .to_public_key_pem(LineEnding::LF)
        .unwrap();
    std::fs::write(dir.join("publisher.pub"), public).unwrap();
    let payload = format!(
        r#"{{"critical":{{"identity":{{"docker-reference":"localhost:5000/guards/deny-tools"}},"image":{{"docker-manifest-digest":"{digest}"}},"type":"{}"}},"optional":null}}"#,
        signature::PAYLOAD_TYPE
    );
    let signed: p256::ecdsa::DerSignature = key.sign(payload.as_bytes());
    use base64::Engine as _;
    let mut layer = descriptor(signature::SIMPLE_SIGNING_MEDIA_TYPE, payload.as_bytes());
    layer.annotations.insert(
        signature::SIGNATURE_ANNOTATION.into(),
        base64::engine::general_purpose::STANDARD.encode(signed.as_bytes()),
    );
    let empty = b"{}";
    store.put_blob(empty).unwrap();
    store.put_blob(payload.as_bytes()).unwrap();
    let signatures = manifest(
        &descriptor("application/vnd.oci.image.config.v1+json", empty),
        &[layer],
    );
    store.put_blob(&signatures).unwrap();
    store
        .record(
            &reference.signatures_of(&digest).name(),
            descriptor(oci::MANIFEST_MEDIA_TYPE, &signatures),
        )
        .unwrap();
    std::fs::write(
        dir.join("hookbox.toml"),
        format!(
            "[trust]\nkeys = [\"publisher.pub\"]\n\n[[plugin]]\nsource = \"{reference}\"\n[plugin.config]\ndeny = \"shell\"\n"
        ),
    )
    .unwrap();
}

fn main() {
    let scratch =
        std::env::temp_dir().join(format!("hookbox-bench-registry-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    let (file_dir, pulled_dir) = (scratch.join("file"), scratch.join("pulled"));
    std::fs::create_dir_all(&file_dir).unwrap();
    std::fs::create_dir_all(&pulled_dir).unwrap();
    let wasm = std::fs::read(hookbox_tests::guests::DENY_TOOLS).expect("the guest is built");
    std::fs::write(file_dir.join("deny-tools.wasm"), &wasm).unwrap();
    std::fs::write(
        file_dir.join("hookbox.toml"),
        "[[plugin]]\nfile = \"deny-tools.wasm\"\n[plugin.config]\ndeny = \"shell\"\n",
    )
    .unwrap();
    pulled(&pulled_dir, &wasm);

    let runtime = Runtime::new(RuntimeConfig {
        cache_dir: Some(scratch.join("cache")),
        ..RuntimeConfig::default()
    })
    .expect("runtime");
    let load = |dir: &Path| {
        let started = Instant::now();
        let loaded = hookbox::directory::load(&runtime, dir).expect("loads");
        let took = started.elapsed();
        if let Some((_, error)) = loaded.failures().next() {
            panic!("{}: {error}", dir.display());
        }
        took
    };
    // Warm: both compiled into the cache, the files in the page cache.
    for dir in [&file_dir, &pulled_dir] {
        load(dir);
        load(dir);
    }
    let (mut file, mut signed): (Vec<Duration>, Vec<Duration>) = (Vec::new(), Vec::new());
    for _ in 0..41 {
        file.push(load(&file_dir));
        signed.push(load(&pulled_dir));
    }
    let median = |times: &mut Vec<Duration>| {
        times.sort();
        times[times.len() / 2]
    };
    let (file, signed) = (median(&mut file), median(&mut signed));
    println!(
        "load of deny-tools ({} bytes), compile cache warm, median of 41:",
        wasm.len()
    );
    println!(
        "  file in the directory   {:>9.3} ms",
        file.as_secs_f64() * 1e3
    );
    println!(
        "  pulled, signed          {:>9.3} ms  (+{:.3} ms, {:.2}x)",
        signed.as_secs_f64() * 1e3,
        (signed.as_secs_f64() - file.as_secs_f64()) * 1e3,
        signed.as_secs_f64() / file.as_secs_f64()
    );
    let _ = std::fs::remove_dir_all(&scratch);
}
