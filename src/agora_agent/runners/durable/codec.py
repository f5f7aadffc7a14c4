"""A JSON codec for what durable steps return and workflows take (notes P9: never pickle).

DBOS stores step outputs with its portable JSON serializer, so anyone who can write the system
database can only ever hand a worker JSON. The loop's step results are small dataclasses; they are
written as tagged JSON and rebuilt only from the classes registered here, so decoding can never
construct anything else.

    {"$c": "ModelTurn", "f": {...}}   a registered dataclass (fields encoded recursively)
    {"$t": [...]}                     a tuple
    {"$dt": "2026-12-01T08:00:00+00:00"}   a datetime
    {"$m": {...}}                     a dict whose keys could be mistaken for tags
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any

from agora_agent.actors import Actor
from agora_agent.governance.pricing import ModelPrice
from agora_agent.governance.quota import QuotaUsage, Reservation
from agora_agent.loop import RunInput
from agora_agent.messages import Attachment, ModelMessage, ModelTurn, ToolCall, ToolResult, Usage
from agora_agent.rag.types import Passage
from agora_agent.records import ApprovalRecord, MessageRecord, RunRecord, ThreadRecord, ToolCallRecord
from agora_agent.streaming.frames import AgentFrame, ComponentFrame, ErrorFrame, TextFrame, ToolFrame

__all__ = ["decode", "encode", "register"]

_TYPES: dict[str, type] = {}


def register(*classes: type) -> None:
    """Allow these dataclasses in step results (a new step result type must be registered)."""
    for cls in classes:
        if not dataclasses.is_dataclass(cls):
            raise TypeError(f"{cls.__name__} is not a dataclass")
        _TYPES[cls.__name__] = cls


register(
    Actor,
    AgentFrame,
    ComponentFrame,
    ErrorFrame,
    TextFrame,
    ToolFrame,
    ApprovalRecord,
    Attachment,
    MessageRecord,
    ModelMessage,
    ModelPrice,
    ModelTurn,
    Passage,  # the inject-mode `retrieve` step's result
    QuotaUsage,
    Reservation,
    RunInput,
    RunRecord,
    ThreadRecord,
    ToolCall,
    ToolCallRecord,
    ToolResult,
    Usage,
)


def encode(value: Any) -> Any:
    """`value` as JSON-able data (raises TypeError for an unregistered type: fail loudly, never pickle)."""
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, tuple):
        return {"$t": [encode(v) for v in value]}
    if isinstance(value, dict):
        plain = {str(k): encode(v) for k, v in value.items()}
        return {"$m": plain} if any(k.startswith("$") for k in plain) else plain
    if isinstance(value, datetime):
        return {"$dt": value.isoformat()}
    cls = type(value)
    if dataclasses.is_dataclass(value) and _TYPES.get(cls.__name__) is cls:
        fields = {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init}
        return {"$c": cls.__name__, "f": fields}
    if hasattr(value, "items") and hasattr(value, "keys"):  # a read-only Mapping (page context)
        return encode(dict(value.items()))
    raise TypeError(f"{cls.__name__} is not registered for durable steps (agora_agent.runners.durable.codec)")


def decode(data: Any) -> Any:
    """The inverse of `encode`."""
    if isinstance(data, list):
        return [decode(v) for v in data]
    if not isinstance(data, dict):
        return data
    if "$t" in data and len(data) == 1:
        return tuple(decode(v) for v in data["$t"])
    if "$dt" in data and len(data) == 1:
        return datetime.fromisoformat(data["$dt"])
    if "$m" in data and len(data) == 1:
        return {k: decode(v) for k, v in data["$m"].items()}
    if "$c" in data and "f" in data and len(data) == 2:
        cls = _TYPES.get(data["$c"])
        if cls is None:
            raise TypeError(f'durable step data names an unknown type "{data["$c"]}"')
        return cls(**{k: decode(v) for k, v in data["f"].items()})
    return {k: decode(v) for k, v in data.items()}
