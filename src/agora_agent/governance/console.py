"""The console's views of a run: the inspector (a run as a waterfall), two runs side by side, the audit export.

Built from the store (messages with their usage JSON, tool-call audit rows, approval rows) and the
governance queries (usage ledger rows with their stored cost and price id, child runs). Times are UTC;
`offset_ms` of a step is from the run's start, so a UI can draw the waterfall without date arithmetic.

Model-call latency comes from the assistant message's usage JSON (`latency_ms`, recorded by the loop);
messages stored before the loop recorded it have none, so their start falls back to the previous step's end.
"""

from __future__ import annotations

import csv
import io
import json
from datetime import datetime, timedelta
from typing import Any, Literal, Protocol

from pydantic import BaseModel

from agora_agent.governance.audit import AuditEntry
from agora_agent.governance.gate import GovernanceScope
from agora_agent.governance.queries import GovernanceQueries, RunSummaryRow, RunUsageRow, run_summary
from agora_agent.records import MessageRecord, RecordReader, ToolCallRecord

__all__ = [
    "ConsoleQueries",
    "InspectorStep",
    "RunComparison",
    "RunInspection",
    "ToolCallAuditRow",
    "audit_csv",
    "audit_records",
    "compare_runs",
    "inspect_run",
]

MAX_DEPTH = 4  # nested delegations shown inline (the loop's default limit is 3)


class _Row(BaseModel):
    """Base of the console's views: Python names only (the web layer writes them in camelCase)."""


class ToolCallAuditRow(_Row):
    """One tool call as the audit sees it: who, what arguments, the policy decision, who decided, why."""

    at: datetime
    run_id: str
    thread_id: str
    tool_call_id: str
    tool_name: str
    tool_type: str
    status: str
    actor_ref: str
    tenant_ref: str | None = None
    input: Any = None
    policy_decision: str | None = None
    requested_by: str | None = None
    decided_by: str | None = None
    decided_at: datetime | None = None
    reason: str | None = None
    executed_at: datetime | None = None
    execution_ms: int | None = None


class ConsoleQueries(Protocol):
    """What the console needs beyond `GovernanceQueries` (both bundled implementations have it)."""

    async def child_runs(self, run_id: str, *, scope: GovernanceScope | None = None) -> list[RunSummaryRow]: ...

    async def audit_rows(
        self, start: datetime, end: datetime, limit: int = 10_000, *, scope: GovernanceScope | None = None
    ) -> list[ToolCallAuditRow]: ...


class InspectorStep(_Row):
    """One bar of the waterfall. `kind`: model | tool | approval | delegation | retrieval."""

    kind: Literal["model", "tool", "approval", "delegation", "retrieval"]
    id: str
    name: str
    status: str
    started_at: datetime
    ended_at: datetime | None
    offset_ms: int
    duration_ms: int | None
    detail: dict[str, Any]
    child: RunInspection | None = None


class RunInspection(_Row):
    """A run as a waterfall: its summary and its steps in start order (delegations carry their child run)."""

    run: RunSummaryRow
    steps: list[InspectorStep]
    content_captured: bool


InspectorStep.model_rebuild()


class RunComparison(_Row):
    """Two runs side by side, with what differs: input, tools used, tokens and cost."""

    a: RunInspection
    b: RunInspection
    diff: dict[str, Any]


def _ms(a: datetime, b: datetime) -> int:
    return int((b - a).total_seconds() * 1000)


def _console(queries: GovernanceQueries) -> ConsoleQueries | None:
    return queries if hasattr(queries, "child_runs") and hasattr(queries, "audit_rows") else None  # type: ignore[return-value]


async def _run_usage(queries: GovernanceQueries, run_id: str, scope: GovernanceScope | None) -> list[RunUsageRow]:
    """The run's usage ledger rows: the read model's `run_usage` (one query; both bundled ones have it) where it
    exists, else `run_detail`'s — which reads the run, its messages and calls too, all of which the inspector
    reads from the store anyway."""
    run_usage = getattr(queries, "run_usage", None)
    if run_usage is not None:
        rows: list[RunUsageRow] = await run_usage(run_id, scope=scope)
        return rows
    detail = await queries.run_detail(run_id, scope=scope)
    return list(detail.usage) if detail is not None else []


StepAdder = Any  # the `add` closure of `inspect_run`: (kind, id, name, status, start, end, **detail) -> InspectorStep


