"""The AgentStore contract: every implementation (memory, SQLite, PostgreSQL) runs these same tests.

Written against the protocol only. Timestamps the tests supply are whole milliseconds, so a store that
keeps millisecond precision round-trips them exactly.
"""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from agora_agent.actors import Actor
from agora_agent.errors import ConflictError, NotFoundError, QuotaExceededError
from agora_agent.governance.quota import Budget, MemoryQuotaStore
from agora_agent.messages import Attachment, ToolCall
from agora_agent.records import ApprovalRecord, RunRecord, ThreadRecord, ToolCallPatch, ToolCallRecord, UsageRecord
from agora_agent.stores.base import AgentStore, ModelStep, NewMessage, NewThread, QuotaReserve, QuotaSettlement, RunEnd

T0 = datetime(2024, 5, 1, 12, 0, 0, 123000, tzinfo=UTC)


def utc(moment: datetime | None) -> bool:
    return moment is not None and moment.tzinfo is not None and moment.utcoffset() == timedelta(0)


def run_record(run_id: str, thread: ThreadRecord, **kw: Any) -> RunRecord:
    fields: dict[str, Any] = {"actor_ref": thread.actor_ref, "started_at": T0} | kw
    return RunRecord(id=run_id, thread_id=thread.id, **fields)


def tool_call(
    run_id: str, call_id: str, thread: ThreadRecord, message_id: str | None = None, **kw: Any
) -> ToolCallRecord:
    fields: dict[str, Any] = {
        "tool_name": "lookup",
        "tool_type": "read",
        "input": {"q": "x"},
        "actor_ref": thread.actor_ref,
        "created_at": T0,
    } | kw
    return ToolCallRecord(id=call_id, run_id=run_id, thread_id=thread.id, message_id=message_id, **fields)


def approval(run_id: str, call_id: str, thread: ThreadRecord, **kw: Any) -> ApprovalRecord:
    fields: dict[str, Any] = {
        "tool_name": "refund",
        "args_hash": "h" * 64,
        "requested_by": thread.actor_ref,
        "created_at": T0,
    } | kw
    return ApprovalRecord(run_id=run_id, tool_call_id=call_id, thread_id=thread.id, **fields)


def usage(thread: ThreadRecord, created_at: datetime, **kw: Any) -> UsageRecord:
    fields: dict[str, Any] = {
        "id": uuid.uuid4().hex,
        "run_id": None,
        "message_id": None,
        "actor_ref": thread.actor_ref,
        "model_id": "m1",
        "input_tokens": 10,
        "output_tokens": 5,
    } | kw
    return UsageRecord(thread_id=thread.id, created_at=created_at, **fields)


# -- threads --


@pytest.mark.ref("STORE-14", "STORE-15")
async def test_create_thread_defaults_and_get(store: AgentStore) -> None:
    thread = await store.create_thread(actor_ref="alice")
    assert thread.id and thread.actor_ref == "alice"
    assert (thread.title, thread.persona, thread.transient, thread.tenant_ref) == ("New chat", "default", False, None)
    assert utc(thread.created_at) and thread.updated_at == thread.created_at
    assert thread.deleted_at is None and thread.active_stream_id is None
    got = await store.get_thread(thread.id)
    assert got == thread


@pytest.mark.ref("STORE-14")
async def test_create_thread_with_every_field(store: AgentStore) -> None:
    thread = await store.create_thread(actor_ref="bob", tenant_ref="acme", persona="coach", transient=True, title="T")
    got = await store.get_thread(thread.id)
    assert got is not None
    assert (got.actor_ref, got.tenant_ref, got.persona, got.transient, got.title) == ("bob", "acme", "coach", True, "T")
    other = await store.create_thread(actor_ref="bob")
    assert other.id != thread.id


async def test_create_thread_with_a_chosen_id_once(store: AgentStore) -> None:
    thread = await store.create_thread(actor_ref="alice", thread_id="ui-chosen")
    assert thread.id == "ui-chosen" and (await store.get_thread("ui-chosen")) == thread
    with pytest.raises(ConflictError):
        await store.create_thread(actor_ref="bob", thread_id="ui-chosen")
    assert await store.thread_owner("ui-chosen") == "alice"


@pytest.mark.ref("STORE-15")
async def test_get_thread_unknown_is_none(store: AgentStore) -> None:
    assert await store.get_thread("no-such-thread") is None


@pytest.mark.ref("STORE-16", "HTTP-07")
async def test_list_threads_is_the_actors_live_non_transient_threads_newest_first(store: AgentStore) -> None:
    first = await store.create_thread(actor_ref="alice", title="first")
    second = await store.create_thread(actor_ref="alice", title="second")
    await store.create_thread(actor_ref="alice", transient=True)
    await store.create_thread(actor_ref="bob")
    gone = await store.create_thread(actor_ref="alice")
    assert await store.soft_delete_thread(gone.id)

    listed = await store.list_threads("alice")
    assert [s.thread.id for s in listed] == [second.id, first.id]

    await store.append_message(thread_id=first.id, role="user", content="bump")
    listed = await store.list_threads("alice")
    assert [s.thread.id for s in listed] == [first.id, second.id]
    assert [s.thread.id for s in await store.list_threads("alice", limit=1)] == [first.id]
    assert await store.list_threads("nobody") == []


@pytest.mark.ref("STORE-15", "HTTP-07")
async def test_list_threads_preview_is_last_message_first_120_chars(store: AgentStore) -> None:
    thread = await store.create_thread(actor_ref="alice")
    [summary] = await store.list_threads("alice")
    assert summary.last_message_preview is None
    await store.append_message(thread_id=thread.id, role="user", content="hello")
    await store.append_message(thread_id=thread.id, role="assistant", content="x" * 100 + "y" * 50)
    [summary] = await store.list_threads("alice")
    assert summary.last_message_preview == "x" * 100 + "y" * 20
    assert summary.thread.title == "New chat"


