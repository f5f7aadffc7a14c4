"""Fixtures for the HTTP layer: an app on the in-process ASGI transport, and on a real uvicorn (127.0.0.1)."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import httpx2
import pytest
import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel

from agora_agent import ActionTool, AgentConfig, AgentService, ToolContext, tool
from agora_agent.actors import HeaderActorResolver
from agora_agent.messages import ModelRequest
from agora_agent.testing import FakeModel, ScriptedTurn, ToolCallRequest, sequence_script
from agora_agent.web import create_app


@tool
async def lookup_order(order_id: int, ctx: ToolContext) -> dict[str, Any]:
    """Look up an order by id."""
    return {"order_id": order_id, "status": "shipped"}


class RefundInput(BaseModel):
    order_id: int
    amount: float


class RefundOrder(ActionTool):
    """Refund an order (needs approval)."""

    name = "refund_order"
    description = "Refund an order."
    Input = RefundInput
    roles = ("support", "admin")

    async def execute(self, input: RefundInput, ctx: ToolContext) -> dict[str, Any]:
        return {"refunded": input.order_id}


def refund_script() -> Callable[[ModelRequest, int], ScriptedTurn]:
    """Turn 0 asks for a refund (parks for approval); turn 1 answers."""
    return sequence_script(
        ScriptedTurn(
            text="Checking. ", tool_calls=[ToolCallRequest(name="refund_order", input={"order_id": 1, "amount": 2})]
        ),
        ScriptedTurn(text="Refund done."),
    )


def hdr(actor: str, roles: str = "support", tenant: str | None = None) -> dict[str, str]:
    """HeaderActorResolver identity headers."""
    headers = {"x-actor-id": actor, "x-actor-role": roles}
    if tenant:
        headers["x-tenant-ref"] = tenant
    return headers


ALICE = hdr("alice")
BOB = hdr("bob")
ADMIN = hdr("root", "admin")


def is_admin(actor: Any, request: Any) -> bool:
    return "admin" in actor.roles


def make_config(script: Any = None, **kwargs: Any) -> AgentConfig:
    """A config with header identity, the two tools and a fake model (echo "ok" by default)."""
    from agora_agent.testing import echo_script

    kwargs.setdefault("actor_resolver", HeaderActorResolver())
    kwargs.setdefault("tools", [lookup_order, RefundOrder])
    return AgentConfig(model=FakeModel(script or echo_script("Hello there")), **kwargs)


@asynccontextmanager
async def asgi_client(config: AgentConfig | AgentService) -> AsyncIterator[tuple[httpx2.AsyncClient, AgentService]]:
    """The app on httpx2's ASGI transport (responses are buffered: use it for streams that end)."""
    app = create_app(config)
    service: AgentService = app.state.agent_service
    async with service, httpx2.AsyncClient(transport=httpx2.ASGITransport(app), base_url="http://test") as client:
        yield client, service


@pytest.fixture
def asgi() -> Callable[..., Any]:
    return asgi_client


@asynccontextmanager
async def serve(app: Any) -> AsyncIterator[str]:
    """Run `app` (lifespan included) on uvicorn at 127.0.0.1:<free port>; yields the base URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # TCP_NODELAY, as `serve`
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(512)  # connections queue here until uvicorn accepts: no readiness polling needed
    port = sock.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(app, lifespan="on", log_level="warning", timeout_graceful_shutdown=2, access_log=False)
    )
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 10)
        sock.close()


@pytest.fixture
def live() -> Callable[[FastAPI], Any]:
    return serve


async def sse_events(response: httpx2.Response) -> list[tuple[str, str, str]]:
    """(event, data, id) of every data-bearing event of a finished SSE response body."""
    from agora_agent.client.frames import parse_sse_text

    return parse_sse_text(response.text)


def named_events(response: httpx2.Response) -> Callable[[], Awaitable[tuple[str, dict[str, Any]]]]:
    """`next_event()` over a live SSE response: the next `(event name, JSON data)`; AssertionError at its end."""
    lines = response.aiter_lines()

    async def next_event() -> tuple[str, dict[str, Any]]:
        name = ""
        async for line in lines:
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: ") and name:
                return name, json.loads(line[6:])
        raise AssertionError("stream ended")

    return next_event


Waiter = Callable[[], Awaitable[None]]


@contextmanager
def serve_in_thread(app: Any) -> Iterator[str]:
    """`serve` for synchronous tests (the CLI): uvicorn in its own thread and event loop."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # TCP_NODELAY, as `serve`
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    server = uvicorn.Server(
        uvicorn.Config(app, lifespan="on", log_level="warning", timeout_graceful_shutdown=2, access_log=False)
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
