#!/usr/bin/env bash
# Installs the OpenCode that hookbox's OpenCode plugin is tested in, pinned
# (package.json, package-lock.json here), into target/opencode, and prints
# the path of its `opencode` binary. Run by the OpenCode tests themselves
# (and by CI); a second run with nothing changed returns at once.
#
# The pins are opencode-ai's Linux x64 builds, the packages its own
# install script copies a binary from (npm does not lock the other
# platforms' for a package's optional dependencies): opencode-linux-x64
# where the CPU has AVX2, its baseline build where not. Elsewhere this
# fails, and the OpenCode tests are skipped unless required.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="$(cd "$root" && realpath -m "${CARGO_TARGET_DIR:-target}")/opencode"
mkdir -p "$out"
stamp="$(cat "$here/package.json" "$here/package-lock.json" "$0" | sha256sum | cut -d' ' -f1)"
if [[ "$(cat "$out/stamp" 2>/dev/null)" != "$stamp" ]]; then
    command -v npm >/dev/null \
        || { echo "tests/opencode/setup.sh: npm (Node.js) is needed to install OpenCode" >&2; exit 1; }
    cp "$here/package.json" "$here/package-lock.json" "$out/"
    (cd "$out" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error >&2)
    echo "$stamp" >"$out/stamp"
fi
[[ "$(uname -s)-$(uname -m)" == Linux-x86_64 ]] \
    || { echo "tests/opencode/setup.sh: the pinned OpenCode is its Linux x64 build" >&2; exit 1; }
build=opencode-linux-x64
grep -qw avx2 /proc/cpuinfo || build=opencode-linux-x64-baseline
binary="$out/node_modules/$build/bin/opencode"
[[ -x "$binary" ]] || { echo "tests/opencode/setup.sh: $binary is missing after npm ci" >&2; exit 1; }
echo "$binary"
