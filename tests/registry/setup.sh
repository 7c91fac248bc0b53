#!/usr/bin/env bash
# Installs what the registry tests (host/cli/tests/registry.rs) run
# against, pinned, and prints the directory (target/registry):
#
# - the CNCF distribution registry, Debian's `docker-registry` (2.8), into
#   /usr/bin by apt-get (as root; a machine without it and without root
#   skips the tests unless HOOKBOX_REGISTRY=required);
# - the independent client and signer in a venv: `oras` (PyPI), the OCI
#   client that pushes and pulls guards, and `cryptography` (PyPI), which
#   makes cosign's ECDSA P-256 signatures in tests/registry/oci.py.
#
# A second run with nothing changed returns at once.
set -euo pipefail

ORAS=0.2.43
CRYPTOGRAPHY=51.0.1

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="$(cd "$root" && realpath -m "${CARGO_TARGET_DIR:-target}")/registry"
mkdir -p "$out"
if ! command -v docker-registry >/dev/null; then
    if [[ "$(id -u)" == 0 ]]; then
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y -q --no-install-recommends docker-registry >&2 \
            || { apt-get update -q >&2 && apt-get install -y -q --no-install-recommends docker-registry >&2; }
    else
        echo "tests/registry/setup.sh: docker-registry is not installed and this is not root (apt-get install docker-registry)" >&2
        exit 1
    fi
fi
stamp="$( (cat "$0"; echo "$ORAS $CRYPTOGRAPHY") | sha256sum | cut -d' ' -f1)"
if [[ "$(cat "$out/stamp" 2>/dev/null)" != "$stamp" ]]; then
    [[ -x "$out/venv/bin/python" ]] || python3 -m venv "$out/venv"
    "$out/venv/bin/pip" install --quiet --disable-pip-version-check "oras==$ORAS" \
        "cryptography==$CRYPTOGRAPHY" >&2
    echo "$stamp" >"$out/stamp"
fi
echo "$out"
