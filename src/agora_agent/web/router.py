"""`agent_router(config_or_service)`: every chat, stream, approval, thread and quota route (REFERENCE §2).

    app = FastAPI()
    app.include_router(agent_router(AgentConfig(model=..., actor_resolver=...)))

Mountable in any FastAPI app. Given a config, the router owns its `AgentService` and starts/stops it
with the app's lifespan (FastAPI merges router lifespans). Given a service, the caller runs it.
The governance routes (`web/governance.py`) and the upload route (`web/attachments.py`) are added
here when their stores are configured.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, Header, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from starlette.responses import Response

from agora_agent.actors import Actor
from agora_agent.config import AgentConfig
from agora_agent.errors import InvalidRequestError, NotFoundError
from agora_agent.service import AgentService
from agora_agent.streaming.frames import ErrorFrame, StreamEvent
from agora_agent.web.access import authenticate, require_owner
from agora_agent.web.routing import current_actor, make_route_class, resolves_own_identity, set_actor
from agora_agent.web.schemas import (
    AbortedResponse,
    ApprovalDecisionResponse,
    ApproveRequest,
    ChatRequest,
    ErrorBody,
    MessageOut,
    OkResponse,
    PersonaOut,
    QuotaTodayOut,
    RejectRequest,
    ThreadDetailOut,
    ThreadSummaryOut,
    ToolCallOut,
)
from agora_agent.web.sse import DONE, encode_event, encode_frame, encode_meta, event_source_response

__all__ = ["AgentRouter", "agent_router"]

logger = logging.getLogger("agora_agent.web")

ActorDep = Annotated[Actor, Depends(current_actor)]


def _errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    return {code: {"model": ErrorBody} for code in (401, *codes)}


class AgentRouter(APIRouter):
    """An `APIRouter` that also carries its `service` and `config`."""

    service: AgentService
    config: AgentConfig


def agent_router(config_or_service: AgentConfig | AgentService, *, ping_seconds: float = 15) -> AgentRouter:
    """Build the router under `config.path` (default `/agent`). See the module docstring.

    `ping_seconds` is the SSE keep-alive comment interval.
    """
    owns_service = isinstance(config_or_service, AgentConfig)
    service = (
        AgentService.from_config(config_or_service) if isinstance(config_or_service, AgentConfig) else config_or_service
    )
    config = service.config

    async def authenticate_global(request: Request) -> Actor:
        return await authenticate(config.actor_resolver, request)

    lifespan = None
    if owns_service:

        @asynccontextmanager
        async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
            async with service:
                yield

    router = AgentRouter(
        prefix=config.prefix,
        tags=["agent"],
        route_class=make_route_class(
            max_bytes=config.request_max_bytes, debug=config.debug, authenticate=authenticate_global
        ),
        lifespan=lifespan,
    )
    router.service = service
    router.config = config

    async def privileged_for(actor: Actor, request: Request) -> bool:
        return await service.is_privileged(actor, request)

    async def own_run(run_id: str, actor: Actor, request: Request) -> bool:
        owner = await service.run_owner(run_id)
        return await require_owner("run", owner, actor, lambda: privileged_for(actor, request))

    async def own_thread(thread_id: str, actor: Actor, request: Request) -> bool:
        owner = await service.thread_owner(thread_id)
        return await require_owner("thread", owner, actor, lambda: privileged_for(actor, request))

    def stream_body(run_id: str, thread_id: str | None, events: AsyncIterator[StreamEvent]) -> AsyncIterator[bytes]:
        async def body() -> AsyncIterator[bytes]:
            yield encode_meta(run_id, thread_id)
            try:
                async for event in events:
                    yield encode_event(event)
            except Exception:
                # The run goes on (or is already over); this subscriber can re-attach.
                logger.exception("agora-agent: streaming run %s failed", run_id)
                yield encode_frame(ErrorFrame(message="the stream was interrupted; re-attach to continue"))
            yield DONE

        return body()

    # -- chat ----------------------------------------------------------------------------------------

    @router.post(
        "/chat",
        summary="Start a run and stream it (SSE)",
        response_class=Response,
        responses={
            200: {"content": {"text/event-stream": {"schema": {"type": "string"}}}, "description": "SSE stream"},
            **_errors(403, 404, 413, 422, 429),
        },
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": inline_schema(ChatRequest)}},
            }
        },
    )
    @resolves_own_identity
    async def chat(request: Request) -> Response:
        """HTTP-01. Identity comes from the agent's own resolver when it has one (ACT-05).

        Order: 401 -> 422 (body) -> 404 (unknown agent) -> 404/403 (thread ownership) -> 429 (budget)
        -> 200 with the stream. Nothing is stored before the 4xx checks pass.
        """
        raw = await request.body()
        parse_error: str | None = None
        try:
            data: Any = json.loads(raw) if raw else None
        except ValueError as exc:
            data, parse_error = None, str(exc)
        agent_name = data.get("agent") if isinstance(data, dict) and isinstance(data.get("agent"), str) else None
        try:
            definition = service.agent(agent_name)
        except NotFoundError:
            definition = None
        resolver = (definition.actor_resolver if definition else None) or config.actor_resolver
        actor = await authenticate(resolver, request)
        set_actor(request, actor)
        if parse_error is not None:
            raise RequestValidationError(
                [{"type": "json_invalid", "loc": ("body",), "msg": f"JSON decode error: {parse_error}"}]
            )
        try:
            body = ChatRequest.model_validate(data)
        except ValidationError as exc:
            raise RequestValidationError([{**e, "loc": ("body", *e["loc"])} for e in exc.errors()]) from exc
        if definition is None:
            service.agent(agent_name)  # raises the NotFoundError naming the known agents
        if body.thread_id is not None:
            await own_thread(body.thread_id, actor, request)
        started = await service.chat(
            actor,
            body.message,
            thread_id=body.thread_id,
            agent=body.agent,
            persona=body.persona,
            page_context=body.page_context,
            attachments=[a.to_attachment() for a in body.attachments or ()],
        )
        events = await service.stream(started.run_id)
        return event_source_response(
            stream_body(started.run_id, started.thread_id, events),
            headers={"X-Agent-Run-Id": started.run_id, "X-Agent-Thread-Id": started.thread_id},
            ping_seconds=ping_seconds,
        )

    @router.get(
        "/chat/{run_id}/stream",
        summary="Re-attach to a run's stream (SSE)",
        response_class=Response,
        responses={
            200: {"content": {"text/event-stream": {"schema": {"type": "string"}}}, "description": "SSE stream"},
            **_errors(403, 404, 422),
        },
    )
    async def stream(
        request: Request,
        actor: ActorDep,
        run_id: Annotated[str, Path(min_length=1)],
        last_event_id: Annotated[
            str | None,
            Header(alias="Last-Event-ID", description="Resume after this frame id; replay from the start without it."),
        ] = None,
    ) -> Response:
        """HTTP-03: replay (after `Last-Event-ID` when given) then follow live frames until the run ends.

        Disconnecting never cancels the run. The meta frame carries only `runId`.
        """
        after = _parse_last_event_id(last_event_id)
        await own_run(run_id, actor, request)
        events = await service.stream(run_id, after=after)
        return event_source_response(
            stream_body(run_id, None, events), headers={"X-Agent-Run-Id": run_id}, ping_seconds=ping_seconds
        )

    @router.post("/chat/{run_id}/cancel", response_model=AbortedResponse, responses=_errors(403, 404))
    async def cancel(request: Request, actor: ActorDep, run_id: Annotated[str, Path(min_length=1)]) -> AbortedResponse:
        """HTTP-04: cancel the run (its model call or tool is cancelled; the stream ends with `done`)."""
        await own_run(run_id, actor, request)
        return AbortedResponse(cancelled=await service.cancel(run_id))

    # -- approvals -----------------------------------------------------------------------------------

    @router.post("/tool-call/approve", response_model=ApprovalDecisionResponse, responses=_errors(403, 404, 409, 422))
    async def approve(request: Request, actor: ActorDep, body: ApproveRequest) -> ApprovalDecisionResponse:
        """HTTP-05: unknown run or tool call -> 404; already decided -> 409 with the standing decision in
        `detail`; not the requester's and not privileged, or missing an `approver_roles` role -> 403."""
        privileged = await own_run(body.run_id, actor, request)
        record = await service.approve(actor, body.run_id, body.tool_call_id, privileged=privileged)
        return ApprovalDecisionResponse.of(record)

    @router.post("/tool-call/reject", response_model=ApprovalDecisionResponse, responses=_errors(403, 404, 409, 422))
    async def reject(request: Request, actor: ActorDep, body: RejectRequest) -> ApprovalDecisionResponse:
        """HTTP-06: as approve; `reason` is fed back to the model."""
        privileged = await own_run(body.run_id, actor, request)
        record = await service.reject(actor, body.run_id, body.tool_call_id, reason=body.reason, privileged=privileged)
        return ApprovalDecisionResponse.of(record)

    # -- threads -------------------------------------------------------------------------------------

    @router.get("/threads", response_model=list[ThreadSummaryOut], responses=_errors())
    async def list_threads(actor: ActorDep) -> list[ThreadSummaryOut]:
        """HTTP-07: the caller's threads, newest activity first (50)."""
        return [ThreadSummaryOut.of_summary(s) for s in await service.list_threads(actor, limit=50)]

    @router.get("/threads/personas/catalog", response_model=list[PersonaOut], responses=_errors(404))
    async def persona_catalog(
        actor: ActorDep, agent: Annotated[str | None, Query(description="A named agent (default agent)")] = None
    ) -> list[PersonaOut]:
        """HTTP-08: `[{id, label}]` of the agent's personas."""
        return [PersonaOut(id=p.id, label=p.label) for p in service.persona_catalog(agent)]

    @router.get("/threads/{thread_id}", response_model=ThreadDetailOut, responses=_errors(403, 404))
    async def get_thread(request: Request, actor: ActorDep, thread_id: str) -> ThreadDetailOut:
        """HTTP-09: the thread with its messages and tool-call audit rows."""
        await own_thread(thread_id, actor, request)
        detail = await service.get_thread(thread_id)
        if detail is None:
            raise NotFoundError("thread not found")
        return ThreadDetailOut(
            **ThreadSummaryOut.of(detail.thread, detail.last_message_preview).model_dump(),
            messages=[MessageOut.of(m) for m in detail.messages],
            tool_calls=[ToolCallOut.of(t) for t in detail.tool_calls],
        )

    @router.delete("/threads/{thread_id}", response_model=OkResponse, responses=_errors(403, 404))
    async def delete_thread(request: Request, actor: ActorDep, thread_id: str) -> OkResponse:
        """HTTP-10: soft delete; afterwards the thread is 404 for everyone."""
        await own_thread(thread_id, actor, request)
        await service.delete_thread(thread_id)
        return OkResponse()

    @router.post(
        "/threads/{thread_id}/fork-from/{message_id}", response_model=ThreadSummaryOut, responses=_errors(403, 404)
    )
    async def fork_thread(request: Request, actor: ActorDep, thread_id: str, message_id: str) -> ThreadSummaryOut:
        """HTTP-11: a new thread with the messages up to and including `message_id`."""
        await own_thread(thread_id, actor, request)
        return ThreadSummaryOut.of_summary(await service.fork_thread(thread_id, message_id))

    # -- quota ---------------------------------------------------------------------------------------

    @router.get("/quota/today", response_model=QuotaTodayOut, responses=_errors())
    async def quota_today(actor: ActorDep) -> QuotaTodayOut:
        """HTTP-12: tokens the caller used today (UTC), with the budget's limits when one applies."""
        q = await service.quota_today(actor)
        return QuotaTodayOut(
            day=q.day,
            used_tokens=q.used_tokens,
            limit_tokens=q.limit_tokens,
            used_usd=q.used_usd,
            limit_usd=q.limit_usd,
        )

    from agora_agent.web.attachments import add_attachment_routes
    from agora_agent.web.governance import add_governance_routes

    add_attachment_routes(router, service)
    add_governance_routes(router, service)
    return router


def _parse_last_event_id(raw: str | None) -> int | None:
    if raw is None or not raw.strip():
        return None
    try:
        value = int(raw.strip())
    except ValueError:
        value = -1
    if value < 0:
        raise InvalidRequestError(f"Last-Event-ID must be a non-negative frame id, got {raw!r}")
    return value


def inline_schema(model: type[Any]) -> dict[str, Any]:
    """A model's JSON Schema (by alias) with its `$defs` inlined, for `openapi_extra` request bodies."""
    schema = model.model_json_schema(by_alias=True)
    defs = schema.pop("$defs", {})

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                return resolve(defs[ref.removeprefix("#/$defs/")])
            return {k: resolve(v) for k, v in node.items()}
        if isinstance(node, list):
            return [resolve(v) for v in node]
        return node

    result: dict[str, Any] = resolve(schema)
    return result
