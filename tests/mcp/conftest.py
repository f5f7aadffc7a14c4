"""MCP fixtures: an app on a real uvicorn (127.0.0.1, free port) and the SDK's own client against it."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


@asynccontextmanager
async def serve(app: Any) -> AsyncIterator[str]:
    """Run `app` (lifespan included) on uvicorn at 127.0.0.1:<free port>; yields the base URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    port = sock.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(app, lifespan="on", log_level="warning", timeout_graceful_shutdown=1, access_log=False)
    )
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 10)
        sock.close()


@asynccontextmanager
async def mcp_client(url: str, key: str | None = None, **options: Any) -> AsyncIterator[Client]:
    """The SDK's `Client` over streamable HTTP, sending `Authorization: Bearer <key>` when given."""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(20, read=60)) as http,
        Client(streamable_http_client(url, http_client=http), **options) as client,
    ):
        yield client
