"""`pending_approvals(actor=...)` resolves the actor as coalesce(run's actor_ref, approval's requested_by): the
actor's runs (whoever requested) plus the run-less approvals it requested. The rewritten query (a union through
the actor's runs index, not an outer join of every pending approval) must return what that filter returns."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import sqlalchemy as sa

from agora_agent.governance.gate import GovernanceScope
from agora_agent.records import ApprovalRecord, RunRecord, ToolCallRecord
from agora_agent.stores.sql import SqlBackend
from agora_agent.stores.sql.store import _approval_values as approval_values
from agora_agent.stores.sql.tables import approval as approval_table

T0 = datetime(2024, 3, 1, 12, tzinfo=UTC)


async def test_the_actor_filter_is_the_runs_actor_else_the_requester(sql_backend: SqlBackend) -> None:
    store, q = sql_backend.store, sql_backend.queries
    t = await store.create_thread(actor_ref="alice")
    for run_id, actor, tenant in [("r-bob", "bob", None), ("r-alice", "alice", "acme")]:
        await store.record_run_start(
            RunRecord(id=run_id, thread_id=t.id, agent_name=None, actor_ref=actor, tenant_ref=tenant, started_at=T0)
        )

    async def ask(run_id: str, call_id: str, requested_by: str, minute: int, *, with_call: bool = True) -> None:
        at = T0 + timedelta(minutes=minute)
        approval = ApprovalRecord(
            run_id=run_id,
            tool_call_id=call_id,
            thread_id=t.id,
            tool_name="refund",
            args_hash="h",
            requested_by=requested_by,
            created_at=at,
        )
        call = ToolCallRecord(
            run_id=run_id,
            id=call_id,
            thread_id=t.id,
            message_id=None,
            tool_name="refund",
            tool_type="action",
            input={"call": call_id},
            status="pending_approval",
            actor_ref=requested_by,
            created_at=at,
        )
        if with_call:
            await store.record_tool_call(call, approval)
        else:
            async with sql_backend.engine.begin() as conn:
                await conn.execute(sa.insert(approval_table).values(approval_values(approval)))

    await ask("r-bob", "c1", "alice", 1)  # alice requested, bob's run: bob's
    await ask("r-alice", "c2", "alice", 2)  # alice's
    await ask("gone", "c3", "alice", 3)  # no run: the requester's (alice)
    await ask("gone", "c4", "bob", 4, with_call=False)  # no run, no tool call row: bob's, input None
    await ask("r-bob", "c5", "carol", 5)  # bob's run: bob's
    await ask("r-alice", "c6", "alice", 0)  # decided below: not pending
    await store.decide_approval("r-alice", "c6", status="approved", decided_by="bob", reason=None)

    everyone = await q.pending_approvals()
    assert [(a.tool_call_id, a.actor_ref) for a in everyone] == [
        ("c1", "bob"),
        ("c2", "alice"),
        ("c3", "alice"),
        ("c4", "bob"),
        ("c5", "bob"),
    ]
    for actor in ("alice", "bob", "carol", "nobody"):
        mine = await q.pending_approvals(actor=actor)
        assert mine == [a for a in everyone if a.actor_ref == actor]
    alice = await q.pending_approvals(actor="alice")
    assert [(a.tool_call_id, a.run_id, a.input) for a in alice] == [
        ("c2", "r-alice", {"call": "c2"}),
        ("c3", "gone", {"call": "c3"}),
    ]
    assert [a.tool_call_id for a in await q.pending_approvals(actor="bob")] == ["c1", "c4", "c5"]
    assert [a.tool_call_id for a in await q.pending_approvals(actor="bob", limit=2)] == ["c1", "c4"]
    assert [a.input for a in await q.pending_approvals(actor="bob")][1] is None
    # under a scope the run's tenant decides: a run-less approval is outside every scope
    acme = GovernanceScope(tenants=frozenset({"acme"}))
    assert [a.tool_call_id for a in await q.pending_approvals(actor="alice", scope=acme)] == ["c2"]
    assert [a.tool_call_id for a in await q.pending_approvals(scope=acme)] == ["c2"]
    assert await q.pending_approvals(actor="bob", scope=acme) == []
