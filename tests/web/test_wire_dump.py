"""`wire_dump`: Python-named models below the web layer reach the wire in camelCase, field names only."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, computed_field

from agora_agent.web.schemas import wire_dump


class Call(BaseModel):
    tool_call_id: str
    input: dict[str, Any]
    input_price_per_1m: float | None = None


class Run(BaseModel):
    run_id: str
    started_at: datetime
    tool_calls: list[Call]
    last_call: Call | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def call_count(self) -> int:
        return len(self.tool_calls)


def test_field_names_are_camel_case_at_every_depth_and_dict_values_keep_their_keys() -> None:
    call = Call(tool_call_id="c1", input={"order_id": 7, "nested_key": {"snake_case": True}}, input_price_per_1m=2.5)
    run = Run(run_id="r1", started_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC), tool_calls=[call], last_call=call)
    expected_call = {
        "toolCallId": "c1",
        "input": {"order_id": 7, "nested_key": {"snake_case": True}},  # the tool's own data: never renamed
        "inputPricePer1m": 2.5,  # the wire's spelling of the unit, not pydantic's `Per1M`
    }
    assert wire_dump(run) == {
        "runId": "r1",
        "startedAt": "2026-01-02T03:04:05Z",
        "toolCalls": [expected_call],
        "lastCall": expected_call,
        "callCount": 1,
    }
    assert wire_dump([call]) == [expected_call]


def test_exclude_none_drops_unset_fields() -> None:
    assert wire_dump(Call(tool_call_id="c1", input={}), exclude_none=True) == {"toolCallId": "c1", "input": {}}
