"""`POST /agent/chat`'s first byte: what runs before it, and what must not.

The response's head and its `meta` frame leave before the run takes its first step (the run is scheduled
just before the response starts; its first step, history and the model request, once ran ahead and held
the first byte back by a millisecond or more). `subscribe` given what `chat` returned checks the run row
`chat` recorded instead of reading it back. No route dependency is a plain `def`: FastAPI would run it on
a worker thread, a hand-off per request for a getattr.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

import pytest
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute
from sse_starlette import EventSourceResponse

from agora_agent import AgentService
from agora_agent.actors import Actor
from agora_agent.client.frames import parse_sse_text
from agora_agent.errors import ForbiddenError
from agora_agent.messages import ModelRequest
from agora_agent.service import ChatStarted
from agora_agent.testing import ScriptedTurn
from agora_agent.web import create_app
from agora_agent.web.routes.chat import chat as chat_route
from agora_agent.web.sse import SSE_HEADERS, event_source_response

from .conftest import ALICE, BOB, asgi_client, is_admin, make_config


async def _post_chat(
    app: Any, order: list[str], path: str = "/agent/chat", payload: dict[str, Any] | None = None
) -> list[bytes]:
    """POST `payload` to `path` through the bare ASGI interface, noting in `order` each message the app sends;
    returns the body's chunks."""
    body = json.dumps(payload or {"message": "hi"}).encode()
    chunks: list[bytes] = []
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"test"),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"x-actor-id", b"alice"),
        ],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
        "state": {},
    }
    messages = iter([{"type": "http.request", "body": body, "more_body": False}])
    ended = False

    async def receive() -> dict[str, Any]:
        import asyncio

        while not ended:  # the request is read; the client stays until the response ends
            try:
                return next(messages)
            except StopIteration:
                await asyncio.sleep(0.005)
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        nonlocal ended
        if message["type"] == "http.response.start":
            order.append(f"start {message['status']}")
        elif message.get("body"):
            order.append("meta" if not chunks else "frame")
            chunks.append(message["body"])
        if message["type"] == "http.response.body" and not message.get("more_body"):
            ended = True

    await app(scope, receive, send)
    return chunks


async def test_the_head_and_meta_frame_leave_before_the_run_takes_its_first_step() -> None:
    order: list[str] = []

    def script(request: ModelRequest, turn: int) -> ScriptedTurn:
        order.append("model")
        return ScriptedTurn(text="Hello there")

    app = create_app(make_config(script))
    async with app.state.agent_service:
        chunks = await _post_chat(app, order)
    assert order[:3] == ["start 200", "meta", "model"], order
    assert chunks[0].startswith(b"event: meta") and order.count("meta") == 1 and "frame" in order


