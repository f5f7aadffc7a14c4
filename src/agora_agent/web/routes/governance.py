"""The governance routes over the `GovernanceQueries` (spend, usage, runs, threads, approvals, pricing).

Mounting:
- no governance queries (`governance_queries=False`, or a custom store without one): nothing is mounted;
- governance queries: `GET approvals/mine` (the caller's own pending approvals) is mounted;
- governance queries AND `governance_authorize`: the `governance/*` read routes too (among them `governance/grant`,
  what the caller's grant covers), each answering 401 (no identity), then 403 (gate refuses); without the gate a
  warning is logged once at start-up;
- `governance/pricing` (GET/POST) only when a pricing store is configured as well.

Rows naming an actor get `actorLabel` from `config.actor_directory`: one batched
`resolve_display` per response, unknown refs left unlabelled, a failing directory ignored.
`limit` is parsed like the reference: leading integer, else 50; non-positive -> 50; max 200.
"""

from __future__ import annotations

import logging
import re
from datetime import UTC, date, datetime
from enum import Enum
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, ConfigDict
from starlette.responses import JSONResponse

from agora_agent.config import AgentConfig
from agora_agent.errors import InvalidRequestError, NotFoundError
from agora_agent.governance.gate import GovernanceScope, scope_of
from agora_agent.governance.price_changes import set_price
from agora_agent.governance.pricing import ModelPrice, PricingStore
from agora_agent.governance.queries import (
    ActorSpendRow,
    GovernanceQueries,
    GovernanceThreadDetail,
    ModelSpendRow,
    PendingApprovalRow,
    PerToolStatRow,
    RunDetail,
    RunQuery,
    RunReliability,
    RunSummaryRow,
    ThreadActivityRow,
    ToolCallActivityRow,
    UsageTrendPoint,
    clamp_limit,
)
from agora_agent.governance.retrieval_stats import RetrievalStats
from agora_agent.service import AgentService
from agora_agent.web.deps import ActorDep, CallerDep, GrantDep, ServiceDep, error_responses, governance_grant
from agora_agent.web.schemas import ErrorBody, GrantOut, OkResponse, PriceOut, PriceUpsertRequest, wire_dump, wire_name

__all__ = ["add_routes", "governance_mount_plan", "parse_limit"]

logger = logging.getLogger("agora_agent.web")

LimitQ = Annotated[str | None, Query(description="Rows to return: default 50, at most 200.")]
FromQ = Annotated[date | None, Query(alias="from", description="First UTC day (YYYY-MM-DD), inclusive.")]
ToQ = Annotated[date | None, Query(alias="to", description="Last UTC day (YYYY-MM-DD), inclusive.")]

GATE_WARNING = (
    "agora-agent: governance queries are configured but `governanceAuthorize` (AgentConfig.governance_authorize) "
    "is not set, so the governance routes and the dashboard are NOT mounted; only GET {prefix}/approvals/mine is. "
    "Set governance_authorize=lambda actor, request: 'admin' in actor.roles (or `governanceAuthorize: () => true` "
    "to open them to every authenticated caller) to mount them."
)


class _Wire(BaseModel):
    model_config = ConfigDict(alias_generator=wire_name, populate_by_name=True)


class _Labelled(_Wire):
    actor_label: str | None = None


class ActorSpendRowOut(ActorSpendRow, _Labelled):
    """One actor's spend and tokens over the range, with the actor's display name (`actorLabel`)."""


class ThreadActivityRowOut(ThreadActivityRow, _Labelled):
    """A recent thread with its counts, with the owner's display name (`actorLabel`)."""


class RunSummaryRowOut(RunSummaryRow, _Labelled):
    """A run as listed, with the actor's display name (`actorLabel`)."""


class RunPageOut(_Wire):
    """One page of runs, newest first: `{runs, nextCursor}` (pass `nextCursor` back for the next page)."""

    runs: list[RunSummaryRowOut]
    next_cursor: str | None


class RunDetailOut(RunDetail):
    """The whole trace of one run, the run with its actor's display name (`actorLabel`)."""

    run: RunSummaryRowOut  # a subclass: same wire shape plus the label


class PendingApprovalRowOut(PendingApprovalRow, _Labelled):
    """An approval awaiting a decision, with the requester's display name (`actorLabel`)."""


class GovernanceThreadDetailOut(GovernanceThreadDetail, _Labelled):
    """A thread with its runs and messages, display names (`actorLabel`) on the thread and on each run."""

    runs: list[RunSummaryRowOut]  # type: ignore[assignment]  # docs-only model: same rows plus the label


