"""The protocol encoders' text hot path writes exactly what their general path (dict / pydantic model) writes."""

from __future__ import annotations

import json

import pytest
from ag_ui.core import TextMessageContentEvent

from agora_agent.streaming.agui import AGUIEncoder
from agora_agent.streaming.frames import StreamEvent, TextFrame
from agora_agent.streaming.ui_message_stream import UIMessageStreamEncoder

DELTAS = [
    "plain ",
    'quote " and \\ back',
    "é ü 漢字 🎉",
    "tab\tnew\nline\r",
    "\x00\x1f ctl",
    "\u2028\u2029",
    "</script>",
]


@pytest.mark.parametrize("delta", DELTAS)
def test_ai_sdk_text_delta_fast_path_is_the_general_chunk(delta: str) -> None:
    encoder = UIMessageStreamEncoder(run_id="r1", thread_id="t1")
    encoder.event(StreamEvent(1, TextFrame(delta="first ")))  # opens the text part
    [fast] = encoder.event(StreamEvent(2, TextFrame(delta=delta)))
    general = {"type": "text-delta", "id": "text-1", "delta": delta}
    expected = "id: 2\ndata: " + json.dumps(general, ensure_ascii=False, separators=(",", ":")) + "\n\n"
    assert fast == expected.encode()


@pytest.mark.parametrize("delta", DELTAS)
def test_agui_text_content_fast_path_is_the_models_dump(delta: str) -> None:
    encoder = AGUIEncoder(thread_id="t", run_id="r", agora_run_id="run1", agora_thread_id="th")
    encoder.event(StreamEvent(1, TextFrame(delta="first ")))  # TEXT_MESSAGE_START + the first content
    [fast] = encoder.event(StreamEvent(2, TextFrame(delta=delta)))
    model = TextMessageContentEvent(message_id="run1-m1", delta=delta)
    assert json.loads(fast.decode().split("data: ", 1)[1]) == json.loads(model.model_dump_json(by_alias=True))
    assert fast == f"id: 2\ndata: {model.model_dump_json(by_alias=True)}\n\n".encode()
