"""The governance routes (REFERENCE HTTP-14..29) over the `GovernanceQueries` read-model.

Mounting (HTTP-14..16, GGATE-02):
- no read-model (`governance_queries=False`, or a custom store without one): nothing is mounted;
- a read-model: `GET approvals/mine` (the caller's own pending approvals) is mounted;
- a read-model AND `governance_authorize`: the eleven `governance/*` routes too, each answering 401
  (no identity), then 403 (gate refuses); without the gate a warning is logged once at start-up;
- `governance/pricing` (GET/POST) only when a pricing store is configured as well.

Rows naming an actor get `actorLabel` from `config.actor_directory` (GQ-12): one batched
`resolve_display` per response, unknown refs left unlabelled, a failing directory ignored.
`limit` is parsed like the reference (HTTP-16): leading integer, else 50; non-positive -> 50; max 200.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from datetime import UTC, date, datetime
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, ConfigDict
from starlette.responses import JSONResponse

from agora_agent.actors import Actor
from agora_agent.config import AgentConfig
from agora_agent.errors import InvalidRequestError, NotFoundError
from agora_agent.governance.pricing import ModelPrice, PricingStore
from agora_agent.governance.readmodel import (
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
from agora_agent.service import AgentService
from agora_agent.web.access import require_gate
from agora_agent.web.routing import current_actor
from agora_agent.web.schemas import ErrorBody, OkResponse, PriceOut, PriceUpsertRequest, wire_name

__all__ = ["add_governance_routes", "governance_mount_plan", "parse_limit"]

logger = logging.getLogger("agora_agent.web")

F = TypeVar("F", bound=Callable[..., Any])
ActorDep = Annotated[Actor, Depends(current_actor)]
LimitQ = Annotated[str | None, Query(description="Rows to return: default 50, at most 200.")]
FromQ = Annotated[date | None, Query(alias="from", description="First UTC day (YYYY-MM-DD), inclusive.")]
ToQ = Annotated[date | None, Query(alias="to", description="Last UTC day (YYYY-MM-DD), inclusive.")]

GATE_WARNING = (
    "agora-agent: a governance read-model is configured but `governanceAuthorize` (AgentConfig.governance_authorize) "
    "is not set, so the governance routes and the dashboard are NOT mounted; only GET {prefix}/approvals/mine is. "
    "Set governance_authorize=lambda actor, request: 'admin' in actor.roles (or `governanceAuthorize: () => true` "
    "to open them to every authenticated caller) to mount them."
)


class _Wire(BaseModel):
    model_config = ConfigDict(alias_generator=wire_name, populate_by_name=True)


class _Labelled(_Wire):
    actor_label: str | None = None


class ActorSpendRowOut(ActorSpendRow, _Labelled):
    """GQ-02 row + `actorLabel`."""


class ThreadActivityRowOut(ThreadActivityRow, _Labelled):
    """GQ-05 row + `actorLabel`."""


class RunSummaryRowOut(RunSummaryRow, _Labelled):
    """GQ-06 row + `actorLabel`."""


class RunPageOut(_Wire):
    """GQ-06 page: `{runs, nextCursor}`, runs labelled."""

    runs: list[RunSummaryRowOut]
    next_cursor: str | None


class RunDetailOut(RunDetail):
    """GQ-07 with `actorLabel` on `run`."""

    run: RunSummaryRowOut  # a subclass: same wire shape plus the label


class PendingApprovalRowOut(PendingApprovalRow, _Labelled):
    """GQ-08 row + `actorLabel`."""


class GovernanceThreadDetailOut(GovernanceThreadDetail, _Labelled):
    """GQ-11 with `actorLabel` on the thread and on each run."""

    runs: list[RunSummaryRowOut]  # type: ignore[assignment]  # docs-only model: same rows plus the label


def parse_limit(raw: str | None) -> int:
    """HTTP-16: `parseInt` semantics (leading integer), non-finite or <= 0 -> 50, clamp 200."""
    match = re.match(r"\s*([+-]?\d+)", raw or "")
    return clamp_limit(int(match.group(1)) if match else None)


def governance_mount_plan(config: AgentConfig) -> tuple[bool, bool, bool]:
    """(read-model resolves, governance routes mounted, pricing routes mounted) for a config.

    Decided when the router is built, before the service connects: a read-model resolves when one is
    given, or by default for the memory and SQL stores (the service builds their twin in `start()`).
    """
    setting = config.governance_queries
    if setting is False:
        has_readmodel = False
    elif setting is not None and setting is not True:
        has_readmodel = True
    else:
        from agora_agent.stores.memory import MemoryAgentStore

        has_readmodel = config.store is None or isinstance(config.store, str | MemoryAgentStore)
    gated = has_readmodel and config.governance_authorize is not None
    return has_readmodel, gated, gated and config.pricing is not False


def _rows(items: list[Any]) -> list[dict[str, Any]]:
    return [i.model_dump(by_alias=True, mode="json") for i in items]


async def _label(directory: Any, targets: list[dict[str, Any]]) -> None:
    """GQ-12: add `actorLabel` in place; one batched call; failures and unknown refs leave rows as they are."""
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


def add_governance_routes(router: APIRouter, service: AgentService) -> None:
    """Add `approvals/mine` and the `governance/*` routes to an agent router per `governance_mount_plan`."""
    config = service.config
    has_readmodel, gated, pricing_routes = governance_mount_plan(config)
    if not has_readmodel:
        return
    errors: dict[int | str, dict[str, Any]] = {code: {"model": ErrorBody} for code in (401, 404)}

    def readmodel() -> GovernanceQueries:
        queries = service.governance
        if queries is None:  # the configured store turned out to have no read-model
            raise NotFoundError("not found")
        return queries

    def pricing() -> PricingStore:
        store = service.pricing
        if store is None:
            raise NotFoundError("not found")
        return store

    @router.get("/approvals/mine", response_model=list[PendingApprovalRowOut], responses=errors, tags=["governance"])
    async def my_approvals(actor: ActorDep, limit: LimitQ = None) -> JSONResponse:
        """HTTP-14: the caller's own pending approvals, oldest first (no gate needed)."""
        rows = _rows(await readmodel().pending_approvals(actor=actor.id, limit=parse_limit(limit)))
        await _label(config.actor_directory, rows)
        return JSONResponse(rows)

    if not gated:
        logger.warning(GATE_WARNING.format(prefix=config.prefix))
        return

    async def gate(request: Request, actor: ActorDep) -> Actor:
        await require_gate(actor, request, config.governance_authorize, debug=config.debug)
        return actor

    gated_deps = [Depends(gate)]
    gated_errors: dict[int | str, dict[str, Any]] = {**errors, 403: {"model": ErrorBody}, 422: {"model": ErrorBody}}
    prefix = "/governance"

    def route(path: str, model: Any) -> Callable[[F], F]:
        return router.get(
            prefix + path, response_model=model, responses=gated_errors, tags=["governance"], dependencies=gated_deps
        )

    @route("/spend/model", list[ModelSpendRow])
    async def spend_by_model(from_: FromQ = None, to: ToQ = None) -> JSONResponse:
        """HTTP-17: spend per model; both days default to today (UTC)."""
        return JSONResponse(_rows(await readmodel().spend_by_model(from_ or _today(), to or _today())))

    @route("/spend/actor", list[ActorSpendRowOut])
    async def spend_by_actor(from_: FromQ = None, to: ToQ = None) -> JSONResponse:
        """HTTP-18: spend per actor, with labels."""
        rows = _rows(await readmodel().spend_by_actor(from_ or _today(), to or _today()))
        await _label(config.actor_directory, rows)
        return JSONResponse(rows)

    @route("/usage/trend", list[UsageTrendPoint])
    async def usage_trend(from_: FromQ = None, to: ToQ = None) -> JSONResponse:
        """HTTP-19: tokens and cost per UTC day with usage."""
        return JSONResponse(_rows(await readmodel().usage_trend(from_ or _today(), to or _today())))

    @route("/tool-calls/recent", list[ToolCallActivityRow])
    async def recent_tool_calls(limit: LimitQ = None) -> JSONResponse:
        """HTTP-20: newest tool calls first."""
        return JSONResponse(_rows(await readmodel().recent_tool_calls(parse_limit(limit))))

    @route("/threads/recent", list[ThreadActivityRowOut])
    async def recent_threads(limit: LimitQ = None) -> JSONResponse:
        """HTTP-21: most recently active threads, with labels."""
        rows = _rows(await readmodel().recent_threads(parse_limit(limit)))
        await _label(config.actor_directory, rows)
        return JSONResponse(rows)

    @router.get(
        prefix + "/threads/{thread_id}",
        response_model=GovernanceThreadDetailOut,
        responses={**gated_errors, 501: {"model": ErrorBody}},
        tags=["governance"],
        dependencies=gated_deps,
    )
    async def thread_detail(thread_id: str) -> JSONResponse:
        """HTTP-22: any thread (soft-deleted included, `deleted: true`); unknown -> 404; an adapter without
        `thread_detail` -> 501."""
        queries = readmodel()
        if getattr(queries, "thread_detail", None) is None:
            return JSONResponse({"error": "this governance adapter does not support thread detail"}, status_code=501)
        detail = await queries.thread_detail(thread_id)
        if detail is None:
            raise NotFoundError("thread not found")
        body = detail.model_dump(by_alias=True, mode="json")
        await _label(config.actor_directory, [body, *body["runs"]])
        return JSONResponse(body)

    @route("/runs", RunPageOut)
    async def list_runs(
        actor: Annotated[str | None, Query(description="Exact actor ref")] = None,
        agent: Annotated[str | None, Query(description="Exact agent name")] = None,
        status: Annotated[str | None, Query(description="running | completed | failed | cancelled")] = None,
        from_: FromQ = None,
        to: ToQ = None,
        cursor: Annotated[str | None, Query(description="`nextCursor` of the previous page")] = None,
        limit: LimitQ = None,
    ) -> JSONResponse:
        """HTTP-23: runs newest first, filtered, paged with `nextCursor`."""
        if cursor is not None and not cursor.strip().isdigit():
            raise InvalidRequestError(f"cursor must be the nextCursor of a previous page (a number), got {cursor!r}")
        page = await readmodel().list_runs(
            RunQuery(
                actor=actor,
                agent=agent,
                status=status,
                from_day=from_,
                to_day=to,
                cursor=cursor.strip() if cursor else None,
                limit=parse_limit(limit),
            )
        )
        body = page.model_dump(by_alias=True, mode="json")
        await _label(config.actor_directory, body["runs"])
        return JSONResponse(body)

    @route("/runs/{run_id}", RunDetailOut)
    async def run_detail(run_id: str) -> JSONResponse:
        """HTTP-24: the whole trace of a run; unknown -> 404."""
        detail = await readmodel().run_detail(run_id)
        if detail is None:
            raise NotFoundError("run not found")
        body = detail.model_dump(by_alias=True, mode="json")
        await _label(config.actor_directory, [body["run"]])
        return JSONResponse(body)

    @route("/approvals/pending", list[PendingApprovalRowOut])
    async def pending_approvals(
        actor: Annotated[str | None, Query(description="Only this actor's")] = None, limit: LimitQ = None
    ) -> JSONResponse:
        """HTTP-25: every actor's pending approvals, oldest first, with labels."""
        rows = _rows(await readmodel().pending_approvals(actor=actor, limit=parse_limit(limit)))
        await _label(config.actor_directory, rows)
        return JSONResponse(rows)

    @route("/tools/stats", list[PerToolStatRow])
    async def tool_stats(from_: FromQ = None, to: ToQ = None) -> JSONResponse:
        """HTTP-26: per-tool calls, failures, rejections, mean duration (bounds optional)."""
        return JSONResponse(_rows(await readmodel().per_tool_stats(from_, to)))

    @route("/reliability", RunReliability)
    async def reliability(from_: FromQ = None, to: ToQ = None) -> JSONResponse:
        """HTTP-27: run outcomes, rates, per agent and per day (bounds optional)."""
        return JSONResponse((await readmodel().run_reliability(from_, to)).model_dump(by_alias=True, mode="json"))

    if not pricing_routes:
        return

    @route("/pricing", list[PriceOut])
    async def list_prices() -> JSONResponse:
        """HTTP-28: the current price of each model (cache rates omitted when unset)."""
        prices = [
            PriceOut(
                model_id=p.model_id,
                input_price_per_1m=p.input_price_per_1m,
                output_price_per_1m=p.output_price_per_1m,
                cache_write_price_per_1m=p.cache_write_price_per_1m,
                cache_read_price_per_1m=p.cache_read_price_per_1m,
                effective_from=p.effective_from,
            )
            for p in await pricing().list_current_prices()
        ]
        return JSONResponse([p.model_dump(by_alias=True, mode="json", exclude_none=True) for p in prices])

    @router.post(
        prefix + "/pricing",
        response_model=OkResponse,
        responses=gated_errors,
        tags=["governance"],
        dependencies=gated_deps,
    )
    async def upsert_price(body: PriceUpsertRequest) -> OkResponse:
        """HTTP-29: set a model's current price (atomically supersedes the previous one)."""
        await pricing().upsert_price(
            ModelPrice(
                model_id=body.model_id.strip(),
                input_price_per_1m=body.input_price_per_1m,
                output_price_per_1m=body.output_price_per_1m,
                cache_write_price_per_1m=body.cache_write_price_per_1m,
                cache_read_price_per_1m=body.cache_read_price_per_1m,
            )
        )
        return OkResponse()