@pytest.mark.ref("OWN-04", "STORE-17", "HTTP-10")
async def test_soft_delete_hides_the_thread_everywhere(store: AgentStore) -> None:
    thread = await store.create_thread(actor_ref="alice")
    assert await store.thread_owner(thread.id) == "alice"
    assert await store.soft_delete_thread(thread.id) is True
    assert await store.get_thread(thread.id) is None
    assert await store.thread_owner(thread.id) is None
    assert await store.list_threads("alice") == []
    assert await store.soft_delete_thread(thread.id) is False
    assert await store.soft_delete_thread("no-such-thread") is False


@pytest.mark.ref("OWN-04")
async def test_thread_owner_unknown_is_none(store: AgentStore) -> None:
    assert await store.thread_owner("no-such-thread") is None


async def test_set_title_and_active_stream(store: AgentStore) -> None:
    thread = await store.create_thread(actor_ref="alice")
    await store.set_title(thread.id, "Refund for order 42")
    await store.set_active_stream(thread.id, "run-1")
    got = await store.get_thread(thread.id)
    assert got is not None and (got.title, got.active_stream_id) == ("Refund for order 42", "run-1")
    await store.set_active_stream(thread.id, None)
    got = await store.get_thread(thread.id)
    assert got is not None and got.active_stream_id is None


# -- messages --


@pytest.mark.ref("STORE-18")
async def test_append_message_round_trips_every_field(store: AgentStore) -> None:
    thread = await store.create_thread(actor_ref="alice")
    calls = [ToolCall(id="c1", name="lookup", input={"q": "42", "n": [1, 2]})]
    files = [Attachment(media_id="m1", url="https://files.test/a.png", content_type="image/png", name="a.png")]
    usage_json = {"input_tokens": 12, "output_tokens": 3, "cost_usd": 0.001}  # as the loop writes it
    message = await store.append_message(
        thread_id=thread.id,
        role="assistant",
        content="Looking it up",
        run_id="run-1",
        persona="coach",
        tool_calls=calls,
        attachments=files,
        usage=usage_json,
    )
    assert message.id and message.thread_id == thread.id and utc(message.created_at)
    [got] = await store.list_messages(thread.id)
    assert got == message
    assert got.tool_calls == calls and got.attachments == files and got.usage == usage_json
    assert (got.role, got.content, got.run_id, got.persona) == ("assistant", "Looking it up", "run-1", "coach")


async def test_list_messages_of_one_run_reads_only_that_run_in_order(store: AgentStore) -> None:
    """What a re-attach's transcript and the run inspector read: one run's messages, however long the thread."""
    thread = await store.create_thread(actor_ref="alice")
    other = await store.create_thread(actor_ref="alice")
    written = []
    for run_id, role, content in [
        ("run-a", "user", "first question"),
        ("run-a", "assistant", "first answer"),
        (None, "user", "a message outside any run"),
        ("run-b", "user", "second question"),
        ("run-b", "assistant", "looking"),
        ("run-b", "assistant", "second answer"),
    ]:
        written.append(await store.append_message(thread_id=thread.id, role=role, content=content, run_id=run_id))
    await store.append_message(thread_id=other.id, role="user", content="another thread", run_id="run-b")

    assert await store.list_messages(thread.id, run_id="run-b") == written[3:]
    assert await store.list_messages(thread.id, run_id="run-a") == written[:2]
    assert await store.list_messages(thread.id, run_id="run-unknown") == []
    assert await store.list_messages(thread.id) == written  # without run_id: the whole thread, as before
    assert [m.content for m in await store.list_messages(other.id, run_id="run-b")] == ["another thread"]


@pytest.mark.ref("STORE-18")
async def test_absent_optional_message_fields_read_back_as_none(store: AgentStore) -> None:
    thread = await store.create_thread(actor_ref="alice")
    await store.append_message(thread_id=thread.id, role="user", content="hi")
    [got] = await store.list_messages(thread.id)
    assert (got.tool_calls, got.attachments, got.usage, got.persona, got.run_id) == (None, None, None, None, None)


@pytest.mark.ref("STORE-18")
async def test_append_message_bumps_thread_updated_at_and_keeps_order(store: AgentStore) -> None:
    thread = await store.create_thread(actor_ref="alice")
    contents = [f"m{i}" for i in range(5)]
    for i, text in enumerate(contents):
        await store.append_message(thread_id=thread.id, role="user" if i % 2 == 0 else "assistant", content=text)
    messages = await store.list_messages(thread.id)
    assert [m.content for m in messages] == contents
    assert [m.created_at for m in messages] == sorted(m.created_at for m in messages)
    got = await store.get_thread(thread.id)
    assert got is not None and got.updated_at >= messages[-1].created_at > thread.updated_at


@pytest.mark.ref("STORE-18")
async def test_append_message_to_unknown_thread_raises_not_found(store: AgentStore) -> None:
    with pytest.raises(NotFoundError):
        await store.append_message(thread_id="no-such-thread", role="user", content="hi")


async def test_list_messages_of_unknown_thread_is_empty(store: AgentStore) -> None:
    assert await store.list_messages("no-such-thread") == []


# -- fork / truncate --


async def _thread_with_messages(store: AgentStore, n: int, **kw: Any) -> tuple[ThreadRecord, list[str]]:
    thread = await store.create_thread(actor_ref="alice", **kw)
    ids = []
    for i in range(n):
        m = await store.append_message(
            thread_id=thread.id, role="user" if i % 2 == 0 else "assistant", content=f"m{i}", run_id="run-1"
        )
        ids.append(m.id)
    return thread, ids


@pytest.mark.ref("STORE-F1", "HTTP-11")
async def test_fork_copies_up_to_and_including_the_message(store: AgentStore) -> None:
    source, ids = await _thread_with_messages(
        store, 4, tenant_ref="acme", persona="coach", title="Plans", transient=True
    )
    originals = await store.list_messages(source.id)

    fork = await store.fork_thread(source.id, ids[1])
    assert fork.id != source.id
    assert (fork.actor_ref, fork.tenant_ref, fork.title, fork.persona) == ("alice", "acme", "Plans", "coach")
    assert fork.transient is False and fork.deleted_at is None
    assert utc(fork.created_at) and fork.created_at >= originals[-1].created_at

    copies = await store.list_messages(fork.id)
    assert [m.content for m in copies] == ["m0", "m1"]
    assert [m.role for m in copies] == ["user", "assistant"]
    assert [m.created_at for m in copies] == [m.created_at for m in originals[:2]]
    assert not {m.id for m in copies} & set(ids)
    assert all(m.thread_id == fork.id and m.run_id is None for m in copies)
    assert [m.content for m in await store.list_messages(source.id)] == ["m0", "m1", "m2", "m3"]
    assert await store.thread_owner(fork.id) == "alice"


