#!/usr/bin/env python3
"""Command-hook latency per call, process start included, for each agent's
`hookbox hook AGENT` against a plain Python hook doing the same check
(plain_guard.py), interleaved in one run so the ratios hold on a noisy
machine.

    cargo build --release -p hookbox-cli && cargo xtask plugins target/bench-hooks/plugins
    python3 bench/agent-hooks/run.py [CALLS]

Each contestant gets a PreToolUse-like tool call from its agent's
documented input shape (a `ls` that every guard lets through, so the whole
stack runs), through a directory of the example plugins with the compile cache
warm and session state on: four example guards (deny-tools, path-jail,
redact-secrets, repair-tools). Prints median and p99 in ms and the ratio of
medians to the Python hook and to `cat` reading the same input (issue 20's
target 4: a bare process start). `hookbox --version` is there too: the
binary's own start, with no plugin asked. So is Claude Code's other way
in, an HTTP hook to `hookbox serve` on the same directory (started once,
beside the run): a new connection and a POST per call, timed from here,
no process started.

    python3 bench/agent-hooks/run.py [CALLS] [AGENT ...]

runs only the agents named (all by default)."""
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
HOOKBOX = os.path.join(ROOT, "target", "release", "hookbox")
PLUGINS = os.path.join(ROOT, "target", "bench-hooks", "plugins")
CALLS = int(sys.argv[1]) if len(sys.argv) > 1 else 200
AGENTS = sys.argv[2:]

command = {"command": "ls -la src", "description": "List sources"}
INPUTS = {
    "claude-code": {"session_id": "s1", "transcript_path": "/tmp/t.jsonl", "cwd": "/work", "permission_mode": "default",
                    "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": command, "tool_use_id": "toolu_1"},
    "codex": {"session_id": "s1", "turn_id": "turn-1", "transcript_path": None, "cwd": "/work", "hook_event_name": "PreToolUse",
              "model": "gpt-5-codex", "permission_mode": "default", "tool_name": "Bash", "tool_input": command, "tool_use_id": "call-1"},
    "gemini": {"session_id": "s1", "transcript_path": "/tmp/s.json", "cwd": "/work", "hook_event_name": "BeforeTool",
               "timestamp": "2026-11-30T12:00:00.000Z", "tool_name": "run_shell_command", "tool_input": command},
    "cursor": {"conversation_id": "c1", "generation_id": "g1", "hook_event_name": "preToolUse", "workspace_roots": ["/work"],
               "tool_name": "Shell", "tool_input": command, "tool_use_id": "t1", "cwd": "/work"},
    "copilot": {"sessionId": "s1", "timestamp": 1704614600000, "cwd": "/work", "toolName": "bash", "toolArgs": json.dumps(command)},
    "cline": {"clineVersion": "3.38.0", "hookName": "PreToolUse", "taskId": "t1", "workspaceRoots": ["/work"],
              "preToolUse": {"toolName": "execute_command", "parameters": command}},
}


def main():
    if not os.path.exists(HOOKBOX) or not os.path.isdir(PLUGINS):
        sys.exit("build first: cargo build --release -p hookbox-cli && cargo xtask plugins target/bench-hooks/plugins")
    scratch = tempfile.mkdtemp(prefix="hookbox-bench-hooks-")
    # The guards a user would put on every tool call: four of the examples.
    plugins = os.path.join(scratch, "plugins")
    os.makedirs(plugins)
    manifest = []
    for name in ["deny-tools", "path-jail", "redact-secrets", "repair-tools"]:
        with open(os.path.join(PLUGINS, f"{name}.wasm"), "rb") as src, open(os.path.join(plugins, f"{name}.wasm"), "wb") as dst:
            dst.write(src.read())
        manifest.append(f'[[plugin]]\nfile = "{name}.wasm"\n')
    with open(os.path.join(plugins, "hookbox.toml"), "w") as f:
        f.write("\n".join(manifest))
    env = dict(os.environ, HOOKBOX_CACHE_DIR=os.path.join(scratch, "cache"), HOOKBOX_STATE_DIR=os.path.join(scratch, "state"))
    claude = json.dumps(INPUTS["claude-code"]).encode()
    contestants = {"cat": (["cat"], claude),
                   "version": ([HOOKBOX, "--version"], b""),
                   "python": ([sys.executable, os.path.join(os.path.dirname(__file__), "plain_guard.py")], claude)}
    unknown = [a for a in AGENTS if a not in INPUTS]
    if unknown:
        sys.exit(f"no such agent: {', '.join(unknown)}; try {', '.join(INPUTS)}")
    for agent, hook in INPUTS.items():
        if AGENTS and agent not in AGENTS:
            continue
        contestants[agent] = ([HOOKBOX, "hook", agent, "--plugins", plugins], json.dumps(hook).encode())
    for argv, stdin in contestants.values():  # warm the compile cache and the page cache
        subprocess.run(argv, input=stdin, env=env, capture_output=True, check=False)
    times = {name: [] for name in contestants}
    for _ in range(CALLS):
        for name, (argv, stdin) in contestants.items():
            started = time.perf_counter()
            done = subprocess.run(argv, input=stdin, env=env, capture_output=True, check=False)
            times[name].append((time.perf_counter() - started) * 1e3)
            if done.returncode != 0:
                sys.exit(f"{name} exited {done.returncode}: {done.stderr.decode()}")
    server, port = start_serve(plugins, env)
    try:
        times["http"] = []
        for _ in range(CALLS):
            started = time.perf_counter()
            answer = http_hook(port, claude)
            times["http"].append((time.perf_counter() - started) * 1e3)
            if answer.get("hookSpecificOutput", {}).get("permissionDecision") == "deny":
                sys.exit(f"the HTTP hook denied the call: {answer}")
    finally:
        server.terminate()
        server.wait()
    base = statistics.median(times["python"])
    cat = statistics.median(times["cat"])
    print(f"{CALLS} calls each, interleaved; ms per call, process start included")
    print("| hook | median | p99 | median vs plain Python | median vs `cat` |")
    print("|---|---|---|---|---|")
    for name, samples in times.items():
        samples.sort()
        p99 = samples[min(len(samples) - 1, int(len(samples) * 0.99))]
        median = statistics.median(samples)
        label = {"python": "plain Python (8 substring checks)", "cat": "`cat` (reads the input)",
                 "version": "`hookbox --version` (the binary's start)",
                 "http": "Claude Code's HTTP hook to `hookbox serve` (no process start)"}.get(name, f"`hookbox hook {name}`")
        print(f"| {label} | {median:.2f} | {p99:.2f} | {median / base:.2f}× | {median / cat:.2f}× |")


def start_serve(plugins, env):
    """`hookbox serve` on `plugins` on a free loopback port, once healthy."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([HOOKBOX, "serve", "--plugins", plugins, "--listen", f"127.0.0.1:{port}"],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
            connection.request("GET", "/healthz")
            if connection.getresponse().status == 200:
                return server, port
        except OSError:
            time.sleep(0.05)
    server.kill()
    sys.exit("hookbox serve did not start")


def http_hook(port, body):
    """One Claude Code HTTP hook call: its own connection, as the agent makes it."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    connection.request("POST", "/claude-code/hook", body, {"Content-Type": "application/json"})
    response = connection.getresponse()
    answer = response.read()
    connection.close()
    if response.status != 200:
        sys.exit(f"the HTTP hook answered {response.status}: {answer!r}")
    return json.loads(answer) if answer.strip() else {}


if __name__ == "__main__":
    main()
