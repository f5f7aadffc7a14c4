"""Who is calling: the `Actor` value and the resolvers that produce it from a request.

Identity enters the runtime once, at the edge: a resolver turns a Starlette
`Request` into an `Actor`, and everything below only ever sees that `Actor`. A resolver that raises
`UnauthenticatedError` or returns ``None`` means "no identity" (HTTP 401).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from agora_agent.errors import UnauthenticatedError

if TYPE_CHECKING:
    from starlette.requests import Request

__all__ = [
    "Actor",
    "ActorResolver",
    "CallableActorResolver",
    "HeaderActorResolver",
    "UnconfiguredActorResolver",
]


@dataclass(frozen=True, slots=True)
class Actor:
    """The caller a run acts for. Tools must scope their work to it, never to model-supplied ids.

    `roles` is normalised to a tuple; `tenant_ref` scopes data (e.g. the governed SQL tool).
    """

    id: str
    roles: tuple[str, ...] = field(default=())
    tenant_ref: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise ValueError("Actor.id must be a non-empty string")
        if not isinstance(self.roles, tuple):
            object.__setattr__(self, "roles", tuple(self.roles))

    @classmethod
    def of(cls, id: str, roles: Iterable[str] = (), tenant_ref: str | None = None) -> Actor:
        """Build an actor from any iterable of roles."""
        return cls(id=id, roles=tuple(roles), tenant_ref=tenant_ref)


@runtime_checkable
class ActorResolver(Protocol):
    """Turns a request into an `Actor`; raises `UnauthenticatedError` (or returns None) when there is none."""

    async def resolve(self, request: Request) -> Actor | None: ...


class UnconfiguredActorResolver:
    """The default resolver: refuses every request, so nothing is served until identity is configured."""

    async def resolve(self, request: Request) -> Actor | None:
        raise UnauthenticatedError(
            "no actor resolver is configured: agora-agent refuses to fabricate a caller identity; "
            "set AgentConfig(actor_resolver=...) (CallableActorResolver for your own auth)",
            code="no_actor_resolver",
        )


class HeaderActorResolver:
    """Identity from headers: `x-actor-id`, `x-actor-role` (comma-separated), `x-tenant-ref`.

    Only for development or behind a gateway that sets these headers itself: a browser can forge them.
    """

    def __init__(
        self, *, id_header: str = "x-actor-id", role_header: str = "x-actor-role", tenant_header: str = "x-tenant-ref"
    ) -> None:
        self.id_header = id_header
        self.role_header = role_header
        self.tenant_header = tenant_header

    async def resolve(self, request: Request) -> Actor | None:
        actor_id = (request.headers.get(self.id_header) or "").strip()
        if not actor_id:
            raise UnauthenticatedError(f"missing {self.id_header} header", code="missing_identity")
        raw_roles = request.headers.get(self.role_header) or ""
        roles = tuple(r.strip() for r in raw_roles.split(",") if r.strip())
        tenant = (request.headers.get(self.tenant_header) or "").strip() or None
        return Actor(id=actor_id, roles=roles, tenant_ref=tenant)


ResolveFn = Callable[["Request"], "Actor | None | Awaitable[Actor | None]"]


class CallableActorResolver:
    """Adapts a function `(request) -> Actor | None` (sync or async) — the hook for apps with their own auth."""

    def __init__(self, fn: ResolveFn) -> None:
        self._fn = fn

    async def resolve(self, request: Request) -> Actor | None:
        result = self._fn(request)
        if inspect.isawaitable(result):
            result = await result
        if result is not None and not isinstance(result, Actor):
            raise TypeError(f"actor resolver returned {type(result).__name__}, expected Actor or None")
        return result
