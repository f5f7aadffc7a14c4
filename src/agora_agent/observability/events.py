"""Typed lifecycle events an application can subscribe to with `AgentConfig(on_event=…)`.

Every event names the run, thread and actor it belongs to (`run_id` is None only for a chat the
budget refused before a run existed). Events carry ids, names, statuses, counts and timings — never
message text, tool arguments or tool output (those go to OpenTelemetry spans only when content
capture is switched on).

    def on_event(event: AgentEvent) -> None:
        if isinstance(event, ApprovalRequested):
            notify_approvers(event.tool_name, event.run_id)

    AgentConfig(model=…, on_event=on_event)   # a coroutine function works too

A handler that raises is logged and ignored: it never breaks a run. Handlers run inline, so a slow
one slows the run down; hand heavy work to a queue.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import ClassVar

__all__ = [
    "AgentEvent",
    "ApprovalDecided",
    "ApprovalExpired",
    "ApprovalRequested",
    "BudgetThresholdReached",
    "Delegated",
    "EventHandler",
    "QuotaExceeded",
    "Retrieved",
    "RunCancelled",
    "RunFailed",
    "RunFinished",
    "RunStarted",
    "ToolCallStatusChanged",
]


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, kw_only=True, slots=True)
class AgentEvent:
    """Base of every event: which run, thread and actor, and when (UTC)."""

    kind: ClassVar[str] = "event"
    run_id: str | None
    thread_id: str | None
    actor_id: str
    tenant_ref: str | None = None
    agent: str | None = None
    at: datetime = field(default_factory=_now)


@dataclass(frozen=True, kw_only=True, slots=True)
class RunStarted(AgentEvent):
    """A run's loop began. `parent_run_id` is set for a delegated (nested) run."""

    kind: ClassVar[str] = "run.started"
    persona: str | None = None
    parent_run_id: str | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class RunFinished(AgentEvent):
    """A run completed. `cost_usd` is None when no step had a known price."""

    kind: ClassVar[str] = "run.finished"
    steps: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    duration_ms: int


@dataclass(frozen=True, kw_only=True, slots=True)
class RunFailed(AgentEvent):
    """A run failed; `error_type` is the exception class name (e.g. `QuotaExceededError`, `ModelError`)."""

    kind: ClassVar[str] = "run.failed"
    error: str
    error_type: str
    duration_ms: int


@dataclass(frozen=True, kw_only=True, slots=True)
class RunCancelled(AgentEvent):
    """A run was cancelled while in flight."""

    kind: ClassVar[str] = "run.cancelled"
    duration_ms: int


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCallStatusChanged(AgentEvent):
    """A tool call moved to `status` (started, pending_approval, approved, executed, rejected, failed, expired)."""

    kind: ClassVar[str] = "tool_call.status"
    tool_call_id: str
    tool_name: str
    tool_kind: str
    status: str
    error: str | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class ApprovalRequested(AgentEvent):
    """An action parked for a human decision."""

    kind: ClassVar[str] = "approval.requested"
    tool_call_id: str
    tool_name: str
    requested_by: str
    deadline: datetime | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class ApprovalDecided(AgentEvent):
    """Someone approved or rejected a parked action; `wait_ms` is how long the run waited."""

    kind: ClassVar[str] = "approval.decided"
    tool_call_id: str
    tool_name: str
    decision: str  # approved | rejected
    decided_by: str | None
    reason: str | None
    wait_ms: int


@dataclass(frozen=True, kw_only=True, slots=True)
class ApprovalExpired(AgentEvent):
    """A parked action's deadline passed with no decision."""

    kind: ClassVar[str] = "approval.expired"
    tool_call_id: str
    tool_name: str
    wait_ms: int


@dataclass(frozen=True, kw_only=True, slots=True)
class Delegated(AgentEvent):
    """A run handed a task to another agent (`agent` is the delegating agent)."""

    kind: ClassVar[str] = "delegated"
    tool_call_id: str
    to_agent: str
    task_length: int


@dataclass(frozen=True, kw_only=True, slots=True)
class Retrieved(AgentEvent):
    """A retrieval ran: the query's length, how many chunks came back, their ids and scores (never the text).

    `source` is `inject` (the run's `retrieve` step) or `tool:<name>` (the knowledge tool)."""

    kind: ClassVar[str] = "retrieved"
    query_length: int
    count: int
    source: str | None = None
    ids: tuple[str, ...] = ()
    scores: tuple[float, ...] = ()


@dataclass(frozen=True, kw_only=True, slots=True)
class QuotaExceeded(AgentEvent):
    """A budget refused a chat (`run_id` None) or a model step. `scope` is `actor` or `tenant`."""

    kind: ClassVar[str] = "quota.exceeded"
    scope: str | None
    key: str | None
    message: str


@dataclass(frozen=True, kw_only=True, slots=True)
class BudgetThresholdReached(AgentEvent):
    """A budget's use crossed a threshold (e.g. 80%) in the current period: raised once per period and
    threshold, by the model step whose usage crossed it. `period` is the period key (`YYYY-MM-DD` / `YYYY-MM`)."""

    kind: ClassVar[str] = "budget.threshold"
    scope: str
    key: str
    unit: str  # tokens | usd
    threshold: float
    used: float
    limit: float
    period: str


EventHandler = Callable[[AgentEvent], "None | Awaitable[None]"]
"""`on_event(event)`: a plain function or a coroutine function; exceptions are logged and ignored."""
