"""Governance routes (HTTP-14..29): mounting, 401/403 gate, limits, actor labels, pricing."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

import pytest

from agora_agent.actors import Actor
from agora_agent.governance.directory import MemoryActorDirectory
from agora_agent.testing.helpers import OBSERVER
from agora_agent.web.routes.governance import parse_limit

from .conftest import ADMIN, ALICE, BOB, asgi_client, is_admin, make_config, refund_script

GOVERNANCE_GETS = [
    "/governance/spend/model",
    "/governance/spend/actor",
    "/governance/usage/trend",
    "/governance/tool-calls/recent",
    "/governance/threads/recent",
    "/governance/runs",
    "/governance/approvals/pending",
    "/governance/tools/stats",
    "/governance/reliability",
    "/governance/pricing",
]


def paths(app_openapi: dict[str, Any]) -> set[str]:
    return set(app_openapi["paths"])


@pytest.mark.ref("HTTP-14", "HTTP-15", "HTTP-16", "GGATE-02")
async def test_mounting_follows_read_model_and_gate(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="agora_agent.web"):
        async with asgi_client(make_config()) as (client, _):
            mounted = paths((await client.get("/openapi.json")).json())
            assert "/agent/approvals/mine" in mounted
            assert not any(p.startswith("/agent/governance") for p in mounted)
            r = await client.get("/agent/governance/runs", headers=ADMIN)
            assert r.status_code == 404  # not mounted: the router's plain 404
    warning = " ".join(r.getMessage() for r in caplog.records)
    assert "governanceAuthorize" in warning and "() => true" in warning and "approvals/mine" in warning

    async with asgi_client(make_config(governance_queries=False, governance_authorize=is_admin)) as (client, _):
        mounted = paths((await client.get("/openapi.json")).json())
        assert not any("governance" in p or "approvals/mine" in p for p in mounted)

    async with asgi_client(make_config(governance_authorize=is_admin)) as (client, _):
        mounted = paths((await client.get("/openapi.json")).json())
        assert {"/agent" + p for p in GOVERNANCE_GETS} <= mounted
        assert "/agent/governance/threads/{thread_id}" in mounted and "/agent/governance/runs/{run_id}" in mounted

    async with asgi_client(make_config(governance_authorize=is_admin, pricing=False)) as (client, _):
        mounted = paths((await client.get("/openapi.json")).json())
        assert "/agent/governance/pricing" not in mounted and "/agent/governance/runs" in mounted


@pytest.mark.ref("HTTP-16", "GGATE-01")
async def test_every_governance_route_is_401_then_403_then_200() -> None:
    async with asgi_client(make_config(governance_authorize=is_admin)) as (client, _):
        for path in GOVERNANCE_GETS:
            assert (await client.get("/agent" + path)).status_code == 401, path
            r = await client.get("/agent" + path, headers=BOB)
            assert (r.status_code, r.json()) == (403, {"error": "forbidden"}), path
            assert (await client.get("/agent" + path, headers=ADMIN)).status_code == 200, path


@pytest.mark.ref("GGATE-01")
async def test_a_raising_gate_is_403_with_its_message_only_in_debug() -> None:
    def gate(actor: Actor, request: Any) -> bool:
        raise RuntimeError("directory down")

    async with asgi_client(make_config(governance_authorize=gate)) as (client, _):
        r = await client.get("/agent/governance/runs", headers=ADMIN)
        assert (r.status_code, r.json()) == (403, {"error": "forbidden"})
    async with asgi_client(make_config(governance_authorize=gate, debug=True)) as (client, _):
        r = await client.get("/agent/governance/runs", headers=ADMIN)
        assert (r.status_code, r.json()) == (403, {"error": "directory down"})


@pytest.mark.ref("HTTP-16")
def test_limit_parsing_like_parse_int() -> None:
    assert [parse_limit(v) for v in (None, "", "abc", "0", "-5", "10", "12abc", " 7", "1000")] == [
        50,
        50,
        50,
        50,
        50,
        10,
        12,
        7,
        200,
    ]


@pytest.mark.ref("HTTP-14", "HTTP-18", "HTTP-21", "HTTP-23", "HTTP-24", "HTTP-25", "GQ-12")
async def test_rows_get_actor_labels_in_one_batched_call() -> None:
    directory = MemoryActorDirectory({"alice": "Alice A."})
    config = make_config(refund_script(), governance_authorize=is_admin, actor_directory=directory)
    async with asgi_client(config) as (client, service):
        from agora_agent.testing import wait_for_tool_status

        started = await service.chat(Actor("alice", ("support",)), "refund 1")
        await wait_for_tool_status(service, started.run_id)
        bobs = await service.chat(Actor("bob", ("support",)), "refund 2")
        await wait_for_tool_status(service, bobs.run_id)  # parked before the queries below look for it

        mine = (await client.get("/agent/approvals/mine", headers=ALICE)).json()
        assert [(row["runId"], row["actorLabel"]) for row in mine] == [(started.run_id, "Alice A.")]

        runs = (await client.get("/agent/governance/runs", headers=ADMIN)).json()
        assert runs["nextCursor"] is None
        labels = {row["actorRef"]: row.get("actorLabel") for row in runs["runs"]}
        assert labels == {"alice": "Alice A.", "bob": None}  # unknown refs stay unlabelled
        directory.calls.clear()
        await client.get("/agent/governance/threads/recent", headers=ADMIN)
        assert directory.calls == [["alice", "bob"]]  # distinct refs, one call

        detail = (await client.get(f"/agent/governance/runs/{started.run_id}", headers=ADMIN)).json()
        assert detail["run"]["actorLabel"] == "Alice A." and detail["approvals"][0]["status"] == "pending_approval"
        thread = (await client.get(f"/agent/governance/threads/{started.thread_id}", headers=ADMIN)).json()
        assert thread["actorLabel"] == "Alice A." and thread["runs"][0]["actorLabel"] == "Alice A."

        assert (await client.get("/agent/governance/runs/nope", headers=ADMIN)).status_code == 404
        assert (await client.get("/agent/governance/threads/nope", headers=ADMIN)).status_code == 404
        page = (await client.get("/agent/governance/runs", params={"limit": "1"}, headers=ADMIN)).json()
        assert len(page["runs"]) == 1 and page["nextCursor"] == "1"
        page2 = await client.get("/agent/governance/runs", params={"limit": "1", "cursor": "1"}, headers=ADMIN)
        assert len(page2.json()["runs"]) == 1 and page2.json()["nextCursor"] is None
        assert (await client.get("/agent/governance/runs", params={"cursor": "x"}, headers=ADMIN)).status_code == 422
        pending = (
            await client.get("/agent/governance/approvals/pending", params={"actor": "bob"}, headers=ADMIN)
        ).json()
        assert [row["actorRef"] for row in pending] == ["bob"]


async def test_a_failing_directory_leaves_rows_unlabelled() -> None:
    class Broken:
        async def resolve_display(self, refs: Any) -> dict[str, str]:
            raise RuntimeError("ldap down")

    config = make_config(governance_authorize=is_admin, actor_directory=Broken())
    async with asgi_client(config) as (client, service):
        r = await client.post("/agent/chat", json={"message": "hi"}, headers=ALICE)
        await service.wait_for_run(OBSERVER, r.headers["x-agent-run-id"])
        rows = (await client.get("/agent/governance/spend/actor", headers=ADMIN)).json()
        assert rows and rows[0]["actorRef"] == "alice" and "actorLabel" not in rows[0]


@pytest.mark.ref("HTTP-17", "HTTP-19", "HTTP-26", "HTTP-27")
async def test_spend_trend_stats_reliability_and_date_params() -> None:
    async with asgi_client(make_config(governance_authorize=is_admin)) as (client, service):
        r = await client.post("/agent/chat", json={"message": "hi"}, headers=ALICE)
        await service.wait_for_run(OBSERVER, r.headers["x-agent-run-id"])
        today = datetime.now(UTC).date().isoformat()
        spend = (await client.get("/agent/governance/spend/model", headers=ADMIN)).json()
        assert spend[0]["modelId"] == "fake-model" and spend[0]["requests"] == 1
        trend = (
            await client.get("/agent/governance/usage/trend", params={"from": today, "to": today}, headers=ADMIN)
        ).json()
        assert [p["day"] for p in trend] == [today]
        empty = await client.get(
            "/agent/governance/spend/model", params={"from": "2001-01-01", "to": "2001-01-02"}, headers=ADMIN
        )
        assert empty.json() == []
        bad = await client.get("/agent/governance/spend/model", params={"from": "yesterday"}, headers=ADMIN)
        assert bad.status_code == 422 and "from" in str(bad.json()["detail"])
        reliability = (await client.get("/agent/governance/reliability", headers=ADMIN)).json()
        assert (reliability["runs"], reliability["completed"], reliability["successRate"]) == (1, 1, 1.0)
        assert (await client.get("/agent/governance/tools/stats", headers=ADMIN)).json() == []


@pytest.mark.ref("HTTP-28", "HTTP-29", "PRICE-02")
async def test_pricing_routes() -> None:
    async with asgi_client(make_config(governance_authorize=is_admin)) as (client, _):
        body = {"modelId": "gpt-x", "inputPricePer1m": 3, "outputPricePer1m": 15}
        assert (await client.post("/agent/governance/pricing", json=body, headers=BOB)).status_code == 403
        assert (await client.post("/agent/governance/pricing", json=body, headers=ADMIN)).json() == {"ok": True}
        prices = (await client.get("/agent/governance/pricing", headers=ADMIN)).json()
        assert len(prices) == 1
        assert {k: prices[0][k] for k in ("modelId", "inputPricePer1m", "outputPricePer1m")} == body
        assert "cacheReadPricePer1m" not in prices[0] and "effectiveFrom" in prices[0]
        for bad in (
            {"modelId": "", "inputPricePer1m": 1, "outputPricePer1m": 1},
            {"modelId": "m"},
            {"inputPricePer1m": "x"},
        ):
            r = await client.post("/agent/governance/pricing", json=bad, headers=ADMIN)
            assert r.status_code == 422, bad
        assert len((await client.get("/agent/governance/pricing", headers=ADMIN)).json()) == 1


@pytest.mark.ref("HTTP-22")
async def test_thread_detail_501_when_the_adapter_lacks_it() -> None:
    from agora_agent.stores.memory import MemoryAgentStore
    from agora_agent.stores.memory_queries import MemoryGovernanceQueries

    class NoDetail:
        def __init__(self, inner: MemoryGovernanceQueries) -> None:
            self._inner = inner

        def __getattr__(self, name: str) -> Any:
            if name == "thread_detail":
                raise AttributeError(name)
            return getattr(self._inner, name)

    store = MemoryAgentStore()
    config = make_config(
        store=store, governance_queries=NoDetail(MemoryGovernanceQueries(store)), governance_authorize=is_admin
    )
    async with asgi_client(config) as (client, _):
        r = await client.get("/agent/governance/threads/any", headers=ADMIN)
        assert (r.status_code, r.json()) == (501, {"error": "this governance adapter does not support thread detail"})