@pytest.mark.ref("STORE-F1")
async def test_fork_from_unknown_message_copies_everything(store: AgentStore) -> None:
    source, _ = await _thread_with_messages(store, 3)
    fork = await store.fork_thread(source.id, "no-such-message")
    assert [m.content for m in await store.list_messages(fork.id)] == ["m0", "m1", "m2"]


@pytest.mark.ref("STORE-F1")
async def test_fork_of_unknown_thread_raises_not_found(store: AgentStore) -> None:
    with pytest.raises(NotFoundError):
        await store.fork_thread("no-such-thread", "m")


@pytest.mark.ref("STORE-F2")
async def test_truncate_from_deletes_the_message_later_ones_and_their_tool_calls(store: AgentStore) -> None:
    thread, ids = await _thread_with_messages(store, 4)
    await store.record_tool_call(tool_call("run-1", "keep", thread, ids[1]))
    await store.record_tool_call(tool_call("run-1", "drop-2", thread, ids[2]))
    await store.record_tool_call(tool_call("run-1", "drop-3", thread, ids[3]))

    await store.truncate_from(thread.id, ids[2])
    assert [m.id for m in await store.list_messages(thread.id)] == ids[:2]
    assert [tc.id for tc in await store.list_tool_calls(thread_id=thread.id)] == ["keep"]
    assert await store.get_tool_call("run-1", "drop-2") is None


@pytest.mark.ref("STORE-F2")
async def test_truncate_from_unknown_message_is_a_no_op(store: AgentStore) -> None:
    thread, ids = await _thread_with_messages(store, 2)
    await store.truncate_from(thread.id, "no-such-message")
    await store.truncate_from("no-such-thread", ids[0])
    assert [m.id for m in await store.list_messages(thread.id)] == ids


# -- tool calls --


@pytest.mark.ref("STORE-19")
async def test_record_and_get_tool_call_round_trips(store: AgentStore) -> None:
    thread = await store.create_thread(actor_ref="alice", tenant_ref="acme")
    record = tool_call(
        "run-1",
        "call-1",
        thread,
        None,
        tool_type="action",
        status="pending_approval",
        tenant_ref="acme",
        policy_decision="allowed",
        idempotency_key="run-1:call-1",
        input={"orderId": 42, "items": ["a", "b"], "note": None},
    )
    await store.record_tool_call(record)
    got = await store.get_tool_call("run-1", "call-1")
    assert got == record
    assert got is not None and got.output is None and got.error is None and got.executed_at is None
    assert await store.get_tool_call("run-1", "other") is None
    assert await store.get_tool_call("run-2", "call-1") is None


@pytest.mark.ref("STORE-19")
async def test_tool_calls_are_keyed_by_run_and_call_id(store: AgentStore) -> None:
    thread = await store.create_thread(actor_ref="alice")
    await store.record_tool_call(tool_call("run-1", "call-1", thread, tool_name="a"))
    await store.record_tool_call(tool_call("run-2", "call-1", thread, tool_name="b"))
    await store.update_tool_call("run-2", "call-1", ToolCallPatch(status="executed"))
    one, two = await store.get_tool_call("run-1", "call-1"), await store.get_tool_call("run-2", "call-1")
    assert one is not None and two is not None
    assert (one.tool_name, one.status, two.tool_name, two.status) == ("a", "started", "b", "executed")


@pytest.mark.ref("STORE-19")
async def test_update_tool_call_applies_only_set_fields(store: AgentStore) -> None:
    thread = await store.create_thread(actor_ref="alice")
    await store.record_tool_call(tool_call("run-1", "call-1", thread, status="pending_approval", tool_type="action"))
    await store.update_tool_call("run-1", "call-1", ToolCallPatch(decided_by="bob", status="started"))
    got = await store.get_tool_call("run-1", "call-1")
    assert got is not None
    assert (got.status, got.decided_by, got.input, got.executed_at) == ("started", "bob", {"q": "x"}, None)

    patch = ToolCallPatch(status="executed", output={"ok": True}, execution_ms=37, executed_by_ref="alice")
    await store.update_tool_call("run-1", "call-1", patch)
    got = await store.get_tool_call("run-1", "call-1")
    assert got is not None
    assert (got.status, got.output, got.execution_ms, got.executed_by_ref) == ("executed", {"ok": True}, 37, "alice")
    assert got.decided_by == "bob" and utc(got.executed_at)


@pytest.mark.ref("STORE-19")
async def test_a_patch_holding_only_its_changes_updates_like_the_full_one(store: AgentStore) -> None:
    # `ToolCallPatch.of` (the loop's result of every tool call) keeps only the set fields; a store that walks the
    # patch's fields must leave the others alone exactly as with the class call
    thread = await store.create_thread(actor_ref="alice")
    for call_id in ("call-1", "call-2"):
        await store.record_tool_call(tool_call("run-1", call_id, thread, status="started", tool_type="action"))
    changes: dict[str, Any] = {"status": "executed", "output": {"n": 2}, "execution_ms": 5, "decided_by": None}
    await store.update_tool_call("run-1", "call-1", ToolCallPatch(**changes))
    await store.update_tool_call("run-1", "call-2", ToolCallPatch.of(**changes))
    full, sparse = await store.get_tool_call("run-1", "call-1"), await store.get_tool_call("run-1", "call-2")
    assert full is not None and sparse is not None
    fields = ("status", "output", "execution_ms", "decided_by", "input", "error", "policy_decision", "executed_by_ref")
    assert [getattr(sparse, f) for f in fields] == [getattr(full, f) for f in fields]
    assert (sparse.status, sparse.output, sparse.input) == ("executed", {"n": 2}, {"q": "x"}) and utc(
        sparse.executed_at
    )


