"""`record_model_step` on SQL: the budget settle shares the transaction of the assistant message and its usage row."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from agora_agent.actors import Actor
from agora_agent.errors import NotFoundError
from agora_agent.governance.quota import Budget
from agora_agent.records import UsageRecord
from agora_agent.stores.base import ModelStep, QuotaSettlement
from agora_agent.stores.sql import SqlBackend

ALICE = Actor(id="alice", tenant_ref="acme")
DAY = "2024-05-01"


def step(thread_id: str, settlement: QuotaSettlement) -> ModelStep:
    now = datetime.now(UTC)
    ledger = UsageRecord(
        id="run-1:m-1",
        thread_id=thread_id,
        run_id="run-1",
        message_id="m-1",
        actor_ref=ALICE.id,
        model_id="m",
        input_tokens=30,
        output_tokens=12,
        created_at=now,
    )
    return ModelStep(
        message_id="m-1", thread_id=thread_id, run_id="run-1", content="ok", ledger=ledger, settlement=settlement
    )


async def test_settle_rolls_back_with_the_step_and_happens_once(sql_backend: SqlBackend) -> None:
    quota = sql_backend.quota(Budget(tokens_per_actor=10_000, tokens_per_tenant=50_000))
    store = sql_backend.store
    thread = await store.create_thread(actor_ref=ALICE.id)
    held = await quota.reserve(ALICE, DAY, reservation_id="run-1:0", tokens=500, usd=0.0)
    settle = QuotaSettlement(quota=quota, reservation=held, tokens=42, usd=0.0)

    with pytest.raises(NotFoundError):  # the thread is gone: the whole step, settle included, is undone
        await store.record_model_step(step("no-such-thread", settle))
    usage = await quota.usage(ALICE, DAY)
    assert (usage.used_tokens, usage.reserved_tokens) == (0, 500)

    await store.record_model_step(step(thread.id, settle))
    await store.record_model_step(step(thread.id, settle))  # replayed: settles nothing twice, no second row
    usage = await quota.usage(ALICE, DAY)
    assert (usage.used_tokens, usage.reserved_tokens) == (42, 0)
    assert len(await store.list_messages(thread.id)) == 1
    assert await store.usage_tokens(ALICE.id, datetime(2000, 1, 1, tzinfo=UTC), datetime.now(UTC)) == 42
