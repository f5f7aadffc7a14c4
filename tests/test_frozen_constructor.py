"""`_frozen.constructor`: the same instance as the class call, for every class the loop builds that way."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, ClassVar

import pytest

from agora_agent import _frozen, service
from agora_agent._frozen import constructor
from agora_agent.actors import Actor
from agora_agent.genui.session import UiSession
from agora_agent.governance import quota
from agora_agent.governance.quota import Reservation
from agora_agent.loop import tool_calls, turn
from agora_agent.loop._state import RunState
from agora_agent.loop.interface import LoopDeps, RunInput
from agora_agent.messages import ModelMessage, ModelRequest, ToolCall, ToolResult
from agora_agent.records import (
    UNSET,
    MessageRecord,
    RunRecord,
    ThreadRecord,
    ToolCallPatch,
    ToolCallRecord,
    UsageRecord,
)
from agora_agent.service import ChatStarted
from agora_agent.stores import memory
from agora_agent.stores.base import ModelStep, QuotaReserve, QuotaSettlement, RunEnd
from agora_agent.streaming.frames import ToolFrame
from agora_agent.tools.context import ToolContext

NOW = datetime(2026, 1, 2, tzinfo=UTC)
ACTOR = Actor("u1", roles=("user",))


def _state(obj: Any) -> dict[str, Any]:
    """Every field's value, by name (slots or `__dict__`)."""
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}


async def _write(name: str, data: Any, ui_id: str | None) -> None:
    return None


CASES: list[tuple[type, dict[str, Any]]] = [
    (ToolFrame, {"tool_call_id": "c1", "name": "add", "kind": "read", "status": "started", "input": {"a": 1}}),
    (ModelMessage, {"role": "assistant", "content": "hi", "tool_calls": (ToolCall(id="c", name="n", input={}),)}),
    (ModelMessage, {"role": "tool", "tool_results": (ToolResult(tool_call_id="c", name="n", content="2"),)}),
    (ModelRequest, {"system": "s", "messages": (), "tools": (), "model_id": None}),
    (ToolResult, {"tool_call_id": "c", "name": "n", "content": "x", "is_error": True}),
    (RunEnd, {"run_id": "r", "step_count": 2, "input_tokens": 1, "output_tokens": 2, "cost_usd": None}),
    (
        UsageRecord,
        {"id": "u", "thread_id": "t", "run_id": "r", "message_id": "m", "actor_ref": "a", "model_id": "x"}
        | {"input_tokens": 1, "output_tokens": 2, "created_at": NOW},
    ),
    (
        ToolCallRecord,
        {"id": "c", "run_id": "r", "thread_id": "t", "message_id": "m", "tool_name": "n", "tool_type": "read"}
        | {"actor_ref": "a", "created_at": NOW, "policy_decision": "allowed", "error": None},
    ),
    (ToolCallPatch, {"status": "executed", "output": 3, "execution_ms": 0}),
    (ToolContext, {"actor": ACTOR, "thread_id": "t", "run_id": "r", "tool_call_id": "c"}),
    (UiSession, {"write": _write, "actor": ACTOR}),
    (
        Reservation,
        {"id": "r:0", "scopes": (("actor", "u1", "2026-01-02"),), "period_key": "2026-01-02", "tokens": 9}
        | {"usd": 0.0, "run_id": "r", "expires_at": NOW, "watch": (("actor", "u1", "2026-01-02", "tokens", 10, 0.8),)},
    ),
    (MessageRecord, {"id": "m", "thread_id": "t", "role": "user", "content": "hi", "run_id": "r", "created_at": NOW}),
    (ThreadRecord, {"id": "t", "actor_ref": "u1", "title": "New chat", "created_at": NOW, "updated_at": NOW}),
    (RunRecord, {"id": "r", "thread_id": "t", "agent_name": "a", "actor_ref": "u1", "started_at": NOW}),
    (RunInput, {"run_id": "r", "thread_id": "t", "actor": ACTOR, "user_text": "hi", "day": "2026-01-02"}),
    (ChatStarted, {"run_id": "r", "thread_id": "t"}),
]