@pytest.mark.ref("STORE-19")
async def test_failed_status_stamps_executed_at_and_none_is_a_real_value(store: AgentStore) -> None:
    thread = await store.create_thread(actor_ref="alice")
    await store.record_tool_call(tool_call("run-1", "call-1", thread, output="partial"))
    await store.update_tool_call("run-1", "call-1", ToolCallPatch(status="failed", error="boom", output=None))
    got = await store.get_tool_call("run-1", "call-1")
    assert got is not None and (got.status, got.error, got.output) == ("failed", "boom", None)
    assert utc(got.executed_at)

    await store.record_tool_call(tool_call("run-1", "call-2", thread, tool_type="action", status="pending_approval"))
    await store.update_tool_call("run-1", "call-2", ToolCallPatch(status="rejected", error="no"))
    rejected = await store.get_tool_call("run-1", "call-2")
    assert rejected is not None and rejected.status == "rejected" and rejected.executed_at is None


@pytest.mark.ref("STORE-19")
async def test_update_unknown_tool_call_raises_not_found(store: AgentStore) -> None:
    with pytest.raises(NotFoundError):
        await store.update_tool_call("run-1", "missing", ToolCallPatch(status="executed"))


async def test_list_tool_calls_filters_and_creation_order(store: AgentStore) -> None:
    t1 = await store.create_thread(actor_ref="alice")
    t2 = await store.create_thread(actor_ref="alice")
    await store.record_tool_call(tool_call("run-1", "a", t1, created_at=T0))
    await store.record_tool_call(tool_call("run-1", "b", t1, created_at=T0 + timedelta(seconds=1)))
    await store.record_tool_call(tool_call("run-2", "c", t2, created_at=T0 + timedelta(seconds=2)))
    await store.record_tool_call(tool_call("run-3", "d", t1, created_at=T0 + timedelta(seconds=3)))

    assert [tc.id for tc in await store.list_tool_calls(thread_id=t1.id)] == ["a", "b", "d"]
    assert [tc.id for tc in await store.list_tool_calls(run_id="run-1")] == ["a", "b"]
    assert [tc.id for tc in await store.list_tool_calls(thread_id=t1.id, run_id="run-3")] == ["d"]
    assert [tc.id for tc in await store.list_tool_calls(thread_id=t2.id, run_id="run-1")] == []
    assert [tc.id for tc in await store.list_tool_calls()] == ["a", "b", "c", "d"]


# -- approvals --


async def test_approval_round_trips(store: AgentStore) -> None:
    thread = await store.create_thread(actor_ref="alice")
    record = approval(
        "run-1", "call-1", thread, approver_roles=("manager", "finance"), deadline=T0 + timedelta(hours=1)
    )
    await store.create_approval(record)
    got = await store.get_approval("run-1", "call-1")
    assert got == record and got is not None and tuple(got.approver_roles or ()) == ("manager", "finance")
    assert await store.get_approval("run-1", "other") is None


async def test_decide_approval_is_compare_and_set(store: AgentStore) -> None:
    thread = await store.create_thread(actor_ref="alice")
    await store.create_approval(approval("run-1", "call-1", thread))

    decided, changed = await store.decide_approval(
        "run-1", "call-1", status="rejected", decided_by="bob", reason="too large"
    )
    assert changed is True
    assert (decided.status, decided.decided_by, decided.reason) == ("rejected", "bob", "too large")
    assert utc(decided.decided_at)

    standing, changed = await store.decide_approval("run-1", "call-1", status="approved", decided_by="carol")
    assert changed is False
    assert (standing.status, standing.decided_by, standing.reason) == ("rejected", "bob", "too large")
    assert standing.decided_at == decided.decided_at
    assert await store.get_approval("run-1", "call-1") == standing


async def test_decide_unknown_approval_raises_not_found(store: AgentStore) -> None:
    with pytest.raises(NotFoundError):
        await store.decide_approval("run-1", "missing", status="approved", decided_by="bob")


@pytest.mark.slow
async def test_concurrent_decisions_exactly_one_wins(store: AgentStore) -> None:
    thread = await store.create_thread(actor_ref="alice")
    await store.create_approval(approval("run-1", "call-1", thread))

    async def decide(i: int) -> tuple[ApprovalRecord, bool]:
        status = "approved" if i % 2 == 0 else "rejected"
        return await store.decide_approval("run-1", "call-1", status=status, decided_by=f"user-{i}")

    results = await asyncio.gather(*(decide(i) for i in range(20)))
    winners = [record for record, changed in results if changed]
    assert len(winners) == 1
    final = await store.get_approval("run-1", "call-1")
    assert final is not None and (final.status, final.decided_by) == (winners[0].status, winners[0].decided_by)
    assert all((r.status, r.decided_by) == (final.status, final.decided_by) for r, changed in results if not changed)


async def test_list_pending_approvals_oldest_first_by_requester(store: AgentStore) -> None:
    alice = await store.create_thread(actor_ref="alice")
    bob = await store.create_thread(actor_ref="bob")
    await store.create_approval(approval("run-1", "late", alice, created_at=T0 + timedelta(minutes=2)))
    await store.create_approval(approval("run-1", "early", alice, created_at=T0))
    await store.create_approval(approval("run-2", "bobs", bob, created_at=T0 + timedelta(minutes=1)))
    await store.create_approval(approval("run-1", "done", alice, created_at=T0 - timedelta(minutes=1)))
    await store.decide_approval("run-1", "done", status="expired", decided_by=None)

    assert [a.tool_call_id for a in await store.list_pending_approvals()] == ["early", "bobs", "late"]
    assert [a.tool_call_id for a in await store.list_pending_approvals(actor_ref="alice")] == ["early", "late"]
    assert [a.tool_call_id for a in await store.list_pending_approvals(limit=1)] == ["early"]
    assert await store.list_pending_approvals(actor_ref="nobody") == []


# -- usage ledger --


