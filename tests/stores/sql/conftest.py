"""Fixtures for the SQL store's own tests: an empty database on each backend."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from agora_agent.stores.sql import SqlBackend, open_sql_backend
from tests.contract.sql_factories import fresh_postgres_database


@asynccontextmanager
async def empty_database(kind: str, tmp_path: Path) -> AsyncIterator[str]:
    """The URL of an empty database: a new SQLite file, or a new PostgreSQL database (dropped afterwards)."""
    if kind == "sqlite":
        yield f"sqlite:///{tmp_path / 'agent.db'}"
        return
    async with fresh_postgres_database() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgres"])
async def empty_db_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """A URL of an empty database on each backend."""
    async with empty_database(request.param, tmp_path) as url:
        yield url


@pytest.fixture(params=["sqlite", "postgres"])
async def sql_backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SqlBackend]:
    """An opened backend (schema created) on each backend."""
    async with empty_database(request.param, tmp_path) as url:
        backend = await open_sql_backend(url, auto_create_tables=True)
        try:
            yield backend
        finally:
            await backend.close()
