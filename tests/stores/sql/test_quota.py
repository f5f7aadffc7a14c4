"""SqlQuotaStore: the semantics of MemoryQuotaStore, and no overshoot beyond one reservation under concurrency."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
import sqlalchemy as sa

from agora_agent.actors import Actor
from agora_agent.errors import QuotaExceededError
from agora_agent.governance.quota import Budget, MemoryQuotaStore, QuotaStore
from agora_agent.stores.sql import SqlBackend, open_sql_backend
from agora_agent.stores.sql.tables import budget_counter, budget_reservation
from tests.stores.sql.conftest import empty_database

QuotaFactory = Callable[[Budget], QuotaStore]
ALICE = Actor(id="alice", tenant_ref="acme")
DAY = "2024-05-01"


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def quota_factory(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[QuotaFactory]:
    """Builds a quota store of each implementation."""
    if request.param == "memory":
        yield MemoryQuotaStore
        return
    async with empty_database(request.param, tmp_path) as url:
        backend = await open_sql_backend(url, auto_create_tables=True)
        try:
            yield backend.quota
        finally:
            await backend.close()


def rid() -> str:
    return uuid.uuid4().hex


@pytest.mark.ref("QUOTA-03")
async def test_reserve_is_granted_while_used_plus_reserved_is_below_the_limit(quota_factory: QuotaFactory) -> None:
    quota = quota_factory(Budget(tokens_per_actor=100, reserve_tokens=40))
    first = await quota.reserve(ALICE, DAY, reservation_id=rid(), tokens=40, usd=0)
    second = await quota.reserve(ALICE, DAY, reservation_id=rid(), tokens=40, usd=0)
    third = await quota.reserve(ALICE, DAY, reservation_id=rid(), tokens=40, usd=0)  # 80 < 100: granted
    with pytest.raises(QuotaExceededError) as info:
        await quota.reserve(ALICE, DAY, reservation_id=rid(), tokens=40, usd=0)  # 120 >= 100
    assert "actor 'alice'" in str(info.value) and "100" in str(info.value)
    assert info.value.detail["limit_tokens"] == 100  # Python names below the web edge
    usage = await quota.usage(ALICE, DAY)
    assert (usage.used_tokens, usage.reserved_tokens) == (0, 120)
    await quota.settle(first, tokens=10, usd=0)
    await quota.release(second)
    await quota.settle(third, tokens=30, usd=0)
    usage = await quota.usage(ALICE, DAY)
    assert (usage.used_tokens, usage.reserved_tokens, usage.limit_tokens) == (40, 0, 100)
    await quota.check(ALICE, DAY)
    assert (await quota.usage(ALICE, "2024-05-02")).used_tokens == 0  # another day, another counter


async def test_settling_twice_never_double_counts(quota_factory: QuotaFactory) -> None:
    quota = quota_factory(Budget(tokens_per_actor=1_000, usd_per_actor=5.0))
    reservation = await quota.reserve(ALICE, DAY, reservation_id=rid(), tokens=100, usd=0.5)
    await quota.settle(reservation, tokens=70, usd=0.25)
    await quota.settle(reservation, tokens=70, usd=0.25)
    await quota.release(reservation)
    usage = await quota.usage(ALICE, DAY)
    assert (usage.used_tokens, usage.reserved_tokens) == (70, 0)
    assert usage.used_usd == pytest.approx(0.25)


async def test_usd_budget_and_tenant_budget_refuse_all_or_nothing(quota_factory: QuotaFactory) -> None:
    quota = quota_factory(Budget(usd_per_actor=1.0, tokens_per_tenant=50))
    bob = Actor(id="bob", tenant_ref="acme")
    r = await quota.reserve(ALICE, DAY, reservation_id=rid(), tokens=30, usd=0.1)
    await quota.settle(r, tokens=30, usd=0.1)
    r = await quota.reserve(bob, DAY, reservation_id=rid(), tokens=30, usd=0.1)  # tenant 30 < 50
    with pytest.raises(QuotaExceededError) as tenant_out:
        await quota.reserve(ALICE, DAY, reservation_id=rid(), tokens=30, usd=0.1)  # tenant 30+30 >= 50
    assert (tenant_out.value.detail["scope"], tenant_out.value.detail["key"]) == ("tenant", "acme")
    # the refused reservation left the actor's counter untouched (all or nothing)
    assert (await quota.usage(ALICE, DAY)).reserved_tokens == 0
    await quota.settle(r, tokens=10, usd=2.0)
    with pytest.raises(QuotaExceededError) as usd_out:
        await quota.check(bob, DAY)
    assert (usd_out.value.detail["scope"], usd_out.value.detail["key"]) == ("actor", "bob")
    assert usd_out.value.detail["limit_usd"] == 1.0
    assert "over the daily budget of $1.00" in str(usd_out.value)  # the figure a user reads in the 429
    await quota.check(ALICE, DAY)  # alice's own USD and the tenant's 40 tokens are within their limits
    await quota.check(Actor(id="carol"), DAY)  # no tenant, fresh actor


async def test_no_budget_means_no_accounting(quota_factory: QuotaFactory) -> None:
    quota = quota_factory(Budget())
    reservation = await quota.reserve(ALICE, DAY, reservation_id=rid(), tokens=10**9, usd=10.0)
    assert reservation.scopes == ()
    await quota.settle(reservation, tokens=10**9, usd=10.0)
    await quota.check(ALICE, DAY)


@pytest.mark.slow
async def test_fifty_concurrent_cycles_at_the_budget_edge_overshoot_at_most_one_reservation(
    sql_backend: SqlBackend,
) -> None:
    limit, reserve = 1_000, 100
    quota = sql_backend.quota(Budget(tokens_per_actor=limit, reserve_tokens=reserve))
    settled: list[int] = []
    refused = 0
    ready = asyncio.Event()

    async def cycle(i: int) -> None:
        nonlocal refused
        await ready.wait()
        try:
            reservation = await quota.reserve(ALICE, DAY, reservation_id=f"r{i}", tokens=reserve, usd=0)
        except QuotaExceededError:
            refused += 1
            return
        used = reserve - (i % 7)  # real usage stays within the reservation
        await quota.settle(reservation, tokens=used, usd=0)
        settled.append(used)

    tasks = [asyncio.create_task(cycle(i)) for i in range(50)]
    ready.set()
    await asyncio.wait_for(asyncio.gather(*tasks), timeout=60)

    usage = await quota.usage(ALICE, DAY)
    assert usage.reserved_tokens == 0
    assert usage.used_tokens == sum(settled)  # no lost counter update
    assert usage.used_tokens <= limit + reserve  # overshoot at most one reservation
    assert len(settled) + refused == 50 and refused > 0 and len(settled) >= limit // reserve
    async with sql_backend.engine.connect() as conn:
        assert await conn.scalar(sa.select(sa.func.count()).select_from(budget_reservation)) == 0
        assert (
            await conn.scalar(sa.select(sa.func.count()).select_from(budget_counter)) == 1
        )  # only the actor has a budget


@pytest.mark.postgres
async def test_a_first_grant_committed_by_another_process_mid_reserve_is_granted_again(tmp_path: Path) -> None:
    """Two processes' first reservations of a period race: B's counter row commits between A's grant UPDATE
    (no row yet) and A's read of the row. A must grant against B's row, not refuse with headroom left
    (the durable chaos test met this once: "actor 'user2' has no budget headroom left" at a 10**9 limit)."""
    import psycopg  # the sync driver DBOS brings: "process B" writes outside A's engine

    async with empty_database("postgres", tmp_path) as url:
        backend = await open_sql_backend(url, auto_create_tables=True)
        fired: list[tuple[object, ...]] = []

        def other_process_commits_the_row(
            conn: object, cursor: object, statement: str, parameters: object, context: object, many: bool
        ) -> None:
            if fired or not statement.lstrip().upper().startswith("SELECT") or "agent_budget_counter" not in statement:
                return
            scope, key, period = tuple(parameters)[:3]  # type: ignore[call-overload]
            fired.append((scope, key, period))
            with psycopg.connect(url.replace("+asyncpg", ""), autocommit=True) as other:
                other.execute(
                    "INSERT INTO agent_budget_counter (scope, key, period, used_tokens, used_usd, reserved_tokens,"
                    " reserved_usd) VALUES (%s, %s, %s, 0, 0, 500, 0)",
                    (scope, key, period),
                )

        sa.event.listen(backend.engine.sync_engine, "before_cursor_execute", other_process_commits_the_row)
        try:
            quota = backend.quota(Budget(tokens_per_actor=10**9, reserve_tokens=500))
            await quota.reserve(ALICE, DAY, reservation_id=rid(), tokens=500, usd=0)
            assert fired, "the interleaving was not forced: the test no longer reaches the counter read"
            usage = await quota.usage(ALICE, DAY)
            assert (usage.used_tokens, usage.reserved_tokens) == (0, 1_000)  # B's grant and A's, both counted
        finally:
            sa.event.remove(backend.engine.sync_engine, "before_cursor_execute", other_process_commits_the_row)
            await backend.close()
