"""The daily usage rollup stays equal to the ledger: written with each row, rebuilt, and backfilled by 0002."""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime, timedelta

import sqlalchemy as sa

from agora_agent.records import RunRecord, UsageRecord
from agora_agent.stores.sql import SqlBackend, create_engine_from_url, open_sql_backend
from agora_agent.stores.sql.migrate import upgrade
from agora_agent.stores.sql.rollup import rebuild_usage_daily
from agora_agent.stores.sql.tables import run_daily, thread, token_usage, usage_daily

T0 = datetime(2024, 3, 1, 23, 59, 59, 999_999, tzinfo=UTC)


def _usage(thread_id: str, actor: str, model: str, at: datetime, cost: float | None = None) -> UsageRecord:
    return UsageRecord(
        id=uuid.uuid4().hex,
        thread_id=thread_id,
        run_id=None,
        message_id=None,
        actor_ref=actor,
        model_id=model,
        input_tokens=100,
        output_tokens=10,
        cache_read_tokens=40,
        cost_usd=cost,
        created_at=at,
    )


async def _rollup(backend: SqlBackend) -> list[tuple[object, ...]]:
    async with backend.engine.connect() as conn:
        rows = await conn.execute(sa.select(usage_daily).order_by(*usage_daily.primary_key.columns))
        return [tuple(r) for r in rows]


async def test_rollup_is_kept_with_each_ledger_row_and_equals_a_rebuild(sql_backend: SqlBackend) -> None:
    t = await sql_backend.store.create_thread(actor_ref="alice")
    for at, actor, model, cost in [
        (T0, "alice", "m1", None),
        (T0, "alice", "m1", 0.5),
        (T0 + timedelta(microseconds=1), "alice", "m1", None),  # next UTC day
        (T0, "bob", "m2", None),
    ]:
        await sql_backend.store.record_usage(_usage(t.id, actor, model, at, cost))
    incremental = await _rollup(sql_backend)
    assert [(r[0], r[1], r[2], r[3]) for r in incremental] == [
        ((date(2024, 3, 1) - date(1970, 1, 1)).days, "alice", "m1", 2),
        ((date(2024, 3, 1) - date(1970, 1, 1)).days, "bob", "m2", 1),
        ((date(2024, 3, 2) - date(1970, 1, 1)).days, "alice", "m1", 1),
    ]
    await rebuild_usage_daily(sql_backend.engine)
    assert await _rollup(sql_backend) == incremental
    [spend] = await sql_backend.queries.spend_by_actor(date(2024, 3, 2), date(2024, 3, 2))
    assert (spend.actor_ref, spend.requests, spend.total_tokens) == ("alice", 1, 110)


async def test_migration_0002_backfills_existing_ledger_rows(empty_db_url: str) -> None:
    engine = create_engine_from_url(empty_db_url)
    try:
        await upgrade(engine, "0001")
        async with engine.begin() as conn:
            await conn.execute(sa.insert(thread).values(id="t1", actor_ref="alice", created_at=T0, updated_at=T0))
            for cost in (None, 0.25, None):
                # the 0001 ledger: without the columns later migrations add (price_id, cost_source)
                values = {
                    k: v
                    for k, v in _usage("t1", "alice", "m1", T0, cost).__dict__.items()
                    if k not in ("price_id", "cost_source")
                }
                await conn.execute(sa.insert(token_usage).values(values))
        await upgrade(engine)
    finally:
        await engine.dispose()
    backend = await open_sql_backend(empty_db_url)
    try:
        [row] = await backend.queries.spend_by_model(date(2024, 3, 1), date(2024, 3, 1))
        assert (row.model_id, row.requests, row.input_tokens, row.cost_usd) == ("m1", 3, 300, 0.25)
    finally:
        await backend.close()


async def test_run_rollup_follows_run_starts_and_first_terminal_states_and_equals_a_rebuild(
    sql_backend: SqlBackend,
) -> None:
    store = sql_backend.store
    t = await store.create_thread(actor_ref="alice")
    start = T0 - timedelta(seconds=2)

    def record(run_id: str, agent: str | None, **kw: object) -> RunRecord:
        return RunRecord(id=run_id, thread_id=t.id, agent_name=agent, actor_ref="alice", started_at=start, **kw)  # type: ignore[arg-type]

    await store.record_run_start(record("r1", "support"))
    await store.record_run_start(record("r2", "support"))
    await store.record_run_start(record("r3", None))
    await store.record_run_start(record("r4", "support", status="completed", finished_at=start + timedelta(seconds=1)))
    assert await store.record_run_end("r1", status="completed", finished_at=start + timedelta(milliseconds=1500))
    assert not await store.record_run_end("r1", status="failed")  # first terminal state wins: counted once
    assert await store.record_run_end("r3", status="cancelled", finished_at=start + timedelta(seconds=1))
    async with sql_backend.engine.connect() as conn:
        rows = [tuple(r) for r in await conn.execute(sa.select(run_daily).order_by(run_daily.c.agent_name))]
    day = (date(2024, 3, 1) - date(1970, 1, 1)).days
    # day, agent, runs, completed, failed, cancelled, running, settled, duration_ms
    assert rows == [(day, "", 1, 0, 0, 1, 0, 1, 1000), (day, "support", 3, 2, 0, 0, 1, 2, 2500)]
    await rebuild_usage_daily(sql_backend.engine)
    async with sql_backend.engine.connect() as conn:
        rebuilt = [tuple(r) for r in await conn.execute(sa.select(run_daily).order_by(run_daily.c.agent_name))]
    assert rebuilt == rows
    reliability = await sql_backend.queries.run_reliability(date(2024, 3, 1), date(2024, 3, 1))
    assert (reliability.runs, reliability.completed, reliability.cancelled, reliability.running) == (4, 2, 1, 1)
    assert reliability.avg_duration_ms == 3500 / 3
    assert {a.agent_name: a.runs for a in reliability.by_agent} == {"support": 3, None: 1}
