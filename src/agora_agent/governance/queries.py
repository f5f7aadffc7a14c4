"""The governance queries: what the dashboard and the governance routes read.

`GovernanceQueries` is the protocol; `MemoryGovernanceQueries` (stores/memory_queries.py) and the
SQL governance queries implement it and pass the same parity suite (tests/contract/test_queries_contract.py).

Rows are Pydantic models with Python names; the web layer writes them in the wire's camelCase
(`agora_agent.web.schemas.wire_dump`).

Semantics every implementation honours:
- Days are UTC and ranges inclusive: `from_day 00:00:00` <= t <= `to_day 23:59:59.999999`.
- Cost of a usage row: the `cost_usd` stored when it was recorded — provider-reported, or priced with the
  price then in force (`price_id`). Spend is history: unlike the reference, which prices at query time, a
  price change never re-prices past rows (`agora-agent prices reprice` does, deliberately and audited). An
  unpriced row (no price at record time) counts 0 in rollups (`spend_by_model`, `spend_by_actor`, `usage_trend`, thread
  totals) and keeps None per row (run detail usage), so it stays visibly unpriced.
- Limits: non-positive -> 50, at most 200 (`clamp_limit`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, computed_field

from agora_agent.governance.gate import GovernanceScope
from agora_agent.governance.pricing import ModelPrice, PricingStore, estimate_cost
from agora_agent.messages import Usage
from agora_agent.records import RunRecord

__all__ = [
    "DEFAULT_LIMIT",
    "MAX_LIMIT",
    "ActorSpendRow",
    "AgentReliabilityRow",
    "GovernanceQueries",
    "GovernanceThreadDetail",
    "ModelSpendRow",
    "PendingApprovalRow",
    "PerToolStatRow",
    "ReliabilityTrendPoint",
    "RunDetail",
    "RunMessageRow",
    "RunPage",
    "RunQuery",
    "RunReliability",
    "RunSummaryRow",
    "RunToolCallRow",
    "RunUsageRow",
    "ThreadActivityRow",
    "ThreadUsage",
    "ToolCallActivityRow",
    "UsageTrendPoint",
    "clamp_limit",
    "current_prices",
    "day_bounds",
    "duration_ms",
    "in_scope",
    "mean",
    "rate",
    "reliability_of",
    "run_summary",
    "usage_row_cost",
]

DEFAULT_LIMIT = 50
MAX_LIMIT = 200


class _Row(BaseModel):
    """Base of the rows: Python names only (the wire's spelling is the web layer's business)."""


class ModelSpendRow(_Row):
    """Spend and tokens of one model over a range."""

    model_id: str
    requests: int
    input_tokens: int
    output_tokens: int
    cost_usd: float


class ActorSpendRow(_Row):
    """Spend and tokens (input + output) of one actor over a range."""

    actor_ref: str
    requests: int
    total_tokens: int
    cost_usd: float


class UsageTrendPoint(_Row):
    """One UTC day with usage."""

    day: date
    total_tokens: int
    cost_usd: float


class ToolCallActivityRow(_Row):
    """A recent tool call for the activity feed."""

    tool_call_id: str
    tool_name: str
    tool_type: str
    status: str
    thread_id: str
    created_at: datetime
    # the audit columns: who ran it, the policy decision, who decided, the reason and the arguments
    run_id: str | None = None
    actor_ref: str | None = None
    policy_decision: str | None = None
    decided_by: str | None = None
    reason: str | None = None
    input: Any = None


class ThreadActivityRow(_Row):
    """A recent thread with lifetime message and token counts."""

    thread_id: str
    title: str
    actor_ref: str
    message_count: int
    total_tokens: int
    last_activity_at: datetime


class RunSummaryRow(_Row):
    """A run as listed and as the head of run/thread details. `duration_ms` is None while running."""

    id: str
    thread_id: str
    agent_name: str | None
    actor_ref: str
    tenant_ref: str | None
    status: str
    started_at: datetime
    finished_at: datetime | None
    step_count: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    error: str | None
    durable: bool
    duration_ms: int | None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def run_id(self) -> str:
        """The same id under the reference dashboard's name (`runId`)."""
        return self.id


