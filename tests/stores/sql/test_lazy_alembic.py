"""Alembic is imported when a migration runs, not to check a current schema at start-up.

`prepare_schema` reads the version row with SQLAlchemy and the shipped head from the revision files; both must
say exactly what Alembic says.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa

from agora_agent.stores.sql import create_engine_from_url, open_sql_backend
from agora_agent.stores.sql.migrate import (
    VERSION_TABLE,
    _alembic_current,
    _current,
    _shipped_head,
    downgrade,
    head_revision,
    upgrade,
)
from tests.contract.sql_factories import fresh_postgres_database


def test_the_shipped_head_read_from_the_files_is_alembics() -> None:
    assert _shipped_head() == head_revision()


def _both(sync_conn: sa.Connection) -> tuple[str | None, str | None]:
    return _current(sync_conn), _alembic_current(sync_conn)


async def _check_current_agrees(url: str) -> None:
    engine = create_engine_from_url(url)
    try:
        async with engine.connect() as conn:
            assert await conn.run_sync(_both) == (None, None)  # never migrated: no version table
        await upgrade(engine, "0001")
        async with engine.connect() as conn:
            assert await conn.run_sync(_both) == ("0001", "0001")
        await upgrade(engine)
        async with engine.connect() as conn:
            assert await conn.run_sync(_both) == (head_revision(), head_revision())
        await downgrade(engine, "base")  # the version table stays, empty
        async with engine.connect() as conn:
            assert await conn.run_sync(_both) == (None, None)
        async with engine.begin() as conn:
            await conn.execute(sa.text(f"INSERT INTO {VERSION_TABLE} (version_num) VALUES ('0001'), ('0002')"))
        async with engine.connect() as conn:  # two heads: Alembic's own error, as before
            with pytest.raises(Exception, match="more than one head"):
                await conn.run_sync(_current)
    finally:
        await engine.dispose()


async def test_the_version_row_read_without_alembic_is_alembics_on_sqlite(tmp_path: Path) -> None:
    await _check_current_agrees(f"sqlite:///{tmp_path / 'agora.db'}")


@pytest.mark.postgres
async def test_the_version_row_read_without_alembic_is_alembics_on_postgres() -> None:
    async with fresh_postgres_database() as url:
        await _check_current_agrees(url)


_OPEN = """
import asyncio, json, sys
from agora_agent.stores.sql import open_sql_backend

async def main():
    backend = await open_sql_backend(sys.argv[1])
    await backend.close()

asyncio.run(main())
print(json.dumps("alembic" in sys.modules))
"""


async def test_opening_a_current_database_does_not_import_alembic(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'agora.db'}"
    backend = await open_sql_backend(url)  # creates the tables and stamps the head (that needs Alembic)
    await backend.close()
    command = [sys.executable, "-c", _OPEN, url]
    done = await asyncio.to_thread(subprocess.run, command, capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(done.stdout) is False
