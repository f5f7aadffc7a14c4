"""`SqlGovernanceQueries`: the governance queries as SQL aggregations.

The database does the grouping and summing. Costs are the ones stored on the usage rows when they were
recorded (provider-reported or priced with the price then in force); nothing is re-priced at query time.

The spend rollups read `agent_usage_daily` (the ledger pre-summed per UTC day, actor and
model, kept in step by the store), since their ranges are whole UTC days; everything else reads the
base tables through the indexes in tables.py. bench/governance.py times each query on 1M ledger rows.

A tenant `scope` filters on the `tenant_ref` each row was written with. The two daily rollups have no
tenant column, so a scoped spend query sums the ledger itself and a scoped reliability query reads the
run rows: a tenant's rows, not the whole table.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import date, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from agora_agent.governance.console import ToolCallAuditRow
from agora_agent.governance.gate import GovernanceScope
from agora_agent.governance.pricing import PricingStore
from agora_agent.governance.queries import (
    DEFAULT_LIMIT,
    ActorSpendRow,
    AgentReliabilityRow,
    GovernanceThreadDetail,
    ModelSpendRow,
    PendingApprovalRow,
    PerToolStatRow,
    ReliabilityTrendPoint,
    RunDetail,
    RunMessageRow,
    RunPage,
    RunQuery,
    RunReliability,
    RunSummaryRow,
    RunToolCallRow,
    RunUsageRow,
    ThreadActivityRow,
    ThreadUsage,
    ToolCallActivityRow,
    UsageTrendPoint,
    clamp_limit,
    day_bounds,
    rate,
    reliability_of,
    run_summary,
)
from agora_agent.governance.retrieval_stats import RETRIEVAL_WINDOW, RETRIEVE_TOOL, RetrievalStats, summarize_retrievals
from agora_agent.stores.sql.records import run_record
from agora_agent.stores.sql.tables import (
    MICROS_PER_DAY,
    approval,
    message,
    run,
    run_daily,
    thread,
    token_usage,
    tool_call,
    tool_daily,
    usage_daily,
)

__all__ = ["SqlGovernanceQueries"]

_u = token_usage.c
_EPOCH_DAY = date(1970, 1, 1)
THREAD_DETAIL_RUNS = 20
THREAD_DETAIL_MESSAGES = 50


def _day(index: int) -> date:
    return _EPOCH_DAY + timedelta(days=int(index))


def _day_index(column: sa.ColumnElement[Any]) -> sa.ColumnElement[Any]:
    """Days since the epoch of a microsecond timestamp: integer division on both backends."""
    return sa.type_coerce(column, sa.BigInteger) // sa.literal(MICROS_PER_DAY, sa.BigInteger)


def _millis(column: sa.ColumnElement[Any]) -> sa.ColumnElement[Any]:
    """Epoch milliseconds (floor) of a microsecond timestamp."""
    return sa.type_coerce(column, sa.BigInteger) // sa.literal(1000, sa.BigInteger)


def _cost_columns() -> list[sa.ColumnElement[Any]]:
    """Per-group sums that price a group: reported costs, and the tokens of rows without one."""
    unreported = _u.cost_usd.is_(None)

    def when_unreported(col: sa.ColumnElement[Any]) -> sa.ColumnElement[Any]:
        return sa.func.sum(sa.case((unreported, sa.func.coalesce(col, 0)), else_=0))

    return [
        sa.func.sum(_u.cost_usd).label("reported_usd"),
        sa.func.count(_u.cost_usd).label("reported_rows"),
        when_unreported(_u.input_tokens).label("est_input"),
        when_unreported(_u.output_tokens).label("est_output"),
        when_unreported(_u.cache_read_tokens).label("est_cache_read"),
        when_unreported(_u.cache_write_tokens).label("est_cache_write"),
    ]


def _group_cost(row: sa.RowMapping) -> float:
    """The group's stored costs: each usage row was priced when it was recorded (or reported by the provider);
    unpriced rows add nothing — changing a price never rewrites past spend (`prices reprice` does, on purpose)."""
    return float(row["reported_usd"] or 0.0)


def _in_range(column: sa.ColumnElement[Any], from_day: date | None, to_day: date | None) -> list[Any]:
    start, end = day_bounds(from_day, to_day)
    conditions: list[Any] = []
    if start is not None:
        conditions.append(column >= start)
    if end is not None:
        conditions.append(column <= end)
    return conditions


def _day_range(day: sa.ColumnElement[Any], from_day: date | None, to_day: date | None) -> list[Any]:
    """`_in_range` on a rollup's day index (days since 1970-01-01): the same whole UTC days."""
    conditions: list[Any] = []
    if from_day is not None:
        conditions.append(day >= (from_day - _EPOCH_DAY).days)
    if to_day is not None:
        conditions.append(day <= (to_day - _EPOCH_DAY).days)
    return conditions


