"""A LangChain agent guarded by hookbox's example plugins, on LangChain's
own fake chat model (no network, no API key).

    python host/python/examples/langchain_guarded.py [PLUGIN_DIR]

As the OpenAI Agents SDK example: a destructive command never runs, a write
outside the workspace is jailed, a key never reaches the model, and the
house rules reach the model's first call only.
"""

import pathlib
import sys
import tempfile

import hookbox
from hookbox.langchain import HookboxMiddleware
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import tool

plugins = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "target/python/guests")
workspace = tempfile.mkdtemp(prefix="hookbox-example-")


class ScriptedChat(GenericFakeChatModel):
    def bind_tools(self, tools, **kwargs):
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        print(f"  model call, system text: {messages[0].content[:60]!r}...")
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


@tool
def shell(command: str) -> str:
    """Run a shell command."""
    print(f"  tool ran: shell {command!r}")
    return "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


@tool
def write_file(path: str, text: str) -> str:
    """Write a file."""
    print(f"  tool ran: write_file {path!r}")
    return f"wrote {path}"


calls = [{"name": "shell", "args": {"command": "rm -rf /"}, "id": "c1", "type": "tool_call"},
         {"name": "write_file", "args": {"path": "/etc/motd", "text": "hi"}, "id": "c2", "type": "tool_call"},
         {"name": "shell", "args": {"command": "cat .env"}, "id": "c3", "type": "tool_call"}]
model = ScriptedChat(messages=iter([AIMessage(content="", tool_calls=calls), AIMessage(content="done")]))
stack = hookbox.Stack.from_files(
    [plugins / name for name in ("inject-context.wasm", "deny-tools.wasm", "path-jail.wasm", "redact-secrets.wasm")],
    config={"path-jail": {"root": workspace}},
)
agent = create_agent(model, tools=[shell, write_file], system_prompt="You tidy projects.",
                     middleware=[HookboxMiddleware(stack)])
result = agent.invoke({"messages": [{"role": "user", "content": "Tidy up this project"}]})
print("the model read:")
for message in result["messages"]:
    if message.type == "tool":
        print(f"  {message.content}")
print(f"final answer: {result['messages'][-1].content}")
