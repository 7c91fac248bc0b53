"""A framework's messages as hookbox's `{role, content}` (the completion-call
event's history): one function per framework's shape, nothing else."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from .events import Message

_ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant",
          "ai": "assistant", "human": "user", "tool": "tool"}


def text_of(content: Any) -> str:
    """A message's content as text: a string as is, a list of parts as
    their text joined, anything else as JSON."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif hasattr(part, "text") and isinstance(part.text, str):
                parts.append(part.text)
        return "\n".join(parts)
    return json.dumps(content, default=str)


def jsonable(value: Any) -> Any:
    """A tool's result as a value JSON can carry, its shape kept, for the
    guards to read whole: text as is; lists, tuples and dicts item by item;
    a model (pydantic, dataclass) as its fields; anything else as the text
    a framework would send for it (`str`)."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, (list, tuple)):
        return [jsonable(item) for item in value]
    if isinstance(value, dict):
        return {str(key): jsonable(item) for key, item in value.items()}
    if hasattr(value, "model_dump"):
        return jsonable(value.model_dump(mode="json"))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return jsonable(dataclasses.asdict(value))
    return str(value)


def from_responses_items(items: Any, instructions: str | None) -> list[Message]:
    """The OpenAI Responses input items a model call sends (the Agents SDK's
    `ModelInputData`), and its instructions first."""
    messages: list[Message] = []
    if instructions:
        messages.append({"role": "system", "content": instructions})
    if isinstance(items, str):
        return [*messages, {"role": "user", "content": items}]
    for item in items or []:
        if not isinstance(item, dict):
            item = item.model_dump() if hasattr(item, "model_dump") else {}
        kind = item.get("type")
        if kind == "function_call":
            messages.append({"role": "assistant",
                             "content": f"{item.get('name')}({item.get('arguments', '')})"})
        elif kind == "function_call_output":
            messages.append({"role": "tool", "content": text_of(item.get("output", ""))})
        elif item.get("role") in _ROLES:
            messages.append({"role": _ROLES[item["role"]], "content": text_of(item.get("content", ""))})  # type: ignore[typeddict-item]
    return messages


def from_langchain(messages: Any, system: str | None) -> list[Message]:
    """LangChain's messages (`BaseMessage`s: their `type` is the role), the
    system text first."""
    out: list[Message] = []
    if system:
        out.append({"role": "system", "content": system})
    for message in messages:
        role = _ROLES.get(getattr(message, "type", ""), "user")
        content = text_of(getattr(message, "content", ""))
        for call in getattr(message, "tool_calls", None) or []:
            content += f"\n{call.get('name')}({json.dumps(call.get('args', {}))})"
        out.append({"role": role, "content": content})  # type: ignore[typeddict-item]
    return out


def from_pydantic_ai(messages: Any, instructions: str | None) -> list[Message]:
    """PydanticAI's messages (requests and responses, each of parts), the
    instructions first."""
    out: list[Message] = []
    if instructions:
        out.append({"role": "system", "content": instructions})
    for message in messages:
        for part in getattr(message, "parts", []):
            kind = getattr(part, "part_kind", "")
            if kind == "system-prompt":
                out.append({"role": "system", "content": text_of(part.content)})
            elif kind == "user-prompt":
                out.append({"role": "user", "content": text_of(part.content)})
            elif kind == "text":
                out.append({"role": "assistant", "content": part.content})
            elif kind == "tool-call":
                out.append({"role": "assistant", "content": f"{part.tool_name}({part.args_as_json_str()})"})
            elif kind in ("tool-return", "retry-prompt"):
                out.append({"role": "tool", "content": text_of(part.content)})
    return out
