"""The store protocol: everything a run persists, and the records it reads back.

The records and the read half of the protocol (`RecordReader`) live in agora_agent/records.py, below
governance (whose read models read a store through it); `AgentStore` adds the writes. A model step's
write settles its budget reservation in the same transaction, so this half sits above governance's quota.
The record names are re-exported here, where they have always been importable.

Implementations: `MemoryAgentStore` (stores/memory.py) and `SqlAgentStore` (stores/sql/). Both pass
the contract suite in tests/contract/ — that suite, not this docstring, is the final word.

Contract highlights (every implementation must honour them):
- Timestamps are timezone-aware UTC `datetime`s.
- `record_run_end` is first-terminal-wins: it changes a run only while its status is `running`
  and returns whether it did.
- Tool calls are keyed by (run_id, tool_call_id); the model supplies tool_call_id.
- `decide_approval` is a compare-and-set: it decides only a `pending` approval and returns
  `(record, changed)`; a second decision gets the standing record back with `changed=False`.
- `soft_delete_thread` hides a thread from `get_thread`/`list_threads`/`thread_owner`; the SQL store
  keeps the row (governance thread detail shows `deleted`), the memory store may drop it.
- `fork_thread` and `truncate_from` are atomic.
- Tool results (output/error) are stored on the tool-call row and replayed in history.
- One write transaction per logical step of a run (so a durable step and a store transaction coincide):
  `record_run_start(..., active_stream=True)`, `append_and_load` (the user message, then the history; a store
  that can also take the first model call's reservation in that transaction offers
  `append_load_and_reserve(message, reserve, *, after=None) -> (history, reservation | None)`, which the loop
  uses when present — the SQL stores do),
  `record_model_step` (quota settle + assistant message +
  usage row + daily rollup + the first tool call's audit row), `record_tool_call(record, approval)`,
  `update_tool_call`, `record_tool_result` (a tool call's result + the next model call's budget
  reservation), `record_run_end(..., thread_title=)`. `load_thread` reads a thread's history in one go.
- `open_run` is a chat's whole start as ONE write transaction: the new thread (or a check that the given
  one is live), the run row with its daily rollup, the thread's active stream and the run-owner lease row;
  it writes exactly the rows `create_thread` + `record_run_start` (+ the lease store's `claim_run`) wrote.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any, Literal, Protocol, TypeVar, runtime_checkable

from agora_agent._frozen import fast_init
from agora_agent.actors import Actor
from agora_agent.errors import ConflictError
from agora_agent.governance.quota import QuotaStore, Reservation
from agora_agent.messages import Attachment, ToolCall
from agora_agent.records import (
    UNSET,
    ApprovalRecord,
    ApprovalStatus,
    MessageRecord,
    RecordReader,
    RunRecord,
    RunStatus,
    ThreadHistory,
    ThreadRecord,
    ThreadSummary,
    ToolCallPatch,
    ToolCallRecord,
    ToolCallStatus,
    UsageRecord,
)

_T = TypeVar("_T")

__all__ = [
    "UNSET",
    "AgentStore",
    "ApprovalRecord",
    "ApprovalStatus",
    "MessageRecord",
    "ModelStep",
    "NewMessage",
    "NewThread",
    "QuotaReserve",
    "QuotaSettlement",
    "RecordReader",
    "RunEnd",
    "RunOpened",
    "RunRecord",
    "RunStatus",
    "ThreadHistory",
    "ThreadRecord",
    "ThreadSummary",
    "ToolCallPatch",
    "ToolCallRecord",
    "ToolCallStatus",
    "UsageRecord",
    "record_tool_call_once",
]


@fast_init
@dataclass(frozen=True, kw_only=True, slots=True)
class QuotaSettlement:
    """The budget reservation a model step settles: replaced by the real `tokens`/`usd` (settle once)."""

    quota: QuotaStore
    reservation: Reservation
    tokens: int
    usd: float


@fast_init
@dataclass(frozen=True, kw_only=True, slots=True)
class QuotaReserve:
    """A budget reservation to take (`QuotaStore.reserve`'s arguments), handed to `record_tool_result` so the
    store can take it in the transaction of the write before it."""

    quota: QuotaStore
    actor: Actor
    day: str
    reservation_id: str
    tokens: int
    usd: float
    run_id: str | None = None

    def take(self) -> Awaitable[Reservation]:
        """Reserve on its own (`quota.reserve`; its awaitable, no coroutine around it)."""
        return self.call(self.quota.reserve)

    def call(self, fn: Callable[..., _T], **extra: Any) -> _T:
        """`fn` called with `QuotaStore.reserve`'s arguments (and `extra`): a store's own way to reserve them."""
        if extra:  # bound ahead: a call with `**{}` would merge the keywords into a new dict for nothing
            fn = partial(fn, **extra)
        return fn(
            self.actor,
            self.day,
            reservation_id=self.reservation_id,
            tokens=self.tokens,
            usd=self.usd,
            run_id=self.run_id,
        )


@fast_init
@dataclass(frozen=True, kw_only=True, slots=True)
class NewMessage:
    """`append_message`'s arguments (a run's user message), for `append_and_load`."""

    thread_id: str
    role: Literal["user", "assistant"]
    content: str
    run_id: str | None = None
    persona: str | None = None
    attachments: Sequence[Attachment] | None = None
    message_id: str | None = None

    async def append(self, store: AgentStore) -> MessageRecord:
        """`store.append_message` with these arguments."""
        return await store.append_message(
            thread_id=self.thread_id,
            role=self.role,
            content=self.content,
            run_id=self.run_id,
            persona=self.persona,
            attachments=self.attachments,
            message_id=self.message_id,
        )


@fast_init
@dataclass(frozen=True, kw_only=True, slots=True)
class RunEnd:
    """`record_run_end`'s arguments, for a run that ends with the model step that carries them."""

    run_id: str
    status: Literal["completed", "failed", "cancelled"] = "completed"
    step_count: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    thread_title: str | None = None

    async def record(self, store: AgentStore) -> bool:
        """`store.record_run_end` with these arguments."""
        return await store.record_run_end(
            self.run_id,
            status=self.status,
            step_count=self.step_count,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cost_usd=self.cost_usd,
            thread_title=self.thread_title,
        )


