"""hookbox: sandboxed, fail-closed WebAssembly guards for Python agents.

    import hookbox

    stack = hookbox.Stack.from_directory("plugins")   # hot-reloaded
    run = stack.start_run()                          # pinned to this version
    verdict = run.tool_call("shell", {"cmd": "rm -rf /"})
    if verdict.kind != "run":
        ...                                          # do not run it

Guards are WebAssembly components (any language), each in its own sandbox
with no capability it was not given and no state shared between runs. A
guard that traps, hangs, eats memory or answers what the event cannot honour
ends the run with `FailedClosed`, naming the plugin and the cause; every
later event of that run raises the same.

Every guard call releases the GIL: threads drive runs at once, and the
`a`-prefixed methods (`asend`, `atool_call` ...) run the call on a worker
thread so the event loop goes on. Framework guards: `hookbox.openai_agents`,
`hookbox.langchain`, `hookbox.pydantic_ai`.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable, Mapping
from typing import Any, Optional, Union

from . import events
from ._native import HOST, Decision, RequestVerdict, ToolCallVerdict, ToolResultVerdict
from ._native import Run as _NativeRun
from ._native import Stack as _NativeStack
from .errors import FailedClosed, HookboxError, InvalidEvent, LoadError, Stopped, Terminated

__all__ = [
    "HOST",
    "Decision",
    "FailedClosed",
    "HookboxError",
    "InvalidEvent",
    "LoadError",
    "RequestVerdict",
    "Run",
    "Stack",
    "Stopped",
    "Terminated",
    "ToolCallVerdict",
    "ToolResultVerdict",
    "events",
]

Args = Union[str, Mapping[str, Any]]
"""A tool call's arguments: a dict, or JSON object text."""


class Stack:
    """Guard plugins that runs start on: a watched directory, or files."""

    __slots__ = ("_native",)

    def __init__(self, native: _NativeStack) -> None:
        self._native = native

    @classmethod
    def from_directory(
        cls,
        directory: Union[str, os.PathLike[str]],
        *,
        watch: bool = True,
        debounce_ms: int = 200,
        max_instances: Optional[int] = None,
    ) -> Stack:
        """The plugins of `directory` (as its `hookbox.toml` lists them, or
        every `*.wasm` in it). Watched: a change loads in the background and
        new runs take it, while runs already started keep the version they
        started on. `watch=False` loads it once. `max_instances` bounds the
        plugin instances live at once (a run holds one per plugin); stacks
        made with the same `max_instances` share one runtime, and so that
        bound.

        Raises `LoadError` when the directory cannot be read or watched; a
        plugin that does not load is listed in `plugins` with its error (and
        a required one fails every run closed, naming it)."""
        return cls(
            _NativeStack.from_directory(
                os.fspath(directory),
                watch=watch,
                debounce_ms=debounce_ms,
                max_instances=max_instances,
            )
        )

    @classmethod
    def from_files(
        cls,
        paths: Iterable[Union[str, os.PathLike[str]]],
        *,
        config: Optional[Mapping[str, Mapping[str, str]]] = None,
        max_instances: Optional[int] = None,
    ) -> Stack:
        """The plugins at `paths`, asked in that order, each named for its
        file stem; `config` maps a name to that plugin's configuration.

        Raises `LoadError` naming the plugin and the phase when one does not
        load."""
        return cls(
            _NativeStack.from_files(
                [os.fspath(p) for p in paths],
                config={k: dict(v) for k, v in (config or {}).items()},
                max_instances=max_instances,
            )
        )

    def start_run(self, run_id: Optional[str] = None) -> Run:
        """A run (one agent session or task) on the newest version of the
        stack, which it keeps to its end. Each run has guest instances of
        its own: no guard state is shared between runs."""
        return Run(self._native.start_run(run_id))

    @property
    def generation(self) -> int:
        """The version new runs start on: 1, plus one per reload."""
        return self._native.generation

    @property
    def plugins(self) -> list[dict[str, Any]]:
        """Each plugin and how it loaded (`name`, `loaded`, and for a
        directory `file`, `required`, `mode`, `error`)."""
        return self._native.plugins

    @property
    def directory_error(self) -> Optional[str]:
        """Why a watched directory's latest change did not load (the
        previous version stays live), if it did not."""
        return self._native.directory_error

    def reload(self) -> int:
        """Reloads a watched directory now; returns the new generation."""
        return self._native.reload()

    def unheard(self, sent: Iterable[str]) -> list[str]:
        """The plugins new runs get that subscribe to none of the events
        named in `sent` (`"tool-call"` ...): guards that a caller sending
        only those events would never ask."""
        return self._native.unheard(list(sent))

    def __repr__(self) -> str:
        return repr(self._native)


