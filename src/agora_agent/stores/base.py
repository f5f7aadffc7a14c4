"""The store protocol: everything a run persists, and the records it reads back.

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
  `record_run_start(..., active_stream=True)`, `record_model_step` (quota settle + assistant message +
  usage row + daily rollup), `record_tool_call(record, approval)`, `update_tool_call`,
  `record_run_end(..., thread_title=)`. `load_thread` reads a thread's history in one go.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, Protocol, runtime_checkable

from agora_agent.governance.quota import QuotaStore, Reservation
from agora_agent.messages import Attachment, ToolCall

__all__ = [
    "UNSET",
    "AgentStore",
    "ApprovalRecord",
    "ApprovalStatus",
    "MessageRecord",
    "ModelStep",
    "QuotaSettlement",
    "RunRecord",
    "RunStatus",
    "ThreadHistory",
    "ThreadRecord",
    "ThreadSummary",
    "ToolCallPatch",
    "ToolCallRecord",
    "ToolCallStatus",
    "UsageRecord",
]

RunStatus = Literal["running", "completed", "failed", "cancelled"]
ToolCallStatus = Literal[
    "started",  # read/agent call recorded, about to execute
    "pending_approval",  # action waiting for a human
    "executed",
    "rejected",
    "failed",
    "expired",  # approval deadline passed
    "unknown_after_crash",  # a `started` row found on recovery
]
ApprovalStatus = Literal["pending", "approved", "rejected", "expired"]


@dataclass(kw_only=True)
class ThreadRecord:
    id: str
    actor_ref: str
    tenant_ref: str | None = None
    title: str = "New chat"
    persona: str = "default"
    transient: bool = False
    created_at: datetime
    updated_at: datetime
    deleted_at: datetime | None = None
    pinned_at: datetime | None = None
    active_stream_id: str | None = None


@dataclass(kw_only=True)
class ThreadSummary:
    """A thread as listed: the record plus the preview of its last message (120 chars)."""

    thread: ThreadRecord
    last_message_preview: str | None = None


@dataclass(kw_only=True)
class MessageRecord:
    id: str
    thread_id: str
    role: Literal["user", "assistant"]
    content: str
    tool_calls: list[ToolCall] | None = None
    attachments: list[Attachment] | None = None
    usage: dict[str, Any] | None = None  # {input_tokens, output_tokens, cache_read_tokens?, cost_usd?, latency_ms?, …}
    persona: str | None = None
    run_id: str | None = None
    created_at: datetime


@dataclass(kw_only=True)
class ToolCallRecord:
    """A decision-grade audit row for one tool call."""

    id: str  # model-supplied tool call id (unique within the run)
    run_id: str
    thread_id: str
    message_id: str | None  # the assistant message that asked for it
    tool_name: str
    tool_type: str  # read | action | agent
    input: Any = None  # arguments after the redactor
    output: Any = None
    error: str | None = None
    status: ToolCallStatus = "started"
    actor_ref: str
    tenant_ref: str | None = None
    policy_decision: str | None = None  # e.g. "allowed", "forbidden: …", "not_found"
    idempotency_key: str | None = None
    executed_by_ref: str | None = None
    decided_by: str | None = None
    execution_ms: int | None = None
    created_at: datetime
    executed_at: datetime | None = None
    components: list[dict[str, Any]] | None = None  # [{id, name, data}] the call drew (kept only on success)


@dataclass(kw_only=True)
class ApprovalRecord:
    """A pending-or-decided approval, bound to the validated arguments' hash and the requester."""

    run_id: str
    tool_call_id: str
    thread_id: str
    tool_name: str
    args_hash: str
    requested_by: str  # actor id of the run
    approver_roles: tuple[str, ...] | None = None
    status: ApprovalStatus = "pending"
    reason: str | None = None
    decided_by: str | None = None
    decided_at: datetime | None = None
    deadline: datetime | None = None
    created_at: datetime

    def expired(self, now: datetime | None = None) -> bool:
        """Whether the approval's deadline (`approval_ttl`) has passed at `now` (default: the current UTC time)."""
        return self.deadline is not None and (now or datetime.now(UTC)) >= self.deadline


@dataclass(kw_only=True)
class UsageRecord:
    id: str
    thread_id: str
    run_id: str | None
    message_id: str | None
    actor_ref: str
    tenant_ref: str | None = None
    model_id: str
    purpose: str = "chat"
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    # Priced when recorded, never re-priced behind the user's back: the provider-reported cost
    # (`cost_source="reported"`), else the estimate at the price in force (`"priced"`, `price_id` = that
    # price row), else None (unpriced, `cost_source` None). `agora-agent prices reprice` changes it on purpose.
    cost_usd: float | None = None
    created_at: datetime
    price_id: str | None = None
    cost_source: str | None = None


