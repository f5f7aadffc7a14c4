"""Alembic environment of the pgvector chunk table (a chain of its own, see `agora_agent.rag.pg_schema`).

Driven only programmatically: `pg_schema.upgrade_pgvector` hands over an open connection and the table's
options in `config.attributes` (`connection`, `rag_table`, `rag_dimension`, `rag_metric`).
"""

from __future__ import annotations

from typing import Any

from alembic import context

config = context.config


def _main() -> None:
    connection: Any = config.attributes["connection"]
    context.configure(
        connection=connection,
        target_metadata=None,
        version_table=f"{config.attributes['rag_table']}_alembic_version",
    )
    with context.begin_transaction():
        context.run_migrations()


_main()
