"""Who may do what over HTTP: identity (401), ownership (404/403) and the governance gate (403).

Identity comes only from a resolver (DESIGN §3, ACT-*). Ownership follows OWN-01
(`governance.ownership.evaluate_ownership`): no owner -> 404 even for the privileged, the owner ->
ok, privileged -> ok, anyone else -> 403. "Privileged" exists only through `governance_authorize`
(OWN-03, GGATE-02).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal

from starlette.requests import Request

from agora_agent.actors import Actor, ActorResolver
from agora_agent.errors import ForbiddenError, NotFoundError, UnauthenticatedError
from agora_agent.governance.gate import evaluate_governance_gate
from agora_agent.governance.ownership import evaluate_ownership

if TYPE_CHECKING:
    from agora_agent.service import AgentService

__all__ = ["authenticate", "own_run", "own_thread", "require_gate", "require_owner"]


async def authenticate(resolver: ActorResolver, request: Request) -> Actor:
    """Resolve the caller. A resolver that raises (anything) or returns None means 401 (ACT-07).

    The resolver's own message is kept on the exception; the error table shows it only when
    `AgentConfig.debug` is on (HTTP "Common").
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


async def require_owner(
    kind: Literal["run", "thread"],
    owner_ref: str | None,
    actor: Actor,
    privileged: Callable[[], Awaitable[bool]],
) -> bool:
    """Raise NotFoundError(`"<kind> not found"`) or ForbiddenError(`"forbidden"`) per OWN-01/02.

    `privileged` is asked only when the caller is not the owner, so the gate is not consulted on
    every request. Returns whether privilege was needed (and granted).
    """
    if owner_ref is None:
        raise NotFoundError(f"{kind} not found")
    if owner_ref == actor.id:
        return False
    decision = evaluate_ownership(actor.id, owner_ref, await privileged())
    if not decision.ok:
        raise ForbiddenError("forbidden")
    return True


async def require_gate(actor: Actor, request: Request, authorize: Any, *, debug: bool) -> None:
    """GGATE-01 for the governance routes: falsy -> 403 "forbidden"; a raise -> 403 with its message only
    when `debug`."""
    decision = await evaluate_governance_gate(actor, request, authorize, debug=debug)
    if not decision.ok:
        raise ForbiddenError(decision.error or "forbidden")


async def own_run(service: AgentService, run_id: str, actor: Actor, request: Request) -> bool:
    """`require_owner` for a run; True when the caller needed (and had) privilege."""
    owner = await service.run_owner(run_id)
    return await require_owner("run", owner, actor, lambda: service.is_privileged(actor, request))


async def own_thread(service: AgentService, thread_id: str, actor: Actor, request: Request) -> bool:
    """`require_owner` for a thread; True when the caller needed (and had) privilege."""
    owner = await service.thread_owner(thread_id)
    return await require_owner("thread", owner, actor, lambda: service.is_privileged(actor, request))
