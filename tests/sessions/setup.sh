#!/usr/bin/env bash
# Installs what the shared-session tests (host/cli/tests/shared_sessions.rs)
# run against: Debian's `redis-server` (7.0) and `haproxy` (2.6), by
# apt-get (as root; a machine without them and without root skips the
# tests unless HOOKBOX_SESSIONS=required). The tests start their own
# servers on free loopback ports; a service the packages start is not used.
#
# A second run with both installed returns at once.
set -euo pipefail

missing=()
command -v redis-server >/dev/null || missing+=(redis-server)
command -v haproxy >/dev/null || missing+=(haproxy)
[[ ${#missing[@]} == 0 ]] && exit 0
if [[ "$(id -u)" != 0 ]]; then
    echo "tests/sessions/setup.sh: ${missing[*]} not installed and this is not root (apt-get install ${missing[*]})" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -q --no-install-recommends "${missing[@]}" >&2 \
    || { apt-get update -q >&2 && apt-get install -y -q --no-install-recommends "${missing[@]}" >&2; }