class RunPage(_Row):
    """One page of runs, newest first; pass `next_cursor` back for the next page (None = last page)."""

    runs: list[RunSummaryRow]
    next_cursor: str | None


class RunMessageRow(_Row):
    """A message of a run or a thread."""

    id: str
    role: str
    content: str
    created_at: datetime


class RunToolCallRow(_Row):
    """A tool call of a run."""

    tool_call_id: str
    tool_name: str
    tool_type: str
    status: str
    input: Any = None
    output: Any = None
    error: str | None
    execution_ms: int | None
    created_at: datetime
    # the audit columns
    actor_ref: str | None = None
    policy_decision: str | None = None
    decided_by: str | None = None
    executed_by_ref: str | None = None
    idempotency_key: str | None = None
    executed_at: datetime | None = None


class RunUsageRow(_Row):
    """A usage ledger row of a run: `cost_usd` as stored when recorded (None = unpriced), `cost_source`
    (`reported` | `priced` | None) and the `price_id` it was priced with."""

    model_id: str
    purpose: str
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    created_at: datetime
    price_id: str | None = None
    cost_source: str | None = None


class RunDetail(_Row):
    """The whole trace of one run, each list oldest first. `approvals` = tool calls still pending."""

    run: RunSummaryRow
    messages: list[RunMessageRow]
    tool_calls: list[RunToolCallRow]
    approvals: list[RunToolCallRow]
    usage: list[RunUsageRow]


class PendingApprovalRow(_Row):
    """One approval awaiting a decision (oldest first in the inbox)."""

    tool_call_id: str
    tool_name: str
    input: Any = None
    thread_id: str
    run_id: str | None
    actor_ref: str
    requested_at: datetime


class PerToolStatRow(_Row):
    """Calls, failures, rejections and mean recorded execution time of one tool."""

    tool_name: str
    tool_type: str
    calls: int
    failed: int
    rejected: int
    avg_duration_ms: float | None


class AgentReliabilityRow(_Row):
    """Runs and failures of one agent; `success_rate` = completed / runs."""

    agent_name: str | None
    runs: int
    failed: int
    success_rate: float


class ReliabilityTrendPoint(_Row):
    """Runs started and failed on one UTC day."""

    day: date
    runs: int
    failed: int


class RunReliability(_Row):
    """Run outcomes over a range (on started_at). Rates are 0 when there are no runs."""

    runs: int
    completed: int
    failed: int
    cancelled: int
    running: int
    success_rate: float
    failure_rate: float
    cancel_rate: float
    avg_duration_ms: float | None
    by_agent: list[AgentReliabilityRow]
    trend: list[ReliabilityTrendPoint]


class ThreadUsage(_Row):
    """Lifetime totals of a thread. `cost_usd` is None when the thread has no usage rows at all."""

    total_tokens: int
    cost_usd: float | None
    run_count: int
    message_count: int


class GovernanceThreadDetail(_Row):
    """A thread, soft-deleted ones included (`deleted`), with runs (newest 20) and messages (newest 50),
    both newest first."""

    thread_id: str
    title: str
    actor_ref: str
    tenant_ref: str | None
    persona: str
    transient: bool
    created_at: datetime
    updated_at: datetime
    deleted: bool
    usage: ThreadUsage
    runs: list[RunSummaryRow]
    messages: list[RunMessageRow]


@dataclass(frozen=True, kw_only=True)
class RunQuery:
    """Filters (exact matches; days bound `started_at`, inclusive UTC) and paging."""

    actor: str | None = None
    agent: str | None = None
    status: str | None = None
    from_day: date | None = None
    to_day: date | None = None
    cursor: str | None = None
    limit: int = DEFAULT_LIMIT


