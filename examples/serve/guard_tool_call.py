#!/usr/bin/env python3
"""Guard one tool call with `hookbox serve`, using only the standard library.

    hookbox serve --plugins target/demo/plugins &
    python3 examples/serve/guard_tool_call.py shell '{"command": "rm -rf ~/"}'

Prints the net flow and exits 0 when the call may run as asked, 1 when a
hook skipped, rewrote or stopped it (the flow says how), 2 on an error.
"""

import json
import os
import sys
import urllib.error
import urllib.request

BASE = os.environ.get("HOOKBOX_URL", "http://127.0.0.1:8787")


def call(method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        BASE + path, data=data, method=method, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            text = response.read().decode()
            return response.status, json.loads(text) if text else None
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read().decode() or "null")


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    tool, args = sys.argv[1], json.loads(sys.argv[2])
    status, run = call("POST", "/runs")
    if status != 201:
        print(f"cannot start a run: {status} {run}", file=sys.stderr)
        return 2
    run_id = run["run_id"]
    try:
        event = {"event": "tool-call", "tool_name": tool, "tool_call_id": "call-1", "args": args}
        status, flow = call("POST", f"/runs/{run_id}/events", event)
        if status != 200:
            print(f"hookbox refused the event: {status} {flow}", file=sys.stderr)
            return 2
        print(json.dumps(flow))
        return 0 if flow["flow"] == "continue" else 1
    finally:
        call("DELETE", f"/runs/{run_id}")


if __name__ == "__main__":
    sys.exit(main())
