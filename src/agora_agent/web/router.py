"""`agent_router(config_or_service)`: every chat, stream, approval, thread, quota and governance route.

    app = FastAPI()
    app.include_router(agent_router(AgentConfig(model=..., actor_resolver=...)))

Mountable in any FastAPI app. Given a config, the router owns its `AgentService` and starts/stops it
with the app's lifespan (FastAPI merges router lifespans). Given a service, the caller runs it.
The handlers live in `web/routes/` (one module per topic); this module only builds the router they
share: its route class (body cap, identity, error bodies) and its `RouteContext` (the service).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import APIRouter, FastAPI, Request

from agora_agent.actors import Actor
from agora_agent.config import AgentConfig
from agora_agent.service import AgentService
from agora_agent.web import agui, ai_sdk
from agora_agent.web.access import authenticate, warn_header_resolvers
from agora_agent.web.deps import RouteContext
from agora_agent.web.route_class import make_route_class
from agora_agent.web.routes import (
    approvals,
    attachments,
    budgets,
    chat,
    console,
    governance,
    health,
    quota,
    threads,
)

__all__ = ["AgentRouter", "agent_router"]


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
    warn_header_resolvers(config.actor_resolver, config.all_agents(), debug=config.debug)

    async def authenticate_caller(request: Request) -> Actor:
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
            max_bytes=config.request_max_bytes,
            upload_max_bytes=config.attachment_max_bytes + attachments.UPLOAD_ENVELOPE_BYTES,
            debug=config.debug,
            authenticate=authenticate_caller,
            context=RouteContext(service=service, ping_seconds=ping_seconds),
            trusted_origins=frozenset(config.trusted_origins),
        ),
        lifespan=lifespan,
    )
    router.service = service
    router.config = config
    for module in (chat, approvals, threads, quota, health):
        module.add_routes(router)
    attachments.add_routes(router, config)
    governance.add_routes(router, config)
    budgets.add_routes(router, config)
    ai_sdk.add_routes(router)
    agui.add_routes(router)
    console.add_routes(router, config)
    return router