async def inspect_run(
    store: RecordReader,
    queries: GovernanceQueries,
    run_id: str,
    *,
    capture_content: bool = False,
    scope: GovernanceScope | None = None,
    _depth: int = 0,
) -> RunInspection | None:
    """The run as a waterfall, or None for an unknown run (or one outside the tenant `scope`). With
    `capture_content`, each model step carries its response (text and tool calls) and the first one the
    user's request."""
    record = await store.get_run(run_id)
    if record is None or (scope is not None and not scope.covers(record.tenant_ref)):
        return None
    usage = await _run_usage(queries, run_id, scope)
    messages = await store.list_messages(record.thread_id, run_id=run_id)
    calls = await store.list_tool_calls(run_id=run_id)
    console = _console(queries)
    children = await console.child_runs(run_id, scope=scope) if console is not None and _depth < MAX_DEPTH else []
    t0 = record.started_at
    steps: list[InspectorStep] = []

    def add(
        kind: Any, id: str, name: str, status: str, start: datetime, end: datetime | None, **extra: Any
    ) -> InspectorStep:
        item = InspectorStep(
            kind=kind,
            id=id,
            name=name,
            status=status,
            started_at=start,
            ended_at=end,
            offset_ms=max(_ms(t0, start), 0),
            duration_ms=_ms(start, end) if end is not None else None,
            detail=extra,
        )
        steps.append(item)
        return item

    _model_steps(add, messages, calls, usage, t0, capture_content)
    pending_children = list(children)
    for call in calls:
        await _tool_steps(add, store, queries, call, pending_children, capture_content, scope, _depth)
    steps.sort(key=lambda s: (s.started_at, 0 if s.kind == "model" else 1))
    return RunInspection(run=run_summary(record), steps=steps, content_captured=capture_content)


def _model_steps(
    add: StepAdder,
    messages: list[MessageRecord],
    calls: list[ToolCallRecord],
    usage: list[RunUsageRow],
    t0: datetime,
    capture_content: bool,
) -> None:
    """One step per assistant message, matched to the run's usage ledger rows in order."""
    users = [m for m in messages if m.role == "user"]
    boundary = users[0].created_at if users else t0
    call_ends = sorted(c.executed_at or c.created_at for c in calls)
    for i, message in enumerate(m for m in messages if m.role == "assistant"):
        meta = message.usage or {}
        end = message.created_at
        latency = meta.get("latency_ms")
        if isinstance(latency, int | float):
            start = end - timedelta(milliseconds=latency)
        else:  # recorded before latencies were kept: from the previous step's end
            earlier = [t for t in call_ends if t <= end]
            start = max([boundary, *earlier[-1:]])
        ledger = usage[i] if i < len(usage) else None
        extra: dict[str, Any] = {
            "model": ledger.model_id if ledger else None,
            "input_tokens": meta.get("input_tokens"),
            "output_tokens": meta.get("output_tokens"),
            "cache_read_tokens": meta.get("cache_read_tokens"),
            "cost_usd": ledger.cost_usd if ledger else meta.get("cost_usd"),
            "cost_source": ledger.cost_source if ledger else None,
            "price_id": ledger.price_id if ledger else None,
            "finish_reason": meta.get("finish_reason") or ("tool_calls" if message.tool_calls else "stop"),
            "latency_ms": latency,
        }
        if capture_content:
            extra["response"] = {
                "text": message.content,
                "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.input} for c in message.tool_calls or ()],
            }
            if i == 0 and users:
                extra["request"] = {"user": users[0].content}
        add("model", message.id, f"chat {extra['model'] or ''}".strip(), "completed", start, end, **extra)


async def _tool_steps(
    add: StepAdder,
    store: RecordReader,
    queries: GovernanceQueries,
    call: ToolCallRecord,
    children: list[RunSummaryRow],
    capture_content: bool,
    scope: GovernanceScope | None,
    depth: int,
) -> None:
    """A tool call's bars: its approval wait (actions), then its execution (or the delegated child run)."""
    common: dict[str, Any] = {
        "tool_type": call.tool_type,
        "arguments": call.input,
        "policy_decision": call.policy_decision,
        "idempotency_key": call.idempotency_key,
        "execution_ms": call.execution_ms,
        "actor": call.actor_ref,
        "executed_by": call.executed_by_ref,
        "decided_by": call.decided_by,
        "error": call.error,
        "output": call.output,
    }
    start = call.created_at
    if call.tool_type == "action":
        approval = await store.get_approval(call.run_id, call.id)
        if approval is not None:
            add(
                "approval",
                f"{call.id}:approval",
                f"approval {call.tool_name}",
                approval.status,
                approval.created_at,
                approval.decided_at,
                requested_by=approval.requested_by,
                decided_by=approval.decided_by,
                decided_at=approval.decided_at,
                reason=approval.reason,
                policy_decision=call.policy_decision,
                approver_roles=list(approval.approver_roles or ()),
                deadline=approval.deadline,
            )
            if approval.decided_at is not None:
                start = approval.decided_at
            if call.status in ("rejected", "expired", "pending_approval"):
                return  # nothing ran: the approval bar is the whole story
    end = call.executed_at
    if end is not None and call.execution_ms is not None and call.tool_type != "agent":
        start = max(start, end - timedelta(milliseconds=call.execution_ms))
    if call.tool_name == "retrieve" and call.message_id is None:
        add("retrieval", call.id, "retrieve", call.status, start, end, **common)
        return
    if call.tool_type != "agent":
        add("tool", call.id, call.tool_name, call.status, start, end, **common)
        return
    # Delegations start their child runs in call order, so the n-th agent call is the n-th child run.
    child = children.pop(0) if children and call.status in ("executed", "failed", "started") else None
    item = add(
        "delegation",
        call.id,
        call.tool_name,
        call.status,
        start,
        end,
        **common,
        child_run_id=child.run_id if child else None,
    )
    if child is not None:
        item.child = await inspect_run(
            store, queries, child.run_id, capture_content=capture_content, scope=scope, _depth=depth + 1
        )