def parse_limit(raw: str | None) -> int:
    """`parseInt` semantics (leading integer), non-finite or <= 0 -> 50, clamp 200."""
    match = re.match(r"\s*([+-]?\d+)", raw or "")
    return clamp_limit(int(match.group(1)) if match else None)


def governance_mount_plan(config: AgentConfig) -> tuple[bool, bool, bool]:
    """(governance queries resolve, governance routes mounted, pricing routes mounted) for a config.

    Decided when the router is built, before the service connects: governance queries resolve when they are
    given, or by default for the memory and SQL stores (the service builds their twin in `start()`).
    """
    setting = config.governance_queries
    if setting is False:
        has_queries = False
    elif setting is not None and setting is not True:
        has_queries = True
    else:
        from agora_agent.stores.memory import MemoryAgentStore

        has_queries = config.store is None or isinstance(config.store, str | MemoryAgentStore)
    gated = has_queries and config.governance_authorize is not None
    return has_queries, gated, gated and config.pricing is not False


def _rows(items: list[Any]) -> list[dict[str, Any]]:
    return [wire_dump(i) for i in items]


async def _label(directory: Any, targets: list[dict[str, Any]]) -> None:
    """Add `actorLabel` in place; one batched call; failures and unknown refs leave rows as they are."""
    if directory is None:
        return
    refs = sorted({t["actorRef"] for t in targets if isinstance(t.get("actorRef"), str) and t["actorRef"]})
    if not refs:
        return
    try:
        labels = await directory.resolve_display(refs)
    except Exception:
        logger.warning("agora-agent: actor directory failed; rows stay unlabelled", exc_info=True)
        return
    for target in targets:
        label = labels.get(target.get("actorRef")) if isinstance(labels, dict) else None
        if isinstance(label, str):
            target["actorLabel"] = label


def _today() -> date:
    return datetime.now(UTC).date()


def _queries(service: AgentService) -> GovernanceQueries:
    queries = service.governance_queries
    if queries is None:  # the configured store turned out to have no governance queries
        raise NotFoundError("not found")
    return queries


def _pricing(service: AgentService) -> PricingStore:
    store = service.pricing
    if store is None:
        raise NotFoundError("not found")
    return store


async def my_approvals(service: ServiceDep, actor: ActorDep, limit: LimitQ = None) -> JSONResponse:
    """The caller's own pending approvals, oldest first (no gate needed)."""
    rows = _rows(await _queries(service).pending_approvals(actor=actor.id, limit=parse_limit(limit)))
    await _label(service.config.actor_directory, rows)
    return JSONResponse(rows)


async def _scope(grant: GrantDep) -> GovernanceScope | None:
    """FastAPI dependency: the tenant filter of the caller's grant (None for a global admin)."""
    return scope_of(grant)


ScopeDep = Annotated[GovernanceScope | None, Depends(_scope)]


async def spend_by_model(service: ServiceDep, scope: ScopeDep, from_: FromQ = None, to: ToQ = None) -> JSONResponse:
    """Spend per model; both days default to today (UTC)."""
    rows = await _queries(service).spend_by_model(from_ or _today(), to or _today(), scope=scope)
    return JSONResponse(_rows(rows))


async def spend_by_actor(service: ServiceDep, scope: ScopeDep, from_: FromQ = None, to: ToQ = None) -> JSONResponse:
    """Spend per actor, with labels; both days default to today (UTC)."""
    rows = _rows(await _queries(service).spend_by_actor(from_ or _today(), to or _today(), scope=scope))
    await _label(service.config.actor_directory, rows)
    return JSONResponse(rows)


async def usage_trend(service: ServiceDep, scope: ScopeDep, from_: FromQ = None, to: ToQ = None) -> JSONResponse:
    """Tokens and cost per UTC day with usage."""
    return JSONResponse(_rows(await _queries(service).usage_trend(from_ or _today(), to or _today(), scope=scope)))


async def recent_tool_calls(service: ServiceDep, scope: ScopeDep, limit: LimitQ = None) -> JSONResponse:
    """Tool calls, newest first."""
    return JSONResponse(_rows(await _queries(service).recent_tool_calls(parse_limit(limit), scope=scope)))


async def recent_threads(service: ServiceDep, scope: ScopeDep, limit: LimitQ = None) -> JSONResponse:
    """The most recently active threads, with labels."""
    rows = _rows(await _queries(service).recent_threads(parse_limit(limit), scope=scope))
    await _label(service.config.actor_directory, rows)
    return JSONResponse(rows)


