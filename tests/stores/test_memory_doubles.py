"""In-memory sink, quota and pricing: the contracts the loop relies on."""

from __future__ import annotations

import asyncio

import pytest

from agora_agent import Actor, Budget, ModelPrice, QuotaExceededError, estimate_cost
from agora_agent.governance.pricing import MemoryPricingStore, seed_model_prices
from agora_agent.governance.quota import MemoryQuotaStore, period_key
from agora_agent.messages import Usage
from agora_agent.streaming.frames import TextFrame
from agora_agent.streaming.sink import MemoryTokenSink


@pytest.mark.ref("COST-03", "COST-04")
def test_estimate_cost_worked_examples() -> None:
    price = ModelPrice(model_id="m", input_price_per_1m=3, output_price_per_1m=15)
    assert estimate_cost(Usage(input_tokens=1_000_000, output_tokens=500_000), price) == pytest.approx(10.5)
    cached = Usage(input_tokens=1_000_000, cache_write_tokens=400_000, cache_read_tokens=100_000)
    with_rates = ModelPrice(
        model_id="m",
        input_price_per_1m=3,
        output_price_per_1m=15,
        cache_write_price_per_1m=3.75,
        cache_read_price_per_1m=0.3,
    )
    assert estimate_cost(cached, with_rates) == pytest.approx(3.03)
    assert estimate_cost(cached, price) == pytest.approx(3.0)
    assert estimate_cost(Usage(output_tokens=1_000_000, reasoning_tokens=900_000), price) == pytest.approx(15)


@pytest.mark.ref("PRICE-01", "PRICE-02", "PRICE-03")
async def test_memory_pricing_supersedes() -> None:
    store = MemoryPricingStore()
    assert await seed_model_prices(store, [ModelPrice(model_id="b", input_price_per_1m=1, output_price_per_1m=2)]) == 1
    await store.upsert_price(ModelPrice(model_id="a", input_price_per_1m=1, output_price_per_1m=2))
    await store.upsert_price(ModelPrice(model_id="a", input_price_per_1m=5, output_price_per_1m=6))
    prices = await store.list_current_prices()
    assert [(p.model_id, p.input_price_per_1m) for p in prices] == [("a", 5), ("b", 1)]
    assert all(p.effective_from is not None for p in prices)


@pytest.mark.ref("SINK-02", "SSE-07")
async def test_memory_sink_replay_live_and_after() -> None:
    sink = MemoryTokenSink()
    writer = await sink.open("r1")
    assert await writer.write(TextFrame(delta="a")) == 1
    received: list[int] = []

    async def follow() -> None:
        async for event in sink.subscribe("r1"):
            received.append(event.id)

    task = asyncio.create_task(follow())
    await asyncio.sleep(0)
    assert await writer.write(TextFrame(delta="b")) == 2
    await writer.end()
    assert await writer.write(TextFrame(delta="late")) == 2  # dropped after end
    await asyncio.wait_for(task, 2)
    assert received == [1, 2]
    assert [e.id async for e in sink.subscribe("r1", after=1)] == [2]
    assert await sink.has_stream("r1") and not await sink.has_stream("r2")
    await sink.close("r1")
    assert not await sink.has_stream("r1")


@pytest.mark.ref("QUOTA-03")
async def test_memory_quota_reserve_settle_release() -> None:
    budget = Budget(tokens_per_actor=100, tokens_per_tenant=150, reserve_tokens=40)
    quota = MemoryQuotaStore(budget)
    alice, bob = Actor("alice", tenant_ref="t"), Actor("bob", tenant_ref="t")
    day = period_key(budget, "2026-11-30")
    r1 = await quota.reserve(alice, day, reservation_id="r1", tokens=40, usd=0)
    r2 = await quota.reserve(alice, day, reservation_id="r2", tokens=40, usd=0)
    r3 = await quota.reserve(alice, day, reservation_id="r3", tokens=40, usd=0)  # 80 < 100: still headroom
    with pytest.raises(QuotaExceededError) as actor_out:
        await quota.reserve(alice, day, reservation_id="r4", tokens=40, usd=0)
    assert (actor_out.value.detail["scope"], actor_out.value.detail["key"]) == ("actor", "alice")
    await quota.settle(r1, tokens=10, usd=0)
    await quota.settle(r1, tokens=10, usd=0)  # settling twice never double-counts
    await quota.release(r2)
    usage = await quota.usage(alice, day)
    assert (usage.used_tokens, usage.reserved_tokens, usage.within_limit) == (10, 40, True)
    await quota.check(bob, day)  # tenant at 10 used + 40 reserved of 150: fine
    await quota.settle(r3, tokens=140, usd=0)  # tenant now at 150 used
    with pytest.raises(QuotaExceededError) as tenant_out:
        await quota.check(bob, day)  # bob's own budget is untouched, the tenant's is spent
    detail = tenant_out.value.detail
    assert (detail["scope"], detail["key"], detail["limit_tokens"]) == ("tenant", "t", 150)
    assert "tenant 't' is over the daily token budget of 150" in str(tenant_out.value)
    assert period_key(Budget(period="month"), "2026-11-30") == "2026-11"


async def test_memory_sink_keeps_only_recent_ended_streams() -> None:
    sink = MemoryTokenSink(keep_ended=2)
    for run_id in ("a", "b", "c"):
        writer = await sink.open(run_id)
        await writer.write(TextFrame(delta=run_id))
        await writer.end()
    assert [await sink.has_stream(r) for r in ("a", "b", "c")] == [False, True, True]
