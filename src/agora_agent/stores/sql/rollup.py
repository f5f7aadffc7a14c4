"""The daily usage rollup (`agent_usage_daily`): what makes the spend rollups fast on millions of ledger rows.

`record_usage` adds each ledger row to its (UTC day, actor, model) rollup row in the same transaction,
with one atomic upsert (`INSERT … ON CONFLICT DO UPDATE SET x = x + excluded.x`, which both SQLite and
PostgreSQL speak; SQLAlchemy builds it per dialect). Rows loaded behind the store's back (bulk COPY,
restores) are folded in by `rebuild_usage_daily`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncEngine

from agora_agent.records import UsageRecord
from agora_agent.stores.sql.tables import MICROS_PER_DAY, run_daily, to_micros, tool_daily, usage_daily
from agora_agent.stores.sql.tool_rollup import TOOL_REBUILD_SQL

__all__ = [
    "REBUILD_SQL",
    "RUN_REBUILD_SQL",
    "TOOL_REBUILD_SQL",
    "rebuild_usage_daily",
    "run_daily_params",
    "upsert_run_daily",
    "upsert_usage_daily",
    "usage_daily_params",
]

_SUMMED = (
    "requests",
    "input_tokens",
    "output_tokens",
    "reported_usd",
    "unreported_input_tokens",
    "unreported_output_tokens",
    "unreported_cache_read_tokens",
    "unreported_cache_write_tokens",
)

REBUILD_SQL = f"""
INSERT INTO agent_usage_daily (day, actor_ref, model_id, {", ".join(_SUMMED)})
SELECT created_at / {MICROS_PER_DAY}, actor_ref, model_id, count(*), sum(input_tokens), sum(output_tokens),
       coalesce(sum(cost_usd), 0),
       sum(CASE WHEN cost_usd IS NULL THEN input_tokens ELSE 0 END),
       sum(CASE WHEN cost_usd IS NULL THEN output_tokens ELSE 0 END),
       sum(CASE WHEN cost_usd IS NULL THEN coalesce(cache_read_tokens, 0) ELSE 0 END),
       sum(CASE WHEN cost_usd IS NULL THEN coalesce(cache_write_tokens, 0) ELSE 0 END)
FROM agent_token_usage
GROUP BY created_at / {MICROS_PER_DAY}, actor_ref, model_id
"""
"""Recompute every rollup row from the ledger (run after deleting the rollup's rows)."""


def usage_daily_params(record: UsageRecord) -> dict[str, Any]:
    """The rollup increments one ledger row contributes (the parameters of `upsert_usage_daily`)."""
    unreported = record.cost_usd is None
    return {
        "day": to_micros(record.created_at) // MICROS_PER_DAY,
        "actor_ref": record.actor_ref,
        "model_id": record.model_id,
        "requests": 1,
        "input_tokens": record.input_tokens,
        "output_tokens": record.output_tokens,
        "reported_usd": 0.0 if unreported else record.cost_usd,
        "unreported_input_tokens": record.input_tokens if unreported else 0,
        "unreported_output_tokens": record.output_tokens if unreported else 0,
        "unreported_cache_read_tokens": (record.cache_read_tokens or 0) if unreported else 0,
        "unreported_cache_write_tokens": (record.cache_write_tokens or 0) if unreported else 0,
    }


def _build_upsert(dialect_name: str) -> Any:
    insert = (postgresql.insert if dialect_name == "postgresql" else sqlite.insert)(usage_daily)
    return insert.on_conflict_do_update(
        index_elements=["day", "actor_ref", "model_id"],
        set_={name: usage_daily.c[name] + insert.excluded[name] for name in _SUMMED},
    )


# Built once per dialect: a statement object reused as is keeps its cache key, so it compiles once.
_UPSERTS = {name: _build_upsert(name) for name in ("postgresql", "sqlite")}


def upsert_usage_daily(dialect_name: str) -> Any:
    """The statement adding one ledger row to its rollup row; execute it with `usage_daily_params(record)`."""
    return _UPSERTS["postgresql" if dialect_name == "postgresql" else "sqlite"]


_RUN_COUNTS = ("runs", "completed", "failed", "cancelled", "running", "settled", "duration_ms")

RUN_REBUILD_SQL = f"""
INSERT INTO agent_run_daily (day, agent_name, {", ".join(_RUN_COUNTS)})
SELECT started_at / {MICROS_PER_DAY}, coalesce(agent_name, ''), count(*),
       sum(CASE WHEN status = 'completed' THEN 1 ELSE 0 END),
       sum(CASE WHEN status = 'failed' THEN 1 ELSE 0 END),
       sum(CASE WHEN status = 'cancelled' THEN 1 ELSE 0 END),
       sum(CASE WHEN status = 'running' THEN 1 ELSE 0 END),
       sum(CASE WHEN finished_at IS NOT NULL AND status <> 'running' THEN 1 ELSE 0 END),
       sum(CASE WHEN finished_at IS NOT NULL AND status <> 'running'
                THEN finished_at / 1000 - started_at / 1000 ELSE 0 END)
FROM agent_run
GROUP BY started_at / {MICROS_PER_DAY}, coalesce(agent_name, '')
"""
"""Recompute every run-rollup row from the runs (after deleting the rollup's rows)."""


def run_daily_params(
    started_at: datetime,
    agent_name: str | None,
    *,
    started: bool,
    status: str,
    finished_at: datetime | None,
) -> dict[str, Any]:
    """What a run contributes to its rollup row: when it is recorded (`started`), or when it leaves `running`."""
    settled = finished_at is not None and status != "running"
    return {
        "day": to_micros(started_at) // MICROS_PER_DAY,
        "agent_name": agent_name or "",
        "runs": 1 if started else 0,
        "completed": int(status == "completed"),
        "failed": int(status == "failed"),
        "cancelled": int(status == "cancelled"),
        # a new run counts as running; a run leaving `running` stops counting
        "running": (1 if status == "running" else 0) if started else -1,
        "settled": int(settled),
        "duration_ms": (to_micros(finished_at) // 1000 - to_micros(started_at) // 1000)
        if settled and finished_at is not None
        else 0,
    }


def _build_run_upsert(dialect_name: str) -> Any:
    insert = (postgresql.insert if dialect_name == "postgresql" else sqlite.insert)(run_daily)
    return insert.on_conflict_do_update(
        index_elements=["day", "agent_name"],
        set_={name: run_daily.c[name] + insert.excluded[name] for name in _RUN_COUNTS},
    )


_RUN_UPSERTS = {name: _build_run_upsert(name) for name in ("postgresql", "sqlite")}


def upsert_run_daily(dialect_name: str) -> Any:
    """The statement adding `run_daily_params(...)` to its run-rollup row."""
    return _RUN_UPSERTS["postgresql" if dialect_name == "postgresql" else "sqlite"]


async def rebuild_usage_daily(engine: AsyncEngine) -> None:
    """Recompute the daily rollups (usage, runs, tools; tool_rollup.py) from their base rows, in one transaction."""
    async with engine.begin() as conn:
        await conn.execute(sa.delete(usage_daily))
        await conn.execute(sa.text(REBUILD_SQL))
        await conn.execute(sa.delete(run_daily))
        await conn.execute(sa.text(RUN_REBUILD_SQL))
        await conn.execute(sa.delete(tool_daily))
        await conn.execute(sa.text(TOOL_REBUILD_SQL))