@pytest.mark.parametrize(("cls", "kwargs"), CASES, ids=[c.__name__ for c, _ in CASES])
def test_builds_what_the_class_call_builds(cls: type, kwargs: dict[str, Any]) -> None:
    build = constructor(cls)
    assert build is not cls  # every class here takes the shortcut
    made, expected = build(**kwargs), cls(**kwargs)
    assert type(made) is cls
    assert made == expected and repr(made) == repr(expected)
    assert _state(made) == _state(expected)
    if hasattr(expected, "__dict__"):
        assert list(vars(made)) == list(vars(expected))  # the same attribute order (asdict, vars, JSON)
    try:
        hashed = hash(expected)
    except TypeError:  # a frozen value holding a dict: unhashable either way
        hashed = None
    if hashed is not None:
        assert hash(made) == hashed
    if cls not in (UiSession, ToolContext):  # they hold functions defined in this module's scope
        assert pickle.dumps(made) == pickle.dumps(expected)  # the same bytes: class, state and its order
    assert copy.copy(made) == expected and dataclasses.replace(made) == expected


def test_frozen_stays_frozen_and_defaults_are_the_class_defaults() -> None:
    frame = constructor(ToolFrame)(tool_call_id="c", name="n", kind="read", status="executed")
    with pytest.raises(dataclasses.FrozenInstanceError):
        frame.status = "failed"  # type: ignore[misc]
    assert (frame.output, frame.agent, frame.type) == (None, None, "tool")


def test_a_default_factory_runs_per_instance() -> None:
    build = constructor(UiSession)
    one, two = build(write=_write), build(write=_write)
    assert one._pushed == {} and one._pushed is not two._pushed and one._open is not two._open


def test_missing_or_unknown_arguments_fail_like_the_class() -> None:
    build: Any = constructor(ToolFrame)
    with pytest.raises(TypeError):
        build(tool_call_id="c", name="n", kind="read")
    with pytest.raises(TypeError):
        build(tool_call_id="c", name="n", kind="read", status="started", extra=1)
    with pytest.raises(TypeError):
        build("c", "n", "read", "started")  # keyword-only, like the class


@dataclass
class _WithPostInit:
    x: int

    def __post_init__(self) -> None:
        self.x += 1


@dataclass
class _Base:
    x: int


@dataclass
class _Derived(_Base):
    y: int = 0


@dataclass(frozen=True)
class _FrozenDict:
    x: int


class _Plain:
    pass


@pytest.mark.parametrize("cls", [_WithPostInit, _Derived, _FrozenDict, _Plain])
def test_classes_it_cannot_mirror_get_the_class_back(cls: type) -> None:
    assert constructor(cls) is cls


@dataclass(slots=True)
class _Mixed:
    a: int
    b: str = "b"
    c: list[int] = field(default_factory=list)
    d: int = field(default=4, init=False)
    e: ClassVar[int] = 9
    f: int = field(default=0, kw_only=True)


def test_positional_init_false_classvar_and_kw_only() -> None:
    build = constructor(_Mixed)
    assert build is not _Mixed
    assert build(1) == _Mixed(1) and build(1, "x", [2], f=5) == _Mixed(1, "x", [2], f=5)
    assert build(1).d == 4 and build(1).c is not build(1).c


def test_the_loop_builds_its_step_values_this_way() -> None:
    # the module-level builders of the loop are the generated functions, not the classes (a regression guard)
    for built, cls in [
        (turn._model_request, ModelRequest),
        (turn._model_message, ModelMessage),
        (turn._quota_reserve, QuotaReserve),
        (turn._quota_settlement, QuotaSettlement),
        (turn._model_step_of, ModelStep),
        (turn._usage_record, UsageRecord),
        (tool_calls._tool_frame, ToolFrame),
        (tool_calls._tool_call_record, ToolCallRecord),
        (tool_calls._tool_context, ToolContext),
        (turn._run_state, RunState),
        (quota._reservation, Reservation),
        (memory._message_record, MessageRecord),
        (memory._thread_record, ThreadRecord),
        (service._run_record, RunRecord),
        (service._run_input, RunInput),
        (service._loop_deps, LoopDeps),
        (service._chat_started, ChatStarted),
    ]:
        assert built is not cls and built.__name__ == f"build_{cls.__name__}", cls
    assert "constructor" in _frozen.__all__


def test_a_patch_of_its_changes_equals_the_class_call_and_refuses_unknown_fields() -> None:
    sparse = ToolCallPatch.of(status="executed", output=None, execution_ms=3)
    full = ToolCallPatch(status="executed", output=None, execution_ms=3)
    assert sparse == full and repr(sparse) == repr(full) and sparse.changes() == full.changes()
    assert sparse.error is UNSET and dataclasses.replace(sparse, error="x").changes()["error"] == "x"
    assert pickle.loads(pickle.dumps(sparse)) == full and copy.copy(sparse) == full
    with pytest.raises(TypeError, match="'statuss'"):
        ToolCallPatch.of(statuss="executed")
