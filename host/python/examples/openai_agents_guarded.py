"""An OpenAI Agents SDK agent guarded by hookbox's example plugins, on the
SDK's own scripted model (no network, no API key).

    python host/python/examples/openai_agents_guarded.py [PLUGIN_DIR]

PLUGIN_DIR holds deny-tools.wasm, path-jail.wasm and redact-secrets.wasm
(default: target/python/guests, which `cargo run -p xtask -- guests
target/python/guests` fills). The model asks for a destructive command, a
write outside the workspace and a file holding a key: the first never runs,
the second is jailed, and the key never reaches the model.
"""

import asyncio
import os
import pathlib
import sys
import tempfile

os.environ["OPENAI_AGENTS_DISABLE_TRACING"] = "1"

import hookbox
from agents import Agent, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call
from hookbox.openai_agents import Guard

plugins = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "target/python/guests")
workspace = tempfile.mkdtemp(prefix="hookbox-example-")


@function_tool
def shell(command: str) -> str:
    """Run a shell command."""
    print(f"  tool ran: shell {command!r}")
    return "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


@function_tool
def write_file(path: str, text: str) -> str:
    """Write a file."""
    print(f"  tool ran: write_file {path!r}")
    return f"wrote {path}"


model = ScriptedModel([
    [function_call("shell", {"command": "rm -rf /"}, call_id="c1"),
     function_call("write_file", {"path": "/etc/motd", "text": "hi"}, call_id="c2"),
     function_call("shell", {"command": "cat .env"}, call_id="c3")],
    [assistant_message("done")],
])
agent = Agent(name="tidier", instructions="You tidy projects.", model=model, tools=[shell, write_file])
stack = hookbox.Stack.from_files(
    [plugins / "deny-tools.wasm", plugins / "path-jail.wasm", plugins / "redact-secrets.wasm"],
    config={"path-jail": {"root": workspace}},
)
result = asyncio.run(Guard(stack).run(agent, "Tidy up this project"))
print("the model read:")
for item in model.calls[-1].input:
    if isinstance(item, dict) and item.get("type") == "function_call_output":
        print(f"  {item['output']}")
print(f"final answer: {result.final_output}")
