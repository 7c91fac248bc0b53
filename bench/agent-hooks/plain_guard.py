#!/usr/bin/env python3
"""The baseline: a command hook as people write them today, in plain Python.
It does what deny-tools does by default for every agent's tool call: deny
when the arguments match one of eight destructive patterns (here as
substrings, CPython's `in`), else no opinion. It reads a Claude-style input
(tool_input) and answers Claude Code's deny JSON; the other agents' shapes
differ only in field names, which cost nothing."""
import json
import sys

PATTERNS = ["rm -rf", "rm -fr", "mkfs", "dd if=", "| sh", "| bash", ".ssh/", "/etc/shadow"]

hook = json.load(sys.stdin)
args = json.dumps(hook.get("tool_input") or {})
for pattern in PATTERNS:
    if pattern in args:
        print(json.dumps({"hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": f"denied: arguments match {pattern!r}",
        }}))
        break
