"""Alembic environment for agora-agent's tables.

Used programmatically by `agora_agent.stores.sql.migrate` (which hands over an open connection in
`config.attributes["connection"]`), and also works with a plain `alembic` command given
`sqlalchemy.url`.
"""

from __future__ import annotations

import asyncio
from typing import Any

from alembic import context
from sqlalchemy.engine import Connection

from agora_agent.stores.sql.engine import create_engine_from_url
from agora_agent.stores.sql.tables import metadata

config = context.config
VERSION_TABLE = "agent_alembic_version"


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        version_table=VERSION_TABLE,
        render_as_batch=connection.dialect.name == "sqlite",  # SQLite ALTERs need table rebuilds
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


async def _run_with_own_engine(url: str) -> None:
    engine = create_engine_from_url(url)
    try:
        async with engine.begin() as conn:
            await conn.run_sync(_run)
    finally:
        await engine.dispose()


def _main() -> None:
    connection: Any = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    if context.is_offline_mode():
        context.configure(
            url=config.get_main_option("sqlalchemy.url"),
            target_metadata=metadata,
            version_table=VERSION_TABLE,
            literal_binds=True,
        )
        with context.begin_transaction():
            context.run_migrations()
        return
    asyncio.run(_run_with_own_engine(str(config.get_main_option("sqlalchemy.url"))))


_main()
