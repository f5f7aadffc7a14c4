"""`record_model_step` on SQL: the budget settle and the first tool call's row share the transaction of the
assistant message and its usage row; `record_tool_result`: a tool's result shares the next reservation's."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest

from agora_agent.actors import Actor
from agora_agent.errors import NotFoundError, QuotaExceededError
from agora_agent.governance.quota import Budget, QuotaStore
from agora_agent.records import ToolCallPatch, ToolCallRecord, UsageRecord
from agora_agent.stores.base import AgentStore, ModelStep, NewMessage, QuotaReserve, QuotaSettlement
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


async def test_a_step_whose_reservation_was_released_meanwhile_still_charges_its_usage(
    sql_backend: SqlBackend,
) -> None:
    """An expiry sweep, or a process that lost the run, released the reservation while the model answered; the
    step's usage row is written all the same, so the counter must count it too (and once)."""
    await released_meanwhile_still_charges(sql_backend.store, sql_backend.quota(Budget(tokens_per_actor=10_000)))


async def released_meanwhile_still_charges(store: AgentStore, quota: QuotaStore) -> None:
    """Reserve, release, then record the step twice: used 42 once, nothing reserved, 42 in the ledger."""
    thread = await store.create_thread(actor_ref=ALICE.id)
    held = await quota.reserve(ALICE, DAY, reservation_id="run-1:0", tokens=500, usd=0.0)
    await quota.release(held)
    settle = QuotaSettlement(quota=quota, reservation=held, tokens=42, usd=0.0)

    await store.record_model_step(step(thread.id, settle))
    await store.record_model_step(step(thread.id, settle))  # replayed: charges nothing twice
    usage = await quota.usage(ALICE, DAY)
    assert (usage.used_tokens, usage.reserved_tokens) == (42, 0)
    assert await store.usage_tokens(ALICE.id, datetime(2000, 1, 1, tzinfo=UTC), datetime.now(UTC)) == 42


def call_row(thread_id: str, call_id: str) -> ToolCallRecord:
    return ToolCallRecord(
        id=call_id,
        run_id="run-1",
        thread_id=thread_id,
        message_id="m-1",
        tool_name="lookup",
        tool_type="read",
        input={"q": 1},
        actor_ref=ALICE.id,
        created_at=datetime.now(UTC),
    )


@pytest.mark.parametrize("tenant_limit", [None, 50_000], ids=["one limit", "two limits"])
async def test_a_tool_result_and_the_next_reservation_commit_together(
    sql_backend: SqlBackend, tenant_limit: int | None
) -> None:
    """One limit on PostgreSQL: one statement; otherwise one transaction. The result is committed whatever the
    grant decides; an unknown call reserves nothing; the same reservation asked again grants nothing twice."""
    quota = sql_backend.quota(Budget(tokens_per_actor=1_000, tokens_per_tenant=tenant_limit))
    store = sql_backend.store
    thread = await store.create_thread(actor_ref=ALICE.id)
    for call_id in ("c1", "c2", "c3"):
        await store.record_tool_call(call_row(thread.id, call_id))

    def ask(i: int, tokens: int = 600) -> QuotaReserve:
        return QuotaReserve(quota=quota, actor=ALICE, day=DAY, reservation_id=f"run-1:{i}", tokens=tokens, usd=0.0)

    done = ToolCallPatch(status="executed", output={"n": 1}, execution_ms=3)
    held = await store.record_tool_result("run-1", "c1", done, reserve=ask(1))  # the counter's first grant
    assert held is not None and held.tokens == 600
    again = await store.record_tool_result("run-1", "c1", done, reserve=ask(1))  # a retry: granted once
    assert again is not None and (await quota.usage(ALICE, DAY)).reserved_tokens == 600
    row = await store.get_tool_call("run-1", "c1")
    assert row is not None and (row.status, row.output, row.execution_ms) == ("executed", {"n": 1}, 3)

    with pytest.raises(NotFoundError):
        await store.record_tool_result("run-1", "nope", done, reserve=ask(2, 10))
    assert (await quota.usage(ALICE, DAY)).reserved_tokens == 600

    await store.record_tool_result("run-1", "c2", done, reserve=ask(3, 100))  # headroom: the common case
    assert (await quota.usage(ALICE, DAY)).reserved_tokens == 700
    failed = ToolCallPatch(status="failed", error="boom")
    await quota.reserve(ALICE, DAY, reservation_id="other", tokens=300, usd=0.0)  # 1000 reserved: no headroom
    with pytest.raises(QuotaExceededError):
        await store.record_tool_result("run-1", "c3", failed, reserve=ask(4, 100))
    row = await store.get_tool_call("run-1", "c3")
    assert row is not None and (row.status, row.error) == ("failed", "boom") and row.executed_at is not None
    assert (await quota.usage(ALICE, DAY)).reserved_tokens == 1_000


