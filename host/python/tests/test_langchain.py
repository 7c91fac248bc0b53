"""hookbox.langchain on LangChain's own agent (`create_agent`) and its own
fake chat model: no network, no key."""

from __future__ import annotations

import asyncio
import time
from typing import Annotated, Any

import hookbox
import pytest
from hookbox.langchain import HookboxMiddleware
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.types import Command

SECRET = "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


class ScriptedChat(GenericFakeChatModel):
    """LangChain's fake chat model, taking tools (create_agent binds them)
    and keeping what each call was sent."""

    sent: list[Any] = []

    def bind_tools(self, tools: Any, *, tool_choice: Any = None, **kwargs: Any) -> Any:
        self.sent.append({"tools": [getattr(t, "name", t) for t in tools], "tool_choice": tool_choice, **kwargs})
        return self

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
        self.sent.append({"messages": list(messages), **kwargs})
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


def scripted(name: str, args: dict[str, Any]) -> ScriptedChat:
    return ScriptedChat(sent=[], messages=iter([
        AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": "call_1", "type": "tool_call"}]),
        AIMessage(content="done"),
    ]))


class World:
    def __init__(self) -> None:
        self.ran: list[tuple[str, dict[str, Any]]] = []

        @tool
        def write_file(path: str, text: str) -> str:
            """Write text to a file."""
            self.ran.append(("write_file", {"path": path, "text": text}))
            return f"wrote {path}"

        @tool
        def shell(command: str) -> str:
            """Run a command."""
            self.ran.append(("shell", {"command": command}))
            return f"ran {command}: {SECRET}"

        self.tools = [write_file, shell]

    def invoke(self, stack: hookbox.Stack, model: ScriptedChat, prompt: str, *, use_async: bool = False) -> Any:
        self.middleware = HookboxMiddleware(stack)
        agent = create_agent(model, tools=self.tools, system_prompt="You work.", middleware=[self.middleware])
        state = {"messages": [{"role": "user", "content": prompt}]}
        if use_async:
            return asyncio.run(agent.ainvoke(state))
        return agent.invoke(state)


def model_calls(model: ScriptedChat) -> list[list[Any]]:
    return [s["messages"] for s in model.sent if "messages" in s]


def tool_messages(model: ScriptedChat) -> list[str]:
    return [str(m.content) for call in model_calls(model) for m in call if isinstance(m, ToolMessage)]


@pytest.mark.parametrize("use_async", [False, True])
def test_a_denied_call_never_runs_and_the_model_reads_why(stack, use_async):
    world, model = World(), scripted("shell", {"command": "rm -rf /"})
    result = world.invoke(stack, model, "clean up", use_async=use_async)
    assert world.ran == []
    assert result["messages"][-1].content == "done"
    assert any("denied by policy" in t for t in tool_messages(model))


@pytest.mark.parametrize("use_async", [False, True])
def test_rewritten_arguments_reach_the_tool(stack, tmp_path, use_async):
    world = World()
    world.invoke(stack, scripted("write_file", {"path": "/etc/passwd", "text": "x"}), "write", use_async=use_async)
    assert world.ran == [("write_file", {"path": f"{tmp_path}/etc/passwd", "text": "x"})]


@pytest.mark.parametrize("use_async", [False, True])
def test_a_redacted_result_is_what_the_model_reads(stack, use_async):
    world, model = World(), scripted("shell", {"command": "env"})
    world.invoke(stack, model, "look", use_async=use_async)
    assert world.ran == [("shell", {"command": "env"})]
    [seen] = tool_messages(model)
    assert "wJalrXUtnFEMI" not in seen and "[REDACTED]" in seen
    assert world.middleware._runs == {}, "the finished run was let go"


def test_a_request_patch_applies_to_its_turn_only(stack):
    world, model = World(), scripted("write_file", {"path": "a.txt", "text": "x"})
    world.invoke(stack, model, "write")
    first, second = model_calls(model)
    assert first[0].type == "system" and first[0].content.startswith("You work.\n\n<document id=\"house-rules\">")
    assert second[0].content == "You work."


def test_model_settings_of_a_patch_apply_to_that_call(examples):
    stack = hookbox.Stack.from_files([examples[-1]])
    world, model = World(), ScriptedChat(sent=[], messages=iter([AIMessage(content="done")]))
    world.invoke(stack, model, "puppet:flow:patch-temperature:0.2")
    # create_agent binds a call's tools and settings to the model.
    [bound] = [s for s in model.sent if "tools" in s]
    assert bound.get("temperature") == 0.2, model.sent


@pytest.mark.parametrize(("command", "cause"), [("panic", "trap"), ("loop", "deadline"), ("grow", "memory")])
def test_a_misbehaving_guard_stops_the_run_and_nothing_after_it_runs(stack, command, cause):
    world, model = World(), scripted("shell", {"command": "ls"})
    with pytest.raises(hookbox.FailedClosed) as failed:
        world.invoke(stack, model, f"puppet:{command}")
    assert (failed.value.plugin, failed.value.cause) == ("puppet", cause)
    assert world.ran == [] and model_calls(model) == []
    assert all(live.run.is_over for live in world.middleware._runs.values()), "the stopped run was not ended"


