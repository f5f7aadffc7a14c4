"""`MemoryAgentStore`: the in-process `AgentStore` (the default when no store is configured).

Behavioural twin of the SQL store — both pass tests/contract/test_store_contract.py. Every method runs
without awaiting anything, so each call is atomic under asyncio (compare-and-set, first-terminal-wins,
fork and truncate need no lock). Nothing survives the process.

Differences a caller may notice: none by design. Soft-deleted threads are kept with `deleted_at` set (like
SQL) so the governance thread detail can show `deleted=True`. Timestamps issued by the store strictly
increase, so "newest first" orderings never tie.

The `all_*()` helpers feed `MemoryGovernanceQueries`; they return the stored records themselves (no copies),
which callers must treat as read-only.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, TypeVar

from agora_agent._frozen import constructor
from agora_agent._ids import new_id
from agora_agent.errors import ConflictError, NotFoundError
from agora_agent.governance.quota import MemoryQuotaStore, Reservation
from agora_agent.messages import Attachment, ToolCall
from agora_agent.records import (
    UNSET,
    ApprovalRecord,
    MessageRecord,
    RunRecord,
    RunStatus,
    ThreadHistory,
    ThreadRecord,
    ThreadSummary,
    ToolCallPatch,
    ToolCallRecord,
    UsageRecord,
)
from agora_agent.stores.base import ModelStep, NewMessage, NewThread, QuotaReserve, RunOpened, same_call

__all__ = ["MemoryAgentStore"]

_PREVIEW_CHARS = 120
_ONE_MICROSECOND = timedelta(microseconds=1)

ToolCallKey = tuple[str, str]  # (run_id, tool_call_id)
_R = TypeVar("_R")


# a message per step, a thread per new chat: made without the class call (`_frozen.constructor`)
_message_record = constructor(MessageRecord)
_thread_record = constructor(ThreadRecord)


def _clone(record: _R) -> _R:
    """A shallow copy of a record dataclass: 6x faster than `copy.copy` (which goes through __reduce_ex__), and
    a copied `__dict__` (one allocation) is half the cost of updating the new instance's empty one."""
    clone: _R = object.__new__(type(record))
    clone.__dict__ = record.__dict__.copy()
    return clone


