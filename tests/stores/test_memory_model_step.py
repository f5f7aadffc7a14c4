"""`record_model_step` on the memory store with its memory quota: the settle rule the SQL stores keep."""

from __future__ import annotations

from agora_agent.governance.quota import Budget, MemoryQuotaStore
from agora_agent.stores.base import QuotaSettlement
from agora_agent.stores.memory import MemoryAgentStore
from tests.stores.sql.test_model_step import ALICE, DAY, released_meanwhile_still_charges, step


async def test_a_step_whose_reservation_was_released_meanwhile_still_charges_its_usage() -> None:
    """The expiry sweep released the reservation while the model answered: charged once all the same (as on SQL)."""
    await released_meanwhile_still_charges(MemoryAgentStore(), MemoryQuotaStore(Budget(tokens_per_actor=10_000)))


async def test_a_held_reservation_is_settled_once() -> None:
    store = MemoryAgentStore()
    quota = MemoryQuotaStore(Budget(tokens_per_actor=10_000))
    thread = await store.create_thread(actor_ref=ALICE.id)
    held = await quota.reserve(ALICE, DAY, reservation_id="run-1:0", tokens=500, usd=0.0)
    settle = QuotaSettlement(quota=quota, reservation=held, tokens=42, usd=0.0)
    await store.record_model_step(step(thread.id, settle))
    await store.record_model_step(step(thread.id, settle))
    usage = await quota.usage(ALICE, DAY)
    assert (usage.used_tokens, usage.reserved_tokens) == (42, 0)


async def test_a_tool_result_takes_the_next_reservation_with_or_without_cached_limits() -> None:
    """`record_tool_result(reserve=…)` grants in place while the actor's limits are cached and reads them first
    when they are not: the same reservation, the same counters, and the same refusal once the budget is spent."""
    from agora_agent.errors import QuotaExceededError
    from agora_agent.governance.budgets import MemoryBudgetRuleStore
    from agora_agent.records import ToolCallPatch
    from agora_agent.stores.base import QuotaReserve
    from tests.contract.test_store_contract import tool_call

    store = MemoryAgentStore()
    quota = MemoryQuotaStore(Budget(tokens_per_actor=1_000), rules=MemoryBudgetRuleStore())  # limits read, then kept
    thread = await store.create_thread(actor_ref=ALICE.id)
    for n in range(3):
        await store.record_tool_call(tool_call("run-1", f"call-{n}", thread))

    def ask(i: int) -> QuotaReserve:
        return QuotaReserve(quota=quota, actor=ALICE, day=DAY, reservation_id=f"run-1:{i}", tokens=600, usd=0.0)

    assert quota.reserve_cached(ALICE, DAY, reservation_id="run-1:0", tokens=600, usd=0.0) is None  # nothing read yet
    first = await store.record_tool_result("run-1", "call-0", ToolCallPatch(status="executed"), reserve=ask(1))
    assert quota.limits.cached(ALICE) is not None  # read by that reservation, kept for the next
    assert first is not None
    await quota.settle(first, tokens=0, usd=0.0)
    second = await store.record_tool_result("run-1", "call-1", ToolCallPatch(status="executed"), reserve=ask(2))
    assert second is not None and (second.id, second.tokens) == ("run-1:2", 600)
    assert (await quota.usage(ALICE, DAY)).reserved_tokens == 600
    # 600 of 1,000 reserved: granted (headroom left), and the next one is refused with the result still written
    third = await store.record_tool_result("run-1", "call-2", ToolCallPatch(status="executed"), reserve=ask(3))
    assert third is not None
    try:
        await store.record_tool_result("run-1", "call-2", ToolCallPatch(status="failed", error="x"), reserve=ask(4))
    except QuotaExceededError:
        pass
    else:
        raise AssertionError("a spent budget grants no reservation")
    written = await store.get_tool_call("run-1", "call-2")
    assert written is not None and written.status == "failed"  # the result is written whatever the reservation
