"""JSON columns' serialiser: the text `json.dumps(..., default=..., ensure_ascii=False)` gives, with one encoder."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from agora_agent.stores.sql.engine import _json_default, dumps_json


@pytest.mark.parametrize(
    "value",
    [
        None,
        "done",
        'naïve — ü \x00 "quoted"',
        {"input_tokens": 10, "finish_reason": "tool_calls", "nested": [1, 2.5, True, None]},
        [{"id": "call_1", "name": "add", "input": {"a": 1, "b": 2}}],
        {"at": datetime(2026, 12, 2, 8, 0, tzinfo=UTC)},
        float("nan"),
    ],
)
def test_the_same_text_as_json_dumps(value: Any) -> None:
    assert dumps_json(value) == json.dumps(value, default=_json_default, ensure_ascii=False)


def test_what_cannot_be_serialised_is_stored_as_null() -> None:
    circular: list[Any] = []
    circular.append(circular)
    assert dumps_json(object()) == "null"
    assert dumps_json(circular) == "null"
