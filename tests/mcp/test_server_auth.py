"""MCP identity: every request authenticated, fail closed — in create_app and in a host's own FastAPI app."""

from __future__ import annotations

from typing import Any

import httpx2
import mcp_types as types
import pytest
from fastapi import FastAPI
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from starlette.authentication import AuthCredentials, AuthenticationBackend, SimpleUser
from starlette.middleware.authentication import AuthenticationMiddleware

from agora_agent import Actor, AgentConfig, AgentDefinition, CallableActorResolver
from agora_agent.actors import HeaderActorResolver
from agora_agent.errors import ConfigurationError, NotFoundError
from agora_agent.mcp import api_key_auth, bearer_auth, fixed_actor, mount_mcp, resolver_auth
from agora_agent.testing import FakeModel, echo_script
from agora_agent.web import agent_router, create_app
from tests.mcp.conftest import mcp_client, serve
from tests.mcp.test_server import RefundOrder, lookup_order, whoami

LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}


def config(**kwargs: Any) -> AgentConfig:
    kwargs.setdefault("actor_resolver", HeaderActorResolver())
    kwargs.setdefault("dashboard", False)
    kwargs.setdefault("governance_authorize", lambda actor, request: "admin" in actor.roles)
    return AgentConfig(model=FakeModel(echo_script("ok")), tools=[whoami, lookup_order, RefundOrder], **kwargs)


class HostAuth(AuthenticationBackend):
    """A host app's own auth middleware: sets `request.user` for any `X-User` header, never refuses."""

    async def authenticate(self, conn: Any) -> tuple[AuthCredentials, SimpleUser] | None:
        user = conn.headers.get("x-user")
        return (AuthCredentials(["user"]), SimpleUser(user)) if user else None


def host_user(request: Any) -> Actor | None:
    user = request.scope.get("user")
    return Actor(user.username, ("support",), "acme") if isinstance(user, SimpleUser) else None


async def test_own_fastapi_app_one_call_with_the_apps_resolver_and_host_middleware() -> None:
    router = agent_router(config(actor_resolver=CallableActorResolver(host_user)))
    app = FastAPI()
    app.add_middleware(AuthenticationMiddleware, backend=HostAuth())
    app.include_router(router)
    mount_mcp(app, router, auth=resolver_auth(router.config.actor_resolver), path="/tools/mcp")
    async with serve(app) as base, httpx2.AsyncClient() as http:
        # The host middleware lets an anonymous request through; the MCP endpoint still refuses it.
        r = await http.post(f"{base}/tools/mcp", json=LIST)
        assert r.status_code == 401 and "error" in r.json()
        async with httpx2.AsyncClient(headers={"x-user": "dana"}) as authed:
            from mcp import Client
            from mcp.client.streamable_http import streamable_http_client

            async with Client(streamable_http_client(f"{base}/tools/mcp", http_client=authed)) as client:
                result = await client.call_tool("whoami", {})
                assert result.structured_content is not None
                assert result.structured_content["actor"] == "dana"


async def test_no_auth_configured_is_401_for_everyone() -> None:
    app = create_app(config())
    mount_mcp(app)
    async with serve(app) as base, httpx2.AsyncClient() as http:
        r = await http.post(f"{base}/agent/mcp", json=LIST, headers={"x-actor-id": "alice"})
        assert r.status_code == 401
        assert r.json()["error"].startswith("unauthorized: no auth configured")


async def test_fixed_actor_only_when_configured() -> None:
    app = create_app(config())
    mount_mcp(app, auth=fixed_actor(Actor("ops", ("support",))))
    async with serve(app) as base, mcp_client(f"{base}/agent/mcp") as client:
        assert [t.name for t in (await client.list_tools()).tools] == ["whoami", "lookup_order"]


async def test_bearer_verifier_with_issuer_serves_oauth_metadata() -> None:
    tokens = {"t-1": Actor("erin", ("support",), "acme")}

    async def verify(token: str) -> Actor | None:
        if token == "t-expired":
            raise ValueError("token expired")
        return tokens.get(token)

    app = create_app(config())
    mount_mcp(app, auth=bearer_auth(verify, issuer="https://auth.example.com", scopes=["mcp"]))
    async with serve(app) as base, httpx2.AsyncClient() as http:
        meta = await http.get(f"{base}/.well-known/oauth-protected-resource/agent/mcp")
        assert meta.status_code == 200
        assert meta.json()["resource"] == f"{base}/agent/mcp"
        assert meta.json()["authorization_servers"] == ["https://auth.example.com"]
        assert meta.json()["scopes_supported"] == ["mcp"]
        r = await http.post(f"{base}/agent/mcp", json=LIST)
        assert r.status_code == 401 and r.json() == {"error": "missing bearer token"}
        assert (
            f'resource_metadata="{base}/.well-known/oauth-protected-resource/agent/mcp"'
            in r.headers["www-authenticate"]
        )
        r = await http.post(f"{base}/agent/mcp", json=LIST, headers={"Authorization": "Bearer t-expired"})
        assert r.status_code == 401 and r.json() == {"error": "token expired"}
        r = await http.post(f"{base}/agent/mcp", json=LIST, headers={"Authorization": "Bearer t-2"})
        assert r.json() == {"error": "invalid or expired access token"}
        async with mcp_client(f"{base}/agent/mcp", "t-1") as client:
            assert (await client.call_tool("lookup_order", {"order_id": 2})).structured_content == {
                "order_id": 2,
                "status": "shipped",
            }


