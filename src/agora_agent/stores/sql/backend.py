"""`open_sql_backend(url)`: everything SQL-backed the runtime needs, from one URL, checked at start-up."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import AsyncEngine

from agora_agent.errors import ConfigurationError
from agora_agent.governance.quota import Budget
from agora_agent.stores.sql.audit import SqlAuditLog
from agora_agent.stores.sql.engine import create_engine_from_url, normalize_url
from agora_agent.stores.sql.migrate import prepare_schema
from agora_agent.stores.sql.pricing import SqlPricingStore
from agora_agent.stores.sql.queries import SqlGovernanceQueries
from agora_agent.stores.sql.quota import SqlQuotaStore
from agora_agent.stores.sql.store import SqlAgentStore
from agora_agent.stores.sql.units import units_for

__all__ = ["SqlBackend", "StoreCommit", "open_sql_backend"]

StoreCommit = Literal["sync", "effects"]
"""Which PostgreSQL commits wait for their WAL flush: all (`"sync"`) or those before an effect (`"effects"`)."""


@dataclass(kw_only=True)
class SqlBackend:
    """One engine and the stores built on it. `close()` disposes of the engine's connections."""

    engine: AsyncEngine
    store: SqlAgentStore
    pricing: SqlPricingStore
    queries: SqlGovernanceQueries
    audit: SqlAuditLog

    def quota(self, budget: Budget) -> SqlQuotaStore:
        """A quota store for `budget` on the same database."""
        return SqlQuotaStore(self.engine, budget)

    async def close(self) -> None:
        await self.engine.dispose()


def default_auto_create(url: URL) -> bool:
    """Tables are created automatically for SQLite (the embedded default), never for PostgreSQL."""
    return url.get_backend_name() == "sqlite"


async def open_sql_backend(
    url: str | URL,
    *,
    auto_create_tables: bool | None = None,
    store_commit: StoreCommit = "sync",
    **engine_options: Any,
) -> SqlBackend:
    """Connect, check (or create) the schema, and build the store, pricing store and governance queries.

    `store_commit` (PostgreSQL; ignored on SQLite): `"sync"` (default) — every commit waits for its WAL to reach
    the disk; `"effects"` — only the commits that precede an effect do (a tool call's start, an approval, a run's
    start and end, everything outside a run), while a budget reservation's commit, which only precedes a model
    call, does not (docs/persistence.md: what a crash of the database server can then lose).

    Raises `StoreError` — naming the URL with its password masked and the fix — when the database is
    unreachable or its schema is missing or behind; `ConfigurationError` for an unsupported URL or
    `store_commit`.
    """
    if store_commit not in ("sync", "effects"):
        raise ConfigurationError(f'store_commit must be "sync" or "effects", not {store_commit!r}')
    target = normalize_url(url)
    engine = create_engine_from_url(target, **engine_options)
    units_for(engine).defer_flush = store_commit == "effects" and engine.dialect.name == "postgresql"
    create = default_auto_create(target) if auto_create_tables is None else auto_create_tables
    try:
        await prepare_schema(engine, auto_create_tables=create)
    except BaseException:
        await engine.dispose()
        raise
    pricing = SqlPricingStore(engine)
    return SqlBackend(
        engine=engine,
        store=SqlAgentStore(engine),
        pricing=pricing,
        queries=SqlGovernanceQueries(engine, pricing),
        audit=SqlAuditLog(engine),
    )