@pytest.mark.ref("QUOTA-09", "HTTP-12")
async def test_usage_tokens_sums_input_and_output_within_inclusive_bounds(store: AgentStore) -> None:
    alice = await store.create_thread(actor_ref="alice")
    bob = await store.create_thread(actor_ref="bob")
    start, end = T0, T0 + timedelta(hours=1)
    await store.record_usage(usage(alice, start, input_tokens=100, output_tokens=10, cache_read_tokens=80))
    await store.record_usage(usage(alice, end, input_tokens=7, output_tokens=3, cache_write_tokens=5))
    await store.record_usage(usage(alice, start + timedelta(minutes=5), input_tokens=1, output_tokens=1, cost_usd=0.5))
    await store.record_usage(usage(alice, start - timedelta(milliseconds=1), input_tokens=1000, output_tokens=0))
    await store.record_usage(usage(alice, end + timedelta(milliseconds=1), input_tokens=1000, output_tokens=0))
    await store.record_usage(usage(bob, start, input_tokens=500, output_tokens=500))

    assert await store.usage_tokens("alice", start, end) == 122
    assert await store.usage_tokens("bob", start, end) == 1000
    assert await store.usage_tokens("nobody", start, end) == 0


async def test_usage_tokens_over_whole_utc_days_as_the_quota_endpoint_asks(store: AgentStore) -> None:
    alice = await store.create_thread(actor_ref="alice")
    day = datetime(2024, 5, 1, tzinfo=UTC)
    last = day + timedelta(days=1, microseconds=-1)  # 23:59:59.999999, as quota_today passes it
    await store.record_usage(usage(alice, day, input_tokens=100, output_tokens=10))
    await store.record_usage(usage(alice, last, input_tokens=7, output_tokens=3, model_id="m2"))
    await store.record_usage(usage(alice, day - timedelta(microseconds=1), input_tokens=1000, output_tokens=0))
    await store.record_usage(usage(alice, last + timedelta(microseconds=1), input_tokens=1000, output_tokens=0))
    assert await store.usage_tokens("alice", day, last) == 120
    assert await store.usage_tokens("alice", day - timedelta(days=1), last) == 1120  # two whole days


# -- runs --


@pytest.mark.ref("STORE-20", "OWN-04")
async def test_run_start_round_trips_and_owner_is_the_runs_actor(store: AgentStore) -> None:
    thread = await store.create_thread(actor_ref="alice", tenant_ref="acme")
    record = run_record("run-1", thread, actor_ref="delegate", agent_name="support", tenant_ref="acme", durable=True)
    await store.record_run_start(record)
    got = await store.get_run("run-1")
    assert got == record
    assert got is not None and (got.status, got.step_count, got.input_tokens, got.output_tokens) == ("running", 0, 0, 0)
    assert got.cost_usd is None and got.finished_at is None
    assert await store.run_owner("run-1") == "delegate"
    assert await store.thread_owner(thread.id) == "alice"
    assert await store.get_run("missing") is None and await store.run_owner("missing") is None


async def test_open_run_with_a_new_thread_writes_the_thread_and_the_run_as_one(store: AgentStore) -> None:
    record = RunRecord(id="run-1", thread_id="", actor_ref="alice", tenant_ref="acme", agent_name="a", started_at=T0)
    spec = NewThread(actor_ref="alice", tenant_ref="acme", persona="p1", title="Hi", transient=True)
    opened = await store.open_run(record, new_thread=spec, owner_id="proc-1", active_stream=True)
    thread = opened.thread
    assert thread is not None and opened.run.thread_id == thread.id and thread.id
    assert opened.run == dataclasses.replace(record, thread_id=thread.id)
    assert await store.get_run("run-1") == opened.run
    stored = await store.get_thread(thread.id)
    assert stored is not None and stored == thread
    assert (stored.actor_ref, stored.tenant_ref, stored.persona, stored.title, stored.transient) == (
        "alice",
        "acme",
        "p1",
        "Hi",
        True,
    )
    assert stored.active_stream_id == "run-1" and utc(stored.created_at) and stored.updated_at == stored.created_at
    assert await store.list_messages(thread.id) == []


async def test_open_run_with_a_chosen_thread_id_that_exists_writes_nothing(store: AgentStore) -> None:
    first = RunRecord(id="run-1", thread_id="", actor_ref="alice", started_at=T0)
    opened = await store.open_run(first, new_thread=NewThread(actor_ref="alice", thread_id="ui-1"), active_stream=True)
    assert opened.thread is not None and opened.thread.id == opened.run.thread_id == "ui-1"
    second = RunRecord(id="run-2", thread_id="", actor_ref="alice", started_at=T0)
    with pytest.raises(ConflictError):
        await store.open_run(second, new_thread=NewThread(actor_ref="alice", thread_id="ui-1"), active_stream=True)
    assert await store.get_run("run-2") is None
    thread = await store.get_thread("ui-1")
    assert thread is not None and thread.active_stream_id == "run-1"


async def test_open_run_on_a_live_thread_sets_its_active_stream_only_when_asked(store: AgentStore) -> None:
    thread = await store.create_thread(actor_ref="alice")
    quiet = await store.open_run(run_record("run-1", thread))
    assert quiet.thread is None and quiet.run == run_record("run-1", thread)
    got = await store.get_thread(thread.id)
    assert got is not None and got.active_stream_id is None
    await store.open_run(run_record("run-2", thread), owner_id="proc-1", active_stream=True)
    got = await store.get_thread(thread.id)
    assert got is not None and got.active_stream_id == "run-2"
    assert [r.id for r in await store.list_runs_by_status("running")] == ["run-1", "run-2"]


async def test_open_run_on_a_deleted_or_unknown_thread_is_not_found_and_writes_nothing(store: AgentStore) -> None:
    thread = await store.create_thread(actor_ref="alice")
    assert await store.soft_delete_thread(thread.id)
    for thread_id in (thread.id, "no-such-thread"):
        record = RunRecord(id=f"run-{thread_id}", thread_id=thread_id, actor_ref="alice", started_at=T0)
        for active_stream in (True, False):
            with pytest.raises(NotFoundError):
                await store.open_run(record, owner_id="proc-1", active_stream=active_stream)
        assert await store.get_run(record.id) is None
    assert await store.list_runs_by_status("running") == []


