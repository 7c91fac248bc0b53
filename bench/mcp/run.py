#!/usr/bin/env python3
"""What `hookbox mcp` adds to a tools/call: the same calls through the proxy
(a stack of 4 example guards) and straight to the server, interleaved in
one run so the ratios hold on a noisy machine; and the proxy's resident
memory for its session.

    cargo build --release -p hookbox-cli && cargo xtask plugins target/bench-hooks/plugins
    tests/mcp/setup.sh
    target/mcp/venv/bin/python bench/mcp/run.py [CALLS]

Two servers, each straight and through the proxy:
- the npm reference `@modelcontextprotocol/server-everything` and its `echo`
  with a 1 KiB message, from the SDK's handshake-era `ClientSession`;
- the PyPI reference `mcp-server-time` (both eras) and its
  `get_current_time`, from the SDK's `Client` in each era: `legacy` and
  pinned to 2026-07-28: through the proxy that session is bridged (the
  server initialized on the client's behalf, requests and results
  translated), and with `--server-revision 2026-07-28` passed through.
Every guard lets the calls through, so the whole stack runs on each call
and its result. Prints median and p99 per call in ms and, per pair, the
difference of medians (the proxy's cost) and the ratio."""
import os
import statistics
import sys
import time
from contextlib import AsyncExitStack

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
HOOKBOX = os.path.join(ROOT, "target", "release", "hookbox")
PLUGINS = os.path.join(ROOT, "target", "bench-mcp", "plugins")
SERVER = os.path.join(ROOT, "target", "mcp", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
TIME_SERVER = os.path.join(ROOT, "target", "mcp", "venv", "bin", "mcp-server-time")
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


def proxied(command, args, plugins, flags=()):
    return StdioServerParameters(command=HOOKBOX, args=["mcp", "--plugins", plugins, *flags, "--", command, *args],
                                 env={**os.environ, "HOOKBOX_CACHE_DIR": os.path.join(ROOT, "target", "bench-mcp", "cache")})


async def main():
    from mcp import Client

    plugins = plugin_dir()
    everything = StdioServerParameters(command="node", args=[SERVER, "stdio"])
    time_server = StdioServerParameters(command=TIME_SERVER, args=[])
    times = {}
    echo = ("echo", {"message": MESSAGE})
    clock = ("get_current_time", {"timezone": "UTC"})
    async with AsyncExitStack() as stack:
        sessions = {}
        for name, server in [("everything, handshake", everything),
                             ("everything, handshake, hookbox mcp", proxied("node", [SERVER, "stdio"], plugins))]:
            r, w = await stack.enter_async_context(stdio_client(server))
            session = await stack.enter_async_context(ClientSession(r, w))
            await session.initialize()
            sessions[name] = (session, echo)
        passed = proxied(TIME_SERVER, [], plugins, ["--server-revision", "2026-07-28"])
        for era in ["legacy", "2026-07-28"]:
            pairs = [("", time_server), (", hookbox mcp", proxied(TIME_SERVER, [], plugins))]
            if era != "legacy":
                pairs.append((" passed through, hookbox mcp", passed))
            for suffix, server in pairs:
                client = await stack.enter_async_context(Client(server, mode=era))
                sessions[f"time, {era}{suffix}"] = (client, clock)
        for _ in range(20):  # warm all
            for s, (tool, args) in sessions.values():
                await s.call_tool(tool, args)
        for name in sessions:
            times[name] = []
        for _ in range(CALLS):
            for name, (s, (tool, args)) in sessions.items():
                start = time.perf_counter()
                result = await s.call_tool(tool, args)
                times[name].append((time.perf_counter() - start) * 1e3)
                assert not result.is_error, result
        pid = hookbox_pid()
        rss = rss_kib(pid) if pid else 0
    print(f"{CALLS} calls each, through 4 guards vs straight to the server")
    medians = {}
    for name, samples in times.items():
        samples.sort()
        medians[name] = statistics.median(samples)
        p99 = samples[int(len(samples) * 0.99) - 1]
        print(f"  {name:56} median {medians[name]:.3f} ms   p99 {p99:.3f} ms")
    for name in times:
        if name.endswith(", hookbox mcp"):
            base = name.removesuffix(", hookbox mcp").removesuffix(" passed through")
            print(f"  added by the proxy ({name.removesuffix(', hookbox mcp')}): {medians[name] - medians[base]:.3f} ms per call (median), "
                  f"{medians[name] / medians[base]:.2f}x")
    print(f"  a proxy's resident memory for its session: {rss / 1024:.1f} MiB")


anyio.run(main)
