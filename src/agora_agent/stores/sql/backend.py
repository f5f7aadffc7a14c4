"""`open_sql_backend(url)`: everything SQL-backed the runtime needs, from one URL, checked at start-up."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import AsyncEngine

from agora_agent.governance.quota import Budget
from agora_agent.stores.sql.audit import SqlAuditLog
from agora_agent.stores.sql.engine import create_engine_from_url, normalize_url
from agora_agent.stores.sql.migrate import prepare_schema
from agora_agent.stores.sql.pricing import SqlPricingStore
from agora_agent.stores.sql.queries import SqlGovernanceQueries
from agora_agent.stores.sql.quota import SqlQuotaStore
from agora_agent.stores.sql.store import SqlAgentStore

__all__ = ["SqlBackend", "open_sql_backend"]


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
    url: str | URL, *, auto_create_tables: bool | None = None, **engine_options: Any
) -> SqlBackend:
    """Connect, check (or create) the schema, and build the store, pricing store and governance queries.

    Raises `StoreError` — naming the URL with its password masked and the fix — when the database is
    unreachable or its schema is missing or behind; `ConfigurationError` for an unsupported URL.
    """
    target = normalize_url(url)
    engine = create_engine_from_url(target, **engine_options)
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
