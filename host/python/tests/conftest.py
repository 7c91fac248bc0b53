"""The guests the tests run: the example plugins and the test guests
(`puppet`: misbehaves on command), copied by `cargo xtask guests DIR` into
`$HOOKBOX_GUESTS` (default `target/python/guests`)."""

from __future__ import annotations

import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
GUESTS = pathlib.Path(os.environ.get("HOOKBOX_GUESTS", ROOT / "target/python/guests"))

# No network: no tracing exporters, no provider keys.
os.environ["OPENAI_AGENTS_DISABLE_TRACING"] = "1"
for key in ("OPENAI_API_KEY", "LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGSMITH_API_KEY"):
    os.environ.pop(key, None)


def guest(name: str) -> str:
    path = GUESTS / f"{name}.wasm"
    if not path.is_file():
        pytest.fail(f"{path} is missing: run `cargo run -p xtask -- guests {GUESTS}` first")
    return str(path)


@pytest.fixture
def examples(tmp_path: pathlib.Path) -> list[str]:
    """The example stack a user installs first: deny-tools, path-jail
    (jailed to `tmp_path`), redact-secrets, inject-context, and a puppet
    that misbehaves when a tool or prompt tells it to."""
    return [guest("deny-tools"), guest("path-jail"), guest("redact-secrets"),
            guest("inject-context"), guest("puppet")]


@pytest.fixture
def stack(examples: list[str], tmp_path: pathlib.Path):
    import hookbox

    return hookbox.Stack.from_files(examples, config={"path-jail": {"root": str(tmp_path)}})