async def test_open_run_with_a_run_id_that_exists_writes_nothing(store: AgentStore) -> None:
    thread = await store.create_thread(actor_ref="alice")
    await store.record_run_start(run_record("run-1", thread))
    again = RunRecord(id="run-1", thread_id="", actor_ref="bob", started_at=T0)
    with pytest.raises(ConflictError):
        await store.open_run(again, new_thread=NewThread(actor_ref="bob", thread_id="t-bob"), active_stream=True)
    assert await store.get_thread("t-bob") is None and await store.list_threads("bob") == []
    with pytest.raises(ConflictError):
        await store.open_run(run_record("run-1", thread), active_stream=True)
    got = await store.get_thread(thread.id)
    assert got is not None and got.active_stream_id is None
    assert await store.get_run("run-1") == run_record("run-1", thread)


@pytest.mark.ref("STORE-20")
async def test_run_end_first_terminal_wins(store: AgentStore) -> None:
    thread = await store.create_thread(actor_ref="alice")
    await store.record_run_start(run_record("run-1", thread))
    ended = await store.record_run_end(
        "run-1", status="completed", step_count=3, input_tokens=120, output_tokens=40, cost_usd=0.25
    )
    assert ended is True
    assert await store.record_run_end("run-1", status="cancelled", error="late") is False
    run = await store.get_run("run-1")
    assert run is not None
    assert (run.status, run.step_count, run.input_tokens, run.output_tokens) == ("completed", 3, 120, 40)
    assert run.cost_usd == 0.25 and run.error is None and utc(run.finished_at)
    assert await store.record_run_end("missing", status="failed") is False


@pytest.mark.ref("STORE-20")
async def test_run_end_keeps_counters_left_as_none_and_accepts_finished_at(store: AgentStore) -> None:
    thread = await store.create_thread(actor_ref="alice")
    await store.record_run_start(run_record("run-1", thread, step_count=2, input_tokens=9, output_tokens=4))
    finished = T0 + timedelta(seconds=90)
    assert await store.record_run_end("run-1", status="failed", error="model down", finished_at=finished)
    run = await store.get_run("run-1")
    assert run is not None
    assert (run.status, run.error, run.step_count, run.input_tokens, run.output_tokens) == (
        "failed",
        "model down",
        2,
        9,
        4,
    )
    assert run.finished_at == finished and run.cost_usd is None


@pytest.mark.slow
@pytest.mark.ref("STORE-20", "CANCEL-01")
async def test_concurrent_run_ends_exactly_one_wins(store: AgentStore) -> None:
    thread = await store.create_thread(actor_ref="alice")
    await store.record_run_start(run_record("run-1", thread))
    statuses: list[Any] = ["completed", "failed", "cancelled"]
    results = await asyncio.gather(
        *(store.record_run_end("run-1", status=statuses[i % 3], step_count=i) for i in range(20))
    )
    assert results.count(True) == 1
    winner = results.index(True)
    run = await store.get_run("run-1")
    assert run is not None and (run.status, run.step_count) == (statuses[winner % 3], winner)


async def test_list_runs_by_status(store: AgentStore) -> None:
    thread = await store.create_thread(actor_ref="alice")
    for i in range(4):
        await store.record_run_start(run_record(f"run-{i}", thread, started_at=T0 + timedelta(minutes=i)))
    await store.record_run_end("run-1", status="completed")
    running = await store.list_runs_by_status("running")
    assert sorted(r.id for r in running) == ["run-0", "run-2", "run-3"]
    assert all(r.status == "running" for r in running)
    assert [r.id for r in await store.list_runs_by_status("completed")] == ["run-1"]
    assert len(await store.list_runs_by_status("running", limit=2)) == 2
    assert await store.list_runs_by_status("cancelled") == []


# -- timestamps --


async def test_store_issued_timestamps_are_utc_aware(store: AgentStore) -> None:
    thread = await store.create_thread(actor_ref="alice")
    message = await store.append_message(thread_id=thread.id, role="user", content="hi")
    await store.create_approval(approval("run-1", "call-1", thread))
    decided, _ = await store.decide_approval("run-1", "call-1", status="approved", decided_by="bob")
    await store.soft_delete_thread(thread.id)
    assert all(utc(t) for t in (thread.created_at, thread.updated_at, message.created_at, decided.decided_at))


# -- one transaction per logical step (issue #18) --


def model_step(thread: ThreadRecord, message_id: str, **kw: Any) -> ModelStep:
    ledger = usage(thread, T0, id=f"run-1:{message_id}", run_id="run-1", message_id=message_id)
    fields: dict[str, Any] = {"content": "hi", "usage": {"inputTokens": 10, "outputTokens": 5}, "ledger": ledger} | kw
    return ModelStep(message_id=message_id, thread_id=thread.id, run_id="run-1", **fields)


async def test_record_model_step_writes_message_usage_and_settles_once(store: AgentStore) -> None:
    thread = await store.create_thread(actor_ref="alice")
    quota = MemoryQuotaStore(Budget(tokens_per_actor=1000, reserve_tokens=100))
    reservation = await quota.reserve(Actor("alice"), "2024-05-01", reservation_id="run-1:0", tokens=100, usd=0.0)
    settle = QuotaSettlement(quota=quota, reservation=reservation, tokens=15, usd=0.0)
    calls = [ToolCall(id="c1", name="lookup", input={"q": 1})]
    step = model_step(thread, "m-1", tool_calls=calls, persona="support", settlement=settle)
    first = await store.record_model_step(step)
    again = await store.record_model_step(step)  # a replayed step: nothing more is written
    assert (first.id, first.role, first.run_id, first.persona, first.tool_calls) == (
        "m-1",
        "assistant",
        "run-1",
        "support",
        calls,
    )
    assert again.id == "m-1" and again.content == "hi"
    assert [m.id for m in await store.list_messages(thread.id)] == ["m-1"]
    assert await store.usage_tokens("alice", T0 - timedelta(days=1), T0 + timedelta(days=1)) == 15
    used = await quota.usage(Actor("alice"), "2024-05-01")
    assert (used.used_tokens, used.reserved_tokens) == (15, 0)


