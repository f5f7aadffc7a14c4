"""Helpers for the observability/console tests: an app on the in-process ASGI transport, header identity."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2

from agora_agent import AgentConfig, AgentService
from agora_agent.actors import HeaderActorResolver
from agora_agent.web import create_app


def hdr(actor: str, roles: str = "support", tenant: str | None = None) -> dict[str, str]:
    headers = {"x-actor-id": actor, "x-actor-role": roles}
    if tenant:
        headers["x-tenant-ref"] = tenant
    return headers


ALICE_H = hdr("alice", tenant="acme")
BOB_H = hdr("bob")
ADMIN_H = hdr("root", "admin")


def is_admin(actor: Any, request: Any) -> bool:
    return "admin" in actor.roles


def web_config(**kwargs: Any) -> AgentConfig:
    kwargs.setdefault("actor_resolver", HeaderActorResolver())
    kwargs.setdefault("governance_authorize", is_admin)
    return AgentConfig(**kwargs)


@asynccontextmanager
async def asgi(config: AgentConfig) -> AsyncIterator[tuple[httpx2.AsyncClient, AgentService]]:
    app = create_app(config)
    service: AgentService = app.state.agent_service
    async with service, httpx2.AsyncClient(transport=httpx2.ASGITransport(app), base_url="http://test") as client:
        yield client, service


@asynccontextmanager
async def serve(app: Any) -> AsyncIterator[str]:
    """Run `app` (lifespan included) on uvicorn at 127.0.0.1:<free port>; yields the base URL."""
    import asyncio
    import socket

    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    port = sock.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(app, lifespan="on", log_level="warning", timeout_graceful_shutdown=1, access_log=False)
    )
    task = asyncio.create_task(server.serve(sockets=[sock]))
    for _ in range(500):  # the lifespan (which starts the agent service) has run once uvicorn says started
        if server.started or task.done():
            break
        await asyncio.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 10)
        sock.close()
