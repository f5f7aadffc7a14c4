"""SQL implementations for the contract suites: SQLite on a temporary file, PostgreSQL on a clean database.

PostgreSQL: `CREATE DATABASE` + `DROP DATABASE` cost ~1 s each on this machine, so the store factory
uses one database per test process (schema created once, dropped at exit) and empties every table
before each test. `fresh_postgres_database()` still gives a brand-new database for tests that need
one (migrations). Neither uses the `postgres_url` fixture: it is synchronous (it calls `asyncio.run`)
and cannot be requested from inside the async `store` fixture.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import tempfile
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import sqlalchemy as sa

from agora_agent.governance.pricing import PricingStore
from agora_agent.governance.queries import GovernanceQueries
from agora_agent.stores.base import AgentStore
from agora_agent.stores.sql import SqlAgentStore, SqlGovernanceQueries, SqlPricingStore, open_sql_backend
from agora_agent.stores.sql.tables import AGENT_TABLES
from tests.conftest import PG_HOST, PG_PORT, require_server

__all__ = ["PRICING_FACTORIES", "QUERIES_FACTORIES", "SQL_STORE_FACTORIES", "fresh_postgres_database"]


async def _admin(sql: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(host=PG_HOST, port=PG_PORT, user="postgres", database="test")
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


def _url(name: str) -> str:
    return f"postgresql+asyncpg://postgres@{PG_HOST}:{PG_PORT}/{name}"


@asynccontextmanager
async def fresh_postgres_database() -> AsyncIterator[str]:
    """A new, empty PostgreSQL database (asyncpg URL), dropped on exit."""
    require_server("PostgreSQL", PG_HOST, PG_PORT)
    name = f"agora_t_{uuid.uuid4().hex[:12]}"
    await _admin(f'CREATE DATABASE "{name}"')
    try:
        yield _url(name)
    finally:
        await _admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


_shared_url: str | None = None


async def shared_postgres_url() -> str:
    """This process's PostgreSQL database with the schema in place (created on first use, dropped at exit)."""
    global _shared_url
    require_server("PostgreSQL", PG_HOST, PG_PORT)
    if _shared_url is None:
        name = f"agora_shared_{os.getpid()}_{uuid.uuid4().hex[:6]}"
        await _admin(f'CREATE DATABASE "{name}"')
        atexit.register(lambda: asyncio.run(_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')))
        backend = await open_sql_backend(_url(name), auto_create_tables=True)
        await backend.close()
        _shared_url = _url(name)
    return _shared_url


@asynccontextmanager
async def sqlite_store(request: pytest.FixtureRequest) -> AsyncIterator[AgentStore]:
    with tempfile.TemporaryDirectory(prefix="agora-sql-") as tmp:
        backend = await open_sql_backend(f"sqlite:///{Path(tmp) / 'agent.db'}")
        try:
            yield backend.store
        finally:
            await backend.close()


@asynccontextmanager
async def postgres_store(request: pytest.FixtureRequest) -> AsyncIterator[AgentStore]:
    backend = await open_sql_backend(await shared_postgres_url())
    try:
        async with backend.engine.begin() as conn:
            tables = ", ".join(t.name for t in AGENT_TABLES)
            await conn.execute(sa.text(f"TRUNCATE {tables} RESTART IDENTITY CASCADE"))
        yield backend.store
    finally:
        await backend.close()


def sql_queries(store: AgentStore, pricing: PricingStore | None) -> GovernanceQueries:
    assert isinstance(store, SqlAgentStore)
    return SqlGovernanceQueries(store.engine, pricing)


def sql_pricing(store: AgentStore) -> PricingStore:
    assert isinstance(store, SqlAgentStore)
    return SqlPricingStore(store.engine)


SQL_STORE_FACTORIES = {"sqlite": sqlite_store, "postgres": postgres_store}
QUERIES_FACTORIES = {"sqlite": sql_queries, "postgres": sql_queries}
PRICING_FACTORIES = {"sqlite": sql_pricing, "postgres": sql_pricing}