async def test_record_model_step_writes_its_first_tool_call_once(store: AgentStore) -> None:
    """The step's first tool call row joins the step; a replay writes neither twice, and writes the row when an
    older writer stored the message alone."""
    thread = await store.create_thread(actor_ref="alice")
    call = tool_call("run-1", "c1", thread, "m-1", status="started", policy_decision="allowed")
    await store.record_model_step(model_step(thread, "m-1", tool_call=call))
    await store.record_model_step(model_step(thread, "m-1", tool_call=call))  # replayed
    assert [(c.id, c.message_id, c.status) for c in await store.list_tool_calls(run_id="run-1")] == [
        ("c1", "m-1", "started")
    ]
    assert [m.id for m in await store.list_messages(thread.id)] == ["m-1"]
    await store.record_model_step(model_step(thread, "m-2"))  # the message alone, as before the call joined it
    await store.record_model_step(model_step(thread, "m-2", tool_call=tool_call("run-1", "c2", thread, "m-2")))
    assert [c.id for c in await store.list_tool_calls(run_id="run-1")] == ["c1", "c2"]
    assert await store.usage_tokens("alice", T0 - timedelta(days=1), T0 + timedelta(days=1)) == 30


async def test_record_model_step_with_an_action_parks_its_approval(store: AgentStore) -> None:
    thread = await store.create_thread(actor_ref="alice")
    call = tool_call("run-1", "c1", thread, "m-1", status="pending_approval", tool_type="action")
    await store.record_model_step(model_step(thread, "m-1", tool_call=call, approval=approval("run-1", "c1", thread)))
    got = await store.get_approval("run-1", "c1")
    row = await store.get_tool_call("run-1", "c1")
    assert got is not None and got.status == "pending" and row is not None and row.status == "pending_approval"


async def test_record_model_step_with_another_call_under_its_id_writes_the_step_then_conflicts(
    store: AgentStore,
) -> None:
    thread = await store.create_thread(actor_ref="alice")
    await store.record_tool_call(tool_call("run-1", "c1", thread, "m-0", tool_name="other"))
    with pytest.raises(ConflictError):
        await store.record_model_step(model_step(thread, "m-1", tool_call=tool_call("run-1", "c1", thread, "m-1")))
    assert [m.id for m in await store.list_messages(thread.id)] == ["m-1"]  # as a separate write would leave it
    stored = await store.get_tool_call("run-1", "c1")
    assert stored is not None and (stored.tool_name, stored.message_id) == ("other", "m-0")


async def test_append_and_load_is_the_history_with_the_message_written_once(store: AgentStore) -> None:
    thread = await store.create_thread(actor_ref="alice")
    first = await store.append_message(thread_id=thread.id, role="user", content="q1", run_id="run-0")
    answer = await store.append_message(thread_id=thread.id, role="assistant", content="a1", run_id="run-0")
    ask = NewMessage(thread_id=thread.id, role="user", content="q2", run_id="run-1", persona="p", message_id="u-1")
    loaded = await store.append_and_load(ask)
    assert [(m.id, m.content) for m in loaded.messages] == [(first.id, "q1"), (answer.id, "a1"), ("u-1", "q2")]
    assert loaded.complete and loaded.thread is not None and loaded.thread.updated_at > thread.updated_at
    got = loaded.messages[-1]
    assert (got.role, got.run_id, got.persona, got.attachments) == ("user", "run-1", "p", None) and utc(got.created_at)
    again = await store.append_and_load(ask, after=answer.id)  # replayed: no second copy, the tail from `after`
    assert [m.id for m in again.messages] == ["u-1"] and not again.complete
    assert [m.id for m in await store.list_messages(thread.id)] == [first.id, answer.id, "u-1"]
    await store.truncate_from(thread.id, answer.id)
    gone = await store.append_and_load(NewMessage(thread_id=thread.id, role="user", content="q3"), after=answer.id)
    assert [m.content for m in gone.messages] == ["q1", "q3"] and gone.complete  # the anchor is gone: everything
    await store.soft_delete_thread(thread.id)
    for thread_id in (thread.id, "no-such-thread"):
        with pytest.raises(NotFoundError):
            await store.append_and_load(NewMessage(thread_id=thread_id, role="user", content="q4"))
    assert [m.content for m in await store.list_messages(thread.id)] == ["q1", "q3"]


async def test_record_model_step_with_the_run_end_ends_the_run(store: AgentStore) -> None:
    thread = await store.create_thread(actor_ref="alice")
    await store.record_run_start(run_record("run-1", thread))
    end = RunEnd(run_id="run-1", step_count=2, input_tokens=20, output_tokens=10, cost_usd=0.5, thread_title="Sums")
    await store.record_model_step(model_step(thread, "m-1", run_end=end))
    run = await store.get_run("run-1")
    assert run is not None and utc(run.finished_at)
    assert (run.status, run.step_count, run.input_tokens, run.output_tokens, run.cost_usd) == (
        "completed",
        2,
        20,
        10,
        0.5,
    )
    got = await store.get_thread(thread.id)
    assert got is not None and got.title == "Sums" and got.updated_at > thread.updated_at

    await store.record_run_start(run_record("run-2", thread))
    await store.record_model_step(model_step(thread, "m-2"))  # an older writer: the message, then the end alone
    await store.record_model_step(model_step(thread, "m-2", run_end=RunEnd(run_id="run-2", step_count=1)))
    run = await store.get_run("run-2")
    assert run is not None and (run.status, run.step_count) == ("completed", 1)

    await store.record_run_start(run_record("run-3", thread))
    await store.soft_delete_thread(thread.id)
    with pytest.raises(NotFoundError):  # nothing of the step is written, the run's end neither
        await store.record_model_step(model_step(thread, "m-3", run_end=RunEnd(run_id="run-3")))
    run = await store.get_run("run-3")
    assert run is not None and run.status == "running"


