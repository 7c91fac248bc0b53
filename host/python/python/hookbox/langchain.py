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
| tool-result | `wrap_tool_call`, after the tool | its answer | each message of the answer with the rewritten content, in the content's own shape (text, or content blocks) | — | raised |

A rewrite never grants: LangChain's own human-in-the-loop middleware
still decides. Every message a tool answers with is guarded as its result,
whatever its type and its content's shape: a `ToolMessage` (text, or
content blocks of any type: `text`, `json` ...), the messages of a
`Command`'s update (dicts or messages, a `ToolMessage` or any other), and a
list of these.

An invocation that ends in an exception never reaches `after_agent`, so
the middleware ends its run as the exception passes: a stop raised by the
guards, and an error out of the model call or the tool (a provider's
error, a tool's own exception), but not LangGraph's interrupts, after which
the invocation resumes. The run's instances go back at once; its end
stays, so a tool call running beside it in the same turn (parallel tool
calls) raises the same stop, not another error. Put `HookboxMiddleware`
first in the list, outside any retrying middleware, so an error that
reaches it is the invocation's end.

A run is let go, as each invocation starts, when it has been idle (no hook
of it in flight) for `idle_secs` (300 s by default), its invocation having
ended otherwise (a graph error between steps), or, paused by an interrupt
(human in the loop), for `paused_secs` (a day by default). A run with a
hook in flight (a long tool, a long model call) is never let go.
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
from langchain_core.messages import BaseMessage, SystemMessage, ToolMessage, convert_to_messages
from langgraph.errors import GraphBubbleUp

from . import FailedClosed, RequestVerdict, Run, Stack, ToolCallVerdict, ToolResultVerdict
from ._guards import check_heard
from ._messages import from_langchain, jsonable, text_of

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
    __slots__ = ("run", "prompt", "turns", "used", "busy", "paused")

    def __init__(self, run: Run, prompt: str) -> None:
        self.run = run
        self.prompt = prompt
        self.turns = 0
        self.used = time.monotonic()
        # Hooks of the run in flight: a run is never let go under one.
        self.busy = 0
        # Whether an interrupt paused its invocation.
        self.paused = False

    def idle_past(self, now: float, idle_secs: float, paused_secs: float) -> bool:
        if self.busy:
            return False
        return now - self.used > (paused_secs if self.paused else idle_secs)


class HookboxMiddleware(AgentMiddleware):  # type: ignore[type-arg]
    """hookbox's guards on a LangChain agent, from `stack`."""

    state_schema = HookboxState

    def __init__(
        self, stack: Stack, *, idle_secs: float = 300, paused_secs: float = 86400, unheard: str = "refuse"
    ) -> None:
        super().__init__()
        check_heard(stack, _FRAMEWORK, unheard)
        self.stack = stack
        self.idle_secs = idle_secs
        self.paused_secs = paused_secs
        self._runs: dict[str, _Live] = {}
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return "hookbox"

    # The run: one per invocation.

    def before_agent(self, state: Any, runtime: Any) -> dict[str, Any]:
        now = time.monotonic()
        with self._lock:
            idle = [k for k, live in self._runs.items() if live.idle_past(now, self.idle_secs, self.paused_secs)]
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
        invocation: its run is closed now, since `after_agent` will not be
        called, and stays listed, so a sibling call of the same turn gets
        the run's own end. An interrupt is a pause, not an end."""
        with self._lock:
            live.busy += 1
            live.paused = False
        try:
            yield
        except GraphBubbleUp:
            with self._lock:
                live.paused = True
            raise
        except BaseException:
            live.run.close()
            raise
        finally:
            with self._lock:
                live.busy -= 1
                live.used = time.monotonic()

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

    def _patched(self, run: Run, request: ModelRequest, verdict: RequestVerdict, system: Optional[str]) -> ModelRequest:
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
                raise run.end(str(why), plugin=verdict.by) from None
        if "active_tools" in patch:
            allowed = set(patch["active_tools"])
            changes["tools"] = [t for t in request.tools if _tool_name(t) in allowed]
        return request.override(**changes)

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> ModelResponse:
        live, messages, system = self._ask_model(request)
        with self._asking(live):
            verdict = live.run.completion_call(
                live.prompt, messages, live.turns, supported=_PATCHABLE, framework=_FRAMEWORK)
            return handler(self._patched(live.run, request, verdict, system))

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        live, messages, system = self._ask_model(request)
        with self._asking(live):
            verdict = await live.run.acompletion_call(
                live.prompt, messages, live.turns, supported=_PATCHABLE, framework=_FRAMEWORK)
            return await handler(self._patched(live.run, request, verdict, system))

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
            answer = _normalized(handler(request))
            return _guarded(answer, lambda message: live.run.tool_result(
                call["name"], args, jsonable(message.content), tool_call_id=_call_id(message, call)))

    async def awrap_tool_call(self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[Any]]) -> Any:
        call = request.tool_call
        live = self._live(request.state)
        with self._asking(live):
            verdict = await live.run.atool_call(call["name"], call.get("args") or {}, tool_call_id=call.get("id"))
        if verdict.kind != "run":
            return _refused(call, verdict)
        request, args = _with_args(request, verdict)
        with self._asking(live):
            answer = _normalized(await handler(request))
            verdicts = {}
            for message in _messages(answer):
                verdicts[id(message)] = await live.run.atool_result(
                    call["name"], args, jsonable(message.content), tool_call_id=_call_id(message, call))
            return _guarded(answer, lambda message: verdicts[id(message)])