@runtime_checkable
class GovernanceQueries(Protocol):
    """Read-only governance queries. Every method is async and never mutates the store.

    `scope`: None = every row (a global admin); a `GovernanceScope` = only rows whose stored `tenant_ref` is
    one of its tenants (a tenant admin) — rows without a tenant are outside every scope. A run or thread
    outside the scope is answered like an unknown one (None).
    """

    async def spend_by_model(
        self, from_day: date, to_day: date, *, scope: GovernanceScope | None = None
    ) -> list[ModelSpendRow]:
        """Sorted by cost desc, then model id asc."""
        ...

    async def spend_by_actor(
        self, from_day: date, to_day: date, *, scope: GovernanceScope | None = None
    ) -> list[ActorSpendRow]:
        """Sorted by cost desc, then actor ref asc."""
        ...

    async def usage_trend(
        self, from_day: date, to_day: date, *, scope: GovernanceScope | None = None
    ) -> list[UsageTrendPoint]:
        """One point per UTC day with usage, day asc."""
        ...

    async def recent_tool_calls(
        self, limit: int = DEFAULT_LIMIT, *, scope: GovernanceScope | None = None
    ) -> list[ToolCallActivityRow]:
        """Newest first."""
        ...

    async def recent_threads(
        self, limit: int = DEFAULT_LIMIT, *, scope: GovernanceScope | None = None
    ) -> list[ThreadActivityRow]:
        """Non-deleted threads (transient included), updated_at desc."""
        ...

    async def list_runs(self, query: RunQuery, *, scope: GovernanceScope | None = None) -> RunPage:
        """Newest `started_at` first (then id desc); cursor = stringified offset."""
        ...

    async def run_detail(self, run_id: str, *, scope: GovernanceScope | None = None) -> RunDetail | None:
        """None when the run is unknown."""
        ...

    async def pending_approvals(
        self, *, actor: str | None = None, limit: int = DEFAULT_LIMIT, scope: GovernanceScope | None = None
    ) -> list[PendingApprovalRow]:
        """Approval rows whose status is `pending` (the tool call's status is not consulted), oldest
        first (created_at, then tool call id), with the tool call's input; actor = the run's actor_ref, else the
        requester; the actor filter applies after that resolution."""
        ...

    async def per_tool_stats(
        self, from_day: date | None = None, to_day: date | None = None, *, scope: GovernanceScope | None = None
    ) -> list[PerToolStatRow]:
        """On `created_at`; sorted by calls desc, then tool name asc."""
        ...

    async def run_reliability(
        self, from_day: date | None = None, to_day: date | None = None, *, scope: GovernanceScope | None = None
    ) -> RunReliability:
        """On `started_at`. `by_agent`: runs desc, then the unnamed (None) agent first, then agent name asc;
        `trend`: day asc. Durations are whole milliseconds (finished - started), settled runs only."""
        ...

    async def thread_detail(
        self, thread_id: str, *, scope: GovernanceScope | None = None
    ) -> GovernanceThreadDetail | None:
        """None when the thread never existed; soft-deleted threads come back with `deleted=True`."""
        ...


# -- helpers shared by the implementations (same arithmetic = same answers) --


def in_scope(scope: GovernanceScope | None, tenant_ref: str | None) -> bool:
    """Whether a row of `tenant_ref` is visible under `scope` (None: everything is)."""
    return scope is None or scope.covers(tenant_ref)


def clamp_limit(limit: int | None) -> int:
    """Non-positive or missing -> 50; at most 200."""
    if limit is None or limit <= 0:
        return DEFAULT_LIMIT
    return min(limit, MAX_LIMIT)


def day_bounds(from_day: date | None, to_day: date | None) -> tuple[datetime | None, datetime | None]:
    """Inclusive UTC bounds: (`from_day` 00:00, `to_day` 23:59:59.999999); None stays unbounded."""
    start = datetime.combine(from_day, time.min, tzinfo=UTC) if from_day is not None else None
    end = (
        datetime.combine(to_day, time.min, tzinfo=UTC) + timedelta(days=1, microseconds=-1)
        if to_day is not None
        else None
    )
    return start, end


