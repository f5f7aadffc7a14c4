"""The daily per-tool rollup (`agent_tool_daily`, kept by triggers) stays equal to the tool-call rows, on every path
that writes a tool call: governed runs through the service (started -> executed / failed, pending_approval ->
executed / rejected / expired, cancellation), the store's own updates and deletes, and migration 0011's backfill.
`per_tool_stats` (which reads the rollup) must equal the same aggregate over the raw rows."""

from __future__ import annotations

import asyncio
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from agora_agent import Actor, AgentConfig, AgentService, tool
from agora_agent.governance.queries import PerToolStatRow
from agora_agent.messages import ModelRequest
from agora_agent.records import ApprovalRecord, RunRecord, ThreadRecord, ToolCallPatch, ToolCallRecord
from agora_agent.stores.sql import SqlBackend, create_engine_from_url, open_sql_backend
from agora_agent.stores.sql.migrate import upgrade
from agora_agent.stores.sql.rollup import rebuild_usage_daily
from agora_agent.stores.sql.tables import thread, tool_call, tool_daily
from agora_agent.testing import FakeModel, ScriptedTurn, ToolCallRequest, wait_for_tool_status
from agora_agent.testing.helpers import OBSERVER
from tests.stores.sql.conftest import empty_database

ALICE = Actor("alice", roles=("user",))


@tool
def lookup(order: int) -> str:
    """Look an order up."""
    return f"order {order}"


@tool
def explode(order: int) -> str:
    """Always fails."""
    raise RuntimeError("boom")


@tool(kind="action", roles=["user"])
def refund(order: int) -> str:
    """Refund an order (needs an approval)."""
    return "refunded"


@tool(kind="action", roles=["user"], approval_ttl=0.2)
def hurried_refund(order: int) -> str:
    """Refund whose approval lapses quickly."""
    return "refunded"


def script(request: ModelRequest, _index: int) -> ScriptedTurn:
    """The user message names the tool to call once; after its result, "done"."""
    last = request.messages[-1]
    if last.role != "user":
        return ScriptedTurn(text="done")
    return ScriptedTurn(tool_calls=[ToolCallRequest(name=str(last.content), input={"order": 1})])


async def _raw(backend: SqlBackend, from_day: date | None = None, to_day: date | None = None) -> list[PerToolStatRow]:
    """`per_tool_stats` computed from the tool-call rows themselves."""
    tc = tool_call.c
    stmt = sa.select(tc.tool_name, tc.tool_type, tc.status, tc.execution_ms, tc.created_at)
    groups: dict[tuple[str, str], list[Any]] = {}
    async with backend.engine.connect() as conn:
        for r in (await conn.execute(stmt)).mappings():
            day = r["created_at"].date()
            if (from_day is None or day >= from_day) and (to_day is None or day <= to_day):
                groups.setdefault((r["tool_name"], r["tool_type"]), []).append(r)
    rows = []
    for (name, kind), items in groups.items():
        ms = [r["execution_ms"] for r in items if r["execution_ms"] is not None]
        rows.append(
            PerToolStatRow(
                tool_name=name,
                tool_type=kind,
                calls=len(items),
                failed=sum(r["status"] == "failed" for r in items),
                rejected=sum(r["status"] == "rejected" for r in items),
                avg_duration_ms=sum(ms) / len(ms) if ms else None,
            )
        )
    return sorted(rows, key=lambda r: (-r.calls, r.tool_name, r.tool_type))


async def _rollup(backend: SqlBackend) -> list[tuple[Any, ...]]:
    async with backend.engine.connect() as conn:
        rows = await conn.execute(sa.select(tool_daily).order_by(*tool_daily.primary_key.columns))
        return [tuple(r) for r in rows if r.calls or r.failed or r.rejected or r.ms_sum or r.ms_count]


async def _assert_in_step(backend: SqlBackend, *days: tuple[date | None, date | None]) -> None:
    for from_day, to_day in [(None, None), *days]:
        assert await backend.queries.per_tool_stats(from_day, to_day) == await _raw(backend, from_day, to_day)
    incremental = await _rollup(backend)
    await rebuild_usage_daily(backend.engine)
    assert await _rollup(backend) == incremental  # the triggers' sums are exactly a rebuild's


async def test_governed_runs_through_every_tool_status_keep_per_tool_stats_equal_to_the_rows(
    sql_backend: SqlBackend,
) -> None:
    config = AgentConfig(
        model=FakeModel(script), tools=[lookup, explode, refund, hurried_refund], store=sql_backend.store
    )
    async with AgentService.from_config(config) as service:

        async def run(tool_name: str) -> str:
            started = await service.chat(ALICE, tool_name)
            await service.wait_for_run(OBSERVER, started.run_id)
            return started.run_id

        async def parked(tool_name: str) -> tuple[str, str]:
            started = await service.chat(ALICE, tool_name)
            frame = await wait_for_tool_status(service, started.run_id)
            return started.run_id, frame.tool_call_id

        await run("lookup")  # started -> executed
        await run("explode")  # started -> failed
        run_id, call_id = await parked("refund")  # pending_approval -> executed
        await service.approve(ALICE, run_id, call_id)
        await service.wait_for_run(OBSERVER, run_id)
        run_id, call_id = await parked("refund")  # pending_approval -> rejected
        await service.reject(ALICE, run_id, call_id, reason="no")
        await service.wait_for_run(OBSERVER, run_id)
        run_id, call_id = await parked("hurried_refund")  # pending_approval -> expired
        await asyncio.sleep(0.3)
        with pytest.raises(Exception, match="expired"):
            await service.approve(ALICE, run_id, call_id)
        await service.wait_for_run(OBSERVER, run_id)
        run_id, call_id = await parked("refund")  # pending_approval -> expired by cancellation
        assert await service.cancel(ALICE, run_id)
        await service.wait_for_run(OBSERVER, run_id)
        calls = await service.store.list_tool_calls()
    assert sorted(c.status for c in calls) == ["executed", "executed", "expired", "expired", "failed", "rejected"]
    [explode_row] = [r for r in await sql_backend.queries.per_tool_stats() if r.tool_name == "explode"]
    assert (explode_row.calls, explode_row.failed) == (1, 1)
    today = datetime.now(UTC).date()
    await _assert_in_step(sql_backend, (today, today), (today - timedelta(days=1), today - timedelta(days=1)))


