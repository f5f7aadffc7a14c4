"""Schema management: Alembic migrations shipped in the package (no alembic.ini), and the start-up check.

`upgrade`, `downgrade` and `current` drive Alembic over an async engine by handing it an open
connection. `prepare_schema` runs at start-up: it turns "database down" and "schema missing or
behind" into one `StoreError` naming the URL (password masked) and the command that fixes it, or —
with `auto_create_tables` — creates the tables (same schema as the migrations) and stamps the head.

Alembic (~0.3 s of imports: every dialect's DDL and the autogenerate machinery) is imported only when a
migration runs or a revision script is loaded. The start-up check of a current schema does without it: it
reads the version row with SQLAlchemy and the shipped head from the revision files' `revision` and
`down_revision` lines (falling back to Alembic for anything that is not one plain chain).
"""

from __future__ import annotations

import functools
import re
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


_REVISION_LINE = re.compile(r"^(down_revision|revision|branch_labels|depends_on)\b[^=\n]*=\s*(.+?)\s*$", re.MULTILINE)
_REVISION_ID = re.compile(r"""^(?:"([^"\\]+)"|'([^'\\]+)'|None)$""")


@functools.cache
def _shipped_head() -> str:
    """`head_revision()` read from the shipped revision files' `revision = "…"` / `down_revision = "…"` lines.

    The start-up check uses it so that a current schema is checked without importing Alembic. Anything but
    one linear chain of plain string ids (a merge, a branch, an id that is an expression) is Alembic's call.
    """
    down_of: dict[str, str | None] = {}
    for entry in (files("agora_agent.stores.sql") / "migrations" / "versions").iterdir():
        if not entry.name.endswith(".py") or entry.name.startswith(("__init__", ".#")):
            continue
        found: dict[str, str | None] = {}
        for key, value in _REVISION_LINE.findall(entry.read_text(encoding="utf-8")):
            match = _REVISION_ID.match(value)
            if match is None or key in found:
                return head_revision()
            found[key] = match.group(1) or match.group(2)
        revision = found.get("revision")
        if revision is None or "down_revision" not in found or revision in down_of:
            return head_revision()
        if found.get("branch_labels") is not None or found.get("depends_on") is not None:
            return head_revision()
        down_of[revision] = found["down_revision"]
    downs = [down for down in down_of.values() if down is not None]
    heads = set(down_of) - set(downs)
    if len(heads) != 1 or len(downs) != len(set(downs)) or not set(downs) <= set(down_of):
        return head_revision()  # a branch, a merge, or a down_revision that names no shipped file
    return heads.pop()


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
