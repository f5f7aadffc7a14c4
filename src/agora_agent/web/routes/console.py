"""The console's routes, gated like every `governance/*` route:

- `GET governance/runs/{run_id}/inspect` — the run as a waterfall (model calls, tool calls, approval waits,
  delegations with their child runs, retrievals);
- `GET governance/compare?a=<run>&b=<run>` — two runs side by side with what differs;
- `GET governance/audit?from=&to=&format=json|csv` — tool-call audit rows and governance changes for a
  range of UTC days, as JSON or a CSV download;
- `GET governance/live` — SSE: one `change` event per lifecycle event of this process (run started/ended,
  tool call status, approval requested/decided/expired) with the pending-approval count, so the inbox, the
  runs list and the count badge update without polling. Events of other processes are not seen.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, date, datetime, time
from enum import Enum
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query
from starlette.responses import JSONResponse, Response

from agora_agent.config import AgentConfig
from agora_agent.errors import InvalidRequestError, NotFoundError
from agora_agent.governance.console import (
    RunComparison,
    RunInspection,
    ToolCallAuditRow,
    audit_csv,
    audit_records,
    compare_runs,
    inspect_run,
)
from agora_agent.governance.queries import GovernanceQueries
from agora_agent.observability.events import (
    AgentEvent,
    ApprovalDecided,
    ApprovalExpired,
    ApprovalRequested,
    ToolCallStatusChanged,
)
from agora_agent.service import AgentService
from agora_agent.web.deps import ContextDep, ServiceDep, error_responses, governance_grant
from agora_agent.web.routes.governance import ScopeDep, governance_mount_plan
from agora_agent.web.schemas import wire_dump, wire_keys, wire_name
from agora_agent.web.sse import event_source_response

__all__ = ["add_routes"]

FromQ = Annotated[date | None, Query(alias="from", description="First UTC day (YYYY-MM-DD), inclusive.")]
ToQ = Annotated[date | None, Query(alias="to", description="Last UTC day (YYYY-MM-DD), inclusive.")]
_LIVE_KINDS = ("run.", "approval.", "tool_call.", "quota.", "budget.")


def _queries(service: AgentService) -> GovernanceQueries:
    queries = service.governance_queries
    if queries is None:
        raise NotFoundError("not found")
    return queries


async def inspect(service: ServiceDep, scope: ScopeDep, run_id: str) -> JSONResponse:
    """The run as a waterfall; unknown (or another tenant's) -> 404. Content (model responses) only with
    content capture on."""
    inspection = await inspect_run(
        service.store, _queries(service), run_id, capture_content=service.telemetry.capture_content, scope=scope
    )
    if inspection is None:
        raise NotFoundError("run not found")
    return JSONResponse(_wire_inspection(wire_dump(inspection)))


async def compare(
    service: ServiceDep,
    scope: ScopeDep,
    a: Annotated[str, Query(min_length=1, description="First run id")],
    b: Annotated[str, Query(min_length=1, description="Second run id")],
) -> JSONResponse:
    """Two runs side by side: both waterfalls and the differences (input, tools, tokens, cost)."""
    comparison = await compare_runs(
        service.store, _queries(service), a, b, capture_content=service.telemetry.capture_content, scope=scope
    )
    if comparison is None:
        raise NotFoundError("run not found")
    body = wire_dump(comparison)
    for side in ("a", "b"):
        _wire_inspection(body[side])
    body["diff"] = {wire_name(k): wire_keys(v) if isinstance(v, dict) else v for k, v in body["diff"].items()}
    return JSONResponse(body)


def _wire_inspection(body: dict[str, Any]) -> dict[str, Any]:
    """A dumped `RunInspection` with each step's `detail` keys (and a captured `response`'s) in camelCase, child
    runs included; the values — tool arguments and output — keep their own keys."""
    for step in body["steps"]:
        detail = step["detail"]
        if isinstance(detail.get("response"), dict):
            detail["response"] = wire_keys(detail["response"])
        step["detail"] = wire_keys(detail)
        if step.get("child"):
            _wire_inspection(step["child"])
    return body


async def audit(
    service: ServiceDep,
    scope: ScopeDep,
    from_: FromQ = None,
    to: ToQ = None,
    format: Annotated[Literal["json", "csv"], Query(description="json (default) or csv")] = "json",
) -> Response:
    """The audit of a range of UTC days (default: today): every tool call with its actor, arguments, policy
    decision, requester, decider and reason, plus governance changes (prices, re-pricing, budgets). A tenant
    admin gets their tenants' tool calls and budget changes only: other governance changes are global."""
    first, last = from_ or datetime.now(UTC).date(), to or datetime.now(UTC).date()
    if first > last:
        first, last = last, first
    if (last - first).days > 366:
        raise InvalidRequestError("the audit export covers at most 366 days; narrow from/to")
    start = datetime.combine(first, time.min, tzinfo=UTC)
    end = datetime.combine(last, time.max, tzinfo=UTC)  # not "next midnight - 1 µs": 9999-12-31 has none
    queries = _queries(service)
    audit_rows = getattr(queries, "audit_rows", None)
    if audit_rows is None:
        return JSONResponse({"error": "this governance adapter does not support the audit export"}, status_code=501)
    rows: list[ToolCallAuditRow] = await audit_rows(start, end, scope=scope)
    changes = await service.audit.entries(since=start, until=end)
    if scope is not None:  # only changes that name a tenant in scope (budget rules); prices are global
        changes = [e for e in changes if scope.covers(e.detail.get("tenant"))]
    records = [_wire_change(r) for r in audit_records(rows, changes)]
    if format == "csv":
        name = f"agora-audit-{first.isoformat()}-{last.isoformat()}.csv"
        return Response(
            audit_csv(records),
            media_type="text/csv; charset=utf-8",
            headers={"content-disposition": f'attachment; filename="{name}"'},
        )
    return JSONResponse({"from": first.isoformat(), "to": last.isoformat(), "records": records})