class MemoryAgentStore:
    """Threads, messages, tool calls, approvals, usage and runs in dicts. See `AgentStore` for the contract."""

    def __init__(self) -> None:
        self._threads: dict[str, ThreadRecord] = {}
        self._messages: dict[str, list[MessageRecord]] = {}  # thread id -> messages in creation order
        self._message_ids: set[str] = set()  # every stored message id (a replayed model step is a no-op)
        self._tool_calls: dict[ToolCallKey, ToolCallRecord] = {}
        self._tool_call_seq: dict[ToolCallKey, int] = {}  # insertion order breaks created_at ties
        # Per-thread / per-run key lists keep history loads O(thread) instead of O(store).
        self._tool_calls_by_thread: dict[str, list[ToolCallKey]] = {}
        self._tool_calls_by_run: dict[str, list[ToolCallKey]] = {}
        self._approvals: dict[ToolCallKey, ApprovalRecord] = {}
        self._usage: list[UsageRecord] = []
        self._runs: dict[str, RunRecord] = {}
        self._last_now = datetime.min.replace(tzinfo=UTC)
        self._seq = 0

    def _now(self) -> datetime:
        now = datetime.now(UTC)
        if now <= self._last_now:
            now = self._last_now + _ONE_MICROSECOND
        self._last_now = now
        return now

    def _live_thread(self, thread_id: str) -> ThreadRecord | None:
        thread = self._threads.get(thread_id)
        return thread if thread is not None and thread.deleted_at is None else None

    # -- threads --

    async def create_thread(
        self,
        *,
        actor_ref: str,
        tenant_ref: str | None = None,
        persona: str = "default",
        transient: bool = False,
        title: str = "New chat",
        thread_id: str | None = None,
    ) -> ThreadRecord:
        """Create a thread owned by `actor_ref`; a chosen `thread_id` that exists -> ConflictError."""
        spec = NewThread(
            actor_ref=actor_ref,
            tenant_ref=tenant_ref,
            persona=persona,
            transient=transient,
            title=title,
            thread_id=thread_id,
        )
        return _clone(self._add_thread(spec))

    def _add_thread(self, spec: NewThread, active_stream_id: str | None = None) -> ThreadRecord:
        if spec.thread_id is not None and spec.thread_id in self._threads:
            raise ConflictError(f"thread {spec.thread_id} already exists")
        now = self._now()
        thread = _thread_record(
            id=spec.thread_id or new_id(),
            actor_ref=spec.actor_ref,
            tenant_ref=spec.tenant_ref,
            title=spec.title,
            persona=spec.persona,
            transient=spec.transient,
            active_stream_id=active_stream_id,
            created_at=now,
            updated_at=now,
        )
        self._threads[thread.id] = thread
        self._messages[thread.id] = []
        return thread

    async def get_thread(self, thread_id: str) -> ThreadRecord | None:
        """The thread, or None when unknown or soft-deleted."""
        thread = self._live_thread(thread_id)
        return _clone(thread) if thread is not None else None

    async def list_threads(self, actor_ref: str, *, limit: int = 50) -> list[ThreadSummary]:
        """The actor's live, non-transient threads, most recently updated first."""
        threads = [
            t for t in self._threads.values() if t.actor_ref == actor_ref and not t.transient and t.deleted_at is None
        ]
        threads.sort(key=lambda t: t.updated_at, reverse=True)
        return [self._summary(t) for t in threads[: max(limit, 0)]]

    def _summary(self, thread: ThreadRecord) -> ThreadSummary:
        messages = self._messages.get(thread.id) or []
        preview = messages[-1].content[:_PREVIEW_CHARS] if messages else None
        return ThreadSummary(thread=_clone(thread), last_message_preview=preview)

    async def thread_owner(self, thread_id: str) -> str | None:
        """The owner's actor ref; None for unknown or soft-deleted threads."""
        thread = self._live_thread(thread_id)
        return thread.actor_ref if thread is not None else None

    async def soft_delete_thread(self, thread_id: str) -> bool:
        """Hide the thread (row kept with `deleted_at`); False when unknown or already deleted."""
        thread = self._live_thread(thread_id)
        if thread is None:
            return False
        thread.deleted_at = self._now()
        return True

    async def fork_thread(self, thread_id: str, from_message_id: str) -> ThreadRecord:
        """Copy the thread up to and including `from_message_id` (all of it when unknown) (STORE-F1).

        Raises NotFoundError when the source thread is unknown or deleted.
        """
        source = self._live_thread(thread_id)
        if source is None:
            raise NotFoundError(f"thread {thread_id} not found")
        messages = self._messages.get(thread_id) or []
        cut = next((i for i, m in enumerate(messages) if m.id == from_message_id), len(messages) - 1)
        now = self._now()
        fork = ThreadRecord(
            id=new_id(),
            actor_ref=source.actor_ref,
            tenant_ref=source.tenant_ref,
            title=source.title,
            persona=source.persona,
            transient=False,
            created_at=now,
            updated_at=now,
        )
        copies = []
        for m in messages[: cut + 1]:
            clone = copy.deepcopy(m)
            clone.id = new_id()
            clone.thread_id = fork.id
            clone.run_id = None
            copies.append(clone)
            self._message_ids.add(clone.id)
        self._threads[fork.id] = fork
        self._messages[fork.id] = copies
        return _clone(fork)

    async def truncate_from(self, thread_id: str, message_id: str) -> None:
        """Delete `message_id` and every later message of the thread, with their tool calls (STORE-F2).

        An unknown thread or message id is a no-op.
        """
        messages = self._messages.get(thread_id)
        if not messages:
            return
        cut = next((i for i, m in enumerate(messages) if m.id == message_id), None)
        if cut is None:
            return
        removed = {m.id for m in messages[cut:]}
        del messages[cut:]
        self._message_ids -= removed
        for key in [k for k, tc in self._tool_calls.items() if tc.message_id in removed]:
            record = self._tool_calls.pop(key)
            del self._tool_call_seq[key]
            self._tool_calls_by_thread[record.thread_id].remove(key)
            self._tool_calls_by_run[record.run_id].remove(key)

    async def set_title(self, thread_id: str, title: str) -> None:
        """Rename the thread; unknown ids are ignored."""
        thread = self._threads.get(thread_id)
        if thread is not None:
            thread.title = title

    async def set_active_stream(self, thread_id: str, run_id: str | None) -> None:
        """Record (or clear with None) the run streaming into the thread; unknown ids are ignored."""
        thread = self._threads.get(thread_id)
        if thread is not None:
            thread.active_stream_id = run_id

    # -- messages --

    async def append_message(
        self,
        *,
        thread_id: str,
        role: Literal["user", "assistant"],
        content: str,
        run_id: str | None = None,
        persona: str | None = None,
        tool_calls: Sequence[ToolCall] | None = None,
        attachments: Sequence[Attachment] | None = None,
        usage: dict[str, Any] | None = None,
        message_id: str | None = None,
    ) -> MessageRecord:
        """Append a message and bump the thread's `updated_at`; with `message_id`, at most once.

        Raises NotFoundError when the thread is unknown or deleted.
        """
        if message_id is not None and message_id in self._message_ids:
            return next(_clone(m) for m in self._messages[thread_id] if m.id == message_id)
        thread = self._live_thread(thread_id)
        if thread is None:
            raise NotFoundError(f"thread {thread_id} not found")
        message = self._append(
            thread, message_id or new_id(), role, content, run_id, persona, tool_calls, attachments, usage
        )
        return _clone(message)

    def _append(
        self,
        thread: ThreadRecord,
        message_id: str,
        role: Literal["user", "assistant"],
        content: str,
        run_id: str | None,
        persona: str | None,
        tool_calls: Sequence[ToolCall] | None,
        attachments: Sequence[Attachment] | None,
        usage: dict[str, Any] | None,
        /,
    ) -> MessageRecord:
        """Append a message to `thread` (live: the caller looked it up) and bump its `updated_at`; returns the stored
        record itself (the caller clones what it hands out). Positional: a model step calls it once a step."""
        thread_id = thread.id
        now = self._now()
        message = _message_record(
            id=message_id,
            thread_id=thread_id,
            role=role,
            content=content,
            tool_calls=list(tool_calls) if tool_calls is not None else None,
            attachments=list(attachments) if attachments is not None else None,
            usage=dict(usage) if usage is not None else None,
            persona=persona,
            run_id=run_id,
            created_at=now,
        )
        self._messages[thread_id].append(message)
        self._message_ids.add(message_id)
        thread.updated_at = now
        return message

    async def append_and_load(self, message: NewMessage, *, after: str | None = None) -> ThreadHistory:
        """`append_message`, then `load_thread` (no await in between)."""
        await message.append(self)
        return await self.load_thread(message.thread_id, after=after)

    async def record_model_step(self, step: ModelStep) -> MessageRecord:
        """Settle the step's reservation, append the assistant message, its usage row and its first tool call's
        audit row (no await between the last three); a step whose `message_id` is stored already changes
        nothing but a missing audit row and returns that message."""
        if step.message_id in self._message_ids:
            self._tool_call_once(step)
            if step.run_end is not None:
                await step.run_end.record(self)
            return next(_clone(m) for m in self._messages[step.thread_id] if m.id == step.message_id)
        thread = self._live_thread(step.thread_id)
        if thread is None:
            raise NotFoundError(f"thread {step.thread_id} not found")
        settlement = step.settlement
        if settlement is not None:
            # once per step (its message is new): a memory quota charges a reservation released meanwhile too
            quota = settlement.quota
            if isinstance(quota, MemoryQuotaStore):
                quota.settle_step_now(settlement.reservation, settlement.tokens, settlement.usd)
            else:
                await quota.settle(settlement.reservation, tokens=settlement.tokens, usd=settlement.usd)
        message_id, run_id, calls, usage = step.message_id, step.run_id, step.tool_calls, step.usage
        message = self._append(thread, message_id, "assistant", step.content, run_id, step.persona, calls, None, usage)
        if step.ledger is not None:
            self._usage.append(_clone(step.ledger))
        self._tool_call_once(step)
        if step.run_end is not None:
            await step.run_end.record(self)
        return _clone(message)

    def _tool_call_once(self, step: ModelStep) -> None:
        """The step's tool call row, unless this very call is stored (`record_tool_call_once`, without an await)."""
        record = step.tool_call
        if record is None:
            return
        stored = self._tool_calls.get((record.run_id, record.id))
        if stored is None:
            self._insert_tool_call(record, step.approval)
        elif not same_call(stored, record):
            raise ConflictError(f"tool call {record.id} of run {record.run_id} is already recorded")

    async def list_messages(self, thread_id: str, *, run_id: str | None = None) -> list[MessageRecord]:
        """The thread's messages, oldest first ([] for an unknown thread); with `run_id`, only that run's."""
        messages = self._messages.get(thread_id) or []
        if run_id is None:
            return [_clone(m) for m in messages]
        return [_clone(m) for m in messages if m.run_id == run_id]

    async def load_thread(self, thread_id: str, *, after: str | None = None) -> ThreadHistory:
        """The thread (None when unknown or deleted), its messages and its tool calls, in one call.

        With `after` (a message id of the thread): only the messages after it and their tool calls
        (`complete=False`); when that message is gone (truncated), everything.
        """
        live = self._live_thread(thread_id)
        thread = _clone(live) if live is not None else None
        messages = self._messages.get(thread_id) or []
        start = None
        if after is not None:
            for i in range(len(messages) - 1, -1, -1):  # the kept message is near the end
                if messages[i].id == after:
                    start = i + 1
                    break
        if start is None:
            return ThreadHistory(
                thread=thread,
                messages=[_clone(m) for m in messages],
                tool_calls=await self.list_tool_calls(thread_id=thread_id),
            )
        tail = messages[start:]
        calls = []
        for m in tail:
            for call in m.tool_calls or ():
                record = self._tool_calls.get((m.run_id or "", call.id))
                if record is not None:
                    calls.append(_clone(record))
        return ThreadHistory(thread=thread, messages=[_clone(m) for m in tail], tool_calls=calls, complete=False)

    # -- tool calls --

    async def record_tool_call(self, record: ToolCallRecord, approval: ApprovalRecord | None = None) -> None:
        """Insert an audit row keyed by (run_id, id), and the approval of a parked action with it.

        Raises ConflictError when that key (or the approval's) exists; then nothing is written.
        """
        if (record.run_id, record.id) in self._tool_calls:
            raise ConflictError(f"tool call {record.id} of run {record.run_id} is already recorded")
        self._insert_tool_call(record, approval)

    def _insert_tool_call(self, record: ToolCallRecord, approval: ApprovalRecord | None) -> None:
        key = (record.run_id, record.id)
        if approval is not None:
            self._insert_approval(approval)
        self._seq += 1
        self._tool_calls[key] = _clone(record)
        self._tool_call_seq[key] = self._seq
        self._tool_calls_by_thread.setdefault(record.thread_id, []).append(key)
        self._tool_calls_by_run.setdefault(record.run_id, []).append(key)

    async def update_tool_call(self, run_id: str, tool_call_id: str, patch: ToolCallPatch) -> None:
        """Apply the set fields of `patch`; status executed|failed also stamps `executed_at`.

        Raises NotFoundError when the tool call is unknown.
        """
        self._update_tool_call(run_id, tool_call_id, patch)

    def _update_tool_call(self, run_id: str, tool_call_id: str, patch: ToolCallPatch) -> None:
        record = self._tool_calls.get((run_id, tool_call_id))
        if record is None:
            raise NotFoundError(f"tool call {tool_call_id} of run {run_id} not found")
        fields = record.__dict__
        for name, value in patch.__dict__.items():  # `patch.changes()`, without building the dict
            if value is not UNSET:
                fields[name] = value
        if patch.status in ("executed", "failed"):
            record.executed_at = self._now()

    async def record_tool_result(
        self, run_id: str, tool_call_id: str, patch: ToolCallPatch, *, reserve: QuotaReserve | None = None
    ) -> Reservation | None:
        """`update_tool_call`, then the next reservation (`reserve.take()`); an unknown call reserves nothing."""
        self._update_tool_call(run_id, tool_call_id, patch)
        if reserve is None:
            return None
        quota = reserve.quota
        if isinstance(quota, MemoryQuotaStore):  # limits cached (every step but a run's first): no await at all
            granted = reserve.call(quota.reserve_cached)
            if granted is not None:
                return granted
        return await reserve.take()

    async def get_tool_call(self, run_id: str, tool_call_id: str) -> ToolCallRecord | None:
        """The tool call, or None."""
        record = self._tool_calls.get((run_id, tool_call_id))
        return _clone(record) if record is not None else None

    async def list_tool_calls(self, *, thread_id: str | None = None, run_id: str | None = None) -> list[ToolCallRecord]:
        """Tool calls matching every given filter, in creation order (created_at, then insertion)."""
        if run_id is not None:
            candidates = self._tool_calls_by_run.get(run_id, [])
        elif thread_id is not None:
            candidates = self._tool_calls_by_thread.get(thread_id, [])
        else:
            candidates = list(self._tool_calls)
        keys = [
            k
            for k in candidates
            if (thread_id is None or self._tool_calls[k].thread_id == thread_id)
            and (run_id is None or self._tool_calls[k].run_id == run_id)
        ]
        keys.sort(key=lambda k: (self._tool_calls[k].created_at, self._tool_call_seq[k]))
        return [_clone(self._tool_calls[k]) for k in keys]

    # -- approvals --

    async def create_approval(self, record: ApprovalRecord) -> None:
        """Insert a pending approval. Raises ConflictError when one exists for this tool call."""
        self._insert_approval(record)

    def _insert_approval(self, record: ApprovalRecord) -> None:
        key = (record.run_id, record.tool_call_id)
        if key in self._approvals:
            raise ConflictError(f"an approval for tool call {record.tool_call_id} of run {record.run_id} exists")
        self._approvals[key] = _clone(record)

    async def get_approval(self, run_id: str, tool_call_id: str) -> ApprovalRecord | None:
        """The approval, or None."""
        record = self._approvals.get((run_id, tool_call_id))
        return _clone(record) if record is not None else None

    async def decide_approval(
        self,
        run_id: str,
        tool_call_id: str,
        *,
        status: Literal["approved", "rejected", "expired"],
        decided_by: str | None,
        reason: str | None = None,
    ) -> tuple[ApprovalRecord, bool]:
        """Compare-and-set on `pending`: returns (record, True) when this call decided it, else the standing
        record with False. Raises NotFoundError when there is no approval for the tool call."""
        record = self._approvals.get((run_id, tool_call_id))
        if record is None:
            raise NotFoundError(f"no approval for tool call {tool_call_id} of run {run_id}")
        if record.status != "pending":
            return _clone(record), False
        record.status = status
        record.decided_by = decided_by
        record.reason = reason
        record.decided_at = self._now()
        return _clone(record), True

    async def list_pending_approvals(self, *, actor_ref: str | None = None, limit: int = 50) -> list[ApprovalRecord]:
        """Pending approvals, oldest first, optionally only those requested by `actor_ref`."""
        pending = [
            a
            for a in self._approvals.values()
            if a.status == "pending" and (actor_ref is None or a.requested_by == actor_ref)
        ]
        pending.sort(key=lambda a: a.created_at)
        return [_clone(a) for a in pending[: max(limit, 0)]]

    # -- usage ledger --

    async def record_usage(self, record: UsageRecord) -> None:
        """Append a ledger row (its `cost_usd` as priced when recorded, or provider-reported)."""
        self._usage.append(_clone(record))

    async def usage_tokens(self, actor_ref: str, start: datetime, end: datetime) -> int:
        """Input + output tokens of the actor's rows with start <= created_at <= end (cache tokens excluded)."""
        return sum(
            u.input_tokens + u.output_tokens
            for u in self._usage
            if u.actor_ref == actor_ref and start <= u.created_at <= end
        )

    # -- runs --

    async def record_run_start(self, record: RunRecord, *, active_stream: bool = False) -> None:
        """Insert the run row as given (status `running`, zero counters by default); with
        `active_stream`, also make it the thread's active stream.

        Raises ConflictError when the run id exists.
        """
        if record.id in self._runs:
            raise ConflictError(f"run {record.id} is already recorded")
        self._runs[record.id] = _clone(record)
        thread = self._threads.get(record.thread_id)
        if active_stream and thread is not None:
            thread.active_stream_id = record.id

    async def open_run(
        self,
        record: RunRecord,
        *,
        new_thread: NewThread | None = None,
        owner_id: str | None = None,
        active_stream: bool = False,
    ) -> RunOpened:
        """`create_thread` (with `new_thread`) + `record_run_start`, checked before anything is stored: no await
        in between, so atomic under asyncio. No lease row: `owner_id` is not kept (see `AgentStore.open_run`)."""
        if record.id in self._runs:
            raise ConflictError(f"run {record.id} is already recorded")
        created: ThreadRecord | None = None
        if new_thread is not None:
            created = self._add_thread(new_thread, record.id if active_stream else None)
            record = _clone(record)  # the caller's record is left as it was
            record.thread_id = created.id
        else:
            thread = self._live_thread(record.thread_id)
            if thread is None:
                raise NotFoundError("thread not found")
            if active_stream:
                thread.active_stream_id = record.id
        self._runs[record.id] = _clone(record)
        return RunOpened(run=record, thread=None if created is None else _clone(created))

    async def record_run_end(
        self,
        run_id: str,
        *,
        status: Literal["completed", "failed", "cancelled"],
        error: str | None = None,
        step_count: int | None = None,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        cost_usd: float | None = None,
        finished_at: datetime | None = None,
        thread_title: str | None = None,
    ) -> bool:
        """Settle a `running` run (first terminal wins); False when unknown or already settled.

        `finished_at` defaults to now; None counters leave the stored values. `thread_title` renames the
        run's thread (whether or not the run was still running).
        """
        run = self._runs.get(run_id)
        if thread_title is not None and run is not None and run.thread_id in self._threads:
            self._threads[run.thread_id].title = thread_title
        if run is None or run.status != "running":
            return False
        run.status = status
        run.error = error
        run.finished_at = finished_at if finished_at is not None else self._now()
        if step_count is not None:
            run.step_count = step_count
        if input_tokens is not None:
            run.input_tokens = input_tokens
        if output_tokens is not None:
            run.output_tokens = output_tokens
        if cost_usd is not None:
            run.cost_usd = cost_usd
        return True

    async def get_run(self, run_id: str) -> RunRecord | None:
        """The run, or None."""
        run = self._runs.get(run_id)
        return _clone(run) if run is not None else None

    async def run_owner(self, run_id: str) -> str | None:
        """The run's actor ref (may differ from the thread owner), None when unknown."""
        run = self._runs.get(run_id)
        return run.actor_ref if run is not None else None

    async def list_runs_by_status(self, status: RunStatus, *, limit: int = 100) -> list[RunRecord]:
        """Runs in `status`, oldest started first (recovery scans `running`)."""
        runs = sorted((r for r in self._runs.values() if r.status == status), key=lambda r: r.started_at)
        return [_clone(r) for r in runs[: max(limit, 0)]]

    # -- read helpers for MemoryGovernanceQueries (stored records, read-only) --

    def all_threads(self) -> list[ThreadRecord]:
        """Every thread, soft-deleted ones included."""
        return list(self._threads.values())

    def all_messages(self) -> list[MessageRecord]:
        """Every message, grouped by thread, each thread's oldest first."""
        return [m for messages in self._messages.values() for m in messages]

    def all_tool_calls(self) -> list[ToolCallRecord]:
        """Every tool call in insertion order."""
        return list(self._tool_calls.values())

    def all_approvals(self) -> list[ApprovalRecord]:
        """Every approval, decided ones included."""
        return list(self._approvals.values())

    def all_usage(self) -> list[UsageRecord]:
        """The whole usage ledger in insertion order."""
        return list(self._usage)

    def all_runs(self) -> list[RunRecord]:
        """Every run."""
        return list(self._runs.values())
