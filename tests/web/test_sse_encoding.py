"""The SSE envelope byte for byte (SSE-02..06, SSE-08) and its inverse used by the Python client."""

from __future__ import annotations

import pytest

from agora_agent.client.frames import DoneFrame, MetaFrame, decode_frame, parse_sse_text
from agora_agent.streaming.frames import AgentFrame, ComponentFrame, ErrorFrame, StreamEvent, TextFrame, ToolFrame
from agora_agent.web.sse import (
    DONE,
    encode_done,
    encode_event,
    encode_frame,
    encode_meta,
)


@pytest.mark.ref("SSE-02")
def test_meta_is_first_frame_shape_and_drops_missing_thread() -> None:
    assert encode_meta("r1", "t1") == b'event: meta\ndata: {"runId":"r1","threadId":"t1"}\n\n'
    assert encode_meta("r1") == b'event: meta\ndata: {"runId":"r1"}\n\n'


@pytest.mark.ref("SSE-03", "SSE-08")
def test_text_frame_is_unnamed_delta_with_id_line() -> None:
    assert encode_event(StreamEvent(7, TextFrame(delta="Hel"))) == b'id: 7\ndata: {"delta":"Hel"}\n\n'
    # Without an id the bytes are exactly the reference's frame.
    assert encode_frame(TextFrame(delta="lo")) == b'data: {"delta":"lo"}\n\n'


def test_text_escapes_newlines_quotes_and_keeps_unicode() -> None:
    frame = TextFrame(delta='a\n"b"\r\\ é 😀 \u2028')
    assert encode_frame(frame, 1) == 'id: 1\ndata: {"delta":"a\\n\\"b\\"\\r\\\\ é 😀 \u2028"}\n\n'.encode()


@pytest.mark.ref("SSE-04")
def test_component_frame() -> None:
    frame = ComponentFrame(name="table", data={"rows": [[1, "x"]], "n": None})
    assert (
        encode_frame(frame, 2)
        == b'id: 2\nevent: component\ndata: {"name":"table","data":{"rows":[[1,"x"]],"n":null}}\n\n'
    )
    assert encode_frame(frame) == b'event: component\ndata: {"name":"table","data":{"rows":[[1,"x"]],"n":null}}\n\n'


@pytest.mark.ref("SSE-05")
def test_done_frame() -> None:
    assert encode_done() == DONE == b"event: done\ndata: {}\n\n"


def test_tool_frame_named_event_without_delta() -> None:
    frame = ToolFrame(
        tool_call_id="c1", name="refund_order", kind="action", status="pending_approval", input={"order_id": 1}
    )
    assert encode_frame(frame, 3) == (
        b'id: 3\nevent: tool\ndata: {"toolCallId":"c1","name":"refund_order","kind":"action",'
        b'"status":"pending_approval","input":{"order_id":1},"output":null,"error":null,"agent":null}\n\n'
    )


def test_agent_frame_uses_text_not_delta() -> None:
    # A reference client would render any named event's `delta` as main text (CLIENT-08).
    assert encode_frame(AgentFrame(agent="researcher", delta="hi"), 4) == (
        b'id: 4\nevent: agent\ndata: {"agent":"researcher","text":"hi"}\n\n'
    )


@pytest.mark.ref("SSE-06")
def test_error_frame_carries_reference_error_text_as_delta() -> None:
    assert encode_frame(ErrorFrame(message="Daily token quota exceeded", code="quota"), 5) == (
        b'id: 5\nevent: error\ndata: {"message":"Daily token quota exceeded","code":"quota",'
        b'"delta":"\\n[error] Daily token quota exceeded"}\n\n'
    )


def test_non_json_values_are_serialised() -> None:
    from datetime import UTC, datetime

    frame = ComponentFrame(name="x", data={"at": datetime(2026, 1, 2, tzinfo=UTC)})
    assert encode_frame(frame) == b'event: component\ndata: {"name":"x","data":{"at":"2026-01-02T00:00:00Z"}}\n\n'


@pytest.mark.ref("CLIENT-07", "CLIENT-08")
@pytest.mark.parametrize(
    "frame",
    [
        TextFrame(delta="x"),
        ComponentFrame(name="c", data=[1]),
        ToolFrame(tool_call_id="c", name="n", kind="read", status="executed", output={"a": 1}),
        AgentFrame(agent="a", delta="t"),
        ErrorFrame(message="boom", code=None),
    ],
)
def test_decode_inverts_encode(frame: object) -> None:
    raw = encode_frame(frame, 9).decode()  # type: ignore[arg-type]
    lines = raw.strip("\n").split("\n")
    event = next((ln[7:] for ln in lines if ln.startswith("event: ")), "message")
    data = next(ln[6:] for ln in lines if ln.startswith("data: "))
    assert decode_frame(event, data) == frame


def test_decode_meta_done_and_garbage() -> None:
    assert decode_frame("meta", '{"runId":"r","threadId":"t"}') == MetaFrame("r", "t")
    assert decode_frame("meta", '{"runId":"r"}') == MetaFrame("r", None)
    assert decode_frame("done", "{}") == DoneFrame()
    assert decode_frame("message", "") is None  # keep-alive
    assert decode_frame("message", "not json") is None
    assert decode_frame("message", '{"delta":""}') is None
    assert decode_frame("component", '{"data":1}') is None
    assert decode_frame("from-the-future", '{"x":1}') is None


def test_parse_sse_text_keeps_last_id_and_skips_comments() -> None:
    body = ": ping\n\n" + encode_meta("r").decode() + encode_frame(TextFrame(delta="a"), 1).decode() + DONE.decode()
    assert parse_sse_text(body) == [
        ("meta", '{"runId":"r"}', ""),
        ("message", '{"delta":"a"}', "1"),
        ("done", "{}", "1"),
    ]