async def test_legacy_handshake_clients_stateless_and_stateful() -> None:
    async def elicit(ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"confirm": True})

    keys = bearer_auth(lambda t: Actor("alice", ("support",), "acme") if t == "k" else None)
    for stateless in (True, False):
        app = create_app(config())
        mount_mcp(app, auth=keys, actions="confirm", stateless=stateless)
        async with (
            serve(app) as base,
            mcp_client(f"{base}/agent/mcp", "k", mode="legacy", elicitation_callback=elicit) as client,
        ):
            assert "refund_order" in [t.name for t in (await client.list_tools()).tools]
            result = await client.call_tool("refund_order", {"order_id": 1, "amount": 1})
            text = result.content[0].text  # type: ignore[union-attr]
            if stateless:  # no server->client channel: a clear refusal, nothing done
                assert result.is_error and "elicitation" in text
            else:  # the session's back-channel carries the question
                assert not result.is_error, text


async def test_the_same_app_can_start_twice() -> None:
    app = create_app(config())
    mount_mcp(app, auth=fixed_actor(Actor("ops", ("support",))))
    for _ in range(2):
        async with serve(app) as base, mcp_client(f"{base}/agent/mcp") as client:
            assert "whoami" in [t.name for t in (await client.list_tools()).tools]


async def test_the_served_agents_resolver_only_refines_the_mcp_caller() -> None:
    """Naming an agent over MCP cannot lower the identity bar: the mount's auth accepts the caller first,
    then the agent's own resolver must agree with it (same actor and tenant, no extra roles); it may narrow."""
    kiosk = AgentDefinition(name="kiosk", actor_resolver=HeaderActorResolver())
    app = create_app(config(agents=[kiosk]))
    mount_mcp(app, auth=api_key_auth({"k-alice": Actor("alice", ("support",), "acme")}), agent="kiosk")
    alice = {"x-actor-id": "alice", "x-tenant-ref": "acme"}
    async with serve(app) as base, httpx2.AsyncClient() as http:
        url = f"{base}/agent/mcp"
        # Headers alone are no identity: the agent's header resolver is never asked without a valid key.
        r = await http.post(url, json=LIST, headers={**alice, "x-actor-role": "support,admin"})
        assert r.status_code == 401 and r.json() == {"error": "missing bearer token"}
        key = {"Authorization": "Bearer k-alice"}
        r = await http.post(url, json=LIST, headers=key)  # the agent's resolver refuses: 401
        assert r.status_code == 401 and r.json() == {"error": "missing x-actor-id header"}
        claims = [{**alice, "x-actor-role": "support,admin"}, {**alice, "x-actor-id": "bob"}, {"x-actor-id": "alice"}]
        for claim in claims:  # an extra role, another actor, another tenant (none)
            r = await http.post(url, json=LIST, headers={**key, **claim})
            assert r.status_code == 403, claim
            assert r.json()["error"].startswith('agent "kiosk": its actor resolver must agree')
        # Agreeing with fewer roles narrows the caller: lookup_order needs "support".
        async with (
            httpx2.AsyncClient(headers={**key, **alice}, timeout=httpx2.Timeout(20, read=60)) as narrowed,
            Client(streamable_http_client(url, http_client=narrowed)) as client,
        ):
            assert [t.name for t in (await client.list_tools()).tools] == ["whoami"]
            result = await client.call_tool("whoami", {})
            assert result.structured_content is not None
            assert (result.structured_content["actor"], result.structured_content["tenant"]) == ("alice", "acme")
    app = create_app(config(agents=[kiosk]))
    mount_mcp(app, auth=api_key_auth({"k-alice": Actor("alice", ("support",), "acme")}))  # the default agent
    async with serve(app) as base, mcp_client(f"{base}/agent/mcp", "k-alice") as client:
        assert [t.name for t in (await client.list_tools()).tools] == ["whoami", "lookup_order"]


def test_mounting_an_unknown_agent_is_a_configuration_error() -> None:
    app = create_app(config())
    with pytest.raises(ConfigurationError) as caught:
        mount_mcp(app, auth=fixed_actor(Actor("ops")), agent="nope")
    assert (caught.value.code, caught.value.option) == ("unknown_agent", "agent")
    assert isinstance(caught.value.__cause__, NotFoundError)
