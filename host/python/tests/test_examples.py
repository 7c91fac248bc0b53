"""The examples the README points at run as written."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import GUESTS, ROOT


@pytest.mark.parametrize("example", ["openai_agents_guarded.py", "langchain_guarded.py"])
def test_the_example_runs_and_its_guards_hold(example):
    out = subprocess.run(
        [sys.executable, str(ROOT / "host/python/examples" / example), str(GUESTS)],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout
    assert "shell 'rm -rf /'" not in out, out
    assert "denied by policy" in out
    assert "/etc/motd'" in out and "hookbox-example-" in out
    assert "AWS_SECRET_ACCESS_KEY=[REDACTED]" in out and "wJalrXUtnFEMI" not in out
    assert "final answer: done" in out
