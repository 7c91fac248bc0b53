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
| tool-result | `after_tool_execute` | the result | the rewrite in the result's shape: text for a text result, the same structure for any other (a model's fields as a dict); a rewrite that does not fit the structure withholds every value | — | raised |
| tool-call of a deferred tool (external, or needing approval) | `before_tool_validate`, then `handle_deferred_tool_calls` | the call goes to the application | the call goes to the application with the rewritten arguments (recorded in the message history's call) | answered in the run with the reason (`ToolDenied` for an approval), never handed to the application | raised |
| tool-result of a deferred tool (`DeferredToolResults` on the next run) | `before_model_request`: each tool return of the newest request that no tool of this run produced | the result | the rewrite, in its shape, in the request and the history | — | raised |

A rewrite never grants: PydanticAI's own approvals (`ApprovalRequired`)
still decide. A skip is for its call only: one keyed by a tool-call id
that the model uses again for a later call does not carry over.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Optional

from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ModelRetry, SkipToolExecution
from pydantic_ai.messages import InstructionPart, ModelRequest, ToolCallPart, ToolReturnPart
from pydantic_ai.models import ModelRequestContext
from pydantic_ai.output import OutputContext
from pydantic_core import to_jsonable_python
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults, ToolDefinition, ToolDenied

from . import FailedClosed, Run, Stack
from ._guards import check_heard
from ._messages import from_pydantic_ai, text_of

__all__ = ["HookboxCapability"]

_FRAMEWORK = "PydanticAI"
_PATCHABLE = ["preamble", "extra_context", "temperature", "max_tokens", "additional_params",
              "tool_choice", "active_tools"]


class HookboxCapability(AbstractCapability[Any]):
    """hookbox's guards on a PydanticAI agent's runs, from `stack`."""

    def __init__(self, stack: Stack, *, unheard: str = "refuse", _checked: bool = False) -> None:
        super().__init__()
        if not _checked:
            check_heard(stack, _FRAMEWORK, unheard)
        self.stack = stack
        self._run: Optional[Run] = None
        self._prompt = ""
        self._turns = 0
        # Tool call id → the reason a guard skipped or refused it, until
        # the call is answered (executed, or deferred).
        self._skipped: dict[str, str] = {}
        # The tool calls this run answered (ran, skipped, or answered for
        # the application): their returns were guarded, or are a guard's.
        self._ran: set[str] = set()

    async def for_run(self, ctx: RunContext[Any]) -> HookboxCapability:
        return HookboxCapability(self.stack, _checked=True)

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
        self._skipped.clear()
        await self._deferred_results(run, request_context.messages)
        params = request_context.model_request_parameters
        parts = list(params.instruction_parts or [])
        instructions = "\n\n".join(p.content for p in parts) or None
        messages = from_pydantic_ai(request_context.messages, instructions)
        verdict = await run.acompletion_call(
            self._prompt, messages, self._turns, supported=_PATCHABLE, framework=_FRAMEWORK
        )
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
        self._skipped.pop(call.tool_call_id, None)
        raw = args if isinstance(args, str) else json.dumps(args)
        verdict = await self._live().atool_call(call.tool_name, raw, tool_call_id=call.tool_call_id)
        if verdict.kind != "run":
            self._skipped[call.tool_call_id] = verdict.reason or ""
            return args
        if not verdict.rewritten:
            return args
        # Recorded in the history's call too: a deferred call goes to the
        # application as that part.
        call.args = verdict.args
        if hasattr(call, "id"):
            call.id = None
        return verdict.args

    async def before_tool_execute(
        self, ctx: RunContext[Any], *, call: ToolCallPart, tool_def: ToolDefinition, args: dict[str, Any]
    ) -> dict[str, Any]:
        reason = self._skipped.pop(call.tool_call_id, None)
        if reason is not None:
            self._ran.add(call.tool_call_id)
            raise SkipToolExecution(reason)
        return args

    async def after_tool_execute(
        self, ctx: RunContext[Any], *, call: ToolCallPart, tool_def: ToolDefinition, args: dict[str, Any], result: Any
    ) -> Any:
        self._ran.add(call.tool_call_id)
        verdict = await self._live().atool_result(
            call.tool_name, to_jsonable_python(args), to_jsonable_python(result), tool_call_id=call.tool_call_id
        )
        return result if verdict.kind == "keep" else verdict.value

    async def handle_deferred_tool_calls(
        self, ctx: RunContext[Any], *, requests: DeferredToolRequests
    ) -> Optional[DeferredToolResults]:
        # A call a guard skipped or refused is answered here, with its
        # reason: it never reaches the application.
        answered = DeferredToolResults()
        for call in requests.calls:
            reason = self._skipped.pop(call.tool_call_id, None)
            if reason is not None:
                self._ran.add(call.tool_call_id)
                answered.calls[call.tool_call_id] = reason
        for call in requests.approvals:
            reason = self._skipped.pop(call.tool_call_id, None)
            if reason is not None:
                self._ran.add(call.tool_call_id)
                answered.approvals[call.tool_call_id] = ToolDenied(reason)
        return answered if answered.calls or answered.approvals else None

    async def _deferred_results(self, run: Run, messages: list[Any]) -> None:
        """Guards each tool return of the newest request that no tool of
        this run produced: the results of deferred calls the application
        ran, handed back with `DeferredToolResults`."""
        newest = messages[-1] if messages else None
        if not isinstance(newest, ModelRequest):
            return
        for part in newest.parts:
            if not isinstance(part, ToolReturnPart) or part.tool_call_id in self._ran:
                continue
            self._ran.add(part.tool_call_id)
            verdict = await run.atool_result(
                part.tool_name, {}, to_jsonable_python(part.content), tool_call_id=part.tool_call_id
            )
            if verdict.kind == "replace":
                part.content = verdict.value

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