def _wire_change(record: dict[str, Any]) -> dict[str, Any]:
    """A governance change's `detail` keys in camelCase, as the export has always written them (`beforeUsd`)."""
    if record["kind"] == "change" and isinstance(record["detail"], dict):
        return {**record, "detail": wire_keys(record["detail"])}
    return record


def _change(event: AgentEvent, pending: int | None) -> dict[str, Any]:
    body: dict[str, Any] = {"kind": event.kind, "runId": event.run_id, "threadId": event.thread_id}
    body["actorRef"] = event.actor_id
    if isinstance(event, ToolCallStatusChanged | ApprovalRequested | ApprovalDecided | ApprovalExpired):
        body["toolCallId"] = event.tool_call_id
        body["toolName"] = event.tool_name
    if isinstance(event, ToolCallStatusChanged):
        body["status"] = event.status
    if pending is not None:
        body["pendingApprovals"] = pending
    return body


async def live(service: ServiceDep, context: ContextDep, scope: ScopeDep) -> Response:
    """SSE of this process's lifecycle events (`change`), starting with the pending-approval count (`hello`).
    A tenant admin sees only events and approvals of their tenants."""
    queries = _queries(service)

    async def pending_count() -> int:
        return len(await queries.pending_approvals(limit=200, scope=scope))

    async def body() -> AsyncIterator[bytes]:
        with service.telemetry.listen() as queue:
            yield _sse("hello", {"pendingApprovals": await pending_count()})
            while True:
                event = await queue.get()
                if not event.kind.startswith(_LIVE_KINDS):
                    continue
                if scope is not None and not scope.covers(event.tenant_ref):
                    continue
                count = await pending_count() if event.kind.startswith("approval.") else None
                yield _sse("change", _change(event, count))

    return event_source_response(body(), ping_seconds=context.ping_seconds)


def _sse(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def add_routes(router: APIRouter, config: AgentConfig) -> None:
    """Add the console routes where the governance routes are mounted (same gate)."""
    _, gated, _ = governance_mount_plan(config)
    if not gated:
        return
    tags: list[str | Enum] = ["governance"]
    deps = [Depends(governance_grant)]
    responses = error_responses(403, 404, 422)
    router.get(
        "/governance/runs/{run_id}/inspect",
        response_model=RunInspection,
        responses=responses,
        tags=tags,
        dependencies=deps,
    )(inspect)
    router.get("/governance/compare", response_model=RunComparison, responses=responses, tags=tags, dependencies=deps)(
        compare
    )
    router.get(
        "/governance/audit",
        responses={**responses, 200: {"content": {"application/json": {}, "text/csv": {}}}},
        tags=tags,
        dependencies=deps,
    )(audit)
    router.get(
        "/governance/live",
        responses={**responses, 200: {"content": {"text/event-stream": {}}}},
        tags=tags,
        dependencies=deps,
    )(live)
