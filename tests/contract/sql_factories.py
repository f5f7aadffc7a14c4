"""SQL implementations for the contract suites: SQLite on a temporary file, PostgreSQL on a fresh database.

The PostgreSQL factory creates (and drops) its own database rather than using the `postgres_url`
fixture, because that fixture is synchronous (it calls `asyncio.run`) and cannot be requested from
inside the async `store` fixture.
"""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from agora_agent.governance.pricing import PricingStore
from agora_agent.governance.readmodel import GovernanceQueries
from agora_agent.stores.base import AgentStore
from agora_agent.stores.sql import SqlAgentStore, SqlGovernanceQueries, SqlPricingStore, open_sql_backend
from tests.conftest import PG_HOST, PG_PORT, require_server

__all__ = ["PRICING_FACTORIES", "READMODEL_FACTORIES", "SQL_STORE_FACTORIES", "fresh_postgres_database"]


@asynccontextmanager
async def fresh_postgres_database() -> AsyncIterator[str]:
    """A new, empty PostgreSQL database (asyncpg URL), dropped on exit."""
    require_server("PostgreSQL", PG_HOST, PG_PORT)
    import asyncpg

    name = f"agora_t_{uuid.uuid4().hex[:12]}"

    async def admin(sql: str) -> None:
        conn = await asyncpg.connect(host=PG_HOST, port=PG_PORT, user="postgres", database="test")
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    await admin(f'CREATE DATABASE "{name}"')
    try:
        yield f"postgresql+asyncpg://postgres@{PG_HOST}:{PG_PORT}/{name}"
    finally:
        await admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


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
    async with fresh_postgres_database() as url:
        backend = await open_sql_backend(url, auto_create_tables=True)
        try:
            yield backend.store
        finally:
            await backend.close()


def sql_readmodel(store: AgentStore, pricing: PricingStore | None) -> GovernanceQueries:
    assert isinstance(store, SqlAgentStore)
    return SqlGovernanceQueries(store.engine, pricing)


def sql_pricing(store: AgentStore) -> PricingStore:
    assert isinstance(store, SqlAgentStore)
    return SqlPricingStore(store.engine)


SQL_STORE_FACTORIES = {"sqlite": sqlite_store, "postgres": postgres_store}
READMODEL_FACTORIES = {"sqlite": sql_readmodel, "postgres": sql_readmodel}
PRICING_FACTORIES = {"sqlite": sql_pricing, "postgres": sql_pricing}