async def test_record_tool_result_writes_the_result_then_reserves(store: AgentStore) -> None:
    thread = await store.create_thread(actor_ref="alice")
    quota = MemoryQuotaStore(Budget(tokens_per_actor=100, reserve_tokens=100))
    ask = QuotaReserve(quota=quota, actor=Actor("alice"), day="2024-05-01", reservation_id="run-1:1", tokens=100, usd=0)
    await store.record_tool_call(tool_call("run-1", "c1", thread))
    held = await store.record_tool_result("run-1", "c1", ToolCallPatch(status="executed", output=3), reserve=ask)
    assert held is not None and held.id == "run-1:1"
    row = await store.get_tool_call("run-1", "c1")
    assert row is not None and (row.status, row.output) == ("executed", 3) and utc(row.executed_at)
    assert (await quota.usage(Actor("alice"), "2024-05-01")).reserved_tokens == 100

    await store.record_tool_call(tool_call("run-1", "c2", thread))
    again = dataclasses.replace(ask, reservation_id="run-1:2")
    with pytest.raises(QuotaExceededError):  # refused: the result is written all the same
        await store.record_tool_result("run-1", "c2", ToolCallPatch(status="failed", error="boom"), reserve=again)
    row = await store.get_tool_call("run-1", "c2")
    assert row is not None and (row.status, row.error) == ("failed", "boom")

    with pytest.raises(NotFoundError):  # an unknown call: nothing reserved
        await store.record_tool_result("run-1", "nope", ToolCallPatch(status="executed"), reserve=again)
    assert (await quota.usage(Actor("alice"), "2024-05-01")).reserved_tokens == 100
    assert await store.record_tool_result("run-1", "c1", ToolCallPatch(status="executed", output=4)) is None


async def test_append_message_with_an_id_is_written_once(store: AgentStore) -> None:
    """A durable step re-run after a crash (its write committed, its checkpoint lost) adds no second copy."""
    thread = await store.create_thread(actor_ref="alice")
    first = await store.append_message(thread_id=thread.id, role="user", content="hi", run_id="run-1", message_id="u-1")
    again = await store.append_message(thread_id=thread.id, role="user", content="hi", run_id="run-1", message_id="u-1")
    assert (first.id, again.id, again.content, again.run_id) == ("u-1", "u-1", "hi", "run-1")
    assert [(m.id, m.role) for m in await store.list_messages(thread.id)] == [("u-1", "user")]
    other = await store.append_message(thread_id=thread.id, role="user", content="hi")
    assert other.id != "u-1" and len(await store.list_messages(thread.id)) == 2


async def test_record_model_step_on_unknown_thread_raises_and_writes_nothing(store: AgentStore) -> None:
    thread = await store.create_thread(actor_ref="alice")
    ghost = ThreadRecord(id="no-such-thread", actor_ref="alice", created_at=T0, updated_at=T0)
    with pytest.raises(NotFoundError):
        await store.record_model_step(model_step(ghost, "m-2"))
    assert await store.usage_tokens("alice", T0 - timedelta(days=1), T0 + timedelta(days=1)) == 0
    assert await store.list_messages(thread.id) == []


async def test_load_thread_is_the_thread_its_messages_and_tool_calls(store: AgentStore) -> None:
    thread = await store.create_thread(actor_ref="alice")
    user = await store.append_message(thread_id=thread.id, role="user", content="q", run_id="run-1")
    await store.record_tool_call(tool_call("run-1", "c1", thread, user.id))
    loaded = await store.load_thread(thread.id)
    assert loaded.thread is not None and loaded.thread.id == thread.id
    assert [m.id for m in loaded.messages] == [user.id]
    assert [(c.run_id, c.id) for c in loaded.tool_calls] == [("run-1", "c1")]
    missing = await store.load_thread("no-such-thread")
    assert (missing.thread, missing.messages, missing.tool_calls) == (None, [], [])


async def test_record_tool_call_with_its_approval_is_all_or_nothing(store: AgentStore) -> None:
    thread = await store.create_thread(actor_ref="alice")
    await store.record_tool_call(
        tool_call("run-1", "c1", thread, status="pending_approval"), approval("run-1", "c1", thread)
    )
    got = await store.get_approval("run-1", "c1")
    assert got is not None and got.status == "pending"
    await store.create_approval(approval("run-1", "c2", thread))
    with pytest.raises(ConflictError):  # the approval exists: the tool-call row is not written either
        await store.record_tool_call(tool_call("run-1", "c2", thread), approval("run-1", "c2", thread))
    assert await store.get_tool_call("run-1", "c2") is None


async def test_run_start_with_active_stream_and_run_end_with_title(store: AgentStore) -> None:
    thread = await store.create_thread(actor_ref="alice")
    await store.record_run_start(run_record("run-1", thread), active_stream=True)
    got = await store.get_thread(thread.id)
    assert got is not None and got.active_stream_id == "run-1"
    assert await store.record_run_end("run-1", status="completed", thread_title="Refund for order 7")
    got = await store.get_thread(thread.id)
    assert got is not None and got.title == "Refund for order 7"
    run = await store.get_run("run-1")
    assert run is not None and run.status == "completed"


async def test_load_thread_after_a_message_is_the_tail_and_its_tool_calls(store: AgentStore) -> None:
    thread = await store.create_thread(actor_ref="alice")
    first = await store.append_message(thread_id=thread.id, role="user", content="q1", run_id="run-1")
    call = ToolCall(id="c1", name="lookup", input={})
    asked = await store.append_message(
        thread_id=thread.id, role="assistant", content="", run_id="run-1", tool_calls=[call]
    )
    await store.record_tool_call(tool_call("run-1", "c1", thread, asked.id))
    tail = await store.load_thread(thread.id, after=first.id)
    assert not tail.complete and [m.id for m in tail.messages] == [asked.id]
    assert [(c.run_id, c.id) for c in tail.tool_calls] == [("run-1", "c1")]
    nothing = await store.load_thread(thread.id, after=asked.id)
    assert not nothing.complete and nothing.messages == [] and nothing.tool_calls == []
    await store.truncate_from(thread.id, asked.id)
    gone = await store.load_thread(thread.id, after=asked.id)  # the message is gone: everything again
    assert gone.complete and [m.id for m in gone.messages] == [first.id]