@fast_init
@dataclass(frozen=True, kw_only=True, slots=True)
class ModelStep:
    """Everything one model step persists, written by `record_model_step` as one transaction.

    `message_id` is the caller's (the loop derives it from the run and the step index), so writing the same
    step twice — a replayed durable step, a retry after an ambiguous commit — stores it once.
    `ledger` is the usage row (its `message_id` must be `message_id`); `usage` the message's usage JSON.
    `tool_call` is the audit row of the step's first tool call (with `approval` for an action parked for
    approval), written in the same transaction as `record_tool_call_once` would: a row of this very call
    already stored stands (the step replayed), a different call under its id is a `ConflictError` raised
    after the rest of the step was written. `run_end`: the run ends with this step (its last, without tool
    calls): `record_run_end` in the same transaction — or after it, when the step replays.
    """

    message_id: str
    thread_id: str
    run_id: str
    content: str
    persona: str | None = None
    tool_calls: Sequence[ToolCall] | None = None
    usage: dict[str, Any] | None = None
    ledger: UsageRecord | None = None
    settlement: QuotaSettlement | None = None
    tool_call: ToolCallRecord | None = None
    approval: ApprovalRecord | None = None
    run_end: RunEnd | None = None


def same_call(stored: ToolCallRecord, record: ToolCallRecord) -> bool:
    """Whether `stored` is the row of this very call: same run, id, assistant message, tool and input."""
    return (stored.run_id, stored.id, stored.message_id, stored.tool_name, stored.input) == (
        record.run_id,
        record.id,
        record.message_id,
        record.tool_name,
        record.input,
    )


async def record_tool_call_once(
    store: AgentStore, record: ToolCallRecord, approval: ApprovalRecord | None = None
) -> None:
    """Insert the audit row (and its approval). A row of this very call already stored means an earlier attempt
    of this write committed and only its outcome was lost (a durable step re-run after a crash, a unit retried
    after a dropped connection): nothing is written twice (an approval decided meanwhile stands). Another call
    under the same id is a real conflict: `ConflictError`."""
    try:
        await store.record_tool_call(record, approval)
    except ConflictError:
        stored = await store.get_tool_call(record.run_id, record.id)
        if stored is None or not same_call(stored, record):
            raise


