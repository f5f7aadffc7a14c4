"""Identity over HTTP: turn a request into an `Actor` (401 otherwise).

Identity comes only from a resolver. Everything after it — ownership (404/403), the governance gate
(403), tenant scopes — is decided by `AgentService` from the `Caller` (`web/deps.py`), and the web
layer only maps the service's typed errors to statuses (`web/errors.py`).
"""

from __future__ import annotations

from starlette.requests import Request

from agora_agent.actors import Actor, ActorResolver
from agora_agent.errors import UnauthenticatedError

__all__ = ["authenticate"]


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