async def thread_detail(service: ServiceDep, scope: ScopeDep, thread_id: str) -> JSONResponse:
    """Any thread with its runs (soft-deleted ones too, marked `deleted: true`); unknown -> 404 (for a
    tenant admin, another tenant's thread is unknown too).

    A governance adapter without `thread_detail` answers 501.
    """
    queries = _queries(service)
    if getattr(queries, "thread_detail", None) is None:
        return JSONResponse({"error": "this governance adapter does not support thread detail"}, status_code=501)
    detail = await queries.thread_detail(thread_id, scope=scope)
    if detail is None:
        raise NotFoundError("thread not found")
    body = wire_dump(detail)
    await _label(service.config.actor_directory, [body, *body["runs"]])
    return JSONResponse(body)


async def list_runs(
    service: ServiceDep,
    scope: ScopeDep,
    actor: Annotated[str | None, Query(description="Exact actor ref")] = None,
    agent: Annotated[str | None, Query(description="Exact agent name")] = None,
    status: Annotated[
        str | None,
        Query(
            description="running | queued (running, waiting in the durable run queue) | completed | failed | cancelled"
        ),
    ] = None,
    from_: FromQ = None,
    to: ToQ = None,
    cursor: Annotated[str | None, Query(description="`nextCursor` of the previous page")] = None,
    limit: LimitQ = None,
) -> JSONResponse:
    """Runs, newest first, filtered, one page at a time (pass `nextCursor` back for the next)."""
    if cursor is not None and (not cursor.strip().isdigit() or len(cursor.strip()) > 18):  # a 64-bit offset
        raise InvalidRequestError(f"cursor must be the nextCursor of a previous page (a number), got {cursor!r}")
    page = await _queries(service).list_runs(
        RunQuery(
            actor=actor,
            agent=agent,
            status="running" if status == "queued" else status,
            from_day=from_,
            to_day=to,
            cursor=cursor.strip() if cursor else None,
            limit=parse_limit(limit),
        ),
        scope=scope,
    )
    body = wire_dump(page)
    await _mark_queued(service, body["runs"])
    if status == "queued":  # a page of running runs, keeping the queued ones (the cursor stays valid)
        body["runs"] = [r for r in body["runs"] if r["status"] == "queued"]
    await _label(service.config.actor_directory, body["runs"])
    return JSONResponse(body)


async def _mark_queued(service: AgentService, rows: list[dict[str, Any]]) -> None:
    """A running run that waits in the durable run queue is listed `queued` (its stream says so too)."""
    queued = await service.queued_runs([r["id"] for r in rows if r["status"] == "running"])
    for row in rows:
        if row["id"] in queued:
            row["status"] = "queued"


async def run_detail(service: ServiceDep, scope: ScopeDep, run_id: str) -> JSONResponse:
    """The whole trace of a run: messages, tool calls, usage; unknown (or another tenant's) -> 404."""
    detail = await _queries(service).run_detail(run_id, scope=scope)
    if detail is None:
        raise NotFoundError("run not found")
    body = wire_dump(detail)
    await _mark_queued(service, [body["run"]])
    await _label(service.config.actor_directory, [body["run"]])
    return JSONResponse(body)


async def pending_approvals(
    service: ServiceDep,
    scope: ScopeDep,
    actor: Annotated[str | None, Query(description="Only this actor's")] = None,
    limit: LimitQ = None,
) -> JSONResponse:
    """Every actor's pending approvals (a tenant admin: their tenants'), oldest first, with labels."""
    rows = _rows(await _queries(service).pending_approvals(actor=actor, limit=parse_limit(limit), scope=scope))
    await _label(service.config.actor_directory, rows)
    return JSONResponse(rows)


async def tool_stats(service: ServiceDep, scope: ScopeDep, from_: FromQ = None, to: ToQ = None) -> JSONResponse:
    """Per tool: calls, failures, rejections and mean duration (both days optional)."""
    return JSONResponse(_rows(await _queries(service).per_tool_stats(from_, to, scope=scope)))


async def reliability(service: ServiceDep, scope: ScopeDep, from_: FromQ = None, to: ToQ = None) -> JSONResponse:
    """Run outcomes and rates, per agent and per day (both days optional)."""
    result = await _queries(service).run_reliability(from_, to, scope=scope)
    return JSONResponse(wire_dump(result))


async def rag_stats(service: ServiceDep, scope: ScopeDep, from_: FromQ = None, to: ToQ = None) -> JSONResponse:
    """Inject-mode retrievals: count, zero-hit rate, mean passages, per-day trend (both days optional).
    501 when the configured governance queries do not provide them."""
    method = getattr(_queries(service), "retrieval_stats", None)
    if method is None:
        return JSONResponse({"error": "this governance adapter does not support retrieval stats"}, status_code=501)
    stats: RetrievalStats = await method(from_, to, scope=scope)
    return JSONResponse(wire_dump(stats))


