"""The exceptions hookbox raises. Every one is a `HookboxError`."""

from __future__ import annotations


class HookboxError(Exception):
    """Anything hookbox raises."""


class LoadError(HookboxError):
    """A stack could not be loaded: a plugin that is not a hookbox guard, a
    directory that cannot be read, a manifest that does not parse. The
    message names the plugin and the phase that failed."""


class InvalidEvent(HookboxError, ValueError):
    """Input that is not an event in hookbox's JSON form
    (docs/contract.md#json-forms), or
    that cannot be written as JSON. Nothing was asked."""


class Stopped(HookboxError):
    """The run is over: a guard ended it. Every later event of the run
    raises the same. `plugin` names the guard (or `hookbox` for the host)."""

    def __init__(self, message: str, *, plugin: str, **fields: str) -> None:
        super().__init__(message)
        self.plugin = plugin
        for name, value in fields.items():
            setattr(self, name, value)


class FailedClosed(Stopped):
    """A guard misbehaved (it trapped, ran out of time or memory, answered
    what the event cannot honour ...) or the host could not run it, so the
    run failed closed. `cause` is one of trap, deadline, memory, stack,
    oversized, unsupported-flow, invalid-json, load, limit; `detail` says
    what happened."""

    plugin: str
    cause: str
    detail: str


class Terminated(Stopped):
    """A guard answered `terminate`: `reason` is its reason, `event` the
    event it answered."""

    plugin: str
    event: str
    reason: str
