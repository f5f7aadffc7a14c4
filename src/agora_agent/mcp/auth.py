"""Who is calling the MCP endpoint: one `MCPAuth` checked on EVERY HTTP request, failing closed.

    api_key_auth({"key-1": Actor("alice", ("support",), "acme")})     # static keys, constant-time compare
    bearer_auth(verify, issuer="https://auth.example.com")            # your token check (+ OAuth metadata)
    resolver_auth(config.actor_resolver)                              # the same identity as the HTTP API
    fixed_actor(Actor("ops-bot"))                                     # only when you really mean it

A host app's own auth middleware is never trusted on its own: the endpoint asks its `MCPAuth`
itself, so a route that middleware forgot stays closed (a 401 `{"error": …}`).
"""

from __future__ import annotations

import hashlib
import hmac
import inspect
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from agora_agent.actors import Actor, ActorResolver
from agora_agent.errors import UnauthenticatedError

if TYPE_CHECKING:
    from starlette.requests import Request

__all__ = [
    "MCPAuth",
    "OAuthResource",
    "api_key_auth",
    "bearer_auth",
    "bearer_token",
    "fixed_actor",
    "resolver_auth",
]


@dataclass(frozen=True, kw_only=True, slots=True)
class OAuthResource:
    """What the RFC 9728 protected-resource metadata advertises: the issuer(s), scopes and a display name."""

    issuer: str
    scopes: tuple[str, ...] = ()
    resource_name: str | None = None


@runtime_checkable
class MCPAuth(Protocol):
    """Turns one HTTP request into an `Actor` or raises `UnauthenticatedError` (its message is the 401 body)."""

    oauth: OAuthResource | None

    async def authenticate(self, request: Request) -> Actor: ...


def bearer_token(request: Request) -> str:
    """The `Authorization: Bearer <token>` value; UnauthenticatedError("missing bearer token") without one."""
    header = request.headers.get("authorization") or ""
    scheme, _, token = header.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise UnauthenticatedError("missing bearer token")
    return token


def _digest(value: str) -> bytes:
    return hashlib.sha256(value.encode()).digest()


class _ApiKeyAuth:
    oauth: OAuthResource | None = None

    def __init__(self, keys: Mapping[str, Actor], to_actor: Callable[[str], Actor] | None) -> None:
        # Compare digests, not the keys: equal lengths, and every key is compared (no early exit).
        self._keys: list[tuple[bytes, str]] = [(_digest(k), k) for k in keys]
        self._actors = dict(keys)
        self._to_actor = to_actor

    async def authenticate(self, request: Request) -> Actor:
        given = _digest(bearer_token(request))
        match: str | None = None
        for digest, key in self._keys:
            if hmac.compare_digest(digest, given):
                match = key
        if match is None:
            raise UnauthenticatedError("invalid API key")
        if self._to_actor is not None:
            return self._to_actor(match)
        return self._actors[match]


def api_key_auth(
    keys: Mapping[str, Actor] | Collection[str], to_actor: Callable[[str], Actor] | None = None
) -> MCPAuth:
    """Static API keys sent as `Authorization: Bearer <key>`.

    `keys` maps each key to its `Actor`, or is a collection of keys with `to_actor(key)` building the
    actor (default: `Actor(id=key)` — fine for machine callers, wrong for people). Keys are compared
    in constant time; a missing key is 401 "missing bearer token", a wrong one "invalid API key".
    """
    if isinstance(keys, Mapping):
        table: dict[str, Actor] = {}
        for key, actor in keys.items():
            if not isinstance(actor, Actor):
                raise TypeError(f"api_key_auth: the value for a key must be an Actor, got {type(actor).__name__}")
            table[str(key)] = actor
    else:
        if isinstance(keys, str):
            raise TypeError("api_key_auth: pass a collection of keys (or a mapping key -> Actor), not one string")
        table = {str(k): Actor(id=str(k)) for k in keys}
    if not table or any(not k for k in table):
        raise ValueError("api_key_auth needs at least one non-empty key")
    return _ApiKeyAuth(table, to_actor)


Verify = Callable[[str], "Actor | None | Awaitable[Actor | None]"]


class _BearerAuth:
    def __init__(self, verify: Verify, oauth: OAuthResource | None) -> None:
        self._verify = verify
        self.oauth = oauth

    async def authenticate(self, request: Request) -> Actor:
        token = bearer_token(request)
        try:
            result = self._verify(token)
            if inspect.isawaitable(result):
                result = await result
        except UnauthenticatedError:
            raise
        except Exception as exc:
            raise UnauthenticatedError(str(exc) or "invalid access token") from exc
        if result is None:
            raise UnauthenticatedError("invalid or expired access token")
        if not isinstance(result, Actor):
            raise UnauthenticatedError(f"token verifier returned {type(result).__name__}, expected Actor")
        return result


def bearer_auth(
    verify: Verify,
    *,
    issuer: str | None = None,
    scopes: Sequence[str] = (),
    resource_name: str | None = None,
) -> MCPAuth:
    """Your own token check: `verify(token) -> Actor | None` (sync or async; raising refuses with its message).

    With `issuer` (your OAuth authorization server) the endpoint also serves
    `/.well-known/oauth-protected-resource<path>` and points 401s at it, so MCP clients can discover
    where to log in (RFC 9728).
    """
    oauth = OAuthResource(issuer=issuer, scopes=tuple(scopes), resource_name=resource_name) if issuer else None
    return _BearerAuth(verify, oauth)


class _ResolverAuth:
    oauth: OAuthResource | None = None

    def __init__(self, resolver: ActorResolver) -> None:
        self._resolver = resolver

    async def authenticate(self, request: Request) -> Actor:
        from agora_agent.web.access import authenticate

        return await authenticate(self._resolver, request)


def resolver_auth(resolver: ActorResolver) -> MCPAuth:
    """The app's own `ActorResolver`: MCP callers get exactly the identity the HTTP API gives them."""
    return _ResolverAuth(resolver)


class _FixedActor:
    oauth: OAuthResource | None = None

    def __init__(self, actor: Actor) -> None:
        self._actor = actor

    async def authenticate(self, request: Request) -> Actor:
        return self._actor


def fixed_actor(actor: Actor) -> MCPAuth:
    """Every request acts as `actor`, without credentials. Only for a server reachable by trusted callers alone."""
    if not isinstance(actor, Actor):
        raise TypeError(f"fixed_actor needs an Actor, got {type(actor).__name__}")
    return _FixedActor(actor)


class NoAuth:
    """The default: nothing configured, so every request is refused."""

    oauth: OAuthResource | None = None

    async def authenticate(self, request: Request) -> Actor:
        raise UnauthenticatedError(
            "unauthorized: no auth configured and no fallback actor "
            "(pass auth=api_key_auth(...), bearer_auth(...), resolver_auth(...) or fixed_actor(...))"
        )