@pytest.mark.parametrize("tenant_limit", [None, 50_000], ids=["one limit", "two limits"])
async def test_a_user_message_its_history_and_the_first_reservation_commit_together(
    sql_backend: SqlBackend, tenant_limit: int | None
) -> None:
    """`append_load_and_reserve` (a run's `load:thread`): one statement on PostgreSQL with one limit, else one
    transaction. The message is committed whatever the grant decides; a reservation not granted there comes back
    None and the caller's own reserve decides (a new period's first grant on PostgreSQL, a refusal); the same
    message and reservation asked again write and grant nothing twice; a deleted thread gets neither."""
    quota = sql_backend.quota(Budget(tokens_per_actor=1_000, tokens_per_tenant=tenant_limit))
    store = sql_backend.store
    thread = await store.create_thread(actor_ref=ALICE.id)

    def ask(i: int, tokens: int = 600) -> QuotaReserve:
        return QuotaReserve(quota=quota, actor=ALICE, day=DAY, reservation_id=f"run-{i}:0", tokens=tokens, usd=0.0)

    def user(i: int, thread_id: str = thread.id) -> NewMessage:
        return NewMessage(thread_id=thread_id, role="user", content=f"hi {i}", run_id=f"run-{i}", message_id=f"u-{i}")

    async def reserved() -> int:
        return (await quota.usage(ALICE, DAY)).reserved_tokens

    history, held = await store.append_load_and_reserve(user(1), ask(1))
    if held is None:  # the counter's first grant in its period is the quota's full unit
        held = await ask(1).take()
    assert [m.id for m in history.messages] == ["u-1"] and history.thread is not None
    assert held.tokens == 600 and await reserved() == 600
    history, again = await store.append_load_and_reserve(user(1), ask(1))  # a replayed step: nothing twice
    again = again or await ask(1).take()  # (several limits on PostgreSQL: the quota's unit, which grants once too)
    assert again.id == "run-1:0" and await reserved() == 600
    assert [m.id for m in history.messages] == ["u-1"]

    history, common = await store.append_load_and_reserve(user(2), ask(2, 100))  # headroom: the common case
    assert [m.id for m in history.messages] == ["u-1", "u-2"]
    assert (common is not None) == (tenant_limit is None or not sql_backend.store._postgres)
    if common is None:  # several limits on PostgreSQL: the quota's multi-statement unit grants them
        await ask(2, 100).take()
    assert await reserved() == 700

    gone = await store.create_thread(actor_ref=ALICE.id)
    await store.soft_delete_thread(gone.id)
    with pytest.raises(NotFoundError):
        await store.append_load_and_reserve(user(3, gone.id), ask(3, 100))
    assert await reserved() == 700

    await quota.reserve(ALICE, DAY, reservation_id="other", tokens=300, usd=0.0)  # 1000 reserved: no headroom
    history, refused = await store.append_load_and_reserve(user(4), ask(4, 100))
    assert refused is None and [m.id for m in history.messages][-1] == "u-4"  # the message, all the same
    with pytest.raises(QuotaExceededError):
        await ask(4, 100).take()
    assert await reserved() == 1_000
    assert [m.id for m in await store.list_messages(thread.id)] == ["u-1", "u-2", "u-4"]


async def test_a_step_with_its_first_tool_call_rolls_back_whole(sql_backend: SqlBackend) -> None:
    """The tool call row joins the step's transaction: a missing thread writes neither."""
    quota = sql_backend.quota(Budget(tokens_per_actor=10_000))
    store = sql_backend.store
    held = await quota.reserve(ALICE, DAY, reservation_id="run-1:0", tokens=500, usd=0.0)
    settle = QuotaSettlement(quota=quota, reservation=held, tokens=42, usd=0.0)
    with pytest.raises(NotFoundError):
        await store.record_model_step(
            dataclasses.replace(step("no-such-thread", settle), tool_call=call_row("no-such-thread", "c1"))
        )
    assert await store.get_tool_call("run-1", "c1") is None
    assert (await quota.usage(ALICE, DAY)).reserved_tokens == 500
