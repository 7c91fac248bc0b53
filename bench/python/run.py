"""What a guard costs a Python agent per event (issue 33), all ways in one
process, interleaved round by round, medians:

- `python`: `run.tool_call(name, args)` of the `hookbox` package (a dict,
  and JSON text);
- `rust`: the same calls decided by Rust's own loop inside the extension,
  in this process (the binding's floor: what the Python call adds is the
  difference);
- `serve`: the same event posted to `hookbox serve` over one keep-alive
  HTTP connection (`http.client`);
- `plain`: a guard written in Python doing the same checks (deny-tools'
  default argument patterns; for the stack, path-jail's too).

A 1 KiB tool call, through one guard (deny-tools) and through the example
stack (deny-tools, path-jail, redact-secrets, inject-context: the last two
do not subscribe to tool calls, as in a real stack).

    target/python/venv/bin/python bench/python/run.py [ROUNDS] [CALLS]

needs the wheel (host/python/tests/setup.sh, release profile for real
figures), the guests (`cargo run -p xtask -- guests target/python/guests`)
and a `hookbox` binary (`cargo build --release -p hookbox-cli`; or
$HOOKBOX_BIN).
"""

from __future__ import annotations

import fnmatch
import http.client
import json
import os
import pathlib
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import hookbox

ROOT = pathlib.Path(__file__).resolve().parents[2]
GUESTS = pathlib.Path(os.environ.get("HOOKBOX_GUESTS", ROOT / "target/python/guests"))
BIN = os.environ.get("HOOKBOX_BIN", str(ROOT / "target/release/hookbox"))
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 15
CALLS = int(sys.argv[2]) if len(sys.argv) > 2 else 400

WORKSPACE = "/srv/work"
ARGS = {"path": f"{WORKSPACE}/notes/today.md", "content": "a line of notes, nothing to see. " * 31}
ARGS_TEXT = json.dumps(ARGS, separators=(",", ":"))
assert 1000 <= len(ARGS_TEXT) <= 1100, len(ARGS_TEXT)

STACKS = {
    "one guard": ["deny-tools"],
    "example stack": ["deny-tools", "path-jail", "redact-secrets", "inject-context"],
}
DENY_ARGS = ["*rm -rf*", "*rm -fr*", "*mkfs*", "*dd if=*", "*| sh*", "*| bash*", "*.ssh/*", "*/etc/shadow*"]


def plain_guard(jail: bool):
    """deny-tools' default argument patterns (and path-jail's check) in
    Python: what a user would write instead."""

    def guard(name: str, args: dict) -> tuple[str, dict]:
        text = json.dumps(args, separators=(",", ":"))
        if any(fnmatch.fnmatchcase(text, p) for p in DENY_ARGS):
            return "skip", args
        if jail and isinstance(args.get("path"), str):
            path = os.path.normpath(os.path.join(WORKSPACE, args["path"].lstrip("/")))
            if not args["path"].startswith(WORKSPACE + "/"):
                return "run", {**args, "path": path}
        return "run", args

    return guard


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(plugins: list[str], directory: pathlib.Path) -> tuple[subprocess.Popen, http.client.HTTPConnection, str]:
    manifest = ""
    for name in plugins:
        shutil.copy(GUESTS / f"{name}.wasm", directory / f"{name}.wasm")
        manifest += f'[[plugin]]\nfile = "{name}.wasm"\n'
        if name == "path-jail":
            manifest += f'config = {{ root = "{WORKSPACE}" }}\n'
    (directory / "hookbox.toml").write_text(manifest)
    port = free_port()
    server = subprocess.Popen([BIN, "serve", "--plugins", str(directory), "--listen", f"127.0.0.1:{port}"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while True:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            conn.request("POST", "/runs", body="{}", headers={"Content-Type": "application/json"})
            run_id = json.loads(conn.getresponse().read())["run_id"]
            return server, conn, run_id
        except (ConnectionRefusedError, OSError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def main() -> None:
    scratch = pathlib.Path(tempfile.mkdtemp(prefix="hookbox-bench-python-"))
    rows = []
    for label, plugins in STACKS.items():
        config = {"path-jail": {"root": WORKSPACE}} if "path-jail" in plugins else {}
        stack = hookbox.Stack.from_files([GUESTS / f"{p}.wasm" for p in plugins], config=config)
        run = stack.start_run()
        native = run._native
        directory = scratch / label.replace(" ", "-")
        directory.mkdir()
        server, conn, run_id = serve(plugins, directory)
        event = json.dumps({"event": "tool-call", "tool_name": "write_file", "args": ARGS_TEXT})
        guard = plain_guard("path-jail" in plugins)
        assert run.tool_call("write_file", ARGS).kind == "run"

        def python_dict() -> float:
            started = time.perf_counter()
            for _ in range(CALLS):
                run.tool_call("write_file", ARGS)
            return time.perf_counter() - started

        def python_text() -> float:
            started = time.perf_counter()
            for _ in range(CALLS):
                run.tool_call("write_file", ARGS_TEXT)
            return time.perf_counter() - started

        def rust() -> float:
            return native._time_tool_calls("write_file", ARGS_TEXT, CALLS)

        def over_serve() -> float:
            started = time.perf_counter()
            for _ in range(CALLS):
                conn.request("POST", f"/runs/{run_id}/events", body=event,
                             headers={"Content-Type": "application/json"})
                answer = conn.getresponse().read()
            assert b'"flow"' in answer, answer
            return time.perf_counter() - started

        def plain() -> float:
            started = time.perf_counter()
            for _ in range(CALLS):
                guard("write_file", ARGS)
            return time.perf_counter() - started

        ways = {"python (dict)": python_dict, "python (JSON text)": python_text, "rust in-process": rust,
                "serve (keep-alive HTTP)": over_serve, "plain-Python guard": plain}
        times: dict[str, list[float]] = {w: [] for w in ways}
        for _ in range(ROUNDS):
            for way, measure in ways.items():
                times[way].append(measure() / CALLS)
        server.terminate()
        server.wait()
        medians = {w: statistics.median(t) for w, t in times.items()}
        rows.append((label, medians))
    print(f"per 1 KiB tool call, median of {ROUNDS} rounds of {CALLS} calls, one process:")
    for label, medians in rows:
        base = medians["rust in-process"]
        print(f"\n{label}:")
        for way, seconds in medians.items():
            extra = f"  (+{(seconds - base) * 1e6:.2f} µs over Rust, {seconds / base:.2f}x)" if way != "rust in-process" else ""
            print(f"  {way:26s} {seconds * 1e6:8.2f} µs{extra}")


if __name__ == "__main__":
    main()
