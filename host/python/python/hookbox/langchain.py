"""hookbox guards for LangChain agents (`langchain` 1.x `create_agent`).

    agent = create_agent(model, tools, middleware=[
        hookbox.langchain.HookboxMiddleware(hookbox.Stack.from_directory("plugins")),
    ])

Each agent invocation is one hookbox run (started in `before_agent`, ended
in `after_agent`). Each hookbox event maps to the middleware's own hooks,
sync and async alike:

| hookbox event | middleware hook | continue | a rewrite | skip / refuse | the run ends (`Stopped`) |
|---|---|---|---|---|---|
| completion-call | `wrap_model_call` | the request as it was | this call only (`request.override`): `preamble` and `extra_context` the system message, `temperature`, `max_tokens` and `additional_params` the model settings, `tool_choice`, `active_tools` the tools; a `history` patch cannot be mapped back to LangChain's messages: `FailedClosed` (unsupported-flow), never dropped | — | raised out of `invoke` / `ainvoke` |
| tool-call | `wrap_tool_call` | the tool runs | the tool runs with the rewritten arguments | a `ToolMessage` (status `error`) with the reason; the tool does not run | raised |
| tool-result | `wrap_tool_call`, after the tool | its `ToolMessage` | the `ToolMessage` with the rewritten content | — | raised |

A rewrite never grants: LangChain's own human-in-the-loop middleware
still decides. A tool that answers with a `Command` has each `ToolMessage`
of its update guarded as a result.

An invocation that ends in an exception never reaches `after_agent`, so
the middleware lets its run go as the exception passes: a stop raised by
the guards, and an error out of the model call or the tool (a provider's
error, a tool's own exception), but not LangGraph's interrupts, after which
the invocation resumes. Put `HookboxMiddleware` first in the list, outside
any retrying middleware, so an error that reaches it is the invocation's
end. A run whose invocation ended otherwise (a graph error between steps)
is let go once it has been idle for `idle_secs` (300 s by default),
checked as each invocation starts.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, Optional

from langchain.agents import AgentState
from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse, ToolCallRequest
from langchain_core.messages import SystemMessage, ToolMessage
from langgraph.errors import GraphBubbleUp

from . import FailedClosed, RequestVerdict, Stopped, Run, Stack, ToolCallVerdict, ToolResultVerdict
from ._messages import from_langchain, text_of

try:
    from typing import NotRequired
except ImportError:  # Python 3.10
    from typing_extensions import NotRequired

__all__ = ["HookboxMiddleware"]

_FRAMEWORK = "LangChain"
_PATCHABLE = ["preamble", "extra_context", "temperature", "max_tokens", "additional_params",
              "tool_choice", "active_tools"]


class HookboxState(AgentState):
    """The agent state's one extra key: the invocation's hookbox run id."""

    hookbox_run: NotRequired[str]


class _Live:
    __slots__ = ("run", "prompt", "turns", "used")

    def __init__(self, run: Run, prompt: str) -> None:
        self.run = run
        self.prompt = prompt
        self.turns = 0
        self.used = time.monotonic()


class HookboxMiddleware(AgentMiddleware):  # type: ignore[type-arg]
    """hookbox's guards on a LangChain agent, from `stack`."""

    state_schema = HookboxState

    def __init__(self, stack: Stack, *, idle_secs: float = 300) -> None:
        super().__init__()
        self.stack = stack
        self.idle_secs = idle_secs
        self._runs: dict[str, _Live] = {}
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return "hookbox"

    # The run: one per invocation.

    def before_agent(self, state: Any, runtime: Any) -> dict[str, Any]:
        now = time.monotonic()
        with self._lock:
            idle = [k for k, live in self._runs.items() if now - live.used > self.idle_secs]
            ended = [self._runs.pop(k) for k in idle]
        for live in ended:
            live.run.close()
        run = self.stack.start_run()
        prompt = next((text_of(m.content) for m in state["messages"] if getattr(m, "type", "") == "human"), "")
        with self._lock:
            self._runs[run.run_id] = _Live(run, prompt)
        return {"hookbox_run": run.run_id}

    async def abefore_agent(self, state: Any, runtime: Any) -> dict[str, Any]:
        return self.before_agent(state, runtime)

    def after_agent(self, state: Any, runtime: Any) -> None:
        with self._lock:
            live = self._runs.pop(state.get("hookbox_run", ""), None)
        if live is not None:
            live.run.close()

    async def aafter_agent(self, state: Any, runtime: Any) -> None:
        self.after_agent(state, runtime)

    @contextlib.contextmanager
    def _asking(self, live: _Live) -> Iterator[None]:
        """A stop, or an error out of the model or the tool, ends the
        invocation: its run is let go now, since `after_agent` will not be
        called. An interrupt is a pause, not an end."""
        try:
            yield
        except GraphBubbleUp:
            raise
        except BaseException:
            with self._lock:
                self._runs.pop(live.run.run_id, None)
            live.run.close()
            raise

    def _live(self, state: Any) -> _Live:
        with self._lock:
            live = self._runs.get(state.get("hookbox_run", "") if state else "")
            if live is not None:
                live.used = time.monotonic()
        if live is None:
            raise FailedClosed(
                "hookbox stopped the run: no hookbox run for this invocation (is HookboxMiddleware in the agent's middleware?)",
                plugin="hookbox", cause="limit", detail="no hookbox run for this invocation",
            )
        return live

    # Model calls.

    def _ask_model(self, request: ModelRequest) -> tuple[_Live, list[Any], Optional[str]]:
        live = self._live(request.state)
        live.turns += 1
        system = request.system_prompt
        return live, from_langchain(request.messages, system), system

    def _patched(self, request: ModelRequest, verdict: RequestVerdict, system: Optional[str]) -> ModelRequest:
        verdict.require_only(_FRAMEWORK, _PATCHABLE)
        if verdict.kind == "continue":
            return request
        patch = verdict.patch
        changes: dict[str, Any] = {}
        if "preamble" in patch or "extra_context" in patch:
            text = verdict.system(system)
            changes["system_message"] = SystemMessage(content=text) if text is not None else None
        settings = dict(request.model_settings or {})
        for field in ("temperature", "max_tokens"):
            if field in patch:
                settings[field] = patch[field]
        if "additional_params" in patch:
            settings.update(json.loads(patch["additional_params"]))
        if settings != (request.model_settings or {}):
            changes["model_settings"] = settings
        if "tool_choice" in patch:
            try:
                changes["tool_choice"] = _tool_choice(patch["tool_choice"])
            except ValueError as why:
                raise FailedClosed(
                    f"hookbox stopped the run: plugin {verdict.by!r} failed closed (unsupported-flow): {why}",
                    plugin=verdict.by or "hookbox", cause="unsupported-flow", detail=str(why),
                ) from None
        if "active_tools" in patch:
            allowed = set(patch["active_tools"])
            changes["tools"] = [t for t in request.tools if _tool_name(t) in allowed]
        return request.override(**changes)

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> ModelResponse:
        live, messages, system = self._ask_model(request)
        with self._asking(live):
            verdict = live.run.completion_call(live.prompt, messages, live.turns)
            return handler(self._patched(request, verdict, system))

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        live, messages, system = self._ask_model(request)
        with self._asking(live):
            verdict = await live.run.acompletion_call(live.prompt, messages, live.turns)
            return await handler(self._patched(request, verdict, system))

    # Tool calls and their results.

    def wrap_tool_call(self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Any]) -> Any:
        call = request.tool_call
        live = self._live(request.state)
        with self._asking(live):
            verdict = live.run.tool_call(call["name"], call.get("args") or {}, tool_call_id=call.get("id"))
        if verdict.kind != "run":
            return _refused(call, verdict)
        request, args = _with_args(request, verdict)
        with self._asking(live):
            answer = handler(request)
            return _guarded(answer, lambda message: live.run.tool_result(
                call["name"], args, text_of(message.content), tool_call_id=message.tool_call_id or call.get("id")))

    async def awrap_tool_call(self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[Any]]) -> Any:
        call = request.tool_call
        live = self._live(request.state)
        with self._asking(live):
            verdict = await live.run.atool_call(call["name"], call.get("args") or {}, tool_call_id=call.get("id"))
        if verdict.kind != "run":
            return _refused(call, verdict)
        request, args = _with_args(request, verdict)
        with self._asking(live):
            answer = await handler(request)
            verdicts = {}
            for message in _tool_messages(answer):
                verdicts[id(message)] = await live.run.atool_result(
                    call["name"], args, text_of(message.content), tool_call_id=message.tool_call_id or call.get("id"))
            return _guarded(answer, lambda message: verdicts[id(message)])


