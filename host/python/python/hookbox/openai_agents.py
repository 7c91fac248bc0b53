"""hookbox guards for the OpenAI Agents SDK (`openai-agents` 0.24).

    guard = hookbox.openai_agents.Guard(hookbox.Stack.from_directory("plugins"))
    result = await guard.run(agent, "Tidy up the project")

`Guard.run` (or `run_sync`, or `Runner.run` inside `with guard.session():`)
starts one hookbox run for the SDK run, on an agent `Guard.protect` gave
hookbox's guardrails. Each hookbox event maps to the SDK's own hook:

| hookbox event | the SDK's hook | continue | a rewrite | skip / refuse | the run ends (`Stopped`) |
|---|---|---|---|---|---|
| completion-call, turn 1 | input guardrail (`run_in_parallel=False`: before the model is called) | allow | the patch, applied by the model input filter below | — | tripwire: `InputGuardrailTripwireTriggered`, `output_info` the `Stopped` |
| completion-call, every turn | `RunConfig.call_model_input_filter` | the model input as it was | `preamble`, `extra_context`: the instructions this call only; any other field (temperature, tools ...) cannot be applied there: `FailedClosed` (unsupported-flow), never dropped | — | raised out of `Runner.run` |
| tool-call | tool input guardrail of every function tool | allow | the tool's invoker runs with the rewritten arguments (`apply_rewrites=False`: rejected, the tool does not run) | `reject_content`: the reason is the tool's output, the tool does not run | `raise_exception`: `ToolInputGuardrailTripwireTriggered` |
| tool-result | tool output guardrail | allow | `reject_content` with the rewrite: what the model reads | — | `raise_exception`: `ToolOutputGuardrailTripwireTriggered` |

| tool-call of a handoff (`transfer_to_...`) | the handoff's invocation, before its `on_handoff` | the handoff is taken | taken with the rewritten arguments | the SDK cannot answer a handoff instead of taking it: the run ends (`FailedClosed`, unsupported-flow, naming the guard) | raised |

A rewrite never grants: the SDK's own approvals (`needs_approval`) still
decide. `protect` guards every agent a run can reach: the agents it hands
off to (an `Agent`, or a `handoff()` whose agent is protected when the
handoff is taken) and agents used as tools (which must be protected
themselves: `guard.protect(inner).as_tool(...)`). What the SDK gives no
guardrail hook is refused rather than left unguarded: a hosted tool, an MCP
server's tools, and a `SandboxAgent` (its capabilities add `exec_command`,
`apply_patch` ... when the run starts, past any guardrail).

`Runner.run` called directly must be given both halves of the guard, or the
run fails closed before any tool runs or any output is returned:

    with guard.session():
        await Runner.run(guard.protect(agent), input, run_config=guard.run_config())
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
import dataclasses
from collections.abc import Iterator
from typing import Any, Optional

from agents import (
    Agent,
    FunctionTool,
    GuardrailFunctionOutput,
    RunConfig,
    Runner,
    ToolGuardrailFunctionOutput,
    ToolInputGuardrailData,
    ToolOutputGuardrailData,
    handoff,
    input_guardrail,
    output_guardrail,
    tool_input_guardrail,
    tool_output_guardrail,
)
from agents.run_config import CallModelData, ModelInputData

from . import FailedClosed, HookboxError, RequestVerdict, Run, Stack, Stopped
from ._guards import check_heard
from ._messages import from_responses_items, jsonable

__all__ = ["Guard"]

try:
    from agents.sandbox import SandboxAgent as _SandboxAgent
except ImportError:  # an SDK without sandboxes
    _SandboxAgent = None

_FRAMEWORK = "the OpenAI Agents SDK"
# What `call_model_input_filter` can change of a model call.
_PATCHABLE = ["preamble", "extra_context"]


@dataclasses.dataclass
class _Session:
    run: Run
    prompt: str = ""
    turn: int = 0
    first: Optional[RequestVerdict] = None
    # Whether the model input filter is installed (it ran for this model call).
    filtered: bool = False
    # Tool call id → the arguments a guard rewrote, for the tool's invoker;
    # then the arguments it ran with, for its result.
    rewrites: dict[str, str] = dataclasses.field(default_factory=dict)
    ran_with: dict[str, str] = dataclasses.field(default_factory=dict)


_SESSION: contextvars.ContextVar[_Session] = contextvars.ContextVar("hookbox_openai_agents")


def _session() -> _Session:
    try:
        return _SESSION.get()
    except LookupError:
        raise HookboxError(
            "a hookbox guardrail ran outside a hookbox run: call Guard.run / Guard.run_sync, "
            "or Runner.run inside `with guard.session():`"
        ) from None


def _prompt(user_input: Any) -> str:
    if isinstance(user_input, str):
        return user_input
    for message in from_responses_items(user_input, None):
        if message["role"] == "user":
            return message["content"]
    return ""


class Guard:
    """hookbox's guards on OpenAI Agents SDK runs, from `stack`."""

    def __init__(self, stack: Stack, *, apply_rewrites: bool = True, unheard: str = "refuse") -> None:
        check_heard(stack, _FRAMEWORK, unheard)
        self.stack = stack
        self.apply_rewrites = apply_rewrites
        self._input = input_guardrail(name="hookbox", run_in_parallel=False)(self._first_turn)
        self._tool_input = tool_input_guardrail(name="hookbox")(self._tool_call)
        self._tool_output = tool_output_guardrail(name="hookbox")(self._tool_result)
        self._output = output_guardrail(name="hookbox")(self._final_output)

    @contextlib.contextmanager
    def session(self, run_id: Optional[str] = None) -> Iterator[Run]:
        """One hookbox run for the SDK runs made inside (normally one)."""
        token = _SESSION.set(_Session(self.stack.start_run(run_id)))
        try:
            yield _SESSION.get().run
        finally:
            _SESSION.reset(token)

    def protect(self, agent: Agent[Any]) -> Agent[Any]:
        """A copy of `agent` with hookbox's guardrails first on every tool,
        its input and its output, and on every agent it can hand off to.

        Raises `HookboxError` for what the SDK gives no guardrail hook (a
        hosted tool, an MCP server) and for an agent used as a tool that
        was not protected itself."""
        return self._protect(agent, {})

    def _protect(self, agent: Agent[Any], done: dict[int, Agent[Any]]) -> Agent[Any]:
        if self._guards(agent):
            return agent
        if id(agent) in done:
            return done[id(agent)]
        if _SandboxAgent is not None and isinstance(agent, _SandboxAgent):
            raise HookboxError(
                f"agent {agent.name!r} is a SandboxAgent, whose capabilities add tools (exec_command, apply_patch ...) "
                "when the run starts, past any guardrail, so hookbox cannot guard them; use an Agent with function tools "
                "(guard a sandbox's shell with `hookbox hook` instead)"
            )
        if agent.mcp_servers:
            raise HookboxError(
                f"agent {agent.name!r} has MCP servers, whose tools the SDK runs without a function tool's guardrails; "
                "guard the MCP server with `hookbox mcp` instead, or remove it"
            )
        tools = []
        for tool in agent.tools:
            if not isinstance(tool, FunctionTool):
                raise HookboxError(
                    f"the tool {getattr(tool, 'name', tool)!r} of agent {agent.name!r} is not a function tool, "
                    "so the SDK gives it no guardrail hook and hookbox cannot guard it; remove it or wrap it in a function tool"
                )
            inner = getattr(tool, "_agent_instance", None) if getattr(tool, "_is_agent_tool", False) else None
            if inner is not None and not self._guards(inner):
                raise HookboxError(
                    f"the tool {tool.name!r} of agent {agent.name!r} runs agent {inner.name!r}, whose own tools would run unguarded; "
                    "make it from a protected agent: guard.protect(agent).as_tool(...)"
                )
            tools.append(self._tool(tool))
        protected = agent.clone(
            tools=tools,
            input_guardrails=[self._input, *agent.input_guardrails],
            output_guardrails=[self._output, *agent.output_guardrails],
        )
        done[id(agent)] = protected
        protected.handoffs = [self._handoff(h, done) for h in agent.handoffs]
        # Marked, so protecting it again (an agent used as a tool, a handoff
        # taken) finds it guarded.
        object.__setattr__(protected, "_hookbox_guard", self)
        return protected

    def _guards(self, agent: Any) -> bool:
        return getattr(agent, "_hookbox_guard", None) is self

    def _handoff(self, target: Any, done: dict[int, Agent[Any]]) -> Any:
        """The handoff to `target`, asked as a tool call before it is taken
        (before its `on_handoff` runs), to an agent that is protected."""
        if isinstance(target, Agent):
            target = handoff(self._protect(target, done))
        invoke = target.on_invoke_handoff
        name = target.tool_name

        async def asked_invoke(ctx: Any, args: str) -> Agent[Any]:
            run = _session().run
            verdict = await run.atool_call(name, args or "{}")
            if verdict.kind != "run":
                raise run.end(
                    f"answered the handoff `{name}` with {verdict.kind} ({verdict.reason}); the SDK cannot answer a "
                    "handoff instead of taking it, so the run ends",
                    plugin=verdict.by,
                )
            return self.protect(await invoke(ctx, verdict.args if verdict.rewritten else args))

        asked = dataclasses.replace(target, on_invoke_handoff=asked_invoke)
        # `replace` leaves out what `handoff()` set after construction.
        object.__setattr__(asked, "_agent_ref", getattr(target, "_agent_ref", None))
        return asked

    def run_config(self, config: Optional[RunConfig] = None) -> RunConfig:
        """`config` (or a new one) with hookbox's model input filter; one
        the caller set runs after it."""
        config = config or RunConfig()
        theirs = config.call_model_input_filter

        async def model_input(data: CallModelData[Any]) -> ModelInputData:
            ours = await self._completion_call(data)
            if theirs is None:
                return ours
            again = theirs(dataclasses.replace(data, model_data=ours))
            return await again if hasattr(again, "__await__") else again  # type: ignore[return-value]

        return dataclasses.replace(config, call_model_input_filter=model_input)

    async def run(self, agent: Agent[Any], input: Any, **kwargs: Any) -> Any:
        """`Runner.run(agent, input, **kwargs)`, guarded, as one hookbox run."""
        kwargs["run_config"] = self.run_config(kwargs.get("run_config"))
        with self.session():
            return await Runner.run(self.protect(agent), input, **kwargs)

    def run_sync(self, agent: Agent[Any], input: Any, **kwargs: Any) -> Any:
        """`Runner.run_sync`, guarded."""
        kwargs["run_config"] = self.run_config(kwargs.get("run_config"))
        with self.session():
            return Runner.run_sync(self.protect(agent), input, **kwargs)

    def _tool(self, tool: FunctionTool) -> FunctionTool:
        invoke = tool.on_invoke_tool

        async def guarded_invoke(ctx: Any, args: str) -> Any:
            session = _session()
            call_id = getattr(ctx, "tool_call_id", None) or ""
            args = session.rewrites.pop(call_id, args)
            session.ran_with[call_id] = args
            return await invoke(ctx, args)

        # A copy, its fields set: subclasses of FunctionTool (the SDK's
        # own shell tools) take no dataclass `replace`.
        guarded = copy.copy(tool)
        guarded.on_invoke_tool = guarded_invoke if self.apply_rewrites else invoke
        guarded.tool_input_guardrails = [self._tool_input, *(tool.tool_input_guardrails or [])]
        guarded.tool_output_guardrails = [self._tool_output, *(tool.tool_output_guardrails or [])]
        return guarded

    async def _first_turn(self, ctx: Any, agent: Agent[Any], user_input: Any) -> GuardrailFunctionOutput:
        session = _session()
        session.prompt = _prompt(user_input)
        try:
            session.first = await session.run.acompletion_call(
                session.prompt, from_responses_items(user_input, None), 1
            )
        except Stopped as stop:
            return GuardrailFunctionOutput(output_info=stop, tripwire_triggered=True)
        return GuardrailFunctionOutput(output_info=None, tripwire_triggered=False)

    async def _completion_call(self, data: CallModelData[Any]) -> ModelInputData:
        session = _session()
        session.filtered = True
        session.turn += 1
        model = data.model_data
        if session.turn == 1 and session.first is not None:
            # Asked by the input guardrail, whose tripwire is for a stop; a
            # patch the filter cannot apply ends the run here, as on every
            # later turn.
            verdict = session.first
            try:
                verdict.require_only(_FRAMEWORK, _PATCHABLE)
            except FailedClosed as refused:
                raise session.run.end(refused.detail, plugin=refused.plugin) from None
        else:
            messages = from_responses_items(model.input, model.instructions)
            verdict = await session.run.acompletion_call(
                session.prompt, messages, session.turn, supported=_PATCHABLE, framework=_FRAMEWORK
            )
        if verdict.kind == "continue":
            return model
        return ModelInputData(input=model.input, instructions=verdict.system(model.instructions))

    async def _tool_call(self, data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
        ctx = data.context
        try:
            session = _session()
            _filtered(session)
            verdict = await session.run.atool_call(
                ctx.tool_name, ctx.tool_arguments or "{}", tool_call_id=ctx.tool_call_id
            )
        except HookboxError as stop:
            return ToolGuardrailFunctionOutput.raise_exception(output_info=stop)
        if verdict.kind != "run":
            return ToolGuardrailFunctionOutput.reject_content(message=verdict.reason or "", output_info=verdict)
        if verdict.rewritten:
            if not self.apply_rewrites:
                return ToolGuardrailFunctionOutput.reject_content(
                    message=f"Not executed: the guard {verdict.by} rewrote the arguments of `{ctx.tool_name}`, "
                    "and this agent's tools do not take rewritten arguments.",
                    output_info=verdict,
                )
            session.rewrites[ctx.tool_call_id] = verdict.args or "{}"
        return ToolGuardrailFunctionOutput.allow(output_info=verdict)

    async def _tool_result(self, data: ToolOutputGuardrailData) -> ToolGuardrailFunctionOutput:
        ctx = data.context
        output = data.output
        try:
            session = _session()
            args = session.ran_with.pop(ctx.tool_call_id, ctx.tool_arguments or "{}")
            # Whole, whatever its shape: the SDK sends a list of records
            # (rows) as `str(output)`, every field of it.
            verdict = await session.run.atool_result(
                ctx.tool_name, args, jsonable(output), tool_call_id=ctx.tool_call_id
            )
        except HookboxError as stop:
            return ToolGuardrailFunctionOutput.raise_exception(output_info=stop)
        if verdict.kind == "replace":
            return ToolGuardrailFunctionOutput.reject_content(message=verdict.text or "", output_info=verdict)
        return ToolGuardrailFunctionOutput.allow(output_info=verdict)

    async def _final_output(self, ctx: Any, agent: Agent[Any], output: Any) -> GuardrailFunctionOutput:
        try:
            _filtered(_session())
        except HookboxError as missing:
            return GuardrailFunctionOutput(output_info=missing, tripwire_triggered=True)
        return GuardrailFunctionOutput(output_info=None, tripwire_triggered=False)


def _filtered(session: _Session) -> None:
    """Fails unless the model input filter has run: without it, the
    guards' patches would be dropped and later turns never asked."""
    if not session.filtered:
        raise HookboxError(
            "hookbox's model input filter is not installed, so the guards' request patches would be dropped: "
            "pass run_config=guard.run_config() to Runner.run (Guard.run does)"
        )


