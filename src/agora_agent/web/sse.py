"""Frames <-> Server-Sent Events, byte-compatible with the reference envelope.

One SSE event per frame, `\\n` line endings, compact JSON (`JSON.stringify` spacing, non-ASCII kept):

    event: meta\\ndata: {"runId":"r1","threadId":"t1"}\\n\\n          first; no id (see below)
    id: 1\\ndata: {"delta":"Hel"}\\n\\n                               TextFrame (unnamed, as the reference)
    id: 2\\nevent: component\\ndata: {"name":"table","data":{…}}\\n\\n  ComponentFrame
    id: 3\\nevent: tool\\ndata: {"toolCallId":…,"status":"pending_approval",…}\\n\\n
    id: 4\\nevent: agent\\ndata: {"agent":"researcher","text":"…"}\\n\\n
    id: 5\\nevent: error\\ndata: {"message":"…","code":null,"delta":"\\n[error] …"}\\n\\n
    event: done\\ndata: {}\\n\\n                                     last

Clients decode with `agora_agent.client.frames.decode_frame`. The only bytes added to the
reference's frames are the leading `id:` lines. Decisions:

- `id` = the sink's `StreamEvent.id` (1, 2, 3 …). `meta` and `done` are not stream events and carry
  no id, so a browser's `lastEventId` is never reset by them: re-attaching with `Last-Event-ID: N`
  resumes after frame N, and a client that saw only `meta` re-attaches from the start.
- `agent` frames carry the sub-agent's text in `text`, not `delta`: the reference client treats any
  named event with a string `delta` as main-thread text, and sub-agent text must not be.
- `error` frames DO carry `delta` = `"\\n[error] <message>"`, which is exactly what the reference
  writes for a failed run, so text-only clients still show the error.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Mapping
from typing import Any

import anyio
from pydantic_core import to_jsonable_python
from sse_starlette import EventSourceResponse
from starlette.types import Message, Receive, Scope, Send

from agora_agent.streaming.frames import (
    AgentFrame,
    ComponentFrame,
    ErrorFrame,
    Frame,
    StreamEvent,
    TextFrame,
    ToolFrame,
)

__all__ = [
    "DONE",
    "SSE_HEADERS",
    "encode_done",
    "encode_event",
    "encode_frame",
    "encode_meta",
    "event_source_response",
    "frame_payload",
    "run_event_stream",
    "run_stream_response",
]

logger = logging.getLogger("agora_agent.web")

SSE_HEADERS: Mapping[str, str] = {
    "Cache-Control": "no-cache, no-transform",
    "Connection": "keep-alive",
    "X-Accel-Buffering": "no",
}
"""Response headers (sse-starlette adds `Connection` and `X-Accel-Buffering` itself too)."""

DONE = b"event: done\ndata: {}\n\n"


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=to_jsonable_python)


def frame_payload(frame: Frame) -> tuple[str | None, dict[str, Any]]:
    """The SSE event name (None = unnamed) and JSON payload of a frame."""
    if isinstance(frame, TextFrame):
        return None, {"delta": frame.delta}
    if isinstance(frame, ComponentFrame):
        payload = {"name": frame.name, "data": frame.data}
        if frame.id is not None:
            payload["id"] = frame.id
        return "component", payload
    if isinstance(frame, ToolFrame):
        return "tool", {
            "toolCallId": frame.tool_call_id,
            "name": frame.name,
            "kind": frame.kind,
            "status": frame.status,
            "input": frame.input,
            "output": frame.output,
            "error": frame.error,
            "agent": frame.agent,
        }
    if isinstance(frame, AgentFrame):
        return "agent", {"agent": frame.agent, "text": frame.delta}
    if isinstance(frame, ErrorFrame):
        return "error", {"message": frame.message, "code": frame.code, "delta": f"\n[error] {frame.message}"}
    raise TypeError(f"not a stream frame: {type(frame).__name__}")


def encode_frame(frame: Frame, event_id: int | None = None) -> bytes:
    """One frame as SSE bytes, with an `id:` line when `event_id` is given."""
    head = f"id: {event_id}\n" if event_id is not None else ""
    if isinstance(frame, TextFrame):  # the hot path: one format call, no dict
        return f'{head}data: {{"delta":{_json(frame.delta)}}}\n\n'.encode()
    name, payload = frame_payload(frame)
    if name is not None:
        head += f"event: {name}\n"
    return f"{head}data: {_json(payload)}\n\n".encode()


def encode_event(event: StreamEvent) -> bytes:
    """A sink `StreamEvent` as SSE bytes; its id becomes the SSE `id:`."""
    return encode_frame(event.frame, event.id)


def encode_meta(run_id: str, thread_id: str | None = None) -> bytes:
    """`event: meta` with `{"runId", "threadId"}`; threadId omitted when None (re-attach)."""
    payload: dict[str, str] = {"runId": run_id}
    if thread_id is not None:
        payload["threadId"] = thread_id
    return f"event: meta\ndata: {_json(payload)}\n\n".encode()


def encode_done() -> bytes:
    """`event: done` with `{}`."""
    return DONE


class _HeadFirstResponse(EventSourceResponse):
    """An `EventSourceResponse` that writes the status line, the headers and `first` (the `meta` event) as
    soon as it is called, before its keep-alive, shutdown and disconnect tasks start.

    The run was scheduled just before the response: started after those tasks, its first step (history,
    the model request) ran ahead of them and held the first byte back by a millisecond or more. The bytes
    on the wire are the same; only their timing changes.
    """

    def __init__(self, first: bytes, body: AsyncIterator[bytes], *, headers: Mapping[str, str], **kwargs: Any) -> None:
        plan = _plan(headers, kwargs)
        if plan is None:
            super().__init__(body, headers=headers, **kwargs)
        else:  # what `EventSourceResponse.__init__` sets, from a response it built for the same options
            attributes, raw = plan
            self.__dict__.update(attributes)
            self.body_iterator = body
            values = tuple(headers.values())
            self.raw_headers = [(name, v if isinstance(v, bytes) else values[v].encode("latin-1")) for name, v in raw]
            self._send_lock = anyio.Lock()
        self.first = first

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"].upper() == "HEAD":
            await super().__call__(scope, receive, send)
            return
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        await send({"type": "http.response.body", "body": self.first, "more_body": True})

        async def rest(message: Message) -> None:
            if message["type"] != "http.response.start":  # sent above
                await send(message)

        await super().__call__(scope, receive, rest)


# (header names, options) -> (the attributes `EventSourceResponse.__init__` sets, its raw header list with each value
# given by the caller as its position in `headers`); None: that version of sse-starlette sets some mutable state we
# do not know to renew, so every response is built by `__init__`.
_Plan = tuple[dict[str, Any], list[tuple[bytes, bytes | int]]]
_PLANS: dict[tuple[Any, ...], _Plan | None] = {}
_IMMUTABLE = (type(None), bool, int, float, str, bytes, tuple)
_RENEWED = frozenset({"body_iterator", "raw_headers", "_send_lock"})


def _plan(headers: Mapping[str, str], options: dict[str, Any]) -> _Plan | None:
    """How `_HeadFirstResponse` is built without running sse-starlette's `__init__` per response: its per-call
    work (a `MutableHeaders` rebuilt header by header, the async-iterable check, the ping setter) costs ~10x
    the copy. Worked out once per set of header names and options, from a response built the normal way."""
    key = (*headers, *options.items())  # the options come in one order (`event_source_response`)
    if key in _PLANS:
        return _PLANS[key]
    marks = {name: f"agora-header-{i}" for i, name in enumerate(headers)}
    probe = EventSourceResponse(_no_events(), headers=marks, **options)
    attributes = {k: v for k, v in vars(probe).items() if k not in _RENEWED}
    position = {mark.encode("latin-1"): i for i, mark in enumerate(marks.values())}
    plan: _Plan | None = (attributes, [(name, position.get(value, value)) for name, value in probe.raw_headers])
    if not all(isinstance(v, _IMMUTABLE) for v in attributes.values()) or not isinstance(
        getattr(probe, "_send_lock", None), anyio.Lock
    ):
        plan = None
    if len(_PLANS) < 64:  # a handful of routes: never grows with traffic
        _PLANS[key] = plan
    return plan


async def _no_events() -> AsyncIterator[bytes]:
    return
    yield  # an async generator that yields nothing


def event_source_response(
    body: AsyncIterator[bytes],
    *,
    headers: Mapping[str, str] | None = None,
    ping_seconds: float = 15,
    first: bytes | None = None,
) -> EventSourceResponse:
    """An sse-starlette response with the reference's headers, `\\n` separators and keep-alive comments.

    `body` yields already-encoded events; `first`, when given, goes out with the headers at once, before
    `body` is read. The response never cancels the run: closing it (client disconnect) only ends this
    subscription.
    """
    options: dict[str, Any] = {"headers": {**SSE_HEADERS, **(headers or {})}, "ping": ping_seconds, "sep": "\n"}
    if first is None:
        return EventSourceResponse(body, **options)
    return _HeadFirstResponse(first, body, **options)


def run_stream_response(
    run_id: str,
    thread_id: str | None,
    events: AsyncIterator[StreamEvent],
    *,
    headers: Mapping[str, str] | None = None,
    ping_seconds: float = 15,
) -> EventSourceResponse:
    """One run's SSE response (`run_event_stream`), its `meta` event written with the headers at once."""
    return event_source_response(
        run_event_stream(run_id, thread_id, events, meta=False),
        headers=headers,
        ping_seconds=ping_seconds,
        first=encode_meta(run_id, thread_id),
    )


def run_event_stream(
    run_id: str, thread_id: str | None, events: AsyncIterator[StreamEvent], *, meta: bool = True
) -> AsyncIterator[bytes]:
    """One run's SSE body: `meta` (unless `meta=False`: sent apart), every event, then `done` — also when
    the subscription breaks.

    A failure while following the run ends only this subscriber (with an `error` frame telling it to
    re-attach); the run itself goes on.
    """

    async def body() -> AsyncIterator[bytes]:
        if meta:
            yield encode_meta(run_id, thread_id)
        try:
            async for event in events:
                yield encode_event(event)
        except Exception:
            logger.exception("agora-agent: streaming run %s failed", run_id)
            yield encode_frame(ErrorFrame(message="the stream was interrupted; re-attach to continue"))
        yield DONE

    return body()
