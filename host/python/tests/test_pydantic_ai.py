"""hookbox.pydantic_ai on PydanticAI's own agent and its own scripted model
(`FunctionModel`): no network, no key."""

from __future__ import annotations

import asyncio
import datetime
from typing import Any

import hookbox
import pytest
from hookbox.pydantic_ai import HookboxCapability
from pydantic import BaseModel
from pydantic_ai import Agent
from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

SECRET = "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


class World:
    """A scripted model (calls, then "done"), the tools' side effects, and
    what each model call was sent."""

    def __init__(self, *calls: tuple[str, dict[str, Any]]) -> None:
        self.ran: list[tuple[str, dict[str, Any]]] = []
        self.seen: list[AgentInfo] = []
        self.returned: list[Any] = []
        self.calls = calls

    def model(self, messages: list[Any], info: AgentInfo) -> ModelResponse:
        self.seen.append(info)
        if len(messages) == 1 and self.calls:
            return ModelResponse(parts=[ToolCallPart(name, args, tool_call_id=f"c{i}")
                                        for i, (name, args) in enumerate(self.calls)])
        self.returned = [p.content for m in messages if isinstance(m, ModelRequest)
                         for p in m.parts if isinstance(p, ToolReturnPart)]
        return ModelResponse(parts=[TextPart("done")])

    def agent(self, stack: hookbox.Stack) -> Agent[None, str]:
        agent = Agent(FunctionModel(self.model), instructions="You work.",
                      capabilities=[HookboxCapability(stack)])

        @agent.tool_plain
        def write_file(path: str, text: str) -> str:
            """Write text to a file."""
            self.ran.append(("write_file", {"path": path, "text": text}))
            return f"wrote {path}"

        @agent.tool_plain
        def shell(command: str) -> str:
            """Run a command."""
            self.ran.append(("shell", {"command": command}))
            return f"ran {command}: {SECRET}"

        @agent.tool_plain
        def env() -> dict[str, str]:
            """The environment."""
            self.ran.append(("env", {}))
            return {"HOME": "/home/me", "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}

        return agent


def test_a_denied_call_never_runs_and_the_model_reads_why(stack):
    world = World(("shell", {"command": "rm -rf /"}))
    assert world.agent(stack).run_sync("clean up").output == "done"
    assert world.ran == []
    assert any("denied by policy" in str(r) for r in world.returned)


def test_rewritten_arguments_reach_the_tool(stack, tmp_path):
    world = World(("write_file", {"path": "/etc/passwd", "text": "x"}))
    asyncio.run(world.agent(stack).run("write"))
    assert world.ran == [("write_file", {"path": f"{tmp_path}/etc/passwd", "text": "x"})]


def test_a_redacted_result_is_what_the_model_reads_in_its_shape(stack):
    world = World(("shell", {"command": "env"}), ("env", {}))
    world.agent(stack).run_sync("look")
    text, structured = world.returned
    assert "wJalrXUtnFEMI" not in text and "[REDACTED]" in text
    assert structured == {"HOME": "/home/me", "AWS_SECRET_ACCESS_KEY": "[REDACTED]"}


def test_a_request_patch_applies_to_its_turn_only(stack):
    world = World(("write_file", {"path": "a.txt", "text": "x"}))
    world.agent(stack).run_sync("write")
    first, second = world.seen
    assert first.instructions.startswith("You work.\n\n<document id=\"house-rules\">")
    assert second.instructions == "You work."


def test_model_settings_of_a_patch_apply_to_that_request(examples):
    stack = hookbox.Stack.from_files([examples[-1]])
    world = World()
    world.agent(stack).run_sync("puppet:flow:patch-temperature:0.2")
    assert world.seen[0].model_settings["temperature"] == 0.2


@pytest.mark.parametrize(("command", "cause"), [("panic", "trap"), ("loop", "deadline"), ("grow", "memory")])
def test_a_misbehaving_guard_stops_the_run_and_nothing_after_it_runs(stack, command, cause):
    world = World(("shell", {"command": "ls"}))
    with pytest.raises(hookbox.FailedClosed) as failed:
        world.agent(stack).run_sync(f"puppet:{command}")
    assert (failed.value.plugin, failed.value.cause) == ("puppet", cause)
    assert world.ran == [] and world.seen == []


def test_a_guard_trapping_on_a_tool_call_stops_before_the_tool(examples):
    stack = hookbox.Stack.from_files([examples[-1]], config={"puppet": {"subscribe": "tool-call"}})
    world = World(("puppet:panic", {}))
    agent = world.agent(stack)

    @agent.tool_plain(name="puppet:panic")
    def trap() -> str:
        """A tool whose name steers the puppet."""
        world.ran.append(("trap", {}))
        return "ran"

    with pytest.raises(hookbox.FailedClosed) as failed:
        agent.run_sync("go")
    assert (failed.value.plugin, failed.value.cause) == ("puppet", "trap")
    assert world.ran == [] and len(world.seen) == 1


def test_each_agent_run_is_a_hookbox_run_of_its_own(examples):
    # The puppet skips `puppet:count` with its counts: a guest's global and
    # its run's scratchpad. Each agent run starts both again.
    stack = hookbox.Stack.from_files([examples[-1]])
    seen = []
    for _ in range(2):
        world = World(("puppet:count", {}), ("puppet:count", {}))
        agent = world.agent(stack)

        @agent.tool_plain(name="puppet:count")
        def count() -> str:
            """Counts."""
            return "ran"

        agent.run_sync("hi")
        seen.append(sorted(world.returned))  # the two calls run concurrently
    assert seen == [["global=1 scratch=1", "global=2 scratch=2"]] * 2


class Target(BaseModel):
    path: str


def test_rewritten_arguments_are_validated_as_the_models_would_be(examples, tmp_path):
    stack = hookbox.Stack.from_files([examples[1]], config={"path-jail": {"root": str(tmp_path)}})
    ran = []

    def model(messages: list[Any], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart("touch", {"path": "/etc/passwd", "when": "2026-01-01T00:00:00"}, tool_call_id="c1")])
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(FunctionModel(model), capabilities=[HookboxCapability(stack)])

    @agent.tool_plain
    def touch(path: str, when: datetime.datetime) -> Target:
        """Touch a file."""
        ran.append((path, when))
        return Target(path=path)

    agent.run_sync("go")
    assert ran == [(f"{tmp_path}/etc/passwd", datetime.datetime(2026, 1, 1))]


