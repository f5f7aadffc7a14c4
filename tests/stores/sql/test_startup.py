"""Start-up: URL handling, one clear error for a database that is down or has no schema, SQLite pragmas."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
import sqlalchemy as sa

from agora_agent.errors import ConfigurationError, StoreError
from agora_agent.stores.sql import create_engine_from_url, mask_url, normalize_url, open_sql_backend
from agora_agent.stores.sql.migrate import current, head_revision
from tests.contract.sql_factories import fresh_postgres_database


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize(
    ("given", "driver"),
    [
        ("sqlite:///agent.db", "sqlite+aiosqlite"),
        ("sqlite+aiosqlite:///agent.db", "sqlite+aiosqlite"),
        ("postgresql://u:p@db/x", "postgresql+asyncpg"),
        ("postgres://u:p@db/x", "postgresql+asyncpg"),
        ("postgresql+asyncpg://u:p@db/x", "postgresql+asyncpg"),
    ],
)
def test_urls_are_normalised_to_the_async_drivers(given: str, driver: str) -> None:
    assert normalize_url(given).drivername == driver


def test_unsupported_url_is_a_configuration_error_with_the_password_masked() -> None:
    with pytest.raises(ConfigurationError) as info:
        normalize_url("mysql://root:hunter2@db/app")
    assert "hunter2" not in str(info.value) and "sqlite:///" in str(info.value)
    assert mask_url("postgresql://u:hunter2@db/x") == "postgresql://u:***@db/x"


async def test_database_down_gives_one_store_error_naming_the_masked_url() -> None:
    url = f"postgresql://agora:s3cret@127.0.0.1:{_closed_port()}/agora"
    with pytest.raises(StoreError) as info:
        await open_sql_backend(url)
    message = str(info.value)
    assert "s3cret" not in message
    assert f"postgresql+asyncpg://agora:***@127.0.0.1:{url.split(':')[3].split('/')[0]}/agora" in message
    assert "cannot connect" in message and "server is running" in message


async def test_missing_schema_on_postgres_names_the_upgrade_command() -> None:
    async with fresh_postgres_database() as url:
        with pytest.raises(StoreError) as info:
            await open_sql_backend(url)  # auto_create_tables defaults to off for PostgreSQL
        message = str(info.value)
        assert "has no agora-agent schema" in message
        assert f"agora-agent db upgrade --url '{url}'" in message
        backend = await open_sql_backend(url, auto_create_tables=True)
        await backend.close()
        backend = await open_sql_backend(url)  # now it is there
        await backend.close()


async def test_schema_behind_the_code_names_the_upgrade_command(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'agent.db'}"
    backend = await open_sql_backend(url)
    async with backend.engine.begin() as conn:
        await conn.execute(sa.text("UPDATE agent_alembic_version SET version_num = 'older'"))
    await backend.close()
    with pytest.raises(StoreError) as outdated:
        await open_sql_backend(url, auto_create_tables=False)
    assert outdated.value.code == "schema_outdated"
    assert "agora-agent db upgrade" in str(outdated.value)  # the one-liner names the fix


async def test_sqlite_file_is_created_with_wal_and_foreign_keys(tmp_path: Path) -> None:
    path = tmp_path / "nested.db"
    backend = await open_sql_backend(f"sqlite:///{path}")
    try:
        assert path.exists()
        assert await current(backend.engine) == head_revision()
        async with backend.engine.connect() as conn:
            assert (await conn.exec_driver_sql("PRAGMA journal_mode")).scalar() == "wal"
            assert (await conn.exec_driver_sql("PRAGMA foreign_keys")).scalar() == 1
            assert (await conn.exec_driver_sql("PRAGMA busy_timeout")).scalar() > 0
    finally:
        await backend.close()


async def test_in_memory_sqlite_works_for_tests() -> None:
    backend = await open_sql_backend("sqlite://")
    try:
        thread = await backend.store.create_thread(actor_ref="alice")
        assert await backend.store.get_thread(thread.id) == thread
    finally:
        await backend.close()


async def test_engine_factory_returns_an_async_engine_for_each_backend() -> None:
    for url in ("sqlite:///x.db", "postgresql://u@h/db"):
        engine = create_engine_from_url(url)
        assert engine.url.drivername.endswith(("aiosqlite", "asyncpg"))
        await engine.dispose()
