"""`MemoryGovernanceQueries`: the governance queries over a `MemoryAgentStore`.

Each query scans the store's records (`all_*()`), so it costs O(rows); fine for the embedded default and
tests, not meant for millions of rows (use the SQL store). Results equal the SQL twin's on the same
data — tests/contract/test_queries_contract.py runs both.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, date, datetime

from agora_agent.governance.console import ToolCallAuditRow
from agora_agent.governance.gate import GovernanceScope
from agora_agent.governance.pricing import PricingStore
from agora_agent.governance.queries import (
    ActorSpendRow,
    GovernanceThreadDetail,
    ModelSpendRow,
    PendingApprovalRow,
    PerToolStatRow,
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
    in_scope,
    mean,
    reliability_of,
    run_summary,
)
from agora_agent.governance.retrieval_stats import RETRIEVAL_WINDOW, RETRIEVE_TOOL, RetrievalStats, summarize_retrievals
from agora_agent.records import MessageRecord, RunRecord, ToolCallRecord, UsageRecord
from agora_agent.stores.memory import MemoryAgentStore

__all__ = ["MemoryGovernanceQueries"]
_THREAD_RUNS = 20
_THREAD_MESSAGES = 50


def _message_row(m: MessageRecord) -> RunMessageRow:
    return RunMessageRow(id=m.id, role=m.role, content=m.content, created_at=m.created_at)


def _tool_call_row(tc: ToolCallRecord) -> RunToolCallRow:
    return RunToolCallRow(
        tool_call_id=tc.id,
        tool_name=tc.tool_name,
        tool_type=tc.tool_type,
        status=tc.status,
        input=tc.input,
        output=tc.output,
        error=tc.error,
        execution_ms=tc.execution_ms,
        created_at=tc.created_at,
        actor_ref=tc.actor_ref,
        policy_decision=tc.policy_decision,
        decided_by=tc.decided_by,
        executed_by_ref=tc.executed_by_ref,
        idempotency_key=tc.idempotency_key,
        executed_at=tc.executed_at,
    )


def _in_range(moment: datetime, start: datetime | None, end: datetime | None) -> bool:
    return (start is None or moment >= start) and (end is None or moment <= end)


def _utc_day(moment: datetime) -> date:
    return moment.astimezone(UTC).date()


def _newest_runs_first(runs: Iterable[RunRecord]) -> list[RunRecord]:
    return sorted(runs, key=lambda r: (r.started_at, r.id), reverse=True)


class MemoryGovernanceQueries:
    """`GovernanceQueries` over a `MemoryAgentStore`, priced against `pricing` (None = every rollup cost is 0)."""

    def __init__(self, store: MemoryAgentStore, pricing: PricingStore | None = None) -> None:
        self._store = store
        self._pricing = pricing

    def _cost(self, u: UsageRecord) -> float | None:
        # Priced when recorded (or provider-reported); None = unpriced. Never re-priced at query time.
        return u.cost_usd

    async def _usage_in(self, from_day: date, to_day: date, scope: GovernanceScope | None) -> list[UsageRecord]:
        start, end = day_bounds(from_day, to_day)
        return [
            u for u in self._store.all_usage() if _in_range(u.created_at, start, end) and in_scope(scope, u.tenant_ref)
        ]

    def _runs(self, scope: GovernanceScope | None) -> list[RunRecord]:
        return [r for r in self._store.all_runs() if in_scope(scope, r.tenant_ref)]

    def _tool_calls(self, scope: GovernanceScope | None) -> list[ToolCallRecord]:
        return [tc for tc in self._store.all_tool_calls() if in_scope(scope, tc.tenant_ref)]

    async def spend_by_model(
        self, from_day: date, to_day: date, *, scope: GovernanceScope | None = None
    ) -> list[ModelSpendRow]:
        """Per model over the inclusive UTC days; cost desc, then model id asc."""
        rows = await self._usage_in(from_day, to_day, scope)
        groups: dict[str, list[UsageRecord]] = defaultdict(list)
        for u in rows:
            groups[u.model_id].append(u)
        result = [
            ModelSpendRow(
                model_id=model_id,
                requests=len(items),
                input_tokens=sum(u.input_tokens for u in items),
                output_tokens=sum(u.output_tokens for u in items),
                cost_usd=sum(self._cost(u) or 0.0 for u in items),
            )
            for model_id, items in groups.items()
        ]
        return sorted(result, key=lambda r: (-r.cost_usd, r.model_id))

    async def spend_by_actor(
        self, from_day: date, to_day: date, *, scope: GovernanceScope | None = None
    ) -> list[ActorSpendRow]:
        """Per actor over the inclusive UTC days; cost desc, then actor ref asc."""
        rows = await self._usage_in(from_day, to_day, scope)
        groups: dict[str, list[UsageRecord]] = defaultdict(list)
        for u in rows:
            groups[u.actor_ref].append(u)
        result = [
            ActorSpendRow(
                actor_ref=actor_ref,
                requests=len(items),
                total_tokens=sum(u.input_tokens + u.output_tokens for u in items),
                cost_usd=sum(self._cost(u) or 0.0 for u in items),
            )
            for actor_ref, items in groups.items()
        ]
        return sorted(result, key=lambda r: (-r.cost_usd, r.actor_ref))

    async def usage_trend(
        self, from_day: date, to_day: date, *, scope: GovernanceScope | None = None
    ) -> list[UsageTrendPoint]:
        """One point per UTC day that has usage, oldest first."""
        rows = await self._usage_in(from_day, to_day, scope)
        groups: dict[date, list[UsageRecord]] = defaultdict(list)
        for u in rows:
            groups[_utc_day(u.created_at)].append(u)
        return [
            UsageTrendPoint(
                day=day,
                total_tokens=sum(u.input_tokens + u.output_tokens for u in items),
                cost_usd=sum(self._cost(u) or 0.0 for u in items),
            )
            for day, items in sorted(groups.items())
        ]

    async def recent_tool_calls(
        self, limit: int = 50, *, scope: GovernanceScope | None = None
    ) -> list[ToolCallActivityRow]:
        """Newest first."""
        calls = list(enumerate(self._tool_calls(scope)))
        calls.sort(key=lambda pair: (pair[1].created_at, pair[0]), reverse=True)
        return [
            ToolCallActivityRow(
                tool_call_id=tc.id,
                tool_name=tc.tool_name,
                tool_type=tc.tool_type,
                status=tc.status,
                thread_id=tc.thread_id or "",
                created_at=tc.created_at,
                run_id=tc.run_id,
                actor_ref=tc.actor_ref,
                policy_decision=tc.policy_decision,
                decided_by=tc.decided_by,
                reason=tc.error if tc.status in ("rejected", "expired", "failed") else None,
                input=tc.input,
            )
            for _, tc in calls[: clamp_limit(limit)]
        ]

    async def recent_threads(self, limit: int = 50, *, scope: GovernanceScope | None = None) -> list[ThreadActivityRow]:
        """Live threads (transient included), most recently updated first, with lifetime counts."""
        threads = [t for t in self._store.all_threads() if t.deleted_at is None and in_scope(scope, t.tenant_ref)]
        threads.sort(key=lambda t: (t.updated_at, t.id), reverse=True)
        threads = threads[: clamp_limit(limit)]
        wanted = {t.id for t in threads}
        messages: dict[str, int] = defaultdict(int)
        for m in self._store.all_messages():
            if m.thread_id in wanted:
                messages[m.thread_id] += 1
        tokens: dict[str, int] = defaultdict(int)
        for u in self._store.all_usage():
            if u.thread_id in wanted:
                tokens[u.thread_id] += u.input_tokens + u.output_tokens
        return [
            ThreadActivityRow(
                thread_id=t.id,
                title=t.title,
                actor_ref=t.actor_ref,
                message_count=messages[t.id],
                total_tokens=tokens[t.id],
                last_activity_at=t.updated_at,
            )
            for t in threads
        ]

    async def list_runs(self, query: RunQuery, *, scope: GovernanceScope | None = None) -> RunPage:
        """Exact-match filters, days on started_at; newest first; cursor = offset (invalid -> 0)."""
        start, end = day_bounds(query.from_day, query.to_day)
        runs = _newest_runs_first(
            r
            for r in self._runs(scope)
            if (query.actor is None or r.actor_ref == query.actor)
            and (query.agent is None or r.agent_name == query.agent)
            and (query.status is None or r.status == query.status)
            and _in_range(r.started_at, start, end)
        )
        offset = _offset(query.cursor)
        limit = clamp_limit(query.limit)
        page = runs[offset : offset + limit]
        more = offset + limit < len(runs)
        return RunPage(runs=[run_summary(r) for r in page], next_cursor=str(offset + limit) if more else None)

    async def run_detail(self, run_id: str, *, scope: GovernanceScope | None = None) -> RunDetail | None:
        """The run with its messages, tool calls, pending approvals and raw usage, oldest first."""
        run = next((r for r in self._runs(scope) if r.id == run_id), None)
        if run is None:
            return None
        messages = sorted((m for m in self._store.all_messages() if m.run_id == run_id), key=lambda m: m.created_at)
        calls = await self._store.list_tool_calls(run_id=run_id)
        call_rows = [_tool_call_row(tc) for tc in calls]
        return RunDetail(
            run=run_summary(run),
            messages=[_message_row(m) for m in messages],
            tool_calls=call_rows,
            approvals=[row for row in call_rows if row.status == "pending_approval"],
            usage=await self.run_usage(run_id),
        )

    async def run_usage(self, run_id: str, *, scope: GovernanceScope | None = None) -> list[RunUsageRow]:
        """The run's usage ledger rows, oldest first (`run_detail`'s `usage`: the inspector's)."""
        usage = sorted(
            (
                u
                for u in self._store.all_usage()
                if u.run_id == run_id and (scope is None or scope.covers(u.tenant_ref))
            ),
            key=lambda u: u.created_at,
        )
        return [
            RunUsageRow(
                model_id=u.model_id,
                purpose=u.purpose,
                input_tokens=u.input_tokens,
                output_tokens=u.output_tokens,
                cost_usd=u.cost_usd,
                created_at=u.created_at,
                price_id=u.price_id,
                cost_source=u.cost_source,
            )
            for u in usage
        ]

    async def pending_approvals(
        self, *, actor: str | None = None, limit: int = 50, scope: GovernanceScope | None = None
    ) -> list[PendingApprovalRow]:
        """Pending approvals oldest first; actor = the run's actor_ref (else the requester). Under a
        scope, the run's tenant decides (an approval whose run is gone is outside every scope)."""
        runs = {r.id: r for r in self._store.all_runs()}
        rows: list[PendingApprovalRow] = []
        pending = sorted(
            (a for a in self._store.all_approvals() if a.status == "pending"),
            key=lambda a: (a.created_at, a.tool_call_id),
        )
        for a in pending:
            run = runs.get(a.run_id)
            if scope is not None and (run is None or not scope.covers(run.tenant_ref)):
                continue
            actor_ref = run.actor_ref if run is not None else a.requested_by
            if actor is not None and actor_ref != actor:
                continue
            call = await self._store.get_tool_call(a.run_id, a.tool_call_id)
            rows.append(
                PendingApprovalRow(
                    tool_call_id=a.tool_call_id,
                    tool_name=a.tool_name,
                    input=call.input if call is not None else None,
                    thread_id=a.thread_id,
                    run_id=a.run_id,
                    actor_ref=actor_ref,
                    requested_at=a.created_at,
                )
            )
            if len(rows) >= clamp_limit(limit):
                break
        return rows

    async def per_tool_stats(
        self, from_day: date | None = None, to_day: date | None = None, *, scope: GovernanceScope | None = None
    ) -> list[PerToolStatRow]:
        """Per (tool name, tool type) on created_at; calls desc, then name asc, then type asc."""
        start, end = day_bounds(from_day, to_day)
        groups: dict[tuple[str, str], list[ToolCallRecord]] = defaultdict(list)
        for tc in self._tool_calls(scope):
            if _in_range(tc.created_at, start, end):
                groups[(tc.tool_name, tc.tool_type)].append(tc)
        result = [
            PerToolStatRow(
                tool_name=name,
                tool_type=kind,
                calls=len(items),
                failed=sum(1 for tc in items if tc.status == "failed"),
                rejected=sum(1 for tc in items if tc.status == "rejected"),
                avg_duration_ms=mean(tc.execution_ms for tc in items if tc.execution_ms is not None),
            )
            for (name, kind), items in groups.items()
        ]
        return sorted(result, key=lambda r: (-r.calls, r.tool_name, r.tool_type))

    async def retrieval_stats(
        self, from_day: date | None = None, to_day: date | None = None, *, scope: GovernanceScope | None = None
    ) -> RetrievalStats:
        """The RAG panel's figures over the newest `RETRIEVAL_WINDOW` inject-mode retrievals in the range."""
        start, end = day_bounds(from_day, to_day)
        rows = [
            tc
            for tc in self._tool_calls(scope)
            if tc.tool_name == RETRIEVE_TOOL and tc.message_id is None and _in_range(tc.created_at, start, end)
        ]
        rows.sort(key=lambda tc: tc.created_at, reverse=True)
        return summarize_retrievals((tc.created_at, tc.output) for tc in rows[:RETRIEVAL_WINDOW])

    async def run_reliability(
        self, from_day: date | None = None, to_day: date | None = None, *, scope: GovernanceScope | None = None
    ) -> RunReliability:
        """Outcomes of runs started in the range, by agent (runs desc, unnamed first, name asc), by day."""
        start, end = day_bounds(from_day, to_day)
        return reliability_of(r for r in self._runs(scope) if _in_range(r.started_at, start, end))

    async def thread_detail(
        self, thread_id: str, *, scope: GovernanceScope | None = None
    ) -> GovernanceThreadDetail | None:
        """The thread (soft-deleted included) with lifetime usage, newest 20 runs and newest 50 messages."""
        thread = next((t for t in self._store.all_threads() if t.id == thread_id), None)
        if thread is None or not in_scope(scope, thread.tenant_ref):
            return None
        usage = [u for u in self._store.all_usage() if u.thread_id == thread_id]
        runs = _newest_runs_first(r for r in self._store.all_runs() if r.thread_id == thread_id)
        messages = [m for m in self._store.all_messages() if m.thread_id == thread_id]
        newest_messages = sorted(messages, key=lambda m: (m.created_at, m.id), reverse=True)[:_THREAD_MESSAGES]
        return GovernanceThreadDetail(
            thread_id=thread.id,
            title=thread.title,
            actor_ref=thread.actor_ref,
            tenant_ref=thread.tenant_ref,
            persona=thread.persona,
            transient=thread.transient,
            created_at=thread.created_at,
            updated_at=thread.updated_at,
            deleted=thread.deleted_at is not None,
            usage=ThreadUsage(
                total_tokens=sum(u.input_tokens + u.output_tokens for u in usage),
                cost_usd=sum(self._cost(u) or 0.0 for u in usage) if usage else None,
                run_count=len(runs),
                message_count=len(messages),
            ),
            runs=[run_summary(r) for r in runs[:_THREAD_RUNS]],
            messages=[_message_row(m) for m in newest_messages],
        )

    # -- console: child runs for the inspector, the audit for a time range --

    async def child_runs(self, run_id: str, *, scope: GovernanceScope | None = None) -> list[RunSummaryRow]:
        """Runs delegated from `run_id`, oldest first."""
        runs = sorted((r for r in self._runs(scope) if r.parent_run_id == run_id), key=lambda r: r.started_at)
        return [run_summary(r) for r in runs]

    async def audit_rows(
        self, start: datetime, end: datetime, limit: int = 10_000, *, scope: GovernanceScope | None = None
    ) -> list[ToolCallAuditRow]:
        """Tool calls created in [start, end], oldest first, with their approval's requester and decision."""
        approvals = {(a.run_id, a.tool_call_id): a for a in self._store.all_approvals()}
        calls = sorted((c for c in self._tool_calls(scope) if start <= c.created_at <= end), key=lambda c: c.created_at)
        rows = []
        for c in calls[:limit]:
            a = approvals.get((c.run_id, c.id))
            rows.append(
                ToolCallAuditRow(
                    at=c.created_at,
                    run_id=c.run_id,
                    thread_id=c.thread_id,
                    tool_call_id=c.id,
                    tool_name=c.tool_name,
                    tool_type=c.tool_type,
                    status=c.status,
                    actor_ref=c.actor_ref,
                    tenant_ref=c.tenant_ref,
                    input=c.input,
                    policy_decision=c.policy_decision,
                    requested_by=a.requested_by if a else None,
                    decided_by=(a.decided_by if a else None) or c.decided_by,
                    decided_at=a.decided_at if a else None,
                    reason=(a.reason if a else None)
                    or (c.error if c.status in ("rejected", "expired", "failed") else None),
                    executed_at=c.executed_at,
                    execution_ms=c.execution_ms,
                )
            )
        return rows


def _offset(cursor: str | None) -> int:
    try:
        return max(int(cursor), 0) if cursor else 0
    except ValueError:
        return 0