async def compare_runs(
    store: RecordReader,
    queries: GovernanceQueries,
    a: str,
    b: str,
    *,
    capture_content: bool = False,
    scope: GovernanceScope | None = None,
) -> RunComparison | None:
    """Two runs side by side; None when either is unknown (or outside the tenant `scope`)."""
    left = await inspect_run(store, queries, a, capture_content=capture_content, scope=scope)
    right = await inspect_run(store, queries, b, capture_content=capture_content, scope=scope)
    if left is None or right is None:
        return None

    async def first_input(run_id: str, thread_id: str) -> str | None:
        users = [m for m in await store.list_messages(thread_id, run_id=run_id) if m.role == "user"]
        return users[0].content if users else None

    def tools(x: RunInspection) -> list[str]:
        return [s.name for s in x.steps if s.kind in ("tool", "delegation", "retrieval")]

    ta, tb = tools(left), tools(right)
    cost_a, cost_b = left.run.cost_usd, right.run.cost_usd
    diff = {
        "input": {
            "a": await first_input(a, left.run.thread_id),
            "b": await first_input(b, right.run.thread_id),
        },
        "tools": {"a": ta, "b": tb, "only_a": sorted(set(ta) - set(tb)), "only_b": sorted(set(tb) - set(ta))},
        "tokens": {
            "a": left.run.input_tokens + left.run.output_tokens,
            "b": right.run.input_tokens + right.run.output_tokens,
        },
        "cost_usd": {
            "a": cost_a,
            "b": cost_b,
            "delta": (cost_b - cost_a) if cost_a is not None and cost_b is not None else None,
        },
        "duration_ms": {"a": left.run.duration_ms, "b": right.run.duration_ms},
        "status": {"a": left.run.status, "b": right.run.status},
    }
    return RunComparison(a=left, b=right, diff=diff)


AUDIT_COLUMNS = (
    "kind",
    "at",
    "actor",
    "tenant",
    "run_id",
    "thread_id",
    "tool_call_id",
    "tool",
    "tool_type",
    "status",
    "policy_decision",
    "requested_by",
    "decided_by",
    "decided_at",
    "reason",
    "arguments",
    "action",
    "target",
    "detail",
)


def audit_records(rows: list[ToolCallAuditRow], changes: list[AuditEntry]) -> list[dict[str, Any]]:
    """Tool-call audit rows and governance changes as one list of flat records, oldest first."""
    out: list[dict[str, Any]] = []
    for r in rows:
        out.append(
            {
                "kind": "tool_call",
                "at": r.at.isoformat(),
                "actor": r.actor_ref,
                "tenant": r.tenant_ref,
                "run_id": r.run_id,
                "thread_id": r.thread_id,
                "tool_call_id": r.tool_call_id,
                "tool": r.tool_name,
                "tool_type": r.tool_type,
                "status": r.status,
                "policy_decision": r.policy_decision,
                "requested_by": r.requested_by,
                "decided_by": r.decided_by,
                "decided_at": r.decided_at.isoformat() if r.decided_at else None,
                "reason": r.reason,
                "arguments": r.input,
                "action": None,
                "target": None,
                "detail": None,
            }
        )
    for e in changes:
        out.append(
            {
                **dict.fromkeys(AUDIT_COLUMNS),
                "kind": "change",
                "at": e.at.isoformat(),
                "actor": e.actor_ref,
                "action": e.action,
                "target": e.target,
                "detail": e.detail,
            }
        )
    out.sort(key=lambda r: str(r["at"]))
    return out


def audit_csv(records: list[dict[str, Any]]) -> str:
    """The records as CSV (JSON-encoded `arguments` and `detail`)."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(AUDIT_COLUMNS), lineterminator="\n")
    writer.writeheader()
    for record in records:
        row = dict(record)
        for key in ("arguments", "detail"):
            if row.get(key) is not None:
                row[key] = json.dumps(row[key], ensure_ascii=False, default=str)
        writer.writerow(row)
    return buffer.getvalue()
