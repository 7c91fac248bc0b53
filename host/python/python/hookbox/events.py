"""The events a run's guards are asked about, in hookbox's JSON form
(docs/contract.md#json-forms), as TypedDicts: `ToolCall(event="tool-call", tool_name="shell",
args={"cmd": "ls"})` is the dict `Run.send` takes. `args` may be a dict or
JSON object text."""

from __future__ import annotations

import sys
from typing import Any, Literal, TypedDict, Union

if sys.version_info >= (3, 11):
    from typing import NotRequired
else:
    from typing_extensions import NotRequired


class Message(TypedDict):
    role: Literal["system", "user", "assistant", "tool"]
    content: str


class Usage(TypedDict):
    input_tokens: int
    output_tokens: int


class CompletionCall(TypedDict):
    event: Literal["completion-call"]
    prompt: str
    history: NotRequired[list[Message]]
    turn: NotRequired[int]


class ModelTurnFinished(TypedDict):
    event: Literal["model-turn-finished"]
    turn: int
    content: str
    usage: NotRequired[Usage]


class ToolCall(TypedDict):
    event: Literal["tool-call"]
    tool_name: str
    args: Union[str, dict[str, Any]]
    tool_call_id: NotRequired[str]
    internal_call_id: NotRequired[str]


class ToolResult(TypedDict):
    event: Literal["tool-result"]
    tool_name: str
    result: str
    args: NotRequired[Union[str, dict[str, Any]]]
    tool_call_id: NotRequired[str]
    internal_call_id: NotRequired[str]


class InvalidToolCall(TypedDict):
    event: Literal["invalid-tool-call"]
    tool_name: str
    args: str
    available_tools: list[str]
    allowed_tools: list[str]
    tool_call_id: NotRequired[str]


Event = Union[CompletionCall, ModelTurnFinished, ToolCall, ToolResult, InvalidToolCall, dict]
"""Any event: the TypedDicts above, or a dict of any other kind in the JSON form."""
