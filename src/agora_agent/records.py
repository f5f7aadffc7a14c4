"""The records a run persists, and the protocol to read them back (`RecordReader`).

Threads, messages, tool calls (the audit rows), approvals, the usage ledger and runs, as plain
dataclasses. They sit below governance and the stores: the governance read models read a store through
`RecordReader`, and `agora_agent.stores.base.AgentStore` — the full protocol every store implements —
adds the writes to it. The contract every implementation honours is stores/base.py's docstring.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, Protocol, runtime_checkable

from agora_agent.messages import Attachment, ToolCall

__all__ = [
    "UNSET",
    "ApprovalRecord",
    "ApprovalStatus",
    "MessageRecord",
    "RecordReader",
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

    @classmethod
    def of(cls, **changes: Any) -> ToolCallPatch:
        """`ToolCallPatch(**changes)`, holding only `changes` (every other field reads UNSET, the class's default):
        a store applies it without looking at the fields it leaves alone (the loop's result of every tool call).
        Raises TypeError for a name that is not a field, like the class call."""
        if not changes.keys() <= _PATCH_FIELDS:
            raise TypeError(f"ToolCallPatch has no field {sorted(changes.keys() - _PATCH_FIELDS)[0]!r}")
        patch = object.__new__(cls)
        patch.__dict__ = changes  # the call's own keyword dict
        return patch


_PATCH_FIELDS = frozenset(ToolCallPatch.__dataclass_fields__)


@runtime_checkable
class RecordReader(Protocol):
    """Reading a store back: threads, messages, tool calls, approvals, usage and runs (no writes)."""

    # threads
    async def get_thread(self, thread_id: str) -> ThreadRecord | None: ...

    async def list_threads(self, actor_ref: str, *, limit: int = 50) -> list[ThreadSummary]: ...

    async def thread_owner(self, thread_id: str) -> str | None: ...

    # messages
    async def list_messages(self, thread_id: str, *, run_id: str | None = None) -> list[MessageRecord]: ...

    async def load_thread(self, thread_id: str, *, after: str | None = None) -> ThreadHistory: ...

    # tool calls
    async def get_tool_call(self, run_id: str, tool_call_id: str) -> ToolCallRecord | None: ...

    async def list_tool_calls(
        self, *, thread_id: str | None = None, run_id: str | None = None
    ) -> list[ToolCallRecord]: ...

    # approvals
    async def get_approval(self, run_id: str, tool_call_id: str) -> ApprovalRecord | None: ...

    async def list_pending_approvals(
        self, *, actor_ref: str | None = None, limit: int = 50
    ) -> list[ApprovalRecord]: ...

    # usage ledger
    async def usage_tokens(self, actor_ref: str, start: datetime, end: datetime) -> int: ...

    # runs
    async def get_run(self, run_id: str) -> RunRecord | None: ...

    async def run_owner(self, run_id: str) -> str | None: ...

    async def list_runs_by_status(self, status: RunStatus, *, limit: int = 100) -> list[RunRecord]: ...
