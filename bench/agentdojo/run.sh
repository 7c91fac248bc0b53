#!/usr/bin/env bash
# hookbox on AgentDojo, from a clean checkout, in one command:
#
#   bench/agentdojo/run.sh                  # every suite, undefended then guarded
#   bench/agentdojo/run.sh --suite banking  # run.py's options, passed to both runs
#
# Builds what is not there yet: a venv with AgentDojo and what it imports,
# pinned (target/agentdojo/venv, its own: host/python/tests pins other
# versions of the same frameworks); hookbox's wheel (host/python/tests/
# setup.sh, release unless HOOKBOX_WHEEL_PROFILE says otherwise; a wheel
# already in target/python/wheels is used as it is); the guards
# (target/agentdojo/plugins). Then runs the scripted worst-case model
# undefended, and guarded by the provenance guard with roles/<suite>.toml.
# Writes target/agentdojo/{undefended,guarded,floor}.json (floor: a guest
# that does nothing, asked the same events).
#
# HOOKBOX_AGENTDOJO_CHECK=1 (CI) runs the guarded run only, and fails
# unless it is what README.md reports (check.py).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="$root/target/agentdojo"
venv="$out/venv"
mkdir -p "$out"

if [[ ! -x "$venv/bin/python" ]]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt"
fi
wheels=("$root"/target/python/wheels/hookbox-*.whl)
if [[ ! -f "${wheels[0]}" ]]; then
    HOOKBOX_WHEEL_PROFILE="${HOOKBOX_WHEEL_PROFILE:-release}" "$root/host/python/tests/setup.sh" >/dev/null
    wheels=("$root"/target/python/wheels/hookbox-*.whl)
fi
"$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps --force-reinstall "${wheels[0]}"
# The example guards as `hookbox build` ships them (pre-initialised).
guests="$out/plugins"
if [[ ! -f "$guests/provenance.wasm" ]]; then
    (cd "$root" && cargo run --quiet -p xtask -- plugins "$guests" >/dev/null)
fi

cd "$here"
guarded=(--guard "$guests/provenance.wasm" --roles roles)
if [[ "${HOOKBOX_AGENTDOJO_CHECK:-}" == 1 ]]; then
    "$venv/bin/python" run.py "$@" "${guarded[@]}" --out "$out/guarded.json"
    "$venv/bin/python" check.py "$out/guarded.json"
else
    echo "== undefended"
    "$venv/bin/python" run.py "$@" --out "$out/undefended.json"
    echo "== guarded: provenance, with roles/<suite>.toml"
    "$venv/bin/python" run.py "$@" "${guarded[@]}" --out "$out/guarded.json"
    # What any guest costs here: the tests' puppet, which answers continue
    # to all of it, asked the same events (its "guards per event" is the
    # floor the guard's own figure stands on).
    floor="$out/guests/puppet.wasm"
    if [[ ! -f "$floor" ]]; then
        (cd "$root" && cargo run --quiet -p xtask -- guests "$out/guests" >/dev/null)
    fi
    echo "== a guest that does nothing (the tests' puppet), for the floor of the per-event time"
    "$venv/bin/python" run.py "$@" --guard "$floor" --out "$out/floor.json"
fi
