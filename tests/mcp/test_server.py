"""The MCP server over real HTTP with the SDK's own client: identity, filter chain, actions, audit."""

from __future__ import annotations

from typing import Any

import httpx2
import mcp_types as types
from pydantic import BaseModel

from agora_agent import ActionTool, Actor, AgentConfig, ToolContext, tool
from agora_agent.actors import HeaderActorResolver
from agora_agent.mcp import api_key_auth, mount_mcp
from agora_agent.testing import FakeModel, echo_script
from agora_agent.web import create_app
from tests.mcp.conftest import mcp_client, serve


@tool
async def whoami(ctx: ToolContext) -> dict[str, Any]:
    """Who the tool runs for."""
    return {
        "actor": ctx.actor.id,
        "tenant": ctx.actor.tenant_ref,
        "channel": ctx.channel,
        "idempotency_key": ctx.idempotency_key,
    }


@tool(roles=("support",))
async def lookup_order(order_id: int, ctx: ToolContext) -> dict[str, Any]:
    """Look up an order by id."""
    return {"order_id": order_id, "status": "shipped"}


class RefundInput(BaseModel):
    order_id: int
    amount: float


REFUNDS: list[int] = []


class RefundOrder(ActionTool):
    """Refund an order."""

    name = "refund_order"
    description = "Refund an order."
    Input = RefundInput
    roles = ("support",)

    async def execute(self, input: RefundInput, ctx: ToolContext) -> dict[str, Any]:
        REFUNDS.append(input.order_id)
        return {"refunded": input.order_id}


KEYS = {
    "k-alice": Actor("alice", ("support",), "acme"),
    "k-bob": Actor("bob", ("member",), "globex"),
    "k-root": Actor("root", ("admin",)),
}


def make_app(**options: Any) -> Any:
    config = AgentConfig(
        model=FakeModel(echo_script("ok")),
        tools=[whoami, lookup_order, RefundOrder],
        actor_resolver=HeaderActorResolver(),
        governance_authorize=lambda actor, request: "admin" in actor.roles,
    )
    app = create_app(config)
    options.setdefault("auth", api_key_auth(KEYS))
    mount_mcp(app, **options)
    return app


async def names(url: str, key: str) -> list[str]:
    async with mcp_client(url, key) as client:
        return [t.name for t in (await client.list_tools()).tools]


async def test_two_actors_see_different_tools_and_actions_are_refused_by_default() -> None:
    async with serve(make_app()) as base:
        url = f"{base}/agent/mcp"
        assert await names(url, "k-alice") == ["whoami", "lookup_order"]
        assert await names(url, "k-bob") == ["whoami"]
        async with mcp_client(url, "k-alice") as client:
            result = await client.call_tool("whoami", {})
            assert not result.is_error
            data = result.structured_content
            assert data is not None
            assert data["actor"] == "alice" and data["tenant"] == "acme" and data["channel"] == "mcp"
            assert data["idempotency_key"].split(":")[1].startswith("mcp_")
            refused = await client.call_tool("refund_order", {"order_id": 1, "amount": 2})
            assert refused.is_error
            assert "not available over MCP" in refused.content[0].text  # type: ignore[union-attr]
        async with mcp_client(url, "k-bob") as client:
            forbidden = await client.call_tool("lookup_order", {"order_id": 1})
            assert forbidden.is_error


async def test_missing_and_bad_keys_are_401_json() -> None:
    async with serve(make_app()) as base, httpx2.AsyncClient() as http:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        for headers in ({}, {"Authorization": "Bearer nope"}, {"Authorization": "Basic k-alice"}):
            r = await http.post(f"{base}/agent/mcp", json=body, headers=headers)
            assert r.status_code == 401, r.text
            assert isinstance(r.json()["error"], str)
            assert r.headers["www-authenticate"].startswith("Bearer")
        r = await http.post(f"{base}/agent/mcp", json=body, headers={"Authorization": "Bearer nope"})
        assert r.json() == {"error": "invalid API key"}


async def test_execute_mode_runs_actions_and_validates_input() -> None:
    REFUNDS.clear()
    async with serve(make_app(actions="execute")) as base, mcp_client(f"{base}/agent/mcp", "k-alice") as client:
        assert "refund_order" in [t.name for t in (await client.list_tools()).tools]
        bad = await client.call_tool("refund_order", {"order_id": "x"})
        assert bad.is_error
        text = bad.content[0].text  # type: ignore[union-attr]
        assert "order_id" in text and "amount" in text
        ok = await client.call_tool("refund_order", {"order_id": 7, "amount": 1.5})
        assert not ok.is_error and ok.structured_content == {"refunded": 7}
    assert REFUNDS == [7]


async def test_confirm_mode_elicits_and_runs_only_on_accept() -> None:
    REFUNDS.clear()
    answers: list[bool] = [True, False]
    asked: list[str] = []

    async def elicit(ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"confirm": answers.pop(0)})

    async with serve(make_app(actions="confirm")) as base:
        url = f"{base}/agent/mcp"
        async with mcp_client(url, "k-alice", elicitation_callback=elicit) as client:
            ok = await client.call_tool("refund_order", {"order_id": 3, "amount": 1})
            assert not ok.is_error, ok
            no = await client.call_tool("refund_order", {"order_id": 4, "amount": 1})
            assert no.is_error and "did not" in no.content[0].text  # type: ignore[union-attr]
        async with mcp_client(url, "k-alice") as client:  # no elicitation support
            refused = await client.call_tool("refund_order", {"order_id": 5, "amount": 1})
            assert refused.is_error and "elicitation" in refused.content[0].text  # type: ignore[union-attr]
    assert REFUNDS == [3]
    assert "refund_order" in asked[0]


async def test_every_call_is_an_audit_row_in_the_governance_routes() -> None:
    root = {"x-actor-id": "root", "x-actor-role": "admin"}
    async with serve(make_app()) as base:
        async with mcp_client(f"{base}/agent/mcp", "k-alice") as client:
            await client.call_tool("lookup_order", {"order_id": 9})
            await client.call_tool("refund_order", {"order_id": 9, "amount": 1})
            await client.call_tool("lookup_order", {"order_id": "nine"})
        async with httpx2.AsyncClient(base_url=f"{base}/agent/governance", headers=root) as http:
            recent = (await http.get("/tool-calls/recent")).json()
            runs = (await http.get("/runs", params={"agent": "mcp"})).json()["runs"]
            details = [(await http.get(f"/runs/{run['id']}")).json() for run in runs]
            thread = (await http.get(f"/threads/{recent[0]['threadId']}")).json()
    assert [row["toolName"] for row in recent] == ["lookup_order", "refund_order", "lookup_order"]
    assert {row["threadId"] for row in recent} == {thread["threadId"]}  # one thread for the session
    assert thread["actorRef"] == "alice" and thread["tenantRef"] == "acme" and thread["persona"] == "mcp"
    assert len(runs) == 3 and {run["actorRef"] for run in runs} == {"alice"}
    calls = sorted((d["toolCalls"][0] for d in details), key=lambda c: c["createdAt"])
    assert [c["status"] for c in calls] == ["executed", "failed", "failed"]
    assert calls[0]["input"] == {"order_id": 9} and calls[0]["output"] == {"order_id": 9, "status": "shipped"}
    assert calls[0]["executionMs"] is not None
    assert "not available over MCP" in calls[1]["error"]
    assert "order_id" in calls[2]["error"]
