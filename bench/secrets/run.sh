#!/usr/bin/env bash
# redact-secrets against detect-secrets, credsweeper and secretlint
# (bench/secrets/README.md). Installs the three scanners (pinned: the
# requirements and package-lock here), fetches the benign body (pinned by
# sha256 in benign.txt), builds hookbox and redact-secrets, and runs
# compare.py, which prints the table and fails on a missed target.
# Arguments go to compare.py (--misses prints each difference).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
target="$(cd "$root" && realpath -m "${CARGO_TARGET_DIR:-target}")"
tools="$target/secrets-bench"
mkdir -p "$tools"

stamp="$(cat "$here/requirements.txt" "$here/package-lock.json" | sha256sum | cut -d' ' -f1)"
if [[ "$(cat "$tools/stamp" 2>/dev/null)" != "$stamp" ]]; then
    echo "installing detect-secrets, credsweeper and secretlint into $tools" >&2
    [[ -x "$tools/venv/bin/python" ]] || python3 -m venv "$tools/venv"
    "$tools/venv/bin/pip" install --quiet --disable-pip-version-check --no-deps \
        -r "$here/requirements.txt" >&2
    cp "$here/package.json" "$here/package-lock.json" "$here/.secretlintrc.json" "$tools/"
    (cd "$tools" && npm ci --silent --no-audit --no-fund >&2)
    echo "$stamp" >"$tools/stamp"
fi

benign="$tools/benign"
mkdir -p "$benign" "$tools/downloads"
grep -v '^#' "$here/benign.txt" | while read -r _ name version url sha256; do
    dir="$benign/${name//\//-}-$version"
    [[ -d "$dir" ]] && continue
    file="$tools/downloads/$(basename "$url")"
    curl -sSfL --retry 3 -o "$file" "$url"
    echo "$sha256  $file" | sha256sum -c --quiet - \
        || { echo "$url: not the sha256 benign.txt pins" >&2; exit 1; }
    mkdir -p "$dir.partial"
    tar -xzf "$file" -C "$dir.partial"
    mv "$dir.partial" "$dir"
done

(cd "$root" && cargo build --quiet -p hookbox-cli && cargo demo >/dev/null)

exec "$tools/venv/bin/python" "$here/compare.py" \
    --tools "$tools" --benign "$benign" \
    --hookbox "$target/debug/hookbox" --plugin "$target/demo/plugins/redact-secrets.wasm" "$@"
