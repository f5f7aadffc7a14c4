"""Schema management: Alembic migrations shipped in the package (no alembic.ini), and the start-up check.

`upgrade`, `downgrade` and `current` drive Alembic over an async engine by handing it an open
connection. `prepare_schema` runs at start-up: it turns "database down" and "schema missing or
behind" into one `StoreError` naming the URL (password masked) and the command that fixes it, or —
with `auto_create_tables` — creates the tables (same schema as the migrations) and stamps the head.

Alembic (~0.3 s of imports: every dialect's DDL and the autogenerate machinery) is imported only when a
migration runs or a revision script is loaded. The start-up check of a current schema does without it: it
reads the version row with SQLAlchemy and compares it with `SCHEMA_HEAD`, the shipped head written down here
(a test holds it equal to Alembic's).
"""

from __future__ import annotations

from importlib.resources import files
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from agora_agent.errors import StoreError
from agora_agent.stores.sql.engine import mask_url
from agora_agent.stores.sql.tables import metadata

if TYPE_CHECKING:
    from alembic.config import Config
    from sqlalchemy.ext.asyncio import AsyncEngine

__all__ = ["VERSION_TABLE", "alembic_config", "current", "downgrade", "head_revision", "prepare_schema", "upgrade"]

VERSION_TABLE = "agent_alembic_version"


def alembic_config(url: str | None = None) -> Config:
    """An Alembic `Config` pointing at the packaged migrations (and at `url`, for the plain alembic CLI)."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(files("agora_agent.stores.sql") / "migrations"))
    if url is not None:
        config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def head_revision() -> str:
    """The newest migration shipped with this version of agora-agent."""
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None
    return head


async def _with_alembic(engine: AsyncEngine, action: str, *args: Any) -> None:
    from alembic import command

    config = alembic_config()

    def run(sync_conn: sa.Connection) -> None:
        config.attributes["connection"] = sync_conn
        getattr(command, action)(config, *args)

    async with engine.begin() as conn:
        await conn.run_sync(run)


async def upgrade(engine: AsyncEngine, revision: str = "head") -> None:
    """Apply migrations up to `revision`."""
    await _with_alembic(engine, "upgrade", revision)


async def downgrade(engine: AsyncEngine, revision: str = "-1") -> None:
    """Revert migrations down to `revision` (`base` drops every agora-agent table)."""
    await _with_alembic(engine, "downgrade", revision)


# Alembic's version table, as `MigrationContext` declares it (read here without importing Alembic).
_VERSION = sa.Table(VERSION_TABLE, sa.MetaData(), sa.Column("version_num", sa.String(32), nullable=False))


def _current(sync_conn: sa.Connection) -> str | None:
    # What `MigrationContext.get_current_revision()` does: no version table -> None, else its one row.
    if not sync_conn.dialect.has_table(sync_conn, VERSION_TABLE):
        return None
    versions = list(sync_conn.execute(_VERSION.select()).scalars())
    if len(versions) > 1:  # several heads: Alembic raises its own error for that
        return _alembic_current(sync_conn)
    return versions[0] if versions else None


def _alembic_current(sync_conn: sa.Connection) -> str | None:
    from alembic.runtime.migration import MigrationContext

    return MigrationContext.configure(sync_conn, opts={"version_table": VERSION_TABLE}).get_current_revision()


SCHEMA_HEAD = "0011"
"""The newest shipped migration, which `tables.metadata` describes: a new migration bumps it
(tests/stores/sql/test_lazy_alembic.py checks it against Alembic's head)."""


def _shipped_head() -> str:
    """`head_revision()` without importing Alembic: the start-up check of a current schema uses it."""
    return SCHEMA_HEAD


async def current(engine: AsyncEngine) -> str | None:
    """The revision the database is at (None for a database never migrated)."""
    async with engine.connect() as conn:
        return await conn.run_sync(_current)


def _missing_tables(sync_conn: sa.Connection) -> list[str]:
    present = set(sa.inspect(sync_conn).get_table_names())
    return [name for name in metadata.tables if name not in present]


def _create_and_stamp(sync_conn: sa.Connection) -> None:
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory

    metadata.create_all(sync_conn)
    context = MigrationContext.configure(sync_conn, opts={"version_table": VERSION_TABLE})
    if context.get_current_revision() is None:
        context.stamp(ScriptDirectory.from_config(alembic_config()), "head")


async def prepare_schema(engine: AsyncEngine, *, auto_create_tables: bool) -> None:
    """Make sure the database is reachable and its schema is current; raise one clear `StoreError` if not."""
    url = mask_url(engine.url)
    fix = f"run `agora-agent db upgrade --url '{url}'`"
    try:
        async with engine.connect() as conn:
            missing = await conn.run_sync(_missing_tables)
            revision = await conn.run_sync(_current)
    except (OSError, sa.exc.DBAPIError) as exc:
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        raise StoreError(
            f"cannot connect to the database at {url}: {reason}. "
            "Check that the server is running and the URL (host, port, database, user, password) is right."
        ) from exc
    head = _shipped_head()
    if auto_create_tables:
        if missing:
            async with engine.begin() as conn:
                await conn.run_sync(_create_and_stamp)
        elif revision != head:
            await upgrade(engine)
        return
    if missing:
        raise StoreError(
            f"the database at {url} has no agora-agent schema (missing tables: {', '.join(missing)}); {fix} "
            "or pass auto_create_tables=True"
        )
    if revision is not None and revision != head:
        raise StoreError(
            f"the database at {url} is at schema revision {revision}, this version needs {head}; {fix}",
            code="schema_outdated",
        )