class Run:
    """One agent run's guards. Safe to share between threads; its events
    are decided one at a time, in order."""

    __slots__ = ("_native",)

    def __init__(self, native: _NativeRun) -> None:
        self._native = native

    def send(self, event: Union[events.Event, str]) -> Decision:
        """Asks the guards about `event` (a dict in hookbox's JSON form, a
        `hookbox.events` TypedDict, or its JSON text); returns their
        decision. Raises `FailedClosed` when the run failed closed (now or
        earlier), `InvalidEvent` for input that is no event. A text-delta's
        (and a stream-response-finish's) decision has `show`: the streamed
        text to display now, held back where a guard may still redact it
        (docs/contract.md#streamed-text)."""
        return self._native.send(event)

    def text_done(self) -> str:
        """The streamed text ended: the rest of it the guards held back, as
        they last decided it."""
        return self._native.text_done()

    def tool_call(
        self, tool_name: str, args: Args, *, tool_call_id: Optional[str] = None
    ) -> ToolCallVerdict:
        """Before a tool runs: `kind` is `run` (with `args`, the guards'
        rewrite or the call's own in canonical form), `skip` (answer
        `reason` instead of running it) or `refuse` (do not run it; the run
        goes on). A rewrite is never an approval: the framework's own
        permissions still decide. Raises `Stopped` when the run ends."""
        return self._native.tool_call(tool_name, args, tool_call_id=tool_call_id)

    def tool_result(
        self,
        tool_name: str,
        args: Args,
        result: Any,
        *,
        tool_call_id: Optional[str] = None,
    ) -> ToolResultVerdict:
        """After a tool ran with `args`: `result` is text, or any value JSON
        can carry (a list, records, content blocks), which the guards read
        whole as its JSON text. `kind` is `keep`, or `replace`: `value` is
        what the model reads instead, in the result's own shape (a str for
        a str, the same structure for anything else), `text` the same as
        text. Raises `Stopped` when the run ends."""
        return self._native.tool_result(tool_name, args, result, tool_call_id=tool_call_id)

    def completion_call(
        self,
        prompt: str,
        messages: list[events.Message],
        turn: int,
        *,
        supported: Optional[list[str]] = None,
        framework: Optional[str] = None,
    ) -> RequestVerdict:
        """Before a model call: `kind` is `continue`, or `patch`, this turn
        only (`system()` gives the system text it makes). With `supported`,
        the patch fields `framework` can apply, a patch of any other field
        ends the run (`FailedClosed`, unsupported-flow) rather than be
        dropped. Raises `Stopped` when the run ends."""
        return self._native.completion_call(
            prompt, messages, turn, supported=supported, framework=framework
        )

    def end(self, detail: str, *, cause: str = "unsupported-flow", plugin: Optional[str] = None) -> Stopped:
        """Ends the run with a stop the caller decided (a framework guard
        that cannot apply what a guard answered): `FailedClosed` naming
        `plugin` (or the host) with `cause` and `detail`. Every later event
        raises it again, as it would a guard's own stop; a run already over
        keeps its end. Returns the exception to raise."""
        return self._native.end(detail, cause=cause, plugin=plugin)

    async def asend(self, event: Union[events.Event, str]) -> Decision:
        """`send`, on a worker thread: the event loop goes on meanwhile."""
        return await asyncio.to_thread(self._native.send, event)

    async def atool_call(
        self, tool_name: str, args: Args, *, tool_call_id: Optional[str] = None
    ) -> ToolCallVerdict:
        """`tool_call`, on a worker thread."""
        return await asyncio.to_thread(
            self._native.tool_call, tool_name, args, tool_call_id=tool_call_id
        )

    async def atool_result(
        self,
        tool_name: str,
        args: Args,
        result: Any,
        *,
        tool_call_id: Optional[str] = None,
    ) -> ToolResultVerdict:
        """`tool_result`, on a worker thread."""
        return await asyncio.to_thread(
            self._native.tool_result, tool_name, args, result, tool_call_id=tool_call_id
        )

    async def acompletion_call(
        self,
        prompt: str,
        messages: list[events.Message],
        turn: int,
        *,
        supported: Optional[list[str]] = None,
        framework: Optional[str] = None,
    ) -> RequestVerdict:
        """`completion_call`, on a worker thread."""
        return await asyncio.to_thread(
            self._native.completion_call, prompt, messages, turn, supported=supported, framework=framework
        )

    def close(self) -> None:
        """Ends the run now, giving its plugin instances back to the
        runtime. A run that had ended raises its end again on every later
        event (the same `Terminated` or `FailedClosed`); one that had not
        raises `FailedClosed` naming the host. A run is also
        closed when Python collects it; `with stack.start_run() as run:`
        closes it at the block's end."""
        self._native.close()

    def __enter__(self) -> Run:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def run_id(self) -> str:
        """The run's id."""
        return self._native.run_id

    @property
    def generation(self) -> int:
        """The version of the stack the run is pinned to."""
        return self._native.generation

    @property
    def is_over(self) -> bool:
        """Whether the run has ended (every later event raises its end)."""
        return self._native.is_over

    @property
    def guards_ns(self) -> int:
        """Nanoseconds the run's guards have taken so far: each answer's,
        from asking the guest to its checked answer, summed (the decision
        log's `latency_us`). Neither hookbox's door nor Python is in it."""
        return self._native.guards_ns

    def __repr__(self) -> str:
        return repr(self._native)
