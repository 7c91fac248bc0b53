#!/usr/bin/env bash
# Builds the `hookbox` Python package and installs it, with what its tests
# run (tests/requirements.txt: maturin, pytest, the OpenAI Agents SDK,
# LangChain, pinned), into a fresh venv, target/python/venv. Prints the
# venv's python.
#
# The wheel is built as users get it (`maturin build`: a manylinux, abi3
# wheel for CPython 3.10 and later) and installed from the file, not from
# the tree. `HOOKBOX_WHEEL_PROFILE` picks the cargo profile (CI: `dev`,
# whose dependencies are already built for the tests, at opt-level 2;
# default: `release`). `HOOKBOX_WHEEL_FEATURES` adds cargo features (CI:
# `workspace-hack`, so the tests' dependencies are reused as they are).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
crate="$(cd "$here/.." && pwd)"
root="$(cd "$crate/../.." && pwd)"
out="$(cd "$root" && realpath -m "${CARGO_TARGET_DIR:-target}")/python"
profile="${HOOKBOX_WHEEL_PROFILE:-release}"
features=()
[[ -z "${HOOKBOX_WHEEL_FEATURES:-}" ]] || features=(--features "$HOOKBOX_WHEEL_FEATURES")
mkdir -p "$out"
command -v python3 >/dev/null \
    || { echo "host/python/tests/setup.sh: Python 3.10 or newer is needed" >&2; exit 1; }
# The build's own venv (maturin), then the fresh one the wheel goes into.
[[ -x "$out/build/bin/python" ]] || python3 -m venv "$out/build"
"$out/build/bin/pip" install --quiet --disable-pip-version-check \
    "$(grep '^maturin==' "$here/requirements.txt")" >&2
rm -rf "$out/wheels"
# For the host without naming it, as `cargo test` builds: with the same
# features (HOOKBOX_WHEEL_FEATURES=workspace-hack), the tests' dependencies
# are reused as they are.
(cd "$crate" && "$out/build/bin/maturin" build --quiet --profile "$profile" "${features[@]}" \
    --interpreter python3 --out "$out/wheels" >&2)
rm -rf "$out/venv"
python3 -m venv "$out/venv"
"$out/venv/bin/pip" install --quiet --disable-pip-version-check \
    -r "$here/requirements.txt" "$out"/wheels/hookbox-*.whl >&2
echo "$out/venv/bin/python"