_USER_TEXT = [{"id": "m1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}]
_FRONTENDS = {
    "ai-sdk": ("/agent/ai-sdk/chat", {"id": "chat-1", "messages": _USER_TEXT}, b'data: {"type":"start"'),
    "ag-ui": (
        "/agent/ag-ui",
        {
            "threadId": "t-1",
            "runId": "r-1",
            "messages": [{"id": "m1", "role": "user", "content": "hi"}],
            "state": {},
            "tools": [],
            "context": [],
            "forwardedProps": {},
        },
        b'data: {"type":"RUN_STARTED"',
    ),
}


@pytest.mark.parametrize("frontend", sorted(_FRONTENDS))
async def test_the_frontend_routes_send_their_head_and_opening_events_before_the_runs_first_step(
    frontend: str,
) -> None:
    path, payload, opening = _FRONTENDS[frontend]
    order: list[str] = []

    def script(request: ModelRequest, turn: int) -> ScriptedTurn:
        order.append("model")
        return ScriptedTurn(text="Hello there")

    app = create_app(make_config(script))
    async with app.state.agent_service:
        chunks = await _post_chat(app, order, path, payload)
    assert order[:3] == ["start 200", "meta", "model"], order
    assert chunks[0].startswith(opening), chunks[0]
    assert b"Hello" in b"".join(chunks)  # the run streamed after the opening events


async def test_subscribe_to_what_chat_returned_checks_the_recorded_run_without_reading_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    alice, bob = Actor("alice", roles=("support",)), Actor("bob", roles=("support",))
    async with AgentService.from_config(make_config()) as service:
        started = await service.chat(alice, "hi")
        reads: list[str] = []
        get_run = service.store.get_run

        async def counted(run_id: str) -> Any:
            reads.append(run_id)
            return await get_run(run_id)

        monkeypatch.setattr(service.store, "get_run", counted)
        with pytest.raises(ForbiddenError):
            await service.subscribe(bob, started)  # the recorded row is checked like a stored one
        frames = [event.frame async for event in await service.subscribe(alice, started)]
        assert reads == [] and frames
        # by id, or a ChatStarted that does not carry the row: read and checked as before
        await service.subscribe(alice, started.run_id)
        await service.subscribe(alice, ChatStarted(run_id=started.run_id, thread_id=started.thread_id))
        assert reads == [started.run_id, started.run_id]


def _api_routes(routes: Sequence[Any]) -> Iterator[APIRoute]:
    for route in routes:
        if isinstance(route, APIRoute):
            yield route
        elif hasattr(route, "original_router"):  # FastAPI's included router
            yield from _api_routes(route.original_router.routes)


def _calls(dependant: Dependant) -> Iterator[Any]:
    for sub in dependant.dependencies:
        if sub.call is not None:
            yield sub.call
        yield from _calls(sub)


def test_no_route_dependency_runs_on_a_worker_thread() -> None:
    app = create_app(make_config(governance_authorize=is_admin))  # the governance routes too
    routes = list(_api_routes(app.routes))
    sync = {
        f"{route.path}: {getattr(call, '__qualname__', call)}"
        for route in routes
        for call in _calls(route.dependant)
        if not inspect.iscoroutinefunction(call)
    }
    assert len(routes) > 20 and not sync, sorted(sync)


_CHAT_BODIES: list[tuple[dict[str, str], Any]] = [
    (ALICE, {"message": "hi"}),
    (ALICE, {"message": "hi", "extra": 1, "page_context": {"page": "/x"}}),  # unknown keys ignored, snake_case too
    (ALICE, {"message": "hi", "agent": "nope"}),  # 404 naming the known agents
    (ALICE, {"message": "hi", "persona": "grumpy"}),  # 422 from the service
    (ALICE, {"message": "hi", "threadId": "no-such-thread"}),  # 404
    (BOB, {"message": "hi", "threadId": "<alice's>"}),  # 403
    ({}, {"message": "hi"}),  # 401
    ({}, {"message": ""}),  # 401 before 422
    (ALICE, {"message": ""}),  # 422 (FastAPI's path)
    (ALICE, {"message": "hi", "threadId": 5}),
    (ALICE, [1, 2]),
]


async def _answers(client: Any, thread_id: str) -> list[tuple[int, Any]]:
    out: list[tuple[int, Any]] = []
    for headers, body in _CHAT_BODIES:
        if isinstance(body, dict) and body.get("threadId") == "<alice's>":
            body = {**body, "threadId": thread_id}
        r = await client.post("/agent/chat", json=body, headers=headers)
        if r.status_code == 200:
            out.append((200, [event for event, _, _ in parse_sse_text(r.text)]))
        else:
            out.append((r.status_code, r.json()))
    return out


async def test_the_direct_chat_handler_answers_every_request_as_fastapis_handling_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    answers = []
    for direct in (True, False):
        if not direct:  # the endpoint without its direct handler: every request through FastAPI, as before
            monkeypatch.delattr(chat_route, "_agora_direct_handler")
        async with asgi_client(make_config()) as (client, _service):
            first = await client.post("/agent/chat", json={"message": "hi"}, headers=ALICE)
            answers.append(await _answers(client, first.headers["x-agent-thread-id"]))
    assert answers[0] == answers[1]
    assert [status for status, _ in answers[0]] == [200, 200, 404, 422, 404, 403, 401, 401, 422, 422, 422]


async def _no_body() -> AsyncIterator[bytes]:
    yield b""


@pytest.mark.parametrize(
    "headers",
    [
        {"X-Agent-Run-Id": "r-1", "X-Agent-Thread-Id": "t-1"},  # POST /chat
        {"X-Agent-Run-Id": "r-1"},  # re-attach
        {"x-vercel-ai-ui-message-stream": "v1", "X-Agent-Run-Id": "r-1", "X-Agent-Thread-Id": "t-1"},
        {"cache-control": "no-store", "Connection": "close", "X-Agent-Run-Id": "r-1"},  # overrides collapse
    ],
)
async def test_a_head_first_response_is_built_as_sse_starlette_builds_it(headers: dict[str, str]) -> None:
    """The response is built from a plan (sse-starlette's `__init__` ran once for these header names): every
    attribute and header as `EventSourceResponse.__init__` sets them, with this response's own values."""
    for round_ in range(2):  # the first builds the plan, the second uses it
        values = {name: f"{value}-{round_}" for name, value in headers.items()}
        ours = event_source_response(_no_body(), headers=values, ping_seconds=15, first=b"event: meta\n\n")
        theirs = EventSourceResponse(_no_body(), headers={**SSE_HEADERS, **values}, ping=15, sep="\n")
        assert ours.raw_headers == theirs.raw_headers
        mine, reference = dict(vars(ours)), dict(vars(theirs))
        assert mine.pop("first") == b"event: meta\n\n"
        for per_response in ("body_iterator", "_send_lock"):
            assert mine.pop(per_response) is not reference.pop(per_response)
        assert mine == reference
