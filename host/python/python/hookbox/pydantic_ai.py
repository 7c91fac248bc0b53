"""hookbox guards for PydanticAI agents (`pydantic-ai-slim` 2.68), as a
capability:

    agent = Agent(model, capabilities=[hookbox.pydantic_ai.HookboxCapability(stack)])

Of PydanticAI, Strands Agents and Google ADK, PydanticAI's hooks fit
hookbox's events one to one. One typed, async interception chain per run
blocks a call with a result the model reads, rewrites its arguments
before they are validated, replaces its result, and patches one model request's
instructions, settings and tools. It also has run start and end hooks for a
run's state. Strands cannot patch a model request. ADK's callbacks are
positional and dict-shaped.

Each agent run is one hookbox run: the capability makes a copy of itself per
run (`for_run`), which starts the hookbox run in `before_run` and lets it
go in `after_run` or `on_run_error`.

| hookbox event | PydanticAI hook | continue | a rewrite | skip / refuse | the run ends (`Stopped`) |
|---|---|---|---|---|---|
| completion-call | `before_model_request` | the request as it was | this request only: `preamble` and `extra_context` the instructions, `temperature` and `max_tokens` the model settings, `additional_params` their `extra_body`, `tool_choice`, `active_tools` the function tools offered; a `history` patch cannot be mapped back to PydanticAI's messages: `FailedClosed` (unsupported-flow), never dropped | — | raised out of `agent.run` / `run_sync`, unwrapped |
| tool-call | `before_tool_validate` (the model's JSON arguments), then `before_tool_execute` | the tool runs | the rewritten arguments, validated by PydanticAI as the model's would be | `SkipToolExecution`: the reason is the tool's result, the tool does not run | raised; the step's other calls are cancelled |
| tool-call of an output function | `before_output_process` | the function runs | cannot be applied to the validated value: `FailedClosed` (unsupported-flow) | `ModelRetry`: the model reads the reason and answers again | raised |
| tool-result | `after_tool_execute` | the result | the rewrite: text for a text result, the parsed JSON for any other (a model's fields as a dict; a rewrite that is not JSON of a structured result fails closed) | — | raised |

A rewrite never grants: PydanticAI's own approvals (`ApprovalRequired`)
still decide.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Optional

from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ModelRetry, SkipToolExecution
from pydantic_ai.messages import InstructionPart, ToolCallPart
from pydantic_ai.models import ModelRequestContext
from pydantic_ai.output import OutputContext
from pydantic_core import to_jsonable_python
from pydantic_ai.tools import ToolDefinition

from . import FailedClosed, Run, Stack
from ._messages import from_pydantic_ai, text_of

__all__ = ["HookboxCapability"]

_FRAMEWORK = "PydanticAI"
_PATCHABLE = ["preamble", "extra_context", "temperature", "max_tokens", "additional_params",
              "tool_choice", "active_tools"]


class HookboxCapability(AbstractCapability[Any]):
    """hookbox's guards on a PydanticAI agent's runs, from `stack`."""

    def __init__(self, stack: Stack) -> None:
        super().__init__()
        self.stack = stack
        self._run: Optional[Run] = None
        self._prompt = ""
        self._turns = 0
        # Tool call id → the reason a guard skipped or refused it.
        self._skipped: dict[str, str] = {}

    async def for_run(self, ctx: RunContext[Any]) -> HookboxCapability:
        return HookboxCapability(self.stack)

    async def before_run(self, ctx: RunContext[Any]) -> None:
        self._run = self.stack.start_run(ctx.run_id)
        self._prompt = text_of(ctx.prompt) if ctx.prompt is not None else ""

    async def after_run(self, ctx: RunContext[Any], *, result: Any) -> Any:
        self._run = None
        return result

    async def on_run_error(self, ctx: RunContext[Any], *, error: BaseException) -> Any:
        self._run = None
        raise error

    def _live(self) -> Run:
        if self._run is None:
            raise FailedClosed(
                "hookbox stopped the run: no hookbox run for this agent run",
                plugin="hookbox", cause="limit", detail="no hookbox run for this agent run",
            )
        return self._run

    async def before_model_request(self, ctx: RunContext[Any], request_context: ModelRequestContext) -> ModelRequestContext:
        run = self._live()
        self._turns += 1
        params = request_context.model_request_parameters
        parts = list(params.instruction_parts or [])
        instructions = "\n\n".join(p.content for p in parts) or None
        messages = from_pydantic_ai(request_context.messages, instructions)
        verdict = await run.acompletion_call(self._prompt, messages, self._turns)
        verdict.require_only(_FRAMEWORK, _PATCHABLE)
        if verdict.kind == "continue":
            return request_context
        patch = verdict.patch
        if "preamble" in patch or "extra_context" in patch:
            text = verdict.system(instructions)
            parts = [InstructionPart(text, dynamic=True)] if text else []
            params = dataclasses.replace(params, instruction_parts=parts)
        if "active_tools" in patch:
            allowed = set(patch["active_tools"])
            params = dataclasses.replace(params, function_tools=[t for t in params.function_tools if t.name in allowed])
        settings = dict(request_context.model_settings or {})
        for field in ("temperature", "max_tokens"):
            if field in patch:
                settings[field] = patch[field]
        if "additional_params" in patch:
            settings["extra_body"] = {**settings.get("extra_body", {}), **json.loads(patch["additional_params"])}
        if "tool_choice" in patch:
            choice = patch["tool_choice"]
            settings["tool_choice"] = choice["specific"] if isinstance(choice, dict) else choice
        return dataclasses.replace(request_context, model_request_parameters=params, model_settings=settings)

    async def before_tool_validate(
        self, ctx: RunContext[Any], *, call: ToolCallPart, tool_def: ToolDefinition, args: Any
    ) -> Any:
        # Asked on the model's own arguments (JSON), before PydanticAI
        # validates them, so a rewrite is validated as theirs would be.
        raw = args if isinstance(args, str) else json.dumps(args)
        verdict = await self._live().atool_call(call.tool_name, raw, tool_call_id=call.tool_call_id)
        if verdict.kind != "run":
            self._skipped[call.tool_call_id] = verdict.reason or ""
            return args
        return verdict.args if verdict.rewritten else args

    async def before_tool_execute(
        self, ctx: RunContext[Any], *, call: ToolCallPart, tool_def: ToolDefinition, args: dict[str, Any]
    ) -> dict[str, Any]:
        reason = self._skipped.pop(call.tool_call_id, None)
        if reason is not None:
            raise SkipToolExecution(reason)
        return args

    async def after_tool_execute(
        self, ctx: RunContext[Any], *, call: ToolCallPart, tool_def: ToolDefinition, args: dict[str, Any], result: Any
    ) -> Any:
        text = result if isinstance(result, str) else json.dumps(to_jsonable_python(result))
        verdict = await self._live().atool_result(
            call.tool_name, json.dumps(to_jsonable_python(args)), text, tool_call_id=call.tool_call_id
        )
        if verdict.kind == "keep":
            return result
        if isinstance(result, str):
            return verdict.text
        try:
            return json.loads(verdict.text or "")
        except ValueError:
            raise _unsupported(verdict.by, f"rewrote the structured result of `{call.tool_name}` into text that is not JSON") from None

    async def before_output_process(self, ctx: RunContext[Any], *, output_context: OutputContext, output: Any) -> Any:
        # An output function is a tool the model calls to answer: guarded as
        # one. Its arguments cannot be rewritten (PydanticAI has validated
        # them into the value it passes on), so a rewrite fails closed.
        if not output_context.has_function:
            return output
        call = output_context.tool_call
        name = output_context.function_name or (call.tool_name if call else "output")
        args = call.args_as_json_str() if call else json.dumps({"output": to_jsonable_python(output)})
        verdict = await self._live().atool_call(name, args, tool_call_id=call.tool_call_id if call else None)
        if verdict.kind != "run":
            raise ModelRetry(verdict.reason or "")
        if verdict.rewritten:
            raise _unsupported(
                verdict.by, f"rewrote the arguments of the output function `{name}`, which PydanticAI cannot run rewritten"
            )
        return output


def _unsupported(plugin: Optional[str], detail: str) -> FailedClosed:
    plugin = plugin or "hookbox"
    return FailedClosed(
        f"hookbox stopped the run: plugin {json.dumps(plugin)} failed closed (unsupported-flow): {detail}",
        plugin=plugin, cause="unsupported-flow", detail=detail,
    )