def _refused(call: Any, verdict: ToolCallVerdict) -> ToolMessage:
    return ToolMessage(content=verdict.reason or "", tool_call_id=call.get("id") or "", name=call["name"], status="error")


def _with_args(request: ToolCallRequest, verdict: ToolCallVerdict) -> tuple[ToolCallRequest, str]:
    args = verdict.args or "{}"
    if verdict.rewritten:
        request = request.override(tool_call={**request.tool_call, "args": verdict.args_dict()})
    return request, args


def _call_id(message: BaseMessage, call: Any) -> Optional[str]:
    return getattr(message, "tool_call_id", None) or call.get("id")


def _normalized(answer: Any) -> Any:
    """A tool's answer with the messages of every `Command` in it as
    LangChain messages (an update may hold dicts, which LangGraph converts
    only after the guards would have looked)."""
    if isinstance(answer, list):
        return [_normalized(item) for item in answer]
    update = getattr(answer, "update", None)
    if isinstance(update, dict) and update.get("messages"):
        messages = update["messages"]
        update = {**update, "messages": convert_to_messages(messages if isinstance(messages, list) else [messages])}
        return dataclasses.replace(answer, update=update)
    return answer


def _messages(answer: Any) -> list[BaseMessage]:
    """Every message in a tool's answer (after `_normalized`): a message,
    those of a `Command`'s update, and those of each item of a list."""
    if isinstance(answer, BaseMessage):
        return [answer]
    if isinstance(answer, list):
        return [m for item in answer for m in _messages(item)]
    update = getattr(answer, "update", None)
    messages = update.get("messages", []) if isinstance(update, dict) else []
    return [m for m in messages if isinstance(m, BaseMessage)]


def _guarded(answer: Any, verdict_of: Callable[[BaseMessage], ToolResultVerdict]) -> Any:
    """`answer` with each of its messages as the guards let the model read
    it, each content in its own shape."""
    if isinstance(answer, BaseMessage):
        verdict = verdict_of(answer)
        if verdict.kind == "replace":
            return answer.model_copy(update={"content": verdict.value})
        return answer
    if isinstance(answer, list):
        return [_guarded(item, verdict_of) for item in answer]
    if not _messages(answer):
        return answer
    update = dict(answer.update)
    update["messages"] = [_guarded(m, verdict_of) for m in update["messages"]]
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
