"""Crash truthfulness on SQLite and PostgreSQL: what a dead process leaves is closed honestly by a live one.

A "crash" here is a service whose lease keeper stops without releasing its lease (what SIGKILL does to
the heartbeat) while its run stays parked or mid-tool; tests/stores/sql/test_kill.py does it with real SIGKILLs.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa

from agora_agent import Actor, AgentConfig, AgentService, ConflictError, tool
from agora_agent.governance.quota import Budget, period_key, utc_day
from agora_agent.messages import ModelRequest, ModelTurn, Usage
from agora_agent.models.base import TextCallback
from agora_agent.stores.sql import SqlQuotaStore, create_engine_from_url, open_sql_backend
from agora_agent.stores.sql.tables import budget_counter, budget_reservation, token_usage
from agora_agent.testing import FakeModel, ScriptedTurn, ToolCallRequest, collect_frames, wait_for_tool_status
from agora_agent.testing.helpers import OBSERVER
from tests.stores.sql.conftest import empty_database

ALICE = Actor("alice", roles=("support",))
LEASE = {"run_lease_interval": 0.1, "run_lease_ttl": 0.4}
effects: list[int] = []
in_tool: asyncio.Event


@tool(kind="action")
async def pay(amount: int) -> str:
    """Pay an amount (the side effect happens, then the 'process' dies before it is recorded)."""
    effects.append(amount)
    in_tool.set()
    await asyncio.Event().wait()
    return "paid"


def script(request: ModelRequest, turn: int) -> ScriptedTurn:
    if turn == 0:
        return ScriptedTurn(tool_calls=[ToolCallRequest("pay", {"amount": 5})])
    return ScriptedTurn(text="done")


@pytest.fixture(params=["sqlite", "postgres"])
async def url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    async with empty_database(request.param, tmp_path) as found:
        if found.startswith("postgresql"):
            backend = await open_sql_backend(found, auto_create_tables=True)
            await backend.close()
        yield found


async def crash(service: AgentService) -> None:
    """Stop the heartbeat without releasing the lease, as SIGKILL would, then let the lease lapse."""
    assert service.lease_keeper is not None
    await service.lease_keeper.stop(release=False)
    await asyncio.sleep(LEASE["run_lease_ttl"] + 0.1)


async def test_an_approved_action_that_started_is_unknown_after_crash_never_expired(url: str) -> None:
    global in_tool
    effects.clear()
    in_tool = asyncio.Event()  # bound to this test's event loop
    config = AgentConfig(
        model=FakeModel(script), tools=[pay], store=url, budget=Budget(tokens_per_actor=10**6), **LEASE
    )
    crashed = AgentService.from_config(config)
    await crashed.start()
    try:
        started = await crashed.chat(ALICE, "pay 5")
        pending = await wait_for_tool_status(crashed, started.run_id)
        await crashed.approve(ALICE, started.run_id, pending.tool_call_id)
        await asyncio.wait_for(in_tool.wait(), 5)  # the side effect happened
        await crash(crashed)

        model = FakeModel(script)
        async with AgentService.from_config(AgentConfig(**{**config.__dict__, "model": model})) as restarted:
            run = await restarted.get_run(OBSERVER, started.run_id)
            assert run is not None and run.status == "failed" and (run.error or "").startswith("interrupted")
            row = await restarted.store.get_tool_call(started.run_id, pending.tool_call_id)
            assert row is not None and row.status == "unknown_after_crash"
            assert row.decided_by == "alice" and "may or may not" in (row.error or "")
            approval = await restarted.store.get_approval(started.run_id, pending.tool_call_id)
            assert approval is not None and approval.status == "approved"  # the decision stands
            assert effects == [5]

            # The model is told the outcome is unknown and not to retry blindly.
            follow_up = await restarted.chat(ALICE, "did it go through?", thread_id=started.thread_id)
            await restarted.wait_for_run(OBSERVER, follow_up.run_id)
            told = [r for m in model.requests[0].messages for r in m.tool_results]
            assert len(told) == 1 and told[0].is_error
            assert json.loads(told[0].content)["outcome"] == "unknown"
            assert "do not retry it blindly" in told[0].content
    finally:
        await crashed.close()


class HangingModel:
    """A model call that never returns: the process dies while it holds a budget reservation."""

    model_id = "hanging"

    def __init__(self) -> None:
        self.called = asyncio.Event()

    async def run_turn(self, request: ModelRequest, on_text: TextCallback) -> ModelTurn:
        self.called.set()
        await asyncio.Event().wait()
        return ModelTurn(text="", usage=Usage(input_tokens=0, output_tokens=0))


async def _counter_and_ledger(url: str) -> tuple[int, int, int, int]:
    engine = create_engine_from_url(url)
    try:
        async with engine.connect() as conn:
            used, reserved = (
                await conn.execute(
                    sa.select(budget_counter.c.used_tokens, budget_counter.c.reserved_tokens).where(
                        budget_counter.c.key == "alice"
                    )
                )
            ).one()
            ledger = await conn.scalar(
                sa.select(sa.func.coalesce(sa.func.sum(token_usage.c.input_tokens + token_usage.c.output_tokens), 0))
            )
            live = await conn.scalar(sa.select(sa.func.coalesce(sa.func.sum(budget_reservation.c.tokens), 0)))
    finally:
        await engine.dispose()
    return int(used), int(reserved), int(ledger or 0), int(live or 0)


async def test_a_crash_during_a_model_call_does_not_keep_its_reservation(url: str) -> None:
    hanging = HangingModel()
    budget = Budget(tokens_per_actor=10**6, reserve_tokens=1000)
    config = AgentConfig(model=hanging, store=url, budget=budget, **LEASE)
    crashed = AgentService.from_config(config)
    await crashed.start()
    try:
        await crashed.chat(ALICE, "hi")
        await asyncio.wait_for(hanging.called.wait(), 5)
        assert (await _counter_and_ledger(url))[1] == 1000  # held while the call runs
        await crash(crashed)
        ok = AgentConfig(model=FakeModel(lambda r, t: ScriptedTurn(text="fine")), store=url, budget=budget, **LEASE)
        async with AgentService.from_config(ok) as restarted:
            second = await restarted.chat(ALICE, "again")
            await restarted.wait_for_run(OBSERVER, second.run_id)
        used, reserved, ledger, live = await _counter_and_ledger(url)
        assert (reserved, live) == (0, 0)  # the crashed run's reservation was released by recovery
        assert used == ledger > 0  # counter = ledger + live reservations
    finally:
        await crashed.close()


async def test_the_periodic_sweep_releases_expired_reservations(url: str) -> None:
    backend = await open_sql_backend(url)
    try:
        quota = SqlQuotaStore(backend.engine, Budget(tokens_per_actor=100, reservation_ttl=timedelta(seconds=1)))
        day = period_key(quota.budget, utc_day())
        await quota.reserve(ALICE, day, reservation_id="r1", tokens=60, usd=0, run_id="dead-run")
        assert await quota.release_expired() == 0  # not expired yet
        assert await quota.release_expired(datetime.now(UTC) + timedelta(seconds=2)) == 1
        assert (await quota.usage(ALICE, day)).reserved_tokens == 0
        await quota.reserve(ALICE, day, reservation_id="r2", tokens=60, usd=0, run_id="other")
        assert await quota.release_run("other") == 1
        assert (await quota.usage(ALICE, day)).reserved_tokens == 0
    finally:
        await backend.close()


async def test_a_live_process_recovers_a_dead_owners_run_without_a_restart(url: str) -> None:
    """Several processes on one database: B recovers A's run after A's lease lapsed; B's stream of it
    ends with an error frame and approving it is a 409 that says why."""
    config = AgentConfig(model=FakeModel(script), tools=[pay], store=url, **LEASE)
    a = AgentService.from_config(config)
    await a.start()
    try:
        async with AgentService.from_config(config) as b:  # B is up before A dies: no start-up recovery
            started = await a.chat(ALICE, "pay 5")
            pending = await wait_for_tool_status(a, started.run_id)
            await crash(a)
            for _ in range(50):  # B's heartbeat tick recovers it
                run = await b.get_run(OBSERVER, started.run_id)
                if run is not None and run.status != "running":
                    break
                await asyncio.sleep(0.1)
            assert run is not None and run.status == "failed"
            frames = await collect_frames(b, started.run_id, timeout=5)
            assert len(frames.errors) == 1 and frames.errors[0].message.startswith("interrupted")  # then it ends
            with pytest.raises(ConflictError) as refused:
                await b.approve(ALICE, started.run_id, pending.tool_call_id)
            assert refused.value.code == "already_decided" and refused.value.detail is not None
            assert refused.value.detail["status"] == "expired"
            assert str(refused.value.detail["reason"]).startswith("interrupted")
            row = await b.store.get_tool_call(started.run_id, pending.tool_call_id)
            assert row is not None and row.status == "expired"
    finally:
        await a.close()


async def test_a_second_process_starting_does_not_touch_a_live_process_runs(url: str) -> None:
    """`serve` started twice: the second one's start-up recovery leaves the live server's approval pending."""
    config = AgentConfig(model=FakeModel(script), tools=[pay], store=url, **LEASE)
    async with AgentService.from_config(config) as live:
        started = await live.chat(ALICE, "pay 5")
        pending = await wait_for_tool_status(live, started.run_id)
        async with AgentService.from_config(config):
            await asyncio.sleep(LEASE["run_lease_ttl"] + 0.2)  # several ticks of both keepers
        approval = await live.store.get_approval(started.run_id, pending.tool_call_id)
        run = await live.get_run(OBSERVER, started.run_id)
        assert approval is not None and approval.status == "pending"
        assert run is not None and run.status == "running"
        await live.cancel(OBSERVER, started.run_id)
