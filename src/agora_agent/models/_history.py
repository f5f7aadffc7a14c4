"""Vendor-neutral helpers the adapters share to map history to the wire and tool calls back.

Decisions recorded here apply to every adapter:

- Tool-call arguments that are not a JSON object (truncated stream, a model emitting prose) are
  NOT an adapter failure: the call is returned with input `{"_raw": "<the text>"}` so the loop's
  input validation rejects it and the model sees the error and can try again.
- Empty arguments (`""`) mean `{}`: several servers send nothing for a tool without parameters.
- A tool call without an id (some OpenAI-compatible servers) gets a generated `call_<hex>` id.
"""

from __future__ import annotations

import json
import math
import uuid
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from agora_agent.messages import Attachment, ToolCall, ToolResult

__all__ = [
    "RAW_ARGUMENTS_KEY",
    "ToolCallBuffer",
    "as_cost",
    "is_image",
    "parse_data_url",
    "parse_tool_arguments",
    "tool_result_text",
]

RAW_ARGUMENTS_KEY = "_raw"
"""Key under which unparseable tool-call arguments are passed on (see the module docstring)."""


def parse_tool_arguments(raw: str) -> dict[str, Any]:
    """The arguments as a dict; `{}` for empty text, `{"_raw": raw}` when not a JSON object."""
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return {RAW_ARGUMENTS_KEY: raw}
    return value if isinstance(value, dict) else {RAW_ARGUMENTS_KEY: raw}


def new_tool_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


@dataclass(slots=True)
class _PendingCall:
    id: str
    name: str
    fragments: list[str] = field(default_factory=list)


class ToolCallBuffer:
    """Assembles streamed tool calls whose argument JSON arrives in fragments, keyed by stream index."""

    def __init__(self) -> None:
        self._calls: dict[int, _PendingCall] = {}

    def __bool__(self) -> bool:
        return bool(self._calls)

    def start(self, index: int, call_id: str | None, name: str | None) -> None:
        """Record the id/name of call `index`; repeated starts only fill in what was missing."""
        pending = self._calls.get(index)
        if pending is None:
            self._calls[index] = _PendingCall(id=call_id or "", name=name or "")
            return
        if call_id and not pending.id:
            pending.id = call_id
        if name and not pending.name:
            pending.name = name

    def append(self, index: int, fragment: str) -> None:
        if index not in self._calls:
            self.start(index, None, None)
        self._calls[index].fragments.append(fragment)

    def finish(self) -> tuple[ToolCall, ...]:
        """The calls in stream order, arguments parsed (see `parse_tool_arguments`)."""
        return tuple(
            ToolCall(
                id=pending.id or new_tool_call_id(),
                name=pending.name,
                input=parse_tool_arguments("".join(pending.fragments)),
            )
            for _, pending in sorted(self._calls.items())
        )


def tool_result_text(result: ToolResult) -> str:
    """Tool output as the model reads it; failures are marked for wires without an error flag."""
    return f"Error: {result.content}" if result.is_error else result.content


def is_image(attachment: Attachment) -> bool:
    return attachment.content_type.lower().startswith("image/")


def parse_data_url(url: str) -> tuple[str, str] | None:
    """`(media_type, base64_payload)` for a base64 `data:` URL, else None."""
    if not url.startswith("data:"):
        return None
    header, sep, payload = url[5:].partition(",")
    if not sep or not header.endswith(";base64"):
        return None
    return header[: -len(";base64")] or "application/octet-stream", payload


def as_cost(value: object) -> float | None:
    """A provider-reported cost as a finite, non-negative float; numbers or numeric strings."""
    if isinstance(value, bool) or not isinstance(value, int | float | str | Decimal):
        return None
    try:
        cost = float(value)
    except ValueError:
        return None
    return cost if math.isfinite(cost) and cost >= 0 else None
