"""The FastAPI dependencies every agent route uses: the service, the caller, and the documented error bodies.

The route class (`web/route_class.py`) puts the router's `RouteContext` on each request before the
endpoint runs, so handlers are plain module-level functions that declare what they need:

    async def cancel(service: ServiceDep, caller: CallerDep, run_id: str) -> AbortedResponse:
        return AbortedResponse(cancelled=await service.cancel(caller, run_id))

`CallerDep` is the resolved actor with this request: the service asks `governance_authorize(actor,
request)` itself, once, when privilege matters. `GrantDep` is for the governance views: 403 unless the
gate admits the caller, and the grant (True, or a `GovernanceScope`) for the queries to filter by.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Request

from agora_agent.actors import Actor
from agora_agent.errors import ConfigurationError
from agora_agent.governance.gate import Caller, Grant
from agora_agent.service import AgentService
from agora_agent.web.route_class import CONTEXT_STATE, current_actor
from agora_agent.web.schemas import ErrorBody

__all__ = [
    "ActorDep",
    "CallerDep",
    "ContextDep",
    "GrantDep",
    "RouteContext",
    "ServiceDep",
    "current_caller",
    "error_responses",
    "governance_grant",
    "route_context",
    "service_of",
]


@dataclass(frozen=True, kw_only=True, slots=True)
class RouteContext:
    """What every route of one agent router shares: its service and the SSE keep-alive interval."""

    service: AgentService
    ping_seconds: float = 15


# The dependencies are `async def` although they never wait: FastAPI runs a plain `def` dependency on a
# worker thread, a hand-off (100-250 µs here) per dependency per request for a getattr.


def _context(request: Request) -> RouteContext:
    context = getattr(request.state, CONTEXT_STATE, None)
    if not isinstance(context, RouteContext):  # a handler mounted outside `agent_router`
        raise ConfigurationError("agora-agent routes must be mounted with agent_router()")
    return context


async def route_context(request: Request) -> RouteContext:
    """FastAPI dependency: the `RouteContext` of the router serving this request."""
    return _context(request)


async def service_of(request: Request) -> AgentService:
    """FastAPI dependency: the `AgentService` of the router serving this request."""
    return _context(request).service


ServiceDep = Annotated[AgentService, Depends(service_of)]
ContextDep = Annotated[RouteContext, Depends(route_context)]
ActorDep = Annotated[Actor, Depends(current_actor)]


async def current_caller(request: Request, actor: ActorDep) -> Caller:
    """FastAPI dependency: the caller of this request (its actor, and the request the gate may look at)."""
    return Caller(actor, request)


CallerDep = Annotated[Caller, Depends(current_caller)]


async def governance_grant(service: ServiceDep, caller: CallerDep) -> Grant:
    """FastAPI dependency of every governance view: ForbiddenError unless the gate admits the caller."""
    return await service.governance_grant(caller)


GrantDep = Annotated[Grant, Depends(governance_grant)]


def error_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI `responses` entry for a route's error statuses (401 always: every route needs identity)."""
    return {code: {"model": ErrorBody} for code in (401, *codes)}
