"""Identity over HTTP: turn a request into an `Actor` (401 otherwise).

Identity comes only from a resolver. An agent's own `actor_resolver` never replaces the app's: the app's
resolver must accept the caller first, then the agent's runs and must agree — the same actor id and
tenant, and no role the app's actor lacks (it may only narrow) — else 403. So naming an agent in a
request can never lower the identity bar (`authenticate_for_agent`). The MCP mount applies the same rule
after its own auth (`refine_for_agent`).

Everything after identity — ownership (404/403), the governance gate
(403), tenant scopes — is decided by `AgentService` from the `Caller` (`web/deps.py`), and the web
layer only maps the service's typed errors to statuses (`web/errors.py`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from starlette.requests import Request

from agora_agent.actors import Actor, ActorResolver, HeaderActorResolver
from agora_agent.agents import AgentDefinition
from agora_agent.errors import ForbiddenError, UnauthenticatedError

__all__ = ["authenticate", "authenticate_for_agent", "refine_for_agent", "warn_header_resolvers"]

logger = logging.getLogger("agora_agent.web")

HEADER_RESOLVER_WARNING = (
    "SECURITY: %s uses HeaderActorResolver outside debug: any client can claim any identity by sending "
    "x-actor-id / x-actor-role / x-tenant-ref headers. Use it only behind a gateway that sets those headers "
    "itself and strips them from clients; otherwise configure a real resolver (docs/actor-resolvers.md)."
)


async def authenticate(resolver: ActorResolver, request: Request) -> Actor:
    """Resolve the caller. A resolver that raises (anything) or returns None means 401.

    The resolver's own message is kept on the exception; the error table shows it only when
    `AgentConfig.debug` is on.
    """
    try:
        actor = await resolver.resolve(request)
    except UnauthenticatedError:
        raise
    except Exception as exc:
        raise UnauthenticatedError(str(exc) or "unauthorized") from exc
    if actor is None:
        raise UnauthenticatedError("unauthorized")
    if not isinstance(actor, Actor):
        raise UnauthenticatedError(f"actor resolver returned {type(actor).__name__}, expected Actor")
    return actor


async def authenticate_for_agent(app_resolver: ActorResolver, agent: AgentDefinition | None, request: Request) -> Actor:
    """The caller of a route that names an agent (`POST /chat`, AI SDK, AG-UI).

    401 unless the app's resolver accepts the caller; then the agent's own resolver, if it has one,
    refines that actor (`refine_for_agent`). The agent's actor (possibly with fewer roles) is returned.
    """
    actor = await authenticate(app_resolver, request)
    if agent is None or agent.actor_resolver is app_resolver:
        return actor
    return await refine_for_agent(actor, agent, request)


async def refine_for_agent(actor: Actor, agent: AgentDefinition, request: Request) -> Actor:
    """`actor`, already accepted by the app's identity check (its resolver, or the MCP mount's auth),
    refined by the agent's own resolver when it has one.

    The agent's resolver resolves the caller too (401 if it refuses) and must agree with `actor`: same id
    and tenant, roles a subset of `actor`'s — else ForbiddenError. So an agent can only narrow a caller.
    """
    if agent.actor_resolver is None:
        return actor
    narrowed = await authenticate(agent.actor_resolver, request)
    extra = sorted(set(narrowed.roles) - set(actor.roles))
    if narrowed.id != actor.id or narrowed.tenant_ref != actor.tenant_ref or extra:
        logger.warning(
            "agent %r: its actor resolver disagrees with the app's (%r/%r vs %r/%r, extra roles %s); refused",
            agent.name,
            narrowed.id,
            narrowed.tenant_ref,
            actor.id,
            actor.tenant_ref,
            extra,
        )
        raise ForbiddenError(
            f'agent "{agent.name}": its actor resolver must agree with the app\'s (same actor and tenant, '
            "no extra roles)"
        )
    return narrowed


def warn_header_resolvers(app_resolver: ActorResolver, agents: Iterable[AgentDefinition], *, debug: bool) -> None:
    """Log a SECURITY warning for each `HeaderActorResolver` in use while `debug` is off (called at start-up)."""
    if debug:
        return
    if isinstance(app_resolver, HeaderActorResolver):
        logger.warning(HEADER_RESOLVER_WARNING, "AgentConfig.actor_resolver")
    for agent in agents:
        if isinstance(agent.actor_resolver, HeaderActorResolver):
            logger.warning(HEADER_RESOLVER_WARNING, f'agent "{agent.name}"')
