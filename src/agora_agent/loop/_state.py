"""What one run's steps share, and the loop's JSON helpers (private to the loop package)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from agora_agent.agents import Persona
from agora_agent.governance.pricing import ModelPrice
from agora_agent.governance.quota import Reservation, ThresholdCrossing
from agora_agent.loop.interface import LoopDeps, LoopHooks, RunInput
from agora_agent.messages import ToolDefinition
from agora_agent.records import ToolCallPatch
from agora_agent.streaming.frames import ComponentFrame, TextFrame
from agora_agent.streaming.sink import SinkWriter
from agora_agent.tools.context import RetrievalReporter
from agora_agent.tools.registry import ChainMemo

__all__ = ["PendingResult", "RunState", "json_default", "now_utc", "serialize_output", "to_jsonable"]


@dataclass(slots=True)
class PendingResult:
    """A tool's result whose write joins the next model call's budget reservation (`quota:reserve:<i+1>`): the
    two are adjacent, so one transaction holds both. `frame` streams it once written."""

    tool_call_id: str
    patch: ToolCallPatch
    frame: Callable[[], Awaitable[None]]
    written: bool = False  # committed by the reservation's step in this execution


@dataclass(kw_only=True)
class RunState:
    """Everything one run's steps share."""

    deps: LoopDeps
    run: RunInput
    hooks: LoopHooks
    writer: SinkWriter
    persona: Persona | None
    allow_list: frozenset[str] | None
    memo: ChainMemo | None = None  # the filter chain's verdicts that hold for the whole run
    delegation_names: frozenset[str] = frozenset()  # the agent's own `ask_<agent>` tools
    offered: tuple[list[ToolDefinition], tuple[ToolDefinition, ...]] | None = None  # last offer, as sent
    prices: dict[str, ModelPrice] = field(default_factory=dict)
    priced: set[str] | None = None  # the models whose price was read (None: every model's, or no pricing)
    attachments: bool = True  # whether the run's messages carry attachments to prepare (see `_open_run`)
    pending: PendingResult | None = None  # the last tool result, written with the next reservation
    first_reservation: Reservation | None = None  # step 0's, granted with the thread's read (`load:thread`)
    retrieved: RetrievalReporter | None = None  # the run's `Retrieved` event, handed to every tool call's context
    measured: bool = True  # a tracer or meter provider was configured when the run opened (see Telemetry.unmeasured)
    # `effect(hooks, name, fn)`, its method looked up once per run (`effect_of`): three writes per tool step
    effect: Callable[[str, Callable[[], Awaitable[object]]], Awaitable[object]]
    # the quota store's `crossed_now(reservation)` (the thresholds a settled step crossed, without an await), if any
    crossed_now: Callable[[Reservation], list[ThresholdCrossing]] | None = None

    async def on_text(self, delta: str) -> None:
        """The model's text as it streams: a `text` frame per non-empty delta."""
        if delta:
            await self.writer.write(TextFrame(delta=delta))

    async def write_component(self, name: str, data: Any, ui_id: str | None) -> None:
        """A tool call's component, as its `UiSession` writes it: a `component` frame."""
        await self.writer.write(ComponentFrame(name=name, data=to_jsonable(data), id=ui_id))


def now_utc() -> datetime:
    """The current UTC time (one place, so tests and steps agree on the clock)."""
    return datetime.now(UTC)


_ENCODER = json.JSONEncoder(default=str, ensure_ascii=False)
"""What `json.dumps(value, default=str, ensure_ascii=False)` builds on every call, built once."""


def serialize_output(output: Any) -> str:
    """Tool output as the model sees it: strings as-is, everything else as JSON."""
    if isinstance(output, str):
        return output
    if type(output) is int:
        return int.__repr__(output)  # what JSON writes for an int
    return _ENCODER.encode(output)


def to_jsonable(value: Any) -> Any:
    """Make a tool's output storable as JSON (pydantic models, dataclasses, dates …)."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return json.loads(json.dumps(value, default=json_default))


def json_default(value: Any) -> Any:
    """`json.dumps` fallback: pydantic models by `model_dump`, dataclasses by field, the rest as `str`."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    if hasattr(value, "__dataclass_fields__"):
        return {k: getattr(value, k) for k in value.__dataclass_fields__}
    return str(value)
