"""Fixtures of the retrieval tests: one factory per vector store, so the contract suite runs on each.

pgvector: the system PostgreSQL here has no `vector` extension, so the tests start an embedded PostgreSQL 16
with pgvector from the `pgserver` package (once per session, Unix socket only, its own data directory).
Set AGORA_PGVECTOR_URL to test against another server instead. Without either the pgvector tests skip,
and fail under CI=true.
"""

from __future__ import annotations

import os
import shutil
import uuid
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

import pytest
import sqlalchemy as sa

from agora_agent.rag import MemoryVectorStore, VectorStore
from tests.conftest import IN_CI

StoreFactory = Callable[[], Awaitable[VectorStore]]
STORE_KINDS = ["memory", "sqlite", "pgvector"]


@pytest.fixture(scope="session")
def pgvector_url() -> Iterator[str]:
    """An asyncpg URL of a PostgreSQL server with pgvector available."""
    url = os.environ.get("AGORA_PGVECTOR_URL")
    if url:
        yield url
        return
    try:
        with warnings.catch_warnings():  # platformdirs warns about XDG_RUNTIME_DIR at import time
            warnings.simplefilter("ignore")
            import pgserver
    except ImportError:
        message = "pgvector tests need the pgserver package (dev extra) or AGORA_PGVECTOR_URL"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    # Not under pytest's tmp dir: pgserver runs PostgreSQL as its own user, which needs to reach the directory.
    data = f"/tmp/agora-pgvector-{uuid.uuid4().hex[:8]}"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        server = pgserver.get_server(data, cleanup_mode="stop")
    try:
        yield f"postgresql+asyncpg://postgres@/postgres?host={data}"
    finally:
        server.cleanup()
        shutil.rmtree(data, ignore_errors=True)


@pytest.fixture(params=STORE_KINDS)
async def store_factory(request: pytest.FixtureRequest) -> AsyncIterator[StoreFactory]:
    """Builds an empty store of the parametrised kind (cleaned up afterwards)."""
    kind = request.param
    if kind == "memory":

        async def make_memory() -> VectorStore:
            return MemoryVectorStore()

        yield make_memory
    elif kind == "sqlite":
        from agora_agent.rag.sqlite_store import SqliteVectorStore

        made: list[SqliteVectorStore] = []
        tmp = request.getfixturevalue("tmp_path")

        async def make_sqlite() -> VectorStore:
            store = SqliteVectorStore(tmp / f"agent-{len(made)}.db")
            made.append(store)
            return store

        yield make_sqlite
        for store in made:
            await store.close()
    else:
        async for factory in _pgvector(request.getfixturevalue("pgvector_url")):
            yield factory


async def _pgvector(url: str) -> AsyncIterator[StoreFactory]:
    from agora_agent.rag.pg_schema import downgrade_pgvector
    from agora_agent.rag.pgvector_store import PgVectorStore
    from agora_agent.stores.sql import create_engine_from_url

    engine = create_engine_from_url(url)
    tables: list[str] = []

    async def make() -> VectorStore:
        table = f"rag_t_{uuid.uuid4().hex[:10]}"
        tables.append(table)
        return PgVectorStore(engine, table=table, dimension=3, ensure_schema=True)

    try:
        yield make
    finally:
        for table in tables:
            await downgrade_pgvector(engine, table=table)
            async with engine.begin() as conn:
                await conn.execute(sa.text(f"DROP TABLE IF EXISTS {table}_alembic_version"))
        await engine.dispose()
