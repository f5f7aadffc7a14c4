"""`fast_init` gives a frozen dataclass the `__init__` dataclasses would generate, only cheaper: same signature,
defaults, factories, errors and post-init; still frozen."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
from dataclasses import FrozenInstanceError, dataclass, field
from typing import Any

import pytest

from agora_agent._frozen import fast_init
from agora_agent.governance.quota import Reservation
from agora_agent.loop.interface import RunInput
from agora_agent.messages import ModelMessage, ModelRequest, ModelTurn, ToolCall, ToolResult, Usage
from agora_agent.stores.base import ModelStep, QuotaReserve, QuotaSettlement, RunEnd
from agora_agent.streaming.frames import (
    AgentFrame,
    ComponentFrame,
    ErrorFrame,
    StreamEvent,
    TextFrame,
    ToolFrame,
)
from agora_agent.tools.registry import AuthorizedCall

FAST = [
    ToolCall,
    ToolResult,
    ModelMessage,
    Usage,
    ModelRequest,
    ModelTurn,
    TextFrame,
    ComponentFrame,
    ToolFrame,
    AgentFrame,
    ErrorFrame,
    StreamEvent,
    Reservation,
    AuthorizedCall,
    RunInput,
    ModelStep,
    QuotaSettlement,
    QuotaReserve,
    RunEnd,
]


def _twins(**params: Any) -> tuple[type, type]:
    """The same class twice: as dataclasses makes it, and through `fast_init`."""

    def make() -> type:
        @dataclass(**params)
        class Sample:
            x: int
            y: str = "y"
            z: list[int] = field(default_factory=list)
            w: int = field(default=3, init=False)
            k: int = field(default=9, kw_only=True)

            def __post_init__(self) -> None:
                self.z.append(len(self.z))

        return Sample

    return make(), fast_init(make())


@pytest.mark.parametrize(
    "params",
    [
        {"frozen": True},
        {"frozen": True, "slots": True},
        {"frozen": True, "slots": True, "kw_only": True},
        {"frozen": True, "kw_only": True},
    ],
)
def test_the_fast_init_is_the_generated_one(params: dict[str, Any]) -> None:
    generated, fast = _twins(**params)
    assert fast.__init__ is not generated.__init__  # type: ignore[misc]
    assert str(inspect.signature(fast)) == str(inspect.signature(generated))
    assert fast.__init__.__annotations__ == generated.__init__.__annotations__  # type: ignore[misc]
    assert fast.__init__.__qualname__ == generated.__init__.__qualname__  # type: ignore[misc]
    one, other = (generated(x=1), fast(x=1)) if params.get("kw_only") else (generated(1), fast(1))
    assert dataclasses.asdict(one) == dataclasses.asdict(other) == {"x": 1, "y": "y", "z": [0], "w": 3, "k": 9}
    assert fast(x=1, y="b", z=[5], k=2) == fast(x=1, y="b", z=[5], k=2)
    assert fast(x=1).z is not fast(x=1).z  # a factory per instance
    with pytest.raises(FrozenInstanceError):
        other.x = 2
    for call in ((), ("a", "b", "c", "d")):
        with pytest.raises(TypeError) as fast_error:
            fast(*call)
        with pytest.raises(TypeError) as generated_error:
            generated(*call)
        assert str(fast_error.value) == str(generated_error.value)


@pytest.mark.parametrize("cls", FAST, ids=lambda c: c.__name__)
def test_the_hot_path_values_keep_their_dataclass_shape(cls: type) -> None:
    """Every class given `fast_init`: its `__init__` lists exactly its init fields with their defaults."""
    code = cls.__init__.__code__  # type: ignore[misc]
    assert "__setattr__" not in code.co_names  # no object.__setattr__ per field
    parameters = list(inspect.signature(cls).parameters.values())
    fields = [f for f in dataclasses.fields(cls) if f.init]
    assert [p.name for p in parameters] == [f.name for f in fields]
    for p, f in zip(parameters, fields, strict=True):
        if f.default is not dataclasses.MISSING:
            assert p.default is f.default
        elif f.default_factory is dataclasses.MISSING:
            assert p.default is inspect.Parameter.empty


def test_values_built_by_the_fast_init_behave_as_before() -> None:
    frame = ToolFrame(tool_call_id="c1", name="add", kind="read", status="started", input={"a": 1})
    assert (frame.type, frame.output, frame.agent) == ("tool", None, None)
    assert frame == ToolFrame(tool_call_id="c1", name="add", kind="read", status="started", input={"a": 1})
    assert dataclasses.replace(frame, status="executed").status == "executed"
    with pytest.raises(FrozenInstanceError):
        frame.status = "failed"  # type: ignore[misc]
    turn = ModelTurn(text="hi")
    assert turn.usage == Usage() and turn.usage is not ModelTurn(text="hi").usage
    event = StreamEvent(3, TextFrame(delta="x"))
    assert hash(event) == hash(StreamEvent(3, TextFrame(delta="x")))
    assert pickle.loads(pickle.dumps(event)) == event == copy.deepcopy(event)
    message = ModelMessage(role="tool", tool_results=(ToolResult(tool_call_id="c1", name="add", content="2"),))
    assert repr(message).startswith("ModelMessage(role='tool', content=''")
    call = AuthorizedCall(spec=None, input=None, args={"b": 1, "a": 2})  # type: ignore[arg-type]
    assert call.args_hash == AuthorizedCall(spec=None, input=None, args={"a": 2, "b": 1}).args_hash  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ToolCall(id="c", name="add")  # type: ignore[call-arg]