@dataclass(kw_only=True)
class RunRecord:
    id: str
    thread_id: str
    agent_name: str | None = None
    actor_ref: str
    tenant_ref: str | None = None
    status: RunStatus = "running"
    started_at: datetime
    finished_at: datetime | None = None
    step_count: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    error: str | None = None
    durable: bool = False
    parent_run_id: str | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class QuotaSettlement:
    """The budget reservation a model step settles: replaced by the real `tokens`/`usd` (settle once)."""

    quota: QuotaStore
    reservation: Reservation
    tokens: int
    usd: float


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelStep:
    """Everything one model step persists, written by `record_model_step` as one transaction.

    `message_id` is the caller's (the loop derives it from the run and the step index), so writing the same
    step twice — a replayed durable step, a retry after an ambiguous commit — stores it once.
    `ledger` is the usage row (its `message_id` must be `message_id`); `usage` the message's usage JSON.
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


@dataclass(kw_only=True)
class ThreadHistory:
    """A thread as a run reads it: the record (None when unknown or deleted), its messages and tool calls.

    `complete` is False when only the messages after a known one were asked for (and found): then
    `messages` is that tail and `tool_calls` the calls of its assistant messages.
    """

    thread: ThreadRecord | None
    messages: list[MessageRecord]
    tool_calls: list[ToolCallRecord]
    complete: bool = True


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()
"""Marks a `ToolCallPatch` field as "leave unchanged" (None is a real value for output/error)."""


@dataclass(kw_only=True)
class ToolCallPatch:
    """Fields `update_tool_call` may change; UNSET fields stay as they are.

    Setting `status` to `executed` or `failed` also sets `executed_at` to now.
    """

    status: ToolCallStatus | Any = UNSET
    output: Any = UNSET
    error: str | Any | None = UNSET
    input: Any = UNSET
    executed_by_ref: str | Any | None = UNSET
    decided_by: str | Any | None = UNSET
    execution_ms: int | Any | None = UNSET
    policy_decision: str | Any | None = UNSET
    components: list[dict[str, Any]] | Any | None = UNSET

    def changes(self) -> dict[str, Any]:
        """The fields that are set, by name."""
        return {k: v for k, v in self.__dict__.items() if v is not UNSET}


@runtime_checkable
class AgentStore(Protocol):
    """Threads, messages, tool calls, approvals, the usage ledger and runs. See the module docstring."""

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

    async def get_thread(self, thread_id: str) -> ThreadRecord | None: ...

    async def list_threads(self, actor_ref: str, *, limit: int = 50) -> list[ThreadSummary]: ...

    async def thread_owner(self, thread_id: str) -> str | None: ...

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

    async def list_messages(self, thread_id: str) -> list[MessageRecord]: ...

    async def record_model_step(self, step: ModelStep) -> MessageRecord: ...

    async def load_thread(self, thread_id: str, *, after: str | None = None) -> ThreadHistory: ...

    # tool calls
    async def record_tool_call(self, record: ToolCallRecord, approval: ApprovalRecord | None = None) -> None: ...

    async def update_tool_call(self, run_id: str, tool_call_id: str, patch: ToolCallPatch) -> None: ...

    async def get_tool_call(self, run_id: str, tool_call_id: str) -> ToolCallRecord | None: ...

    async def list_tool_calls(
        self, *, thread_id: str | None = None, run_id: str | None = None
    ) -> list[ToolCallRecord]: ...

    # approvals
    async def create_approval(self, record: ApprovalRecord) -> None: ...

    async def get_approval(self, run_id: str, tool_call_id: str) -> ApprovalRecord | None: ...

    async def decide_approval(
        self,
        run_id: str,
        tool_call_id: str,
        *,
        status: Literal["approved", "rejected", "expired"],
        decided_by: str | None,
        reason: str | None = None,
    ) -> tuple[ApprovalRecord, bool]: ...

    async def list_pending_approvals(
        self, *, actor_ref: str | None = None, limit: int = 50
    ) -> list[ApprovalRecord]: ...

    # usage ledger
    async def record_usage(self, record: UsageRecord) -> None: ...

    async def usage_tokens(self, actor_ref: str, start: datetime, end: datetime) -> int: ...

    # runs
    async def record_run_start(self, record: RunRecord, *, active_stream: bool = False) -> None: ...

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

    async def get_run(self, run_id: str) -> RunRecord | None: ...

    async def run_owner(self, run_id: str) -> str | None: ...

    async def list_runs_by_status(self, status: RunStatus, *, limit: int = 100) -> list[RunRecord]: ...
