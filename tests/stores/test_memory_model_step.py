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
