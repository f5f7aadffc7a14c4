"""`MemoryQuotaStore`'s settle: thresholds crossed in tokens or in USD, each once per period, whichever unit the
counters reach first (the settle skips the threshold scan only while every counter is below every trigger)."""

from __future__ import annotations

from agora_agent.actors import Actor
from agora_agent.governance.quota import Budget, MemoryQuotaStore

ALICE = Actor("alice", tenant_ref="acme")
DAY = "2026-12-05"


async def _step(quota: MemoryQuotaStore, i: int, tokens: int, usd: float) -> list[tuple[str, str, float]]:
    held = await quota.reserve(ALICE, DAY, reservation_id=f"run-1:{i}", tokens=10, usd=0.01)
    await quota.settle_step(held, tokens=tokens, usd=usd)
    return [(c.scope, c.unit, c.threshold) for c in await quota.crossed(held)]


async def test_each_threshold_is_crossed_once_in_the_unit_that_reaches_it() -> None:
    budget = Budget(tokens_per_actor=1_000, usd_per_tenant=1.0, thresholds=(0.5, 0.8), reserve_tokens=10)
    quota = MemoryQuotaStore(budget)
    assert await _step(quota, 0, 100, 0.1) == []  # 10% of the tokens, 10% of the USD: below every trigger
    assert await _step(quota, 1, 100, 0.45) == [("tenant", "usd", 0.5)]  # $0.55 while the tokens are at 20%
    assert await _step(quota, 2, 350, 0.0) == [("actor", "tokens", 0.5)]  # 550 tokens
    assert await _step(quota, 3, 300, 0.3) == [("actor", "tokens", 0.8), ("tenant", "usd", 0.8)]
    assert await _step(quota, 4, 1, 0.01) == []  # every threshold of the period raised once already
    usage = await quota.usage(ALICE, DAY)
    assert (usage.used_tokens, usage.reserved_tokens, round(usage.used_usd, 2)) == (851, 0, 0.86)


async def test_a_budget_without_usd_limits_reserves_and_charges_no_usd() -> None:
    quota = MemoryQuotaStore(Budget(tokens_per_actor=1_000, reserve_tokens=10))
    held = await quota.reserve(ALICE, DAY, reservation_id="run-1:0", tokens=10, usd=0.05)
    assert held.usd == 0.0  # no USD limit applies: nothing in USD is held
    await quota.settle_step(held, tokens=20, usd=0.0)
    usage = await quota.usage(ALICE, DAY)
    assert (usage.used_tokens, usage.reserved_tokens, usage.used_usd) == (20, 0, 0.0)