def test_an_output_function_is_guarded_as_a_tool_call(stack):
    from pydantic_ai import ToolOutput
    from pydantic_ai.exceptions import UnexpectedModelBehavior

    ran = []

    def shell(command: str) -> str:
        """Run a command; its output is the answer."""
        ran.append(command)
        return "ok"

    def model(messages: list[Any], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, {"command": "rm -rf /"}, tool_call_id="c1")])

    agent = Agent(FunctionModel(model), output_type=ToolOutput(shell, name="shell"),
                  capabilities=[HookboxCapability(stack)])
    with pytest.raises(UnexpectedModelBehavior):
        agent.run_sync("go")
    assert ran == []


def _external(world: World, stack: hookbox.Stack) -> Agent[None, Any]:
    from pydantic_ai import DeferredToolRequests
    from pydantic_ai.tools import ToolDefinition
    from pydantic_ai.toolsets import ExternalToolset

    schema = {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}
    return Agent(FunctionModel(world.model), output_type=[str, DeferredToolRequests],
                 toolsets=[ExternalToolset([ToolDefinition(name="remote", parameters_json_schema=schema)])],
                 capabilities=[HookboxCapability(stack)])


def test_a_skipped_external_call_is_answered_in_the_run_not_handed_to_the_application(stack):
    world = World(("remote", {"command": "rm -rf /"}))
    result = _external(world, stack).run_sync("go")
    assert result.output == "done", result.output
    [answer] = world.returned
    assert "rm -rf" in str(answer) or "denied" in str(answer).lower(), answer


def test_an_external_call_goes_out_rewritten_and_its_result_comes_back_guarded(stack, tmp_path):
    from pydantic_ai import DeferredToolResults

    world = World(("remote", {"command": "env"}))
    agent = _external(world, stack)
    first = agent.run_sync("look")
    [call] = first.output.calls
    assert call.args_as_dict() == {"command": "env"}
    agent.run_sync(message_history=first.all_messages(),
                   deferred_tool_results=DeferredToolResults(calls={call.tool_call_id: f"env: {SECRET}"}))
    assert world.returned and all("wJalrXUtnFEMI" not in str(r) for r in world.returned), world.returned


def test_a_skip_is_for_its_call_only_not_a_later_one_reusing_the_id(stack):
    ran: list[str] = []

    def model(messages: list[Any], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:  # denied, and invalid (no `text`): never executed
            return ModelResponse(parts=[ToolCallPart("write_file", {"path": "rm -rf /"}, tool_call_id="c1")])
        if len(messages) == 3:  # the same id, allowed
            return ModelResponse(parts=[ToolCallPart("write_file", {"path": "a.txt", "text": "x"}, tool_call_id="c1")])
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(FunctionModel(model), capabilities=[HookboxCapability(stack)])

    @agent.tool_plain
    def write_file(path: str, text: str) -> str:
        """Write."""
        ran.append(path)
        return "ok"

    agent.run_sync("go")
    assert len(ran) == 1 and ran[0].endswith("a.txt"), ran
