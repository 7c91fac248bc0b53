"""The registry tests' independent side: an OCI client (oras, from PyPI)
and cosign's key-pair signature format made with `cryptography`.

    oci.py keygen DIR NAME               NAME.key (PKCS#8) and NAME.pub (SPKI PEM)
    oci.py push HOST REPO:TAG FILE       a guard in the CNCF Wasm OCI layout; prints its digest
    oci.py sign HOST REPO DIGEST KEY [--bad] [--identity OTHER]
                                         cosign's signature of DIGEST (tag sha256-<hex>.sig);
                                         --bad flips a byte of the signature; --identity
                                         says it was made for HOST/OTHER (copied from there)
    oci.py pull HOST REPO:TAG DIR        pulls the guard's layer into DIR; prints the file
    oci.py manifest HOST REPO:TAG        prints the manifest
    oci.py index HOST REPO:TAG DIGEST    a multi-platform OCI index at TAG naming the
                                         manifest DIGEST (of the same repository)

HOST is a loopback registry (plain HTTP). Nothing here is hookbox's code:
the signature is built from cosign's specification (SIGNATURE_SPEC.md:
a simple-signing payload, ECDSA P-256 over SHA-256, DER, base64 in the
layer's `dev.cosignproject.cosign/signature` annotation).
"""
import base64
import json
import os
import sys
import tempfile

import oras.provider
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

WASM_CONFIG = "application/vnd.wasm.config.v0+json"
SIMPLE_SIGNING = "application/vnd.dev.cosign.simplesigning.v1+json"


def registry(host):
    return oras.provider.Registry(hostname=host, insecure=True)


def keygen(folder, name):
    key = ec.generate_private_key(ec.SECP256R1())
    with open(os.path.join(folder, name + ".key"), "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))
    with open(os.path.join(folder, name + ".pub"), "wb") as f:
        f.write(key.public_key().public_bytes(serialization.Encoding.PEM,
                                              serialization.PublicFormat.SubjectPublicKeyInfo))


def push(host, target, path):
    with tempfile.TemporaryDirectory() as tmp:
        config = os.path.join(tmp, "config.json")
        with open(config, "w") as f:
            json.dump({"architecture": "wasm", "os": "wasip2", "layerDigests": [],
                       "component": {"exports": [], "imports": [], "target": None}}, f)
        cwd = os.getcwd()
        os.chdir(os.path.dirname(os.path.abspath(path)))
        try:
            registry(host).push(target=f"{host}/{target}",
                                files=[f"{os.path.basename(path)}:application/wasm"],
                                manifest_config=f"{config}:{WASM_CONFIG}", quiet=True)
        finally:
            os.chdir(cwd)
    repo, tag = target.rsplit(":", 1)
    print(digest_of(host, repo, tag))


def digest_of(host, repo, tag):
    import hashlib
    reg = registry(host)
    container = reg.get_container(f"{host}/{repo}:{tag}")
    response = reg.do_request(f"{reg.prefix}://{container.manifest_url()}", "GET",
                              headers={"Accept": "application/vnd.oci.image.manifest.v1+json"})
    return "sha256:" + hashlib.sha256(response.content).hexdigest()


def sign(host, repo, digest, keyfile, bad=False, identity=None):
    with open(keyfile, "rb") as f:
        key = serialization.load_pem_private_key(f.read(), password=None)
    payload = json.dumps({"critical": {"identity": {"docker-reference": f"{host}/{identity or repo}"},
                                       "image": {"docker-manifest-digest": digest},
                                       "type": "cosign container image signature"},
                          "optional": None}, separators=(",", ":")).encode()
    signature = bytearray(key.sign(payload, ec.ECDSA(hashes.SHA256())))
    if bad:
        signature[-1] ^= 1
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "payload.json")
        with open(path, "wb") as f:
            f.write(payload)
        annotations = os.path.join(tmp, "annotations.json")
        with open(annotations, "w") as f:
            json.dump({"payload.json": {"dev.cosignproject.cosign/signature":
                                        base64.b64encode(bytes(signature)).decode()}}, f)
        cwd = os.getcwd()
        os.chdir(tmp)
        try:
            tag = digest.replace(":", "-", 1) + ".sig"
            registry(host).push(target=f"{host}/{repo}:{tag}", files=[f"payload.json:{SIMPLE_SIGNING}"],
                                annotation_file=annotations, quiet=True)
        finally:
            os.chdir(cwd)


def index(host, target, digest):
    repo, tag = target.rsplit(":", 1)
    reg = registry(host)
    url = f"{reg.prefix}://{host}/v2/{repo}/manifests"
    manifest_type = "application/vnd.oci.image.manifest.v1+json"
    got = reg.do_request(f"{url}/{digest}", "GET", headers={"Accept": manifest_type})
    index_type = "application/vnd.oci.image.index.v1+json"
    body = json.dumps({"schemaVersion": 2, "mediaType": index_type,
                       "manifests": [{"mediaType": manifest_type, "digest": digest,
                                      "size": len(got.content),
                                      "platform": {"architecture": "wasm", "os": "wasip2"}}]})
    put = reg.do_request(f"{url}/{tag}", "PUT", data=body.encode(),
                         headers={"Content-Type": index_type})
    if put.status_code >= 300:
        sys.exit(f"index: {put.status_code} {put.text}")


def pull(host, target, folder):
    files = registry(host).pull(target=f"{host}/{target}", outdir=folder)
    print(files[0])


def manifest(host, target):
    print(json.dumps(registry(host).get_manifest(f"{host}/{target}")))


if __name__ == "__main__":
    command, args = sys.argv[1], sys.argv[2:]
    if command == "keygen":
        keygen(*args)
    elif command == "push":
        push(*args)
    elif command == "sign":
        identity = args[args.index("--identity") + 1] if "--identity" in args else None
        sign(args[0], args[1], args[2], args[3], bad="--bad" in args, identity=identity)
    elif command == "pull":
        pull(*args)
    elif command == "manifest":
        manifest(*args)
    elif command == "index":
        index(*args)
    else:
        sys.exit(f"unknown command {command}")
