"""What every framework guard of this package checks when it is made."""

from __future__ import annotations

import warnings

from .errors import HookboxError

# The events the framework guards send: a plugin that waits only for
# others (a model's answer, streamed text) would never be asked.
SENT = ("completion-call", "tool-call", "tool-result")


def check_heard(stack: object, framework: str, unheard: str) -> None:
    """Refuses (`unheard="refuse"`, the default) or warns about
    (`unheard="warn"`) a stack holding plugins that subscribe only to events
    `framework`'s guard never sends. Checked when the guard is made: a
    watched directory's later versions are not."""
    if unheard not in ("refuse", "warn"):
        raise ValueError(f"unheard is 'refuse' or 'warn', not {unheard!r}")
    names = stack.unheard(SENT)  # type: ignore[attr-defined]
    if not names:
        return
    message = (
        f"the plugins {', '.join(names)} subscribe only to events hookbox's {framework} guard never sends "
        f"(it sends {', '.join(SENT)}), so they would never be asked; remove them from this stack, "
        "or pass unheard=\"warn\" to run without them"
    )
    if unheard == "refuse":
        raise HookboxError(message)
    warnings.warn(message, stacklevel=3)