def test_a_guard_trapping_on_a_tool_call_stops_before_the_tool(examples):
    stack = hookbox.Stack.from_files([examples[-1]], config={"puppet": {"subscribe": "tool-call"}})
    world, model = World(), scripted("shell", {"command": "ls"})
    model.messages = iter([AIMessage(content="", tool_calls=[{"name": "shell", "args": {"command": "ls"}, "id": "c", "type": "tool_call"}])])

    @tool("puppet:panic")
    def trap() -> str:
        """A tool whose name steers the puppet."""
        world.ran.append(("trap", {}))
        return "ran"

    world.tools = [trap]
    model.messages = iter([AIMessage(content="", tool_calls=[{"name": "puppet:panic", "args": {}, "id": "c", "type": "tool_call"}]),
                           AIMessage(content="done")])
    with pytest.raises(hookbox.FailedClosed) as failed:
        world.invoke(stack, model, "go")
    assert (failed.value.plugin, failed.value.cause) == ("puppet", "trap")
    assert world.ran == [] and len(model_calls(model)) == 1


def test_a_result_inside_a_command_is_guarded(stack):
    @tool
    def env(tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
        """The environment."""
        return Command(update={"messages": [ToolMessage(content=SECRET, tool_call_id=tool_call_id)]})

    world, model = World(), scripted("env", {})
    world.tools = [env]
    world.invoke(stack, model, "look")
    [seen] = tool_messages(model)
    assert "wJalrXUtnFEMI" not in seen and "[REDACTED]" in seen


def test_an_invocation_ending_in_an_error_lets_its_run_go(examples):
    class Failing(ScriptedChat):
        def _generate(self, *args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("provider 500")

    stack = hookbox.Stack.from_files([examples[0]], max_instances=2)
    world = World()
    for _ in range(4):
        with pytest.raises(RuntimeError, match="provider 500"):
            world.invoke(stack, Failing(sent=[], messages=iter([])), "hi")
        assert all(live.run.is_over for live in world.middleware._runs.values())
    # The instance slots were given back: a healthy agent still runs.
    result = world.invoke(stack, scripted("shell", {"command": "ls"}), "hi")
    assert result["messages"][-1].content == "done"


@pytest.mark.parametrize("answer", ["json_block", "dict_in_command", "human_in_command", "list"])
def test_a_result_of_any_shape_is_guarded(stack, answer):
    from langchain_core.messages import HumanMessage

    @tool
    def env(tool_call_id: Annotated[str, InjectedToolCallId]) -> Any:
        """The environment."""
        return {
            "json_block": [{"type": "json", "json": {"env": SECRET}}],
            "dict_in_command": Command(update={"messages": [{"role": "tool", "content": SECRET, "tool_call_id": tool_call_id}]}),
            "human_in_command": Command(update={"messages": [ToolMessage("ok", tool_call_id=tool_call_id), HumanMessage(SECRET)]}),
            "list": [ToolMessage(SECRET, tool_call_id=tool_call_id)],
        }[answer]

    world, model = World(), scripted("env", {})
    world.tools = [env]
    world.invoke(stack, model, "look")
    last = model_calls(model)[-1]
    assert all("wJalrXUtnFEMI" not in str(m.content) for m in last), last
    assert any("[REDACTED]" in str(m.content) for m in last), last


def test_a_call_beside_a_stopped_one_raises_the_guards_own_stop(examples):
    """Two tool calls of one turn, asked in parallel: the first stops the
    run; the second, asked after, gets the same stop, not another error."""
    stack = hookbox.Stack.from_files([examples[-1]], config={"puppet": {"subscribe": "tool-call,tool-result"}})
    world = World()
    stops: list[BaseException] = []

    @tool("puppet:panic")
    def trap() -> str:
        """A tool whose name steers the puppet."""
        return "ran"

    @tool
    def slow() -> str:
        """Answers after its sibling has stopped the run."""
        time.sleep(0.5)
        return "late"

    def remember(request: Any, handler: Any) -> Any:
        try:
            return handler(request)
        except BaseException as stop:
            stops.append(stop)
            raise

    world.tools = [trap, slow]
    model = ScriptedChat(sent=[], messages=iter([AIMessage(content="", tool_calls=[
        {"name": "puppet:panic", "args": {}, "id": "a", "type": "tool_call"},
        {"name": "slow", "args": {}, "id": "b", "type": "tool_call"},
    ]), AIMessage(content="done")]))
    class Remembering(HookboxMiddleware):
        def wrap_tool_call(self, request: Any, handler: Any) -> Any:
            return remember(request, lambda r: super(Remembering, self).wrap_tool_call(r, handler))

    world.middleware = Remembering(stack)
    agent = create_agent(model, tools=world.tools, middleware=[world.middleware])
    with pytest.raises(hookbox.FailedClosed) as failed:
        agent.invoke({"messages": [{"role": "user", "content": "go"}]})
    assert (failed.value.plugin, failed.value.cause) == ("puppet", "trap")
    assert len(stops) == 2, stops
    assert all(isinstance(s, hookbox.FailedClosed) and (s.plugin, s.cause) == ("puppet", "trap") for s in stops), stops


def test_a_run_with_a_hook_in_flight_is_never_reaped_as_idle(stack):
    """A tool running past `idle_secs` while another invocation starts: its
    run stays, and its result is guarded."""
    world = World()

    @tool
    def long_job() -> str:
        """Runs long; meanwhile another invocation of the agent starts."""
        world.middleware.before_agent({"messages": []}, None)
        return f"finished: {SECRET}"

    world.tools = [long_job]
    model = scripted("long_job", {})
    world.middleware = HookboxMiddleware(stack, idle_secs=0)
    agent = create_agent(model, tools=world.tools, middleware=[world.middleware])
    agent.invoke({"messages": [{"role": "user", "content": "go"}]})
    [seen] = tool_messages(model)
    assert "wJalrXUtnFEMI" not in seen and "[REDACTED]" in seen, seen
