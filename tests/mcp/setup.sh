#!/usr/bin/env bash
# Installs what `hookbox mcp` is tested against, pinned, into target/mcp:
# the MCP servers and the TypeScript SDK's client and server from npm (package.json,
# package-lock.json here) and the
# Python MCP SDK from PyPI (its client drives the proxy) with the reference
# server mcp-server-time, built on that SDK (both eras of MCP). Prints the
# directory. Run by the MCP tests themselves (and by CI); a second run with
# nothing changed returns at once.
set -euo pipefail

MCP_PY=2.3.0                     # PyPI `mcp`, the official Python SDK
MCP_SERVER_TIME=2026.10.19       # PyPI `mcp-server-time`: a reference server on the SDK 2.x, serving both eras

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="$(cd "$root" && realpath -m "${CARGO_TARGET_DIR:-target}")/mcp"
mkdir -p "$out"
stamp="$( (cat "$here/package.json" "$here/package-lock.json" "$0"; echo "$MCP_PY $MCP_SERVER_TIME") | sha256sum | cut -d' ' -f1)"
if [[ "$(cat "$out/stamp" 2>/dev/null)" == "$stamp" ]]; then
    echo "$out"
    exit 0
fi
command -v node >/dev/null && command -v npm >/dev/null \
    || { echo "tests/mcp/setup.sh: Node.js 20 or newer (node, npm) is needed for the MCP servers" >&2; exit 1; }
command -v python3 >/dev/null \
    || { echo "tests/mcp/setup.sh: Python 3.10 or newer is needed for the MCP client" >&2; exit 1; }
cp "$here/package.json" "$here/package-lock.json" "$out/"
(cd "$out" && npm ci --no-audit --no-fund --loglevel=error >&2)
[[ -x "$out/venv/bin/python" ]] || python3 -m venv "$out/venv"
"$out/venv/bin/pip" install --quiet --disable-pip-version-check "mcp==$MCP_PY" \
    "mcp-server-time==$MCP_SERVER_TIME" >&2
echo "$stamp" >"$out/stamp"
echo "$out"
