"""Fake model-provider servers: real HTTP on 127.0.0.1, canned streaming replies in the vendors' wire formats.

One raw ASGI app serves both OpenAI Chat Completions (`POST /v1/chat/completions`, SSE `data:` lines
ending with `data: [DONE]`) and Anthropic Messages (`POST /v1/messages`, named SSE events). Each
request pops the next scripted `Reply`; every request body is recorded. A `Reply(hang=True)` sends its
events and then holds the connection open until the client disconnects, which sets `disconnected`,
so a test can prove that cancellation closed the HTTP stream.

The server runs as a task on the caller's event loop; the listening socket is bound before the task
starts, so clients can connect immediately (no start-up wait).
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import uvicorn

Event = bytes


@dataclass
class Reply:
    """One scripted HTTP answer: streamed SSE `events`, or a JSON `body` (errors)."""

    status: int = 200
    events: Sequence[Event] = ()
    body: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    hang: bool = False


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


class FakeProviderServer:
    """An OpenAI- and Anthropic-compatible fake; `queue(...)` replies, read `requests` afterwards."""

    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.requests: list[Seen] = []
        self.disconnected = asyncio.Event()
        self.default: Reply | None = None  # served when the queue is empty (benchmarks)
        self._server: uvicorn.Server | None = None
        self._task: asyncio.Task[None] | None = None
        self.port = 0

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_base_url(self) -> str:
        return f"{self.origin}/v1"

    def queue(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    async def start(self) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # Inherited by accepted sockets: without it Nagle + delayed ACK add ~40 ms to each streamed reply.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        sock.setblocking(False)
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            self._app,
            interface="asgi3",
            lifespan="off",
            log_level="warning",
            access_log=False,
            ws="none",
            http="h11",
            timeout_graceful_shutdown=1,
        )
        self._server = uvicorn.Server(config)
        # _serve skips serve()'s SIGINT capture, which would defer Ctrl-C until the test ends.
        self._task = asyncio.create_task(self._server._serve(sockets=[sock]))

    async def stop(self) -> None:
        if self._server is not None and self._task is not None:
            self._server.should_exit = True
            await asyncio.wait_for(self._task, 10)

    async def __aenter__(self) -> FakeProviderServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def _app(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        assert scope["type"] == "http"
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        raw = b"".join(chunks)
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        self.requests.append(Seen(scope["path"], headers, json.loads(raw) if raw else {}))
        if self.replies:
            reply = self.replies.popleft()
        else:
            reply = self.default or Reply(status=500, body=_error("no scripted reply left"))
        if reply.body is not None:
            payload = json.dumps(reply.body).encode()
            out_headers = {"content-type": "application/json", **reply.headers}
            await send({"type": "http.response.start", "status": reply.status, "headers": _h(out_headers)})
            await send({"type": "http.response.body", "body": payload})
            return
        out_headers = {"content-type": "text/event-stream", "cache-control": "no-cache", **reply.headers}
        await send({"type": "http.response.start", "status": reply.status, "headers": _h(out_headers)})
        for event in reply.events:
            await send({"type": "http.response.body", "body": event, "more_body": True})
        if reply.hang:
            while (await receive())["type"] != "http.disconnect":
                pass
            self.disconnected.set()
            return
        await send({"type": "http.response.body", "body": b""})


def _h(headers: dict[str, str]) -> list[tuple[bytes, bytes]]:
    return [(k.encode(), v.encode()) for k, v in headers.items()]


def _error(message: str, kind: str = "server_error") -> dict[str, Any]:
    return {"error": {"message": message, "type": kind}}


# --- OpenAI Chat Completions -------------------------------------------------------------------

OPENAI_USAGE = {
    "prompt_tokens": 120,
    "completion_tokens": 15,
    "total_tokens": 135,
    "prompt_tokens_details": {"cached_tokens": 100, "cache_write_tokens": 7},
    "completion_tokens_details": {"reasoning_tokens": 4},
}


def oa_data(obj: dict[str, Any] | str) -> Event:
    return f"data: {obj if isinstance(obj, str) else json.dumps(obj)}\n\n".encode()


def oa_chunk(
    delta: dict[str, Any] | None = None, finish: str | None = None, usage: dict[str, Any] | None = None
) -> Event:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return oa_data(
        {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "fake-model-2025",
            "choices": choices,
            "usage": usage,
        }
    )


def oa_tool_fragments(index: int, call_id: str, name: str, arguments: str, pieces: int) -> list[Event]:
    """One tool call streamed as `pieces` argument fragments (id and name on the first only)."""
    size = max(1, -(-len(arguments) // pieces))
    parts = [arguments[i : i + size] for i in range(0, len(arguments), size)]
    events = [
        oa_chunk(
            {
                "tool_calls": [
                    {"index": index, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
                ]
            }
        )
    ]
    events += [oa_chunk({"tool_calls": [{"index": index, "function": {"arguments": p}}]}) for p in parts]
    return events


def openai_reply(
    *,
    text: Sequence[str] = (),
    tools: Sequence[list[Event]] = (),
    usage: dict[str, Any] | None = OPENAI_USAGE,
    headers: dict[str, str] | None = None,
    hang: bool = False,
) -> Reply:
    """A full streamed turn: text deltas, tool-call fragments, finish, a usage-only chunk, [DONE]."""
    events: list[Event] = [oa_chunk({"role": "assistant", "content": ""})]
    events += [oa_chunk({"content": t}) for t in text]
    for tool in tools:
        events += tool
    if hang:
        return Reply(events=events, headers=headers or {}, hang=True)
    events.append(oa_chunk({}, finish="tool_calls" if tools else "stop"))
    if usage is not None:
        events.append(oa_chunk(None, usage=usage))
    events.append(oa_data("[DONE]"))
    return Reply(events=events, headers=headers or {})


def openai_error(status: int, message: str, headers: dict[str, str] | None = None) -> Reply:
    kind = "rate_limit_error" if status == 429 else "invalid_request_error"
    return Reply(status=status, body=_error(message, kind), headers=headers or {})


# --- Anthropic Messages ------------------------------------------------------------------------

ANTHROPIC_USAGE = {"input_tokens": 20, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 7}


def an_event(name: str, data: dict[str, Any]) -> Event:
    return f"event: {name}\ndata: {json.dumps({'type': name, **data})}\n\n".encode()


def an_text_block(index: int, deltas: Sequence[str]) -> list[Event]:
    events = [an_event("content_block_start", {"index": index, "content_block": {"type": "text", "text": ""}})]
    events += [
        an_event("content_block_delta", {"index": index, "delta": {"type": "text_delta", "text": d}}) for d in deltas
    ]
    events.append(an_event("content_block_stop", {"index": index}))
    return events


def an_tool_block(index: int, call_id: str, name: str, arguments: str, pieces: int) -> list[Event]:
    size = max(1, -(-len(arguments) // pieces))
    parts = [arguments[i : i + size] for i in range(0, len(arguments), size)]
    block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
    events = [an_event("content_block_start", {"index": index, "content_block": block})]
    events += [
        an_event("content_block_delta", {"index": index, "delta": {"type": "input_json_delta", "partial_json": p}})
        for p in parts
    ]
    events.append(an_event("content_block_stop", {"index": index}))
    return events


def anthropic_reply(
    *,
    blocks: Sequence[list[Event]] = (),
    usage: dict[str, Any] = ANTHROPIC_USAGE,
    output_tokens: int = 15,
    stop_reason: str | None = None,
    hang: bool = False,
) -> Reply:
    has_tool = any(b"tool_use" in b[0] for b in blocks)
    message = {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": "claude-fake",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {**usage, "output_tokens": 1},
    }
    events = [an_event("message_start", {"message": message})]
    for block in blocks:
        events += block
    if hang:
        return Reply(events=events, hang=True)
    events.append(
        an_event(
            "message_delta",
            {
                "delta": {
                    "stop_reason": stop_reason or ("tool_use" if has_tool else "end_turn"),
                    "stop_sequence": None,
                },
                "usage": {"output_tokens": output_tokens},
            },
        )
    )
    events.append(an_event("message_stop", {}))
    return Reply(events=events)


def anthropic_error(status: int, message: str, kind: str = "invalid_request_error") -> Reply:
    return Reply(status=status, body={"type": "error", "error": {"type": kind, "message": message}})