T0 = datetime(2024, 3, 1, 23, 59, 59, 999_999, tzinfo=UTC)  # the last microsecond of a UTC day
D1, D2 = date(2024, 3, 1), date(2024, 3, 2)


def _call(run_id: str, call_id: str, thread_id: str, name: str, at: datetime, **kw: Any) -> ToolCallRecord:
    values: dict[str, Any] = {
        "run_id": run_id,
        "id": call_id,
        "thread_id": thread_id,
        "message_id": None,
        "tool_name": name,
        "tool_type": "read",
        "input": {},
        "status": "started",
        "actor_ref": "alice",
        "created_at": at,
    }
    values.update(kw)
    return ToolCallRecord(**values)


async def test_store_writes_updates_and_deletes_keep_the_rollup_in_step(sql_backend: SqlBackend) -> None:
    store = sql_backend.store
    t: ThreadRecord = await store.create_thread(actor_ref="alice")
    await store.record_run_start(RunRecord(id="r1", thread_id=t.id, agent_name=None, actor_ref="alice", started_at=T0))
    await store.record_tool_call(_call("r1", "a", t.id, "lookup", T0))
    await store.record_tool_call(_call("r1", "b", t.id, "lookup", T0 + timedelta(microseconds=1)))  # next day
    await store.record_tool_call(_call("r1", "c", t.id, "lookup", T0, status="executed", execution_ms=40))
    await store.record_tool_call(
        _call("r1", "d", t.id, "refund", T0, tool_type="action", status="pending_approval"),
        ApprovalRecord(
            run_id="r1",
            tool_call_id="d",
            thread_id=t.id,
            tool_name="refund",
            args_hash="h",
            requested_by="alice",
            created_at=T0,
        ),
    )
    await _assert_in_step(sql_backend, (D1, D1), (D2, D2))
    await store.update_tool_call("r1", "a", ToolCallPatch(status="executed", execution_ms=10))
    await store.update_tool_call("r1", "b", ToolCallPatch(status="failed", error="x", execution_ms=5))
    await store.update_tool_call("r1", "b", ToolCallPatch(status="failed", error="x", execution_ms=5))  # no change
    await store.update_tool_call("r1", "c", ToolCallPatch(execution_ms=None))
    await store.decide_approval("r1", "d", status="rejected", decided_by="bob", reason="no")
    await store.update_tool_call("r1", "d", ToolCallPatch(status="rejected", error="no"))
    await _assert_in_step(sql_backend, (D1, D1), (D2, D2))
    [d1_lookup] = [r for r in await sql_backend.queries.per_tool_stats(D1, D1) if r.tool_name == "lookup"]
    assert (d1_lookup.calls, d1_lookup.failed, d1_lookup.avg_duration_ms) == (2, 0, 10)
    async with sql_backend.engine.begin() as conn:  # rows moved and deleted behind the store's back
        await conn.execute(
            sa.update(tool_call).where(tool_call.c.id == "a").values(created_at=T0 + timedelta(days=1), tool_name="x")
        )
        await conn.execute(sa.delete(tool_call).where(tool_call.c.id == "b"))
    await _assert_in_step(sql_backend, (D1, D1), (D2, D2))
    assert [r.tool_name for r in await sql_backend.queries.per_tool_stats(D2, D2)] == ["x"]
    async with sql_backend.engine.begin() as conn:  # a thread's cascade takes its calls (and their counts) along
        await conn.execute(sa.delete(thread).where(thread.c.id == t.id))
    assert await sql_backend.queries.per_tool_stats() == []
    await _assert_in_step(sql_backend)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_migration_0011_backfills_the_rollup_and_its_triggers_follow(kind: str, tmp_path: Path) -> None:
    async with empty_database(kind, tmp_path) as url:
        engine = create_engine_from_url(url)
        try:
            await upgrade(engine, "0010")
            async with engine.begin() as conn:
                await conn.execute(sa.insert(thread).values(id="t1", actor_ref="alice", created_at=T0, updated_at=T0))
                for i, status in enumerate(["executed", "failed", "rejected", "started"]):
                    values = _call("r1", f"c{i}", "t1", "lookup", T0, status=status, execution_ms=i or None).__dict__
                    await conn.execute(sa.insert(tool_call).values({k: v for k, v in values.items() if k != "seq"}))
            await upgrade(engine)
        finally:
            await engine.dispose()
        backend = await open_sql_backend(url)
        try:
            [row] = await backend.queries.per_tool_stats(D1, D1)
            assert (row.calls, row.failed, row.rejected, row.avg_duration_ms) == (4, 1, 1, 2)
            await backend.store.update_tool_call("r1", "c3", ToolCallPatch(status="failed", execution_ms=7))
            await _assert_in_step(backend, (D1, D1))
        finally:
            await backend.close()