def _tenant(column: sa.ColumnElement[Any], scope: GovernanceScope | None) -> list[Any]:
    """The WHERE condition of a tenant scope on `column` (none without a scope; an empty scope matches nothing)."""
    return [] if scope is None else [column.in_(sorted(scope.tenants))]


def _run_summary(row: sa.RowMapping) -> RunSummaryRow:
    return run_summary(run_record(row))


def _message_row(row: sa.RowMapping) -> RunMessageRow:
    return RunMessageRow(id=row["id"], role=row["role"], content=row["content"], created_at=row["created_at"])


def _tool_call_row(row: sa.RowMapping) -> RunToolCallRow:
    return RunToolCallRow(
        tool_call_id=row["id"],
        tool_name=row["tool_name"],
        tool_type=row["tool_type"],
        status=row["status"],
        input=row["input"],
        output=row["output"],
        error=row["error"],
        execution_ms=row["execution_ms"],
        created_at=row["created_at"],
        actor_ref=row["actor_ref"],
        policy_decision=row["policy_decision"],
        decided_by=row["decided_by"],
        executed_by_ref=row["executed_by_ref"],
        idempotency_key=row["idempotency_key"],
        executed_at=row["executed_at"],
    )


class SqlGovernanceQueries:
    """The governance queries over the SQL store's tables, priced against `pricing` (None: every cost is 0)."""

    def __init__(self, engine: AsyncEngine, pricing: PricingStore | None = None) -> None:
        self.engine = engine
        self.pricing = pricing

    async def _rows(self, stmt: sa.Select[Any]) -> Sequence[sa.RowMapping]:
        async with self.engine.connect() as conn:
            rows: Sequence[sa.RowMapping] = (await conn.execute(stmt)).mappings().all()
        return rows

    async def _priced_groups(
        self, keys: Sequence[str], from_day: date, to_day: date, scope: GovernanceScope | None = None
    ) -> Sequence[sa.RowMapping]:
        """Sums per (keys…, model) over whole UTC days, read from the daily rollup (not the raw ledger);
        under a tenant scope from the ledger's rows of those tenants (the rollup has no tenant)."""
        if scope is not None:
            return await self._ledger_groups(keys, from_day, to_day, scope)
        d = usage_daily.c
        group = [d[k] for k in keys]
        stmt = (
            sa.select(
                *group,
                d.model_id,
                sa.func.sum(d.requests).label("requests"),
                sa.func.sum(d.input_tokens).label("input_tokens"),
                sa.func.sum(d.output_tokens).label("output_tokens"),
                sa.func.sum(d.reported_usd).label("reported_usd"),
                sa.func.sum(d.unreported_input_tokens).label("est_input"),
                sa.func.sum(d.unreported_output_tokens).label("est_output"),
                sa.func.sum(d.unreported_cache_read_tokens).label("est_cache_read"),
                sa.func.sum(d.unreported_cache_write_tokens).label("est_cache_write"),
            )
            .where(*_day_range(d.day, from_day, to_day))
            .group_by(*group, d.model_id)
        )
        return await self._rows(stmt)

    async def _ledger_groups(
        self, keys: Sequence[str], from_day: date, to_day: date, scope: GovernanceScope
    ) -> Sequence[sa.RowMapping]:
        """`_priced_groups` summed from the usage ledger, for the rows of the scope's tenants."""
        columns = {"actor_ref": _u.actor_ref, "day": _day_index(_u.created_at)}
        group = [columns[k].label(k) for k in keys]
        stmt = (
            sa.select(
                *group,
                _u.model_id,
                sa.func.count().label("requests"),
                sa.func.sum(_u.input_tokens).label("input_tokens"),
                sa.func.sum(_u.output_tokens).label("output_tokens"),
                *_cost_columns(),
            )
            .where(*_in_range(_u.created_at, from_day, to_day), *_tenant(_u.tenant_ref, scope))
            .group_by(*(columns[k] for k in keys), _u.model_id)
        )
        return await self._rows(stmt)

    async def spend_by_model(
        self, from_day: date, to_day: date, *, scope: GovernanceScope | None = None
    ) -> list[ModelSpendRow]:
        """Sorted by cost desc, then model id asc."""
        rows = await self._priced_groups([], from_day, to_day, scope)
        result = [
            ModelSpendRow(
                model_id=r["model_id"],
                requests=int(r["requests"]),
                input_tokens=int(r["input_tokens"]),
                output_tokens=int(r["output_tokens"]),
                cost_usd=_group_cost(r),
            )
            for r in rows
        ]
        result.sort(key=lambda r: (-r.cost_usd, r.model_id))
        return result

    async def spend_by_actor(
        self, from_day: date, to_day: date, *, scope: GovernanceScope | None = None
    ) -> list[ActorSpendRow]:
        """Sorted by cost desc, then actor ref asc."""
        rows = await self._priced_groups(["actor_ref"], from_day, to_day, scope)
        totals: dict[str, list[float]] = defaultdict(lambda: [0, 0, 0.0])
        for r in rows:
            acc = totals[r["actor_ref"]]
            acc[0] += int(r["requests"])
            acc[1] += int(r["input_tokens"]) + int(r["output_tokens"])
            acc[2] += _group_cost(r)
        result = [
            ActorSpendRow(actor_ref=actor, requests=int(a[0]), total_tokens=int(a[1]), cost_usd=a[2])
            for actor, a in totals.items()
        ]
        result.sort(key=lambda r: (-r.cost_usd, r.actor_ref))
        return result

    async def usage_trend(
        self, from_day: date, to_day: date, *, scope: GovernanceScope | None = None
    ) -> list[UsageTrendPoint]:
        """One point per UTC day with usage, day asc."""
        rows = await self._priced_groups(["day"], from_day, to_day, scope)
        totals: dict[int, list[float]] = defaultdict(lambda: [0, 0.0])
        for r in rows:
            acc = totals[int(r["day"])]
            acc[0] += int(r["input_tokens"]) + int(r["output_tokens"])
            acc[1] += _group_cost(r)
        return [
            UsageTrendPoint(day=_day(index), total_tokens=int(a[0]), cost_usd=a[1])
            for index, a in sorted(totals.items())
        ]

    async def recent_tool_calls(
        self, limit: int = DEFAULT_LIMIT, *, scope: GovernanceScope | None = None
    ) -> list[ToolCallActivityRow]:
        """Newest first."""
        tc = tool_call.c
        stmt = (
            sa.select(tool_call)
            .where(*_tenant(tc.tenant_ref, scope))
            .order_by(tc.created_at.desc(), tc.seq.desc())
            .limit(clamp_limit(limit))
        )
        return [
            ToolCallActivityRow(
                tool_call_id=r["id"],
                tool_name=r["tool_name"],
                tool_type=r["tool_type"],
                status=r["status"],
                thread_id=r["thread_id"] or "",
                created_at=r["created_at"],
                run_id=r["run_id"],
                actor_ref=r["actor_ref"],
                policy_decision=r["policy_decision"],
                decided_by=r["decided_by"],
                reason=r["error"] if r["status"] in ("rejected", "expired", "failed") else None,
                input=r["input"],
            )
            for r in await self._rows(stmt)
        ]

    async def recent_threads(
        self, limit: int = DEFAULT_LIMIT, *, scope: GovernanceScope | None = None
    ) -> list[ThreadActivityRow]:
        """Non-deleted threads (transient included), updated_at desc."""
        t = thread.c
        messages = sa.select(sa.func.count()).where(message.c.thread_id == t.id).correlate(thread).scalar_subquery()
        tokens = (
            sa.select(sa.func.coalesce(sa.func.sum(_u.input_tokens + _u.output_tokens), 0))
            .where(_u.thread_id == t.id)
            .correlate(thread)
            .scalar_subquery()
        )
        stmt = (
            sa.select(thread, messages.label("message_count"), tokens.label("total_tokens"))
            .where(t.deleted_at.is_(None), *_tenant(t.tenant_ref, scope))
            .order_by(t.updated_at.desc(), t.id.desc())
            .limit(clamp_limit(limit))
        )
        return [
            ThreadActivityRow(
                thread_id=r["id"],
                title=r["title"],
                actor_ref=r["actor_ref"],
                message_count=int(r["message_count"]),
                total_tokens=int(r["total_tokens"]),
                last_activity_at=r["updated_at"],
            )
            for r in await self._rows(stmt)
        ]

    async def list_runs(self, query: RunQuery, *, scope: GovernanceScope | None = None) -> RunPage:
        """Newest `started_at` first (then id desc); cursor = stringified offset."""
        r = run.c
        limit = clamp_limit(query.limit)
        offset = _offset(query.cursor)
        stmt = sa.select(run).where(
            *_in_range(r.started_at, query.from_day, query.to_day), *_tenant(r.tenant_ref, scope)
        )
        for column, value in ((r.actor_ref, query.actor), (r.agent_name, query.agent), (r.status, query.status)):
            if value is not None:
                stmt = stmt.where(column == value)
        stmt = stmt.order_by(r.started_at.desc(), r.id.desc()).offset(offset).limit(limit + 1)
        rows = await self._rows(stmt)
        more = len(rows) > limit
        return RunPage(
            runs=[_run_summary(row) for row in rows[:limit]],
            next_cursor=str(offset + limit) if more else None,
        )

    async def run_detail(self, run_id: str, *, scope: GovernanceScope | None = None) -> RunDetail | None:
        """None when the run is unknown (or outside the scope); every list oldest first."""
        async with self.engine.connect() as conn:
            head = (
                (await conn.execute(sa.select(run).where(run.c.id == run_id, *_tenant(run.c.tenant_ref, scope))))
                .mappings()
                .first()
            )
            if head is None:
                return None
            messages = (
                (await conn.execute(sa.select(message).where(message.c.run_id == run_id).order_by(message.c.seq)))
                .mappings()
                .all()
            )
            calls = (
                (
                    await conn.execute(
                        sa.select(tool_call)
                        .where(tool_call.c.run_id == run_id)
                        .order_by(tool_call.c.created_at, tool_call.c.seq)
                    )
                )
                .mappings()
                .all()
            )
            usage = (await conn.execute(_run_usage_stmt(run_id, None))).mappings().all()
        tool_calls = [_tool_call_row(c) for c in calls]
        return RunDetail(
            run=_run_summary(head),
            messages=[_message_row(m) for m in messages],
            tool_calls=tool_calls,
            approvals=[c for c in tool_calls if c.status == "pending_approval"],
            usage=[_usage_row(u) for u in usage],
        )

    async def run_usage(self, run_id: str, *, scope: GovernanceScope | None = None) -> list[RunUsageRow]:
        """The run's usage ledger rows, oldest first (`run_detail`'s `usage`, in one query: the inspector's)."""
        return [_usage_row(u) for u in await self._rows(_run_usage_stmt(run_id, scope))]

    async def pending_approvals(
        self, *, actor: str | None = None, limit: int = DEFAULT_LIMIT, scope: GovernanceScope | None = None
    ) -> list[PendingApprovalRow]:
        """Pending approvals oldest first; the actor is the run's actor_ref, else the requester. Under a
        scope the run's tenant decides (an approval whose run is gone is outside every scope).

        With `actor`, the approvals of that actor's runs (through its runs' index, not a join of every pending
        approval to its run) plus the run-less approvals it requested: the same rows as filtering on
        coalesce(run actor, requester)."""
        a = approval.c
        columns = (a.run_id, a.tool_call_id, a.thread_id, a.tool_name, a.created_at)
        if actor is None:
            pending: Any = (
                sa.select(*columns, sa.func.coalesce(run.c.actor_ref, a.requested_by).label("resolved_actor"))
                .select_from(approval.outerjoin(run, run.c.id == a.run_id))
                .where(a.status == "pending", *_tenant(run.c.tenant_ref, scope))
            )
        else:
            of_runs = (
                sa.select(*columns, run.c.actor_ref.label("resolved_actor"))
                .select_from(approval.join(run, run.c.id == a.run_id))
                .where(a.status == "pending", run.c.actor_ref == actor, *_tenant(run.c.tenant_ref, scope))
            )
            pending = of_runs
            if scope is None:  # a run-less approval is outside every scope
                runless = sa.select(*columns, a.requested_by.label("resolved_actor")).where(
                    a.status == "pending",
                    a.requested_by == actor,
                    ~sa.exists().where(run.c.id == a.run_id),
                )
                pending = sa.union_all(of_runs, runless)
        p = pending.subquery("pending")
        page = sa.select(p).order_by(p.c.created_at, p.c.tool_call_id).limit(clamp_limit(limit)).subquery("page")
        stmt = (
            sa.select(page, tool_call.c.input)
            .select_from(
                page.outerjoin(
                    tool_call, sa.and_(tool_call.c.run_id == page.c.run_id, tool_call.c.id == page.c.tool_call_id)
                )
            )
            .order_by(page.c.created_at, page.c.tool_call_id)
        )
        return [
            PendingApprovalRow(
                tool_call_id=r["tool_call_id"],
                tool_name=r["tool_name"],
                input=r["input"],
                thread_id=r["thread_id"],
                run_id=r["run_id"],
                actor_ref=r["resolved_actor"],
                requested_at=r["created_at"],
            )
            for r in await self._rows(stmt)
        ]

    async def per_tool_stats(
        self, from_day: date | None = None, to_day: date | None = None, *, scope: GovernanceScope | None = None
    ) -> list[PerToolStatRow]:
        """On `created_at`; sorted by calls desc, then tool name asc. Sums the daily per-tool rollup (its
        ranges are whole UTC days); under a tenant scope the tool calls of those tenants (no tenant column there)."""
        if scope is None:
            d = tool_daily.c
            stmt = (
                sa.select(
                    d.tool_name,
                    d.tool_type,
                    sa.func.sum(d.calls).label("calls"),
                    sa.func.sum(d.failed).label("failed"),
                    sa.func.sum(d.rejected).label("rejected"),
                    sa.func.sum(d.ms_sum).label("ms_sum"),
                    sa.func.sum(d.ms_count).label("ms_count"),
                )
                .where(*_day_range(d.day, from_day, to_day))
                .group_by(d.tool_name, d.tool_type)
                .having(sa.func.sum(d.calls) > 0)  # a rollup row whose calls were all deleted keeps zeros
            )
        else:
            tc = tool_call.c
            stmt = (
                sa.select(
                    tc.tool_name,
                    tc.tool_type,
                    sa.func.count().label("calls"),
                    sa.func.sum(sa.case((tc.status == "failed", 1), else_=0)).label("failed"),
                    sa.func.sum(sa.case((tc.status == "rejected", 1), else_=0)).label("rejected"),
                    sa.func.sum(tc.execution_ms).label("ms_sum"),
                    sa.func.count(tc.execution_ms).label("ms_count"),
                )
                .where(*_in_range(tc.created_at, from_day, to_day), *_tenant(tc.tenant_ref, scope))
                .group_by(tc.tool_name, tc.tool_type)
            )
        result = [
            PerToolStatRow(
                tool_name=r["tool_name"],
                tool_type=r["tool_type"],
                calls=int(r["calls"]),
                failed=int(r["failed"] or 0),
                rejected=int(r["rejected"] or 0),
                avg_duration_ms=int(r["ms_sum"]) / int(r["ms_count"]) if r["ms_count"] else None,
            )
            for r in await self._rows(stmt)
        ]
        result.sort(key=lambda r: (-r.calls, r.tool_name, r.tool_type))
        return result

    async def retrieval_stats(
        self, from_day: date | None = None, to_day: date | None = None, *, scope: GovernanceScope | None = None
    ) -> RetrievalStats:
        """The RAG panel's figures over the newest `RETRIEVAL_WINDOW` inject-mode retrievals in the range."""
        tc = tool_call.c
        stmt = (
            sa.select(tc.created_at, tc.output)
            .where(
                tc.tool_name == RETRIEVE_TOOL,
                tc.message_id.is_(None),
                *_in_range(tc.created_at, from_day, to_day),
                *_tenant(tc.tenant_ref, scope),
            )
            .order_by(tc.created_at.desc())
            .limit(RETRIEVAL_WINDOW)
        )
        return summarize_retrievals((r["created_at"], r["output"]) for r in await self._rows(stmt))

    async def run_reliability(
        self, from_day: date | None = None, to_day: date | None = None, *, scope: GovernanceScope | None = None
    ) -> RunReliability:
        """On started_at. Rates are 0 without runs; durations average settled runs only."""
        if scope is not None:  # the rollup has no tenant: the scope's own run rows
            stmt = sa.select(run).where(
                *_in_range(run.c.started_at, from_day, to_day), *_tenant(run.c.tenant_ref, scope)
            )
            return reliability_of(run_record(row) for row in await self._rows(stmt))
        # The daily run rollup (kept in step by the store): days x agents rows, not one row per run.
        rd = run_daily.c
        where = _day_range(rd.day, from_day, to_day)
        stmt = sa.select(
            sa.case((rd.agent_name == "", sa.null()), else_=rd.agent_name).label("agent_name"),
            rd.day.label("day_index"),
            rd.runs,
            rd.completed,
            rd.failed,
            rd.cancelled,
            rd.running,
            rd.duration_ms,
            rd.settled,
        ).where(*where)
        rows = [row for row in await self._rows(stmt) if row["runs"]]
        totals: dict[str, int] = defaultdict(int)
        by_agent: dict[str | None, list[int]] = defaultdict(lambda: [0, 0, 0])
        trend: dict[int, list[int]] = defaultdict(lambda: [0, 0])
        for row in rows:
            for field in ("runs", "completed", "failed", "cancelled", "running", "duration_ms", "settled"):
                totals[field] += int(row[field] or 0)
            agent = by_agent[row["agent_name"]]
            agent[0] += int(row["runs"])
            agent[1] += int(row["failed"] or 0)
            agent[2] += int(row["completed"] or 0)
            point = trend[int(row["day_index"])]
            point[0] += int(row["runs"])
            point[1] += int(row["failed"] or 0)
        runs = totals["runs"]
        agents = [
            AgentReliabilityRow(agent_name=name, runs=a[0], failed=a[1], success_rate=rate(a[2], a[0]))
            for name, a in by_agent.items()
        ]
        agents.sort(key=lambda a: (-a.runs, a.agent_name is not None, a.agent_name or ""))
        return RunReliability(
            runs=runs,
            completed=totals["completed"],
            failed=totals["failed"],
            cancelled=totals["cancelled"],
            running=totals["running"],
            success_rate=rate(totals["completed"], runs),
            failure_rate=rate(totals["failed"], runs),
            cancel_rate=rate(totals["cancelled"], runs),
            avg_duration_ms=totals["duration_ms"] / totals["settled"] if totals["settled"] else None,
            by_agent=agents,
            trend=[ReliabilityTrendPoint(day=_day(i), runs=p[0], failed=p[1]) for i, p in sorted(trend.items())],
        )

    async def thread_detail(
        self, thread_id: str, *, scope: GovernanceScope | None = None
    ) -> GovernanceThreadDetail | None:
        """Soft-deleted threads included (`deleted=True`); None when the thread never existed (or is
        outside the scope)."""
        async with self.engine.connect() as conn:
            head = (
                (
                    await conn.execute(
                        sa.select(thread).where(thread.c.id == thread_id, *_tenant(thread.c.tenant_ref, scope))
                    )
                )
                .mappings()
                .first()
            )
            if head is None:
                return None
            usage_stmt = (
                sa.select(
                    _u.model_id,
                    sa.func.count().label("requests"),
                    sa.func.sum(_u.input_tokens + _u.output_tokens).label("tokens"),
                    *_cost_columns(),
                )
                .where(_u.thread_id == thread_id)
                .group_by(_u.model_id)
            )
            usage = (await conn.execute(usage_stmt)).mappings().all()
            run_count = await conn.scalar(sa.select(sa.func.count()).where(run.c.thread_id == thread_id))
            message_count = await conn.scalar(sa.select(sa.func.count()).where(message.c.thread_id == thread_id))
            runs = (
                (
                    await conn.execute(
                        sa.select(run)
                        .where(run.c.thread_id == thread_id)
                        .order_by(run.c.started_at.desc(), run.c.id.desc())
                        .limit(THREAD_DETAIL_RUNS)
                    )
                )
                .mappings()
                .all()
            )
            messages = (
                (
                    await conn.execute(
                        sa.select(message)
                        .where(message.c.thread_id == thread_id)
                        .order_by(message.c.created_at.desc(), message.c.id.desc())
                        .limit(THREAD_DETAIL_MESSAGES)
                    )
                )
                .mappings()
                .all()
            )
        return GovernanceThreadDetail(
            thread_id=head["id"],
            title=head["title"],
            actor_ref=head["actor_ref"],
            tenant_ref=head["tenant_ref"],
            persona=head["persona"],
            transient=bool(head["transient"]),
            created_at=head["created_at"],
            updated_at=head["updated_at"],
            deleted=head["deleted_at"] is not None,
            usage=ThreadUsage(
                total_tokens=sum(int(u["tokens"] or 0) for u in usage),
                cost_usd=sum((_group_cost(u) for u in usage), 0.0) if usage else None,
                run_count=int(run_count or 0),
                message_count=int(message_count or 0),
            ),
            runs=[_run_summary(r) for r in runs],
            messages=[_message_row(m) for m in messages],
        )

    # -- console: child runs for the inspector, the audit for a time range --

    async def child_runs(self, run_id: str, *, scope: GovernanceScope | None = None) -> list[RunSummaryRow]:
        """Runs delegated from `run_id`, oldest first."""
        stmt = (
            sa.select(run)
            .where(run.c.parent_run_id == run_id, *_tenant(run.c.tenant_ref, scope))
            .order_by(run.c.started_at, run.c.id)
        )
        return [_run_summary(r) for r in await self._rows(stmt)]

    async def audit_rows(
        self, start: datetime, end: datetime, limit: int = 10_000, *, scope: GovernanceScope | None = None
    ) -> list[ToolCallAuditRow]:
        """Tool calls created in [start, end], oldest first, with their approval's requester and decision."""
        tc, a = tool_call.c, approval.c
        stmt = (
            sa.select(
                tool_call,
                a.requested_by.label("a_requested_by"),
                a.decided_by.label("a_decided_by"),
                a.decided_at.label("a_decided_at"),
                a.reason.label("a_reason"),
            )
            .select_from(tool_call.outerjoin(approval, sa.and_(a.run_id == tc.run_id, a.tool_call_id == tc.id)))
            .where(tc.created_at >= start, tc.created_at <= end, *_tenant(tc.tenant_ref, scope))
            .order_by(tc.created_at, tc.seq)
            .limit(limit)
        )
        return [
            ToolCallAuditRow(
                at=r["created_at"],
                run_id=r["run_id"],
                thread_id=r["thread_id"],
                tool_call_id=r["id"],
                tool_name=r["tool_name"],
                tool_type=r["tool_type"],
                status=r["status"],
                actor_ref=r["actor_ref"],
                tenant_ref=r["tenant_ref"],
                input=r["input"],
                policy_decision=r["policy_decision"],
                requested_by=r["a_requested_by"],
                decided_by=r["a_decided_by"] or r["decided_by"],
                decided_at=r["a_decided_at"],
                reason=r["a_reason"] or (r["error"] if r["status"] in ("rejected", "expired", "failed") else None),
                executed_at=r["executed_at"],
                execution_ms=r["execution_ms"],
            )
            for r in await self._rows(stmt)
        ]


def _offset(cursor: str | None) -> int:
    try:
        return max(int(cursor), 0) if cursor else 0
    except ValueError:
        return 0


def _run_usage_stmt(run_id: str, scope: GovernanceScope | None) -> sa.Select[Any]:
    return (
        sa.select(token_usage).where(_u.run_id == run_id, *_tenant(_u.tenant_ref, scope)).order_by(_u.created_at, _u.id)
    )


def _usage_row(u: sa.RowMapping) -> RunUsageRow:
    return RunUsageRow(
        model_id=u["model_id"],
        purpose=u["purpose"],
        input_tokens=u["input_tokens"],
        output_tokens=u["output_tokens"],
        cost_usd=u["cost_usd"],
        created_at=u["created_at"],
        price_id=u["price_id"],
        cost_source=u["cost_source"],
    )