def _refused(call: Any, verdict: ToolCallVerdict) -> ToolMessage:
    return ToolMessage(content=verdict.reason or "", tool_call_id=call.get("id") or "", name=call["name"], status="error")


def _with_args(request: ToolCallRequest, verdict: ToolCallVerdict) -> tuple[ToolCallRequest, str]:
    args = verdict.args or "{}"
    if verdict.rewritten:
        request = request.override(tool_call={**request.tool_call, "args": verdict.args_dict()})
    return request, args


def _tool_messages(answer: Any) -> list[ToolMessage]:
    """The results in a tool's answer: a `ToolMessage`, or those of a
    `Command`'s update."""
    if isinstance(answer, ToolMessage):
        return [answer]
    update = getattr(answer, "update", None)
    messages = update.get("messages", []) if isinstance(update, dict) else []
    return [m for m in messages if isinstance(m, ToolMessage)]


def _guarded(answer: Any, verdict_of: Callable[[ToolMessage], ToolResultVerdict]) -> Any:
    """`answer` with each of its results as the guards let the model read
    it."""
    def guarded(message: ToolMessage) -> ToolMessage:
        verdict = verdict_of(message)
        if verdict.kind == "replace":
            return message.model_copy(update={"content": verdict.text})
        return message

    if isinstance(answer, ToolMessage):
        return guarded(answer)
    if not _tool_messages(answer):
        return answer
    update = dict(answer.update)
    update["messages"] = [guarded(m) if isinstance(m, ToolMessage) else m for m in update["messages"]]
    return dataclasses.replace(answer, update=update)


def _tool_name(tool: Any) -> str:
    if isinstance(tool, dict):
        return str(tool.get("name") or tool.get("function", {}).get("name", ""))
    return str(getattr(tool, "name", ""))


def _tool_choice(choice: Any) -> Any:
    """hookbox's tool choice as LangChain's: `auto`, `none`, `any`
    (required), or a tool's name."""
    if isinstance(choice, str):
        return "any" if choice == "required" else choice
    names = choice.get("specific") if isinstance(choice, dict) else None
    if isinstance(names, list) and len(names) == 1:
        return names[0]
    if isinstance(names, list):
        raise ValueError(f"patched the tool choice to several specific tools ({', '.join(names)}), which LangChain cannot express")
    return choice
