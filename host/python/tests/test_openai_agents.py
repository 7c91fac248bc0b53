"""hookbox.openai_agents on the SDK's own runner and its own scripted model
(`agents.testing.ScriptedModel`): no network, no key."""

from __future__ import annotations

import asyncio
from typing import Any

import hookbox
import pytest
from agents import (
    Agent,
    InputGuardrailTripwireTriggered,
    ToolInputGuardrailTripwireTriggered,
    ToolOutputGuardrailTripwireTriggered,
    function_tool,
    set_tracing_disabled,
)
from agents.testing import ScriptedModel, assistant_message, function_call
from hookbox.openai_agents import Guard

set_tracing_disabled(True)
SECRET = "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


class World:
    """The tools' side effects, and an agent whose model calls `tool` with
    `args` once, then answers."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, dict[str, Any]]] = []

        @function_tool
        def write_file(path: str, text: str) -> str:
            """Write text to a file."""
            self.ran.append(("write_file", {"path": path, "text": text}))
            return f"wrote {path}"

        @function_tool
        def shell(command: str) -> str:
            """Run a command."""
            self.ran.append(("shell", {"command": command}))
            return f"ran {command}: {SECRET}"

        self.tools = [write_file, shell]

    def agent(self, tool: str, args: dict[str, Any], *, prompt_turns: int = 2) -> tuple[Agent[Any], ScriptedModel]:
        model = ScriptedModel([[function_call(tool, args, call_id="call_1")], [assistant_message("done")]])
        return Agent(name="worker", instructions="You work.", model=model, tools=self.tools), model


def outputs(model: ScriptedModel) -> list[str]:
    """The tool outputs the model was sent."""
    return [str(i["output"]) for call in model.calls for i in call.input
            if isinstance(i, dict) and i.get("type") == "function_call_output"]


def test_a_denied_call_never_runs_and_the_model_reads_why(stack):
    world = World()
    agent, model = world.agent("shell", {"command": "rm -rf /"})
    result = asyncio.run(Guard(stack).run(agent, "clean up"))
    assert world.ran == []
    assert result.final_output == "done"
    assert any("denied by policy" in o for o in outputs(model))


def test_rewritten_arguments_reach_the_tool(stack, tmp_path):
    world = World()
    agent, _ = world.agent("write_file", {"path": "/etc/passwd", "text": "x"})
    asyncio.run(Guard(stack).run(agent, "write"))
    assert world.ran == [("write_file", {"path": f"{tmp_path}/etc/passwd", "text": "x"})]


def test_rewritten_arguments_are_blocked_where_the_tools_cannot_take_them(stack):
    world = World()
    agent, model = world.agent("write_file", {"path": "/etc/passwd", "text": "x"})
    asyncio.run(Guard(stack, apply_rewrites=False).run(agent, "write"))
    assert world.ran == []
    assert any("rewrote the arguments" in o for o in outputs(model))


def test_a_redacted_result_is_what_the_model_reads(stack):
    world = World()
    agent, model = world.agent("shell", {"command": "env"})
    asyncio.run(Guard(stack).run(agent, "look"))
    assert world.ran == [("shell", {"command": "env"})]
    [seen] = outputs(model)
    assert "wJalrXUtnFEMI" not in seen and "[REDACTED]" in seen


def test_a_request_patch_applies_to_its_turn_only(stack):
    world = World()
    agent, model = world.agent("write_file", {"path": "a.txt", "text": "x"})
    asyncio.run(Guard(stack).run(agent, "write"))
    first, second = model.calls
    assert first.system_instructions.startswith("You work.\n\n<document id=\"house-rules\">")
    assert second.system_instructions == "You work."


def test_a_patch_the_sdk_cannot_apply_fails_closed_not_dropped(examples):
    stack = hookbox.Stack.from_files([examples[-1]])  # the puppet
    model = ScriptedModel([[assistant_message("done")]])
    agent = Agent(name="worker", model=model, tools=World().tools)
    with pytest.raises(hookbox.FailedClosed) as failed:
        asyncio.run(Guard(stack).run(agent, "puppet:flow:patch-temperature:0.2"))
    assert (failed.value.plugin, failed.value.cause) == ("puppet", "unsupported-flow")
    assert model.calls == ()


@pytest.mark.parametrize(("command", "cause"), [("panic", "trap"), ("loop", "deadline"), ("grow", "memory")])
def test_a_misbehaving_guard_stops_the_run_through_the_sdks_tripwire(stack, command, cause):
    world = World()
    model = ScriptedModel([[function_call(f"puppet:{command}", {}, call_id="call_1")], [assistant_message("done")]])

    @function_tool(name_override=f"puppet:{command}")
    def misbehave() -> str:
        """A tool whose name steers the puppet."""
        world.ran.append(("misbehave", {}))
        return "ran"

    agent = Agent(name="worker", model=model, tools=[misbehave])
    with pytest.raises(ToolInputGuardrailTripwireTriggered) as tripped:
        asyncio.run(Guard(stack).run(agent, "go"))
    stop = tripped.value.output.output_info
    assert isinstance(stop, hookbox.FailedClosed)
    assert (stop.plugin, stop.cause) == ("puppet", cause)
    assert world.ran == [] and len(model.calls) == 1


def test_a_guard_failing_on_a_result_stops_the_run_through_the_output_tripwire(examples):
    # The puppet sees results only: the call runs, its result traps.
    stack = hookbox.Stack.from_files([examples[-1]], config={"puppet": {"subscribe": "tool-result"}})
    model = ScriptedModel([[function_call("puppet:panic", {}, call_id="call_1")], [assistant_message("done")]])
    ran = []

    @function_tool(name_override="puppet:panic")
    def tool() -> str:
        """Runs."""
        ran.append(True)
        return "ok"

    agent = Agent(name="worker", model=model, tools=[tool])
    with pytest.raises(ToolOutputGuardrailTripwireTriggered) as tripped:
        asyncio.run(Guard(stack).run(agent, "go"))
    stop = tripped.value.output.output_info
    assert (stop.plugin, stop.cause) == ("puppet", "trap")
    assert ran == [True] and len(model.calls) == 1


def test_the_first_turn_is_asked_before_the_model_is_called(examples):
    stack = hookbox.Stack.from_files([examples[-1]])
    model = ScriptedModel([[assistant_message("done")]])
    agent = Agent(name="worker", model=model)
    with pytest.raises(InputGuardrailTripwireTriggered) as tripped:
        asyncio.run(Guard(stack).run(agent, "puppet:panic"))
    stop = tripped.value.guardrail_result.output.output_info
    assert (stop.plugin, stop.cause) == ("puppet", "trap")
    assert model.calls == ()


def test_a_hosted_tool_is_refused_rather_than_left_unguarded(stack):
    from agents import WebSearchTool

    agent = Agent(name="worker", tools=[WebSearchTool()])
    with pytest.raises(hookbox.HookboxError, match="not a function tool"):
        Guard(stack).protect(agent)



@pytest.mark.parametrize("as_object", [False, True])
def test_an_agent_handed_off_to_is_guarded_too(stack, as_object):
    from agents import handoff

    world = World()
    sub_model = ScriptedModel([[function_call("shell", {"command": "rm -rf /"}, call_id="c2")], [assistant_message("sub done")]])
    sub = Agent(name="sub", model=sub_model, tools=world.tools)
    main_model = ScriptedModel([[function_call("transfer_to_sub", {}, call_id="c1")]])
    main = Agent(name="main", model=main_model, handoffs=[handoff(sub) if as_object else sub])
    sub.handoffs = [main]  # a cycle, as real handoff graphs have
    result = asyncio.run(Guard(stack).run(main, "go"))
    assert world.ran == []
    assert result.final_output == "sub done"


def test_an_agent_used_as_a_tool_must_be_protected_itself(stack):
    world = World()
    inner_model = ScriptedModel([[function_call("shell", {"command": "rm -rf /"}, call_id="c2")], [assistant_message("inner done")]])
    inner = Agent(name="inner", model=inner_model, tools=world.tools)
    guard = Guard(stack)
    with pytest.raises(hookbox.HookboxError, match="guard.protect"):
        guard.protect(Agent(name="outer", tools=[inner.as_tool("helper", "helps")]))
    outer_model = ScriptedModel([[function_call("helper", {"input": "go"}, call_id="c1")], [assistant_message("done")]])
    outer = Agent(name="outer", model=outer_model, tools=[guard.protect(inner).as_tool("helper", "helps")])
    asyncio.run(guard.run(outer, "go"))
    assert world.ran == []


def test_mcp_servers_are_refused_rather_than_left_unguarded(stack):
    from agents.mcp import MCPServerStdio

    server = MCPServerStdio(params={"command": "true"}, name="fs")
    with pytest.raises(hookbox.HookboxError, match="MCP"):
        Guard(stack).protect(Agent(name="worker", mcp_servers=[server]))


def test_runner_run_without_the_model_input_filter_fails_closed_before_any_tool(stack):
    from agents import Runner

    world = World()
    agent, model = world.agent("write_file", {"path": "a.txt", "text": "x"})
    guard = Guard(stack)
    with guard.session(), pytest.raises(ToolInputGuardrailTripwireTriggered) as tripped:
        asyncio.run(Runner.run(guard.protect(agent), "write"))
    assert "run_config=guard.run_config()" in str(tripped.value.output.output_info)
    assert world.ran == []
    # With both halves, the same call runs, and the patch reached the model.
    world = World()
    agent, model = world.agent("write_file", {"path": "a.txt", "text": "x"})
    with guard.session():
        asyncio.run(Runner.run(guard.protect(agent), "write", run_config=guard.run_config()))
    assert len(world.ran) == 1
    assert "<document id=\"house-rules\">" in model.calls[0].system_instructions


@pytest.mark.parametrize("rows", [
    [{"name": "aws", "value": SECRET}],        # records without a `text` field
    [["aws", SECRET]],                         # rows
    [{"text": "fine", "note": SECRET}],        # a `text` field beside others
])
def test_a_result_of_any_shape_is_guarded_whole(stack, rows):
    @function_tool
    def lookup() -> list[Any]:
        """Rows."""
        return rows

    model = ScriptedModel([[function_call("lookup", {}, call_id="call_1")], [assistant_message("done")]])
    asyncio.run(Guard(stack).run(Agent(name="w", model=model, tools=[lookup]), "look"))
    [seen] = outputs(model)
    assert "wJalrXUtnFEMI" not in seen and "[REDACTED]" in seen, seen


def test_a_sandbox_agent_is_refused_rather_than_left_unguarded(stack):
    from agents.sandbox import SandboxAgent

    model = ScriptedModel([[function_call("exec_command", {"cmd": "rm -rf /"}, call_id="c1")], [assistant_message("done")]])
    with pytest.raises(hookbox.HookboxError, match="SandboxAgent"):
        Guard(stack).protect(SandboxAgent(name="box", model=model))
    assert model.calls == () or list(model.calls) == []


def test_a_handoff_is_asked_as_a_tool_call_before_on_handoff_runs(examples):
    from agents import handoff
    from pydantic import BaseModel

    class Why(BaseModel):
        command: str

    handed: list[str] = []
    sub = Agent(name="sub", model=ScriptedModel([[assistant_message("sub done")]]))
    target = handoff(sub, on_handoff=lambda ctx, why: handed.append(why.command), input_type=Why)
    main = Agent(name="main", model=ScriptedModel([[function_call("transfer_to_sub", {"command": "rm -rf /"}, call_id="c1")]]),
                 handoffs=[target])
    # deny-tools answers skip to `rm -rf`: the SDK cannot answer a handoff,
    # so the run ends naming the guard, and on_handoff never ran.
    stack = hookbox.Stack.from_files([examples[0]])
    with pytest.raises(hookbox.FailedClosed) as stopped:
        asyncio.run(Guard(stack).run(main, "go"))
    assert stopped.value.plugin == "deny-tools" and stopped.value.cause == "unsupported-flow"
    assert handed == []
    # A harmless handoff is taken, its arguments as they were.
    ok = Agent(name="main", model=ScriptedModel([[function_call("transfer_to_sub", {"command": "ls"}, call_id="c1")]]),
               handoffs=[target])
    sub.model = ScriptedModel([[assistant_message("sub done")]])
    assert asyncio.run(Guard(stack).run(ok, "go")).final_output == "sub done"
    assert handed == ["ls"]