async def list_prices(service: ServiceDep) -> JSONResponse:
    """The current price of each model (cache rates omitted when unset); every governance admin may read them."""
    prices = [
        PriceOut(
            model_id=p.model_id,
            input_price_per_1m=p.input_price_per_1m,
            output_price_per_1m=p.output_price_per_1m,
            cache_write_price_per_1m=p.cache_write_price_per_1m,
            cache_read_price_per_1m=p.cache_read_price_per_1m,
            effective_from=p.effective_from,
        )
        for p in await _pricing(service).list_current_prices()
    ]
    return JSONResponse([p.model_dump(by_alias=True, mode="json", exclude_none=True) for p in prices])


async def upsert_price(service: ServiceDep, caller: CallerDep, body: PriceUpsertRequest) -> OkResponse:
    """Set a model's current price (atomically supersedes the previous one; audited). A rate beyond 10× (or
    1/10) of the current one needs `"confirm": true`, else 422 saying why. Prices are every tenant's, so
    this needs a global governance grant (a tenant admin gets 403)."""
    await service.global_grant(caller)
    price = ModelPrice(
        model_id=body.model_id.strip(),
        input_price_per_1m=body.input_price_per_1m,
        output_price_per_1m=body.output_price_per_1m,
        cache_write_price_per_1m=body.cache_write_price_per_1m,
        cache_read_price_per_1m=body.cache_read_price_per_1m,
    )
    await set_price(_pricing(service), service.audit, price, actor_ref=caller.actor.id, confirm=body.confirm)
    return OkResponse()


async def my_grant(grant: GrantDep) -> JSONResponse:
    """What the caller's governance grant covers: `global`, or the tenants of a tenant admin. The dashboard
    reads it to offer only the edits the grant allows (prices and `*` budget rules need a global grant)."""
    scope = scope_of(grant)
    out = GrantOut(scope="global") if scope is None else GrantOut(scope="tenants", tenants=sorted(scope.tenants))
    return JSONResponse(wire_dump(out))


_GATED_READS: tuple[tuple[str, Any, Any], ...] = (
    ("/grant", GrantOut, my_grant),
    ("/spend/model", list[ModelSpendRow], spend_by_model),
    ("/spend/actor", list[ActorSpendRowOut], spend_by_actor),
    ("/usage/trend", list[UsageTrendPoint], usage_trend),
    ("/tool-calls/recent", list[ToolCallActivityRow], recent_tool_calls),
    ("/threads/recent", list[ThreadActivityRowOut], recent_threads),
    ("/threads/{thread_id}", GovernanceThreadDetailOut, thread_detail),
    ("/runs", RunPageOut, list_runs),
    ("/runs/{run_id}", RunDetailOut, run_detail),
    ("/approvals/pending", list[PendingApprovalRowOut], pending_approvals),
    ("/tools/stats", list[PerToolStatRow], tool_stats),
    ("/reliability", RunReliability, reliability),
    ("/rag/stats", RetrievalStats, rag_stats),
)


def add_routes(router: APIRouter, config: AgentConfig) -> None:
    """Add `approvals/mine` and the `governance/*` routes per `governance_mount_plan` (see the module docstring)."""
    has_queries, gated, pricing_routes = governance_mount_plan(config)
    if not has_queries:
        return
    tags: list[str | Enum] = ["governance"]
    router.get(
        "/approvals/mine", response_model=list[PendingApprovalRowOut], responses=error_responses(404), tags=tags
    )(my_approvals)
    if not gated:
        logger.warning(GATE_WARNING.format(prefix=config.prefix))
        return
    gated_deps = [Depends(governance_grant)]
    responses = error_responses(403, 404, 422)
    for path, model, endpoint in _GATED_READS:
        optional = endpoint in (thread_detail, rag_stats)
        extra: dict[int | str, dict[str, Any]] = {501: {"model": ErrorBody}} if optional else {}
        router.get(
            "/governance" + path,
            response_model=model,
            responses={**responses, **extra},
            tags=tags,
            dependencies=gated_deps,
        )(endpoint)
    if not pricing_routes:
        return
    router.get(
        "/governance/pricing", response_model=list[PriceOut], responses=responses, tags=tags, dependencies=gated_deps
    )(list_prices)
    router.post(
        "/governance/pricing", response_model=OkResponse, responses=responses, tags=tags, dependencies=gated_deps
    )(upsert_price)
