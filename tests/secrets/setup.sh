#!/usr/bin/env bash
# Installs the independent secret scanner redact-secrets is tested against,
# pinned, into target/secrets: Yelp's detect-secrets from PyPI
# (requirements.txt here pins it and every package it pulls in). Prints the
# directory. Run by the tests themselves (and by CI); a second run with
# nothing changed returns at once.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="$(cd "$root" && realpath -m "${CARGO_TARGET_DIR:-target}")/secrets"
mkdir -p "$out"
stamp="$(cat "$here/requirements.txt" "$0" | sha256sum | cut -d' ' -f1)"
if [[ "$(cat "$out/stamp" 2>/dev/null)" == "$stamp" ]]; then
    echo "$out"
    exit 0
fi
command -v python3 >/dev/null \
    || { echo "tests/secrets/setup.sh: Python 3.9 or newer is needed for detect-secrets" >&2; exit 1; }
[[ -x "$out/venv/bin/python" ]] || python3 -m venv "$out/venv"
"$out/venv/bin/pip" install --quiet --disable-pip-version-check --no-deps \
    -r "$here/requirements.txt" >&2
echo "$stamp" >"$out/stamp"
echo "$out"
