"""toolguard in Python: denies tool calls by name and argument pattern, and
redacts secrets from tool results. The behaviour is specified in
languages/README.md; languages/conformance/ checks this build against it."""

import re

import wit_world
from wit_world.imports import config, scratchpad
from wit_world.imports.types import (
    EventKind,
    Flow_Continue,
    Flow_RewriteResult,
    Flow_Skip,
    Flow_Terminate,
    LogLevel,
    StepEvent_ToolCall,
    StepEvent_ToolResult,
)

DEFAULTS = {
    "deny": "",
    "deny_args": "*rm -rf*,*.ssh/*",
    "secret_prefixes": "sk-,ghp_,AKIA,xoxb-",
    "secret_names": "PASSWORD,SECRET,TOKEN,API_KEY",
}

# WS* ("export" WS+)? Q? NAME Q? WS* SEP, read left to right: `export`
# followed by a blank is always the prefix, never the NAME.
EXPORT = re.compile(r"[ \t]*export[ \t]")
EXPORTED = re.compile(r"[ \t]*export[ \t]+[\"']?([A-Za-z0-9_-]+)[\"']?[ \t]*[=:]")
PLAIN = re.compile(r"[ \t]*[\"']?([A-Za-z0-9_-]+)[\"']?[ \t]*[=:]")
TOKEN = re.compile(r"[A-Za-z0-9_-]+")
ASCII_UPPER = str.maketrans("abcdefghijklmnopqrstuvwxyz-", "ABCDEFGHIJKLMNOPQRSTUVWXYZ_")


class WitWorld(wit_world.WitWorld):
    def subscriptions(self):
        return [EventKind.TOOL_CALL, EventKind.TOOL_RESULT]

    def on_event(self, ctx, event):
        if isinstance(event, StepEvent_ToolCall):
            return check_call(event.value.tool_name, event.value.args)
        if isinstance(event, StepEvent_ToolResult):
            result = event.value.result
            redacted = redact(result)
            return Flow_Continue() if redacted == result else Flow_RewriteResult(redacted)
        return Flow_Continue()


def check_call(name, args):
    max_setting = config.get("max_denials")
    max_denials = None
    if max_setting is not None:
        max_denials = parse_max(max_setting)
        if max_denials is None:
            return Flow_Terminate(
                f"toolguard: `max_denials` must be a positive integer, got `{max_setting}`"
            )
    reason = denial(name, args)
    if reason is None:
        return Flow_Continue()
    count = int(scratchpad.get("denials") or "0") + 1
    scratchpad.set("denials", str(count))
    wit_world.log(LogLevel.WARN, reason)
    if max_denials is not None and count >= max_denials:
        return Flow_Terminate(
            f"toolguard: {count} tool calls denied in this run (max_denials is {max_denials})"
        )
    return Flow_Skip(reason)


def denial(name, args):
    if any(matches(p, name) for p in setting("deny")):
        return f"toolguard: `{name}` is denied by policy"
    for pattern in setting("deny_args"):
        if matches(pattern, args):
            return f"toolguard: the arguments of `{name}` match `{pattern}`"
    return None


def parse_max(value):
    """1 to 6 ASCII digits, at least 1; None when invalid."""
    if re.fullmatch(r"[0-9]{1,6}", value) is None:
        return None
    number = int(value)
    return number if number >= 1 else None


def setting(key):
    """A comma-separated setting, or its default when unset."""
    value = config.get(key)
    if value is None:
        value = DEFAULTS[key]
    items = (item.strip(" \t") for item in value.split(","))
    return [item for item in items if item]


def matches(pattern, text):
    """Whole-text match where `*` is any run of characters."""
    parts = pattern.split("*")
    if len(parts) == 1:
        return pattern == text
    first, *middle, last = parts
    if not text.startswith(first):
        return False
    at = len(first)
    for part in middle:
        found = text.find(part, at)
        if found < 0:
            return False
        at = found + len(part)
    return len(text) - at >= len(last) and text.endswith(last)


def upper(name):
    """ASCII upper case, with `-` read as `_`."""
    return name.translate(ASCII_UPPER)


def redact(text):
    prefixes = setting("secret_prefixes")
    names = [upper(n) for n in setting("secret_names")]
    # Most text has no secret: rule it out with str searches (C code) before
    # any per-line work in Python.
    if "=" not in text and ":" not in text and not any(p in text for p in prefixes):
        return text
    # Lines end after each "\n" (str.splitlines would also split at \r,
    # \x0b, \u2028 and others).
    lines = text.split("\n")
    lines = [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])
    return "".join(redact_assignment(line, names) or redact_tokens(line, prefixes) for line in lines)


def redact_assignment(line, names):
    if "=" not in line and ":" not in line:
        return None
    match = (EXPORTED if EXPORT.match(line) else PLAIN).match(line)
    if match is None:
        return None
    rest = line[match.end():]
    name = upper(match.group(1))
    if not rest.strip(" \t\r\n") or not any(name.endswith(n) for n in names):
        return None
    return match.group(0) + "[REDACTED]" + ("\n" if line.endswith("\n") else "")


def redact_tokens(line, prefixes):
    if not any(p in line for p in prefixes):
        return line

    def replace(token):
        token = token.group(0)
        secret = any(token.startswith(p) and len(token) >= len(p) + 8 for p in prefixes)
        return "[REDACTED]" if secret else token

    return TOKEN.sub(replace, line)
