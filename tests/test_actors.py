"""Actor and the resolvers that turn a request into one (REFERENCE ACT-01, ACT-02, ACT-07)."""

from __future__ import annotations

import pytest
from starlette.requests import Request

from agora_agent.actors import (
    Actor,
    ActorResolver,
    CallableActorResolver,
    HeaderActorResolver,
    UnconfiguredActorResolver,
)
from agora_agent.errors import UnauthenticatedError
from agora_agent.web.access import authenticate


def request(headers: dict[str, str] | None = None) -> Request:
    raw = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items()]
    return Request({"type": "http", "method": "POST", "path": "/agent/chat", "headers": raw})


def test_actor_normalises_roles_and_refuses_an_empty_id() -> None:
    actor = Actor("u1", ["a", "b"])  # type: ignore[arg-type]
    assert actor.roles == ("a", "b")
    assert Actor.of("u1", {"x"}, tenant_ref="t").roles == ("x",)
    assert Actor("u1") == Actor("u1", ())
    with pytest.raises(ValueError):
        Actor("")


def test_resolvers_satisfy_the_protocol() -> None:
    for resolver in (UnconfiguredActorResolver(), HeaderActorResolver(), CallableActorResolver(lambda r: None)):
        assert isinstance(resolver, ActorResolver)


@pytest.mark.ref("ACT-01")
async def test_unconfigured_resolver_refuses_everyone() -> None:
    with pytest.raises(UnauthenticatedError) as refused:
        await UnconfiguredActorResolver().resolve(request({"x-actor-id": "admin"}))
    assert refused.value.code == "no_actor_resolver"


@pytest.mark.ref("ACT-02")
async def test_header_resolver_reads_id_roles_and_tenant() -> None:
    actor = await HeaderActorResolver().resolve(
        request({"x-actor-id": " u42 ", "x-actor-role": " ops, ,billing ,", "x-tenant-ref": "acme"})
    )
    assert actor == Actor("u42", ("ops", "billing"), tenant_ref="acme")


@pytest.mark.ref("ACT-02")
async def test_header_resolver_defaults_to_no_roles_and_no_tenant() -> None:
    assert await HeaderActorResolver().resolve(request({"x-actor-id": "u1"})) == Actor("u1")


@pytest.mark.ref("ACT-02")
@pytest.mark.parametrize("headers", [{}, {"x-actor-id": ""}, {"x-actor-id": "   "}, {"x-actor-role": "ADMIN"}])
async def test_header_resolver_needs_an_id(headers: dict[str, str]) -> None:
    with pytest.raises(UnauthenticatedError) as missing:
        await HeaderActorResolver().resolve(request(headers))
    assert missing.value.code == "missing_identity" and "x-actor-id" in str(missing.value)  # names the header


@pytest.mark.ref("ACT-02")
async def test_header_names_are_configurable() -> None:
    resolver = HeaderActorResolver(id_header="x-user", role_header="x-groups", tenant_header="x-org")
    actor = await resolver.resolve(request({"X-User": "u7", "X-Groups": "a,b", "X-Org": "o1", "x-actor-id": "no"}))
    assert actor == Actor("u7", ("a", "b"), tenant_ref="o1")
    with pytest.raises(UnauthenticatedError) as missing:
        await resolver.resolve(request({"x-actor-id": "u1"}))
    assert missing.value.code == "missing_identity" and "x-user" in str(missing.value)


async def test_callable_resolver_accepts_sync_and_async_functions() -> None:
    def sync_fn(req: Request) -> Actor | None:
        return Actor(req.headers["x-session"])

    async def async_fn(req: Request) -> Actor | None:
        return Actor("async-" + req.headers["x-session"], ("r",))

    req = request({"x-session": "s1"})
    assert await CallableActorResolver(sync_fn).resolve(req) == Actor("s1")
    assert await CallableActorResolver(async_fn).resolve(req) == Actor("async-s1", ("r",))


async def test_callable_resolver_refuses_a_non_actor() -> None:
    with pytest.raises(TypeError):
        await CallableActorResolver(lambda r: {"id": "u1"}).resolve(request())  # type: ignore[arg-type,return-value]


@pytest.mark.ref("ACT-07")
async def test_none_from_a_resolver_is_unauthenticated() -> None:
    resolver = CallableActorResolver(lambda r: None)
    assert await resolver.resolve(request()) is None
    with pytest.raises(UnauthenticatedError):
        await authenticate(resolver, request())
    assert await authenticate(HeaderActorResolver(), request({"x-actor-id": "u1"})) == Actor("u1")


@pytest.mark.ref("ACT-07")
async def test_resolver_errors_become_unauthenticated() -> None:
    with pytest.raises(UnauthenticatedError):
        await authenticate(HeaderActorResolver(), request())
    with pytest.raises(UnauthenticatedError):
        await authenticate(CallableActorResolver(lambda r: 1 / 0), request())  # type: ignore[arg-type,return-value]
