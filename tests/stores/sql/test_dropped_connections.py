"""Dropped database connections on PostgreSQL: retried on a fresh connection; an outage is a 503 JSON body
and a run that cannot finish ends `failed`, never stuck `running`.

The database "goes away" through a real TCP proxy in front of PostgreSQL that the test cuts and
restores, and through `pg_terminate_backend` (what the server does when an operator kills backends).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from urllib.parse import urlsplit, urlunsplit

import httpx2
import pytest

from agora_agent import Actor, AgentConfig, AgentService
from agora_agent.actors import HeaderActorResolver
from agora_agent.messages import ModelRequest, ModelTurn, Usage
from agora_agent.models.base import TextCallback
from agora_agent.stores.sql import open_sql_backend
from agora_agent.testing.helpers import OBSERVER
from agora_agent.web import create_app
from tests.contract.sql_factories import fresh_postgres_database

ALICE = Actor("alice")


async def terminate_backends(url: str) -> int:
    """Kill every server process serving this test's database (as an operator or a failover would)."""
    import asyncpg

    parts = urlsplit(url.replace("postgresql+asyncpg", "postgresql"))
    dbname = parts.path.lstrip("/")
    admin = await asyncpg.connect(host=parts.hostname, port=parts.port, user="postgres", database="test")
    try:
        rows = await admin.fetch(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
            dbname,
        )
    finally:
        await admin.close()
    return len(rows)


class Proxy:
    """A TCP forwarder to PostgreSQL that can be cut (existing connections reset, new ones refused)."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.port = 0
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(*self.target)
        self._writers.update((writer, up_writer))

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(Exception):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            dst.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    async def cut(self) -> None:
        assert self._server is not None
        self._server.close()
        for w in list(self._writers):
            w.transport.abort()
        self._writers.clear()
        await self._server.wait_closed()

    def url_for(self, url: str) -> str:
        parts = urlsplit(url)
        return urlunsplit(parts._replace(netloc=f"{parts.username}@127.0.0.1:{self.port}"))


@pytest.fixture
async def pg_url() -> AsyncIterator[str]:
    async with fresh_postgres_database() as url:
        backend = await open_sql_backend(url, auto_create_tables=True)
        await backend.close()
        yield url


async def test_terminated_backends_are_retried_on_a_fresh_connection(pg_url: str) -> None:
    # No pre-ping on checkout (perf #18 removes it): the retry must notice and reconnect by itself.
    backend = await open_sql_backend(pg_url, pool_pre_ping=False)
    try:
        thread = await backend.store.create_thread(actor_ref="alice")
        assert await terminate_backends(pg_url) >= 1
        assert await backend.store.thread_owner(thread.id) == "alice"  # a read on a dead pooled connection
        assert await terminate_backends(pg_url) >= 1
        await backend.store.set_title(thread.id, "after the drop")  # a write on a dead pooled connection
        again = await backend.store.get_thread(thread.id)
        assert again is not None and again.title == "after the drop"
    finally:
        await backend.close()


class SlowModel:
    """Answers after `gate` opens, so the test can cut the database while the run is in flight."""

    model_id = "slow"

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.called = asyncio.Event()

    async def run_turn(self, request: ModelRequest, on_text: TextCallback) -> ModelTurn:
        self.called.set()
        await self.gate.wait()
        return ModelTurn(text="answer", usage=Usage(input_tokens=1, output_tokens=1))


async def test_an_outage_is_a_503_and_the_run_in_flight_ends_failed(pg_url: str) -> None:
    parts = urlsplit(pg_url)
    proxy = Proxy(parts.hostname or "127.0.0.1", parts.port or 5432)
    await proxy.start()
    model = SlowModel()
    config = AgentConfig(model=model, store=proxy.url_for(pg_url), actor_resolver=HeaderActorResolver())
    app = create_app(config)
    service: AgentService = app.state.agent_service
    headers = {"x-actor-id": "alice", "x-actor-role": "support"}
    async with service, httpx2.AsyncClient(transport=httpx2.ASGITransport(app), base_url="http://t") as client:
        run_id = (await service.chat(ALICE, "hi")).run_id
        await asyncio.wait_for(model.called.wait(), 5)

        await proxy.cut()  # the database goes away
        refused = await client.post("/agent/chat", json={"message": "again"}, headers=headers)
        assert refused.status_code == 503
        assert refused.json() == {"error": "the agent store is unavailable right now; try again shortly"}

        model.gate.set()  # the run in flight cannot persist its answer…
        await asyncio.sleep(1.0)
        proxy.port = urlsplit(proxy.url_for(pg_url)).port or 0
        await proxy.start()  # …the database comes back while it retries recording its end
        await service.wait_for_run(OBSERVER, run_id, timeout=20)
        run = await service.get_run(OBSERVER, run_id)
        assert run is not None and run.status == "failed"  # never stuck `running`
    await proxy.cut()
