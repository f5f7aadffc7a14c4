"""Start a run and stream it, re-attach to a run's stream, cancel a run.

`POST /chat` answers, in this order: 401 (no identity), 422 (the body), 404 (unknown agent),
404/403 (a thread that is not the caller's), 429 (no budget left), then 200 with the SSE stream.
Nothing is stored before the 4xx checks pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Path, Request
from pydantic import BaseModel, ConfigDict, ValidationError
from starlette.responses import Response

from agora_agent.actors import Actor
from agora_agent.agents import AgentDefinition
from agora_agent.errors import InvalidRequestError, NotFoundError
from agora_agent.governance.gate import Caller
from agora_agent.web.access import authenticate_for_agent
from agora_agent.web.deps import CallerDep, ContextDep, RouteContext, ServiceDep, error_responses, route_context
from agora_agent.web.route_class import direct_handler, resolves_own_identity, set_actor
from agora_agent.web.schemas import AbortedResponse, ChatRequest
from agora_agent.web.sse import run_stream_response

__all__ = ["ChatIdentity", "add_routes", "cancel", "chat", "chat_direct", "chat_identity", "reattach"]

_SSE_200: dict[int | str, dict[str, Any]] = {
    200: {"content": {"text/event-stream": {"schema": {"type": "string"}}}, "description": "SSE stream"}
}


class _AgentName(BaseModel):
    """Only the `agent` field of a chat body: enough to pick the resolver before the body is validated."""

    model_config = ConfigDict(extra="ignore")
    agent: str | None = None


@dataclass(frozen=True, slots=True)
class ChatIdentity:
    """The caller of `POST /chat` and the agent they named (None when the name is unknown)."""

    actor: Actor
    agent: AgentDefinition | None


async def chat_identity(request: Request, context: ContextDep) -> ChatIdentity:
    """Resolve the named agent once, then the caller: the app's resolver, and the agent's own when it has
    one, which must agree with it (`web.access.authenticate_for_agent`).

    Runs before FastAPI validates the body, so an anonymous caller gets 401, never a 422.
    """
    try:
        name = _AgentName.model_validate_json(await request.body()).agent
    except ValidationError:
        name = None  # the body's own validation reports it after identity
    return await _identify(request, context, name)


async def _identify(request: Request, context: RouteContext, name: str | None) -> ChatIdentity:
    service = context.service
    try:
        agent: AgentDefinition | None = service.agent(name)
    except NotFoundError:
        agent = None
    actor = await authenticate_for_agent(service.config.actor_resolver, agent, request)
    set_actor(request, actor)
    return ChatIdentity(actor=actor, agent=agent)


async def chat_direct(request: Request) -> Response | None:
    """`POST /chat` for a body that validates, without FastAPI's per-request dependency solving and second
    parse of the body (about a third of what the route cost before its first byte): the body validated
    once by `ChatRequest` — the model FastAPI validates it with — then the caller resolved as
    `chat_identity` does, then `chat`. Any body that does not validate is left to FastAPI (None), which
    answers exactly as before: 401 before 422, and its 422 shape."""
    try:
        body = ChatRequest.model_validate_json(await request.body())
    except ValidationError:
        return None
    context = await route_context(request)
    return await chat(request, context, await _identify(request, context, body.agent), body)


@direct_handler(chat_direct)
@resolves_own_identity
async def chat(
    request: Request,
    context: ContextDep,
    identity: Annotated[ChatIdentity, Depends(chat_identity)],
    body: ChatRequest,
) -> Response:
    """Start a run and stream it as Server-Sent Events.

    The `X-Agent-Run-Id` and `X-Agent-Thread-Id` headers name the run and its thread, so a client can
    re-attach or cancel. The caller's identity is the app's resolver's, refined by the named agent's own
    resolver when it has one (which must agree: same actor and tenant, no extra roles).
    """
    service = context.service
    agent = identity.agent or service.agent(body.agent)  # an unknown name raises the 404 naming the known ones
    caller = Caller(identity.actor, request)
    started = await service.chat(
        caller,
        body.message,
        thread_id=body.thread_id,
        agent=agent.name,
        persona=body.persona,
        page_context=body.page_context,
        attachments=[a.to_attachment() for a in body.attachments or ()],
        ui_capabilities=body.ui_capabilities,
    )
    events = await service.subscribe(caller, started)  # the run chat recorded: not read back
    return run_stream_response(
        started.run_id,
        started.thread_id,
        events,
        headers={"X-Agent-Run-Id": started.run_id, "X-Agent-Thread-Id": started.thread_id},
        ping_seconds=context.ping_seconds,
    )


async def reattach(
    context: ContextDep,
    caller: CallerDep,
    run_id: Annotated[str, Path(min_length=1)],
    last_event_id: Annotated[
        str | None,
        Header(alias="Last-Event-ID", description="Resume after this frame id; replay from the start without it."),
    ] = None,
) -> Response:
    """Replay the run's frames (after `Last-Event-ID` when given), then follow live ones until it ends.

    Disconnecting never cancels the run. The `meta` frame carries only `runId`.
    """
    after = parse_last_event_id(last_event_id)
    events = await context.service.subscribe(caller, run_id, after=after)
    return run_stream_response(
        run_id, None, events, headers={"X-Agent-Run-Id": run_id}, ping_seconds=context.ping_seconds
    )


async def cancel(service: ServiceDep, caller: CallerDep, run_id: Annotated[str, Path(min_length=1)]) -> AbortedResponse:
    """Cancel the run: its model call or tool is cancelled, and its stream ends with `done`."""
    return AbortedResponse(cancelled=await service.cancel(caller, run_id))


def parse_last_event_id(raw: str | None) -> int | None:
    """A `Last-Event-ID` header as a frame id (None when absent or blank); InvalidRequestError otherwise."""
    if raw is None or not raw.strip():
        return None
    try:
        value = int(raw.strip())
    except ValueError:
        value = -1
    if value < 0:
        raise InvalidRequestError(f"Last-Event-ID must be a non-negative frame id, got {raw!r}")
    return value


def add_routes(router: APIRouter) -> None:
    """Add the chat, re-attach and cancel routes."""
    router.post(
        "/chat",
        summary="Start a run and stream it (SSE)",
        response_class=Response,
        responses={**_SSE_200, **error_responses(403, 404, 413, 422, 429)},
    )(chat)
    router.get(
        "/chat/{run_id}/stream",
        summary="Re-attach to a run's stream (SSE)",
        response_class=Response,
        responses={**_SSE_200, **error_responses(403, 404, 422)},
    )(reattach)
    router.post("/chat/{run_id}/cancel", response_model=AbortedResponse, responses=error_responses(403, 404))(cancel)