async def current_prices(pricing: PricingStore | None) -> dict[str, ModelPrice]:
    """The current price of each model, by model id (empty without a pricing store)."""
    if pricing is None:
        return {}
    return {p.model_id: p for p in await pricing.list_current_prices()}


def usage_row_cost(
    *,
    model_id: str,
    input_tokens: int,
    output_tokens: int,
    cache_read_tokens: int | None,
    cache_write_tokens: int | None,
    reported_cost_usd: float | None,
    prices: Mapping[str, ModelPrice],
) -> float | None:
    """The reported cost, else the estimate at the current price, else None (unpriced)."""
    if reported_cost_usd is not None:
        return reported_cost_usd
    price = prices.get(model_id)
    if price is None:
        return None
    usage = Usage(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cache_read_tokens=cache_read_tokens,
        cache_write_tokens=cache_write_tokens,
    )
    return estimate_cost(usage, price)


def rate(part: int, whole: int) -> float:
    """part / whole, 0 when whole is 0."""
    return part / whole if whole else 0.0


def mean(values: Iterable[float]) -> float | None:
    """Arithmetic mean, None for no values."""
    items = list(values)
    return sum(items) / len(items) if items else None


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)


def duration_ms(run: RunRecord) -> int | None:
    """Whole milliseconds from start to finish (difference of epoch-ms values, as the SQL store keeps them)."""
    if run.finished_at is None:
        return None
    return (run.finished_at - _EPOCH) // _MS - (run.started_at - _EPOCH) // _MS


def run_summary(run: RunRecord) -> RunSummaryRow:
    """The wire row of a run record."""
    return RunSummaryRow(
        id=run.id,
        thread_id=run.thread_id,
        agent_name=run.agent_name,
        actor_ref=run.actor_ref,
        tenant_ref=run.tenant_ref,
        status=run.status,
        started_at=run.started_at,
        finished_at=run.finished_at,
        step_count=run.step_count,
        input_tokens=run.input_tokens,
        output_tokens=run.output_tokens,
        cost_usd=run.cost_usd,
        error=run.error,
        durable=run.durable,
        duration_ms=duration_ms(run),
    )


def reliability_of(runs: Iterable[RunRecord]) -> RunReliability:
    """Run outcomes over run records: by agent (runs desc, the unnamed agent first, then name asc) and by UTC day.
    The memory twin computes every answer this way; the SQL twin does for a tenant scope (its daily
    rollup has no tenant column)."""
    runs = list(runs)
    count = len(runs)
    completed = sum(1 for r in runs if r.status == "completed")
    failed = sum(1 for r in runs if r.status == "failed")
    cancelled = sum(1 for r in runs if r.status == "cancelled")
    durations = [d for r in runs if r.status != "running" and (d := duration_ms(r)) is not None]
    agents: dict[str | None, list[RunRecord]] = defaultdict(list)
    days: dict[date, list[RunRecord]] = defaultdict(list)
    for r in runs:
        agents[r.agent_name].append(r)
        days[r.started_at.astimezone(UTC).date()].append(r)
    by_agent = [
        AgentReliabilityRow(
            agent_name=name,
            runs=len(items),
            failed=sum(1 for r in items if r.status == "failed"),
            success_rate=rate(sum(1 for r in items if r.status == "completed"), len(items)),
        )
        for name, items in agents.items()
    ]
    by_agent.sort(key=lambda a: (-a.runs, a.agent_name is not None, a.agent_name or ""))
    return RunReliability(
        runs=count,
        completed=completed,
        failed=failed,
        cancelled=cancelled,
        running=sum(1 for r in runs if r.status == "running"),
        success_rate=rate(completed, count),
        failure_rate=rate(failed, count),
        cancel_rate=rate(cancelled, count),
        avg_duration_ms=mean(float(d) for d in durations),
        by_agent=by_agent,
        trend=[
            ReliabilityTrendPoint(day=day, runs=len(items), failed=sum(1 for r in items if r.status == "failed"))
            for day, items in sorted(days.items())
        ],
    )
