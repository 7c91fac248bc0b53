#!/usr/bin/env bash
# Builds the `hookbox` npm package and installs it as users get it: the
# native module built by @napi-rs/cli (pinned in ../package-lock.json), the
# package packed (`npm pack`) and installed from the tarball into a fresh
# folder, target/node/app, next to the frameworks the tests run
# (package.json here: the AI SDK, the OpenAI Agents SDK, zod, pinned), with
# the tests copied in. Prints that folder; run the tests with
# `node --test <folder>`.
#
# `HOOKBOX_NODE_PROFILE` picks the cargo profile (CI: `dev`, whose
# dependencies are already built for the tests, at opt-level 2; default:
# `release`). `HOOKBOX_NODE_FEATURES` adds cargo features (CI:
# `workspace-hack`, so the tests' dependencies are reused as they are).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
crate="$(cd "$here/.." && pwd)"
root="$(cd "$crate/../.." && pwd)"
out="$(cd "$root" && realpath -m "${CARGO_TARGET_DIR:-target}")/node"
profile="${HOOKBOX_NODE_PROFILE:-release}"
command -v npm >/dev/null \
    || { echo "host/node/tests/setup.sh: Node.js 20 or newer (with npm) is needed" >&2; exit 1; }
mkdir -p "$out"

cd "$crate"
npm ci --no-audit --no-fund --loglevel=error >&2
build=(npx napi build --platform --output-dir native --js index.cjs --dts index.d.ts)
[[ -z "${HOOKBOX_NODE_FEATURES:-}" ]] || build+=(--features "$HOOKBOX_NODE_FEATURES")
case "$profile" in
    release) build+=(--release) ;;
    dev) ;;
    *) build+=(--profile "$profile") ;;
esac
"${build[@]}" >&2
rm -f "$out"/hookbox-*.tgz
npm pack --silent --pack-destination "$out" >&2

rm -rf "$out/app"
mkdir -p "$out/app"
cp "$here/package.json" "$here/package-lock.json" "$here"/*.test.mjs "$here"/support.mjs "$here"/types-check.ts "$out/app/"
cp -r "$crate/examples" "$out/app/examples"
(cd "$out/app" && npm ci --no-audit --no-fund --loglevel=error >&2 \
    && npm install --no-save --no-audit --no-fund --loglevel=error "$out"/hookbox-*.tgz >&2)
echo "$out/app"
