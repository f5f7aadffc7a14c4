"""Reads of one run use an index, whatever the size of the tables around it.

Each read is run for real and the statement it sent captured (SQLAlchemy's `before_cursor_execute`), then
explained with the same parameters: SQLite's `EXPLAIN QUERY PLAN`, PostgreSQL's `EXPLAIN` with sequential
scans discouraged (on tables this small the planner would rightly prefer one). A plan that falls back to a
scan of every run or every message of the thread fails here, before a deployment with millions of rows
finds it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from agora_agent.stores.sql import SqlBackend
from agora_agent.stores.sql.units import units_for


async def plans_of(engine: AsyncEngine, read: Callable[[], Awaitable[Any]]) -> list[str]:
    """The plan of each SELECT `read` sends, one string each."""
    sent: list[tuple[str, Any]] = []

    def capture(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool) -> None:
        if statement.lstrip().upper().startswith("SELECT"):
            sent.append((statement, parameters))

    engines = {engine.sync_engine, units_for(engine).sync_engine}  # the store's own reads may bypass the pool
    for sync_engine in engines:
        sa.event.listen(sync_engine, "before_cursor_execute", capture)
    try:
        await read()
    finally:
        for sync_engine in engines:
            sa.event.remove(sync_engine, "before_cursor_execute", capture)
    assert sent, "the read sent no SELECT"
    plans = []
    async with engine.connect() as conn:
        raw = await conn.get_raw_connection()
        for statement, parameters in sent:
            if engine.dialect.name == "sqlite":
                rows = await conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", parameters)
                plans.append(" | ".join(str(r[-1]) for r in rows))
            else:
                driver = raw.driver_connection
                assert driver is not None
                await driver.execute("SET enable_seqscan = off")
                pg = statement.replace("%s", "${}")  # asyncpg's placeholders: $1, $2, ...
                for i in range(pg.count("${}")):
                    pg = pg.replace("${}", f"${i + 1}", 1)
                rows = await driver.fetch(f"EXPLAIN {pg}", *parameters)
                await driver.execute("RESET enable_seqscan")
                plans.append(" | ".join(r[0] for r in rows))
    return plans


async def test_the_run_inspectors_delegated_runs_are_read_by_an_index(sql_backend: SqlBackend) -> None:
    [plan] = await plans_of(sql_backend.engine, lambda: sql_backend.queries.child_runs("run-1"))
    assert "ix_agent_run_parent" in plan, plan


async def test_one_runs_messages_are_read_by_the_run_index(sql_backend: SqlBackend) -> None:
    thread = await sql_backend.store.create_thread(actor_ref="alice")
    [plan] = await plans_of(sql_backend.engine, lambda: sql_backend.store.list_messages(thread.id, run_id="run-1"))
    assert "ix_agent_message_run" in plan, plan
