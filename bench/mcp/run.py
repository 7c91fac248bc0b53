#!/usr/bin/env python3
"""What `hookbox mcp` adds to a tools/call: the same calls through the proxy
(a stack of 4 example guards) and straight to the server, interleaved in
one run so the ratios hold on a noisy machine; and the proxy's resident
memory for its session.

    cargo build --release -p hookbox-cli && cargo xtask plugins target/bench-hooks/plugins
    tests/mcp/setup.sh
    target/mcp/venv/bin/python bench/mcp/run.py [CALLS]

The server is the reference `@modelcontextprotocol/server-everything`; the
call is its `echo` with a 1 KiB message, which every guard lets through, so
the whole stack runs on the call and on its result. The client is the
official Python SDK's. Prints median and p99 per call in ms, the difference
of medians (the proxy's cost), and the proxy's RSS after the calls."""
import os
import statistics
import sys
import time

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
HOOKBOX = os.path.join(ROOT, "target", "release", "hookbox")
PLUGINS = os.path.join(ROOT, "target", "bench-mcp", "plugins")
SERVER = os.path.join(ROOT, "target", "mcp", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
CALLS = int(sys.argv[1]) if len(sys.argv) > 1 else 500
MESSAGE = "x" * 1024


def plugin_dir():
    """The four guards the agents' benchmark uses, from the built examples."""
    os.makedirs(PLUGINS, exist_ok=True)
    source = os.path.join(ROOT, "target", "bench-hooks", "plugins")
    for name in ["deny-tools", "path-jail", "redact-secrets", "repair-tools"]:
        with open(os.path.join(source, f"{name}.wasm"), "rb") as f, open(os.path.join(PLUGINS, f"{name}.wasm"), "wb") as g:
            g.write(f.read())
    return PLUGINS


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def hookbox_pid():
    """The proxy's process (a child of this one)."""
    me = os.getpid()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().split(b"\0")
        except OSError:
            continue
        if int(fields[1]) == me and cmd and cmd[0].endswith(b"hookbox"):
            return int(pid)
    return None


async def main():
    plugins = plugin_dir()
    direct = StdioServerParameters(command="node", args=[SERVER, "stdio"])
    proxied = StdioServerParameters(command=HOOKBOX, args=["mcp", "--plugins", plugins, "--", "node", SERVER, "stdio"],
                                    env={**os.environ, "HOOKBOX_CACHE_DIR": os.path.join(ROOT, "target", "bench-mcp", "cache")})
    times = {"direct": [], "hookbox mcp": []}
    async with stdio_client(direct) as (r1, w1), ClientSession(r1, w1) as plain, \
            stdio_client(proxied) as (r2, w2), ClientSession(r2, w2) as guarded:
        await plain.initialize()
        await guarded.initialize()
        sessions = {"direct": plain, "hookbox mcp": guarded}
        for _ in range(20):  # warm both
            for s in sessions.values():
                await s.call_tool("echo", {"message": MESSAGE})
        for _ in range(CALLS):
            for name, s in sessions.items():
                start = time.perf_counter()
                result = await s.call_tool("echo", {"message": MESSAGE})
                times[name].append((time.perf_counter() - start) * 1e3)
                assert not result.is_error, result
        pid = hookbox_pid()
        rss = rss_kib(pid) if pid else 0
    print(f"{CALLS} calls of `echo` (1 KiB), through 4 guards vs straight to server-everything")
    medians = {}
    for name, samples in times.items():
        samples.sort()
        medians[name] = statistics.median(samples)
        p99 = samples[int(len(samples) * 0.99) - 1]
        print(f"  {name:12} median {medians[name]:.3f} ms   p99 {p99:.3f} ms")
    print(f"  added by the proxy: {medians['hookbox mcp'] - medians['direct']:.3f} ms per call (median), "
          f"{medians['hookbox mcp'] / medians['direct']:.2f}x")
    print(f"  proxy resident memory for the session: {rss / 1024:.1f} MiB")


anyio.run(main)
