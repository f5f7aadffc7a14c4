"""The pgvector table's schema, managed by an Alembic chain of its own (`agora_agent/rag/migrations`).

Why not the agent store's chain: the table needs the `vector` extension and a fixed dimension, and the agent
store must keep migrating on PostgreSQL servers that have neither. So the chunk table has its own version
table (`<table>_alembic_version`) and is migrated with the table's options:
`agora-agent rag db upgrade --url … --dimension 384 --metric cosine`, or `await upgrade_pgvector(engine, …)`.
"""

from __future__ import annotations

import re
from importlib.resources import files
from typing import Any

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from sqlalchemy.ext.asyncio import AsyncEngine

from agora_agent.errors import ConfigurationError

__all__ = ["current_pgvector", "downgrade_pgvector", "upgrade_pgvector"]

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def check_table_options(table: str, dimension: int, metric: str) -> None:
    """Raise `ConfigurationError` for options that cannot name or shape the table."""
    if not _IDENT.match(table):
        raise ConfigurationError(f"Invalid table name {table!r}")
    if not 1 <= dimension <= 16000:
        raise ConfigurationError(f"pgvector dimension must be 1..16000 (got {dimension})")
    if metric not in ("cosine", "l2", "inner"):
        raise ConfigurationError(f"unknown metric {metric!r} (cosine, l2 or inner)")


def _config(table: str, dimension: int, metric: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(files("agora_agent.rag") / "migrations"))
    config.attributes.update(rag_table=table, rag_dimension=dimension, rag_metric=metric)
    return config


async def _alembic(engine: AsyncEngine, action: str, revision: str, table: str, dimension: int, metric: str) -> None:
    check_table_options(table, dimension, metric)
    if engine.dialect.name != "postgresql":
        raise ConfigurationError("the pgvector table needs PostgreSQL")
    config = _config(table, dimension, metric)

    def run(sync_conn: sa.Connection) -> None:
        config.attributes["connection"] = sync_conn
        getattr(command, action)(config, revision)

    async with engine.begin() as conn:
        await conn.run_sync(run)


async def upgrade_pgvector(
    engine: AsyncEngine, *, table: str = "agent_rag_chunks", dimension: int = 1536, metric: str = "cosine"
) -> None:
    """Create (or bring up to date) the chunk table; needs the `vector` extension on the server."""
    await _alembic(engine, "upgrade", "head", table, dimension, metric)


async def downgrade_pgvector(engine: AsyncEngine, *, table: str = "agent_rag_chunks", revision: str = "base") -> None:
    """Drop the chunk table (`base`)."""
    await _alembic(engine, "downgrade", revision, table, 1, "cosine")


async def current_pgvector(engine: AsyncEngine, *, table: str = "agent_rag_chunks") -> str | None:
    """The chunk table's revision (None: never migrated)."""

    def read(sync_conn: sa.Connection) -> Any:
        opts = {"version_table": f"{table}_alembic_version"}
        return MigrationContext.configure(sync_conn, opts=opts).get_current_revision()

    async with engine.connect() as conn:
        result: str | None = await conn.run_sync(read)
        return result