@dataclass(frozen=True, kw_only=True, slots=True)
class NewThread:
    """The thread `open_run` creates for its run: what `create_thread` takes (`thread_id`: a chosen id,
    a ConflictError when it exists; None: the store picks one as `create_thread` does)."""

    actor_ref: str
    tenant_ref: str | None = None
    persona: str = "default"
    transient: bool = False
    title: str = "New chat"
    thread_id: str | None = None


@dataclass(frozen=True, slots=True)
class RunOpened:
    """What `open_run` stored: the run row, and the thread it created (None: the run went onto an existing one)."""

    run: RunRecord
    thread: ThreadRecord | None = None


@runtime_checkable
class AgentStore(RecordReader, Protocol):
    """Threads, messages, tool calls, approvals, the usage ledger and runs: `RecordReader` plus the writes.

    See the module docstring for the contract."""

    # threads
    async def create_thread(
        self,
        *,
        actor_ref: str,
        tenant_ref: str | None = None,
        persona: str = "default",
        transient: bool = False,
        title: str = "New chat",
        thread_id: str | None = None,
    ) -> ThreadRecord: ...

    async def soft_delete_thread(self, thread_id: str) -> bool: ...

    async def fork_thread(self, thread_id: str, from_message_id: str) -> ThreadRecord: ...

    async def truncate_from(self, thread_id: str, message_id: str) -> None: ...

    async def set_title(self, thread_id: str, title: str) -> None: ...

    async def set_active_stream(self, thread_id: str, run_id: str | None) -> None: ...

    # messages
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
        """Append a message (a new id, or `message_id`: then written once — a message already stored under
        that id is returned unchanged, so a replayed durable step never adds a second copy)."""
        ...

    async def append_and_load(self, message: NewMessage, *, after: str | None = None) -> ThreadHistory:
        """`append_message(message)` then `load_thread(message.thread_id, after=after)` — the history with the
        message — in one transaction (on PostgreSQL one statement). An unknown or deleted thread raises
        `NotFoundError`, as `append_message` does."""
        ...

    async def record_model_step(self, step: ModelStep) -> MessageRecord: ...

    # tool calls
    async def record_tool_call(self, record: ToolCallRecord, approval: ApprovalRecord | None = None) -> None: ...

    async def update_tool_call(self, run_id: str, tool_call_id: str, patch: ToolCallPatch) -> None: ...

    async def record_tool_result(
        self, run_id: str, tool_call_id: str, patch: ToolCallPatch, *, reserve: QuotaReserve | None = None
    ) -> Reservation | None:
        """`update_tool_call`, then `reserve.take()` (None without `reserve`) — in one transaction where the
        quota shares the store's database. The result is written whatever the reservation's outcome: a refused
        reservation (`QuotaExceededError`) leaves the result committed; an unknown tool call (`NotFoundError`)
        reserves nothing."""
        ...

    # approvals
    async def create_approval(self, record: ApprovalRecord) -> None: ...

    async def decide_approval(
        self,
        run_id: str,
        tool_call_id: str,
        *,
        status: Literal["approved", "rejected", "expired"],
        decided_by: str | None,
        reason: str | None = None,
    ) -> tuple[ApprovalRecord, bool]: ...

    # usage ledger
    async def record_usage(self, record: UsageRecord) -> None: ...

    # runs
    async def record_run_start(self, record: RunRecord, *, active_stream: bool = False) -> None: ...

    async def open_run(
        self,
        record: RunRecord,
        *,
        new_thread: NewThread | None = None,
        owner_id: str | None = None,
        active_stream: bool = False,
    ) -> RunOpened:
        """A run's start as ONE write transaction: with `new_thread`, that thread is created and the run goes
        onto it (`record.thread_id` is replaced by its id); without, `record.thread_id` must be a live thread
        (NotFoundError when unknown or deleted, nothing written). Then the run row and its daily rollup, with
        `active_stream` the thread's active stream, and with `owner_id` the run-owner lease row (the SQL
        stores; a memory store keeps no leases: its runs die with the process). ConflictError: the chosen
        thread id or the run id exists (nothing written)."""
        ...

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
        finished_at: datetime | None = None,  # default now
        thread_title: str | None = None,  # also rename the run's thread, in the same transaction
    ) -> bool: ...
