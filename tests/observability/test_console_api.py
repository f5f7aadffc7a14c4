"""The console API: run inspector (waterfall), two runs side by side, the audit export, the live SSE feed."""

from __future__ import annotations

import asyncio
import csv
import io
import json
from datetime import UTC, datetime
from typing import Any

import httpx2

from agora_agent import AgentDefinition, ModelPrice
from agora_agent.governance.gate import Caller
from agora_agent.testing import FakeModel, wait_for_tool_status
from agora_agent.testing.helpers import OBSERVER
from agora_agent.web import create_app
from tests.observability.test_events import ADMIN, ALICE, QuickRefund, Refund, lookup, script
from tests.web.conftest import named_events

from .conftest import ADMIN_H, BOB_H, asgi, serve, web_config


def config(**kwargs: Any) -> Any:
    return web_config(
        model=FakeModel(script),
        tools=[lookup, Refund, QuickRefund],
        default_agent=AgentDefinition(delegates_to=("billing",)),
        agents=[AgentDefinition(name="billing", system_prompt="You answer billing questions.")],
        **kwargs,
    )


async def full_run(service: Any) -> str:
    started = await service.chat(ALICE, "full")
    await wait_for_tool_status(service, started.run_id)
    await asyncio.sleep(0.02)  # a measurable approval wait
    await service.approve(Caller(ADMIN, grant=True), started.run_id, "c-act")
    await service.wait_for_run(OBSERVER, started.run_id)
    return str(started.run_id)


async def test_inspector_shows_each_step_with_timing_approver_and_the_nested_delegation() -> None:
    async with asgi(config()) as (client, service):
        await service.pricing.upsert_price(
            ModelPrice(model_id="fake-model", input_price_per_1m=1, output_price_per_1m=2)
        )
        run_id = await full_run(service)
        r = await client.get(f"/agent/governance/runs/{run_id}/inspect", headers=ADMIN_H)
        assert r.status_code == 200, r.text
        body = r.json()
        steps = body["steps"]
        assert [(s["kind"], s["name"]) for s in steps] == [
            ("model", "chat fake-model"),
            ("tool", "lookup"),
            ("approval", "approval refund"),
            ("tool", "refund"),
            ("delegation", "ask_billing"),
            ("model", "chat fake-model"),
        ]
        for s in steps:
            assert s["durationMs"] is not None and s["durationMs"] >= 0 and s["offsetMs"] >= 0
        model = steps[0]["detail"]
        assert model["inputTokens"] >= 1 and model["finishReason"] == "tool_calls" and model["latencyMs"] is not None
        assert model["costSource"] == "priced" and model["costUsd"] > 0 and model["priceId"]
        approval = steps[2]
        assert (approval["detail"]["requestedBy"], approval["detail"]["decidedBy"], approval["status"]) == (
            "alice",
            "root",
            "approved",
        )
        assert approval["durationMs"] >= 20 and approval["detail"]["policyDecision"] == "allowed"
        refund = steps[3]["detail"]
        assert refund["arguments"] == {"order_id": 1} and refund["output"] == {"refunded": 1}
        assert refund["idempotencyKey"] == f"{run_id}:c-act" and refund["decidedBy"] == "root"
        child = steps[4]["child"]
        assert child["run"]["agentName"] == "billing" and child["run"]["status"] == "completed"
        assert [s["kind"] for s in child["steps"]] == ["model"]
        assert "response" not in model  # content only with content capture on

        assert (await client.get(f"/agent/governance/runs/{run_id}/inspect", headers=BOB_H)).status_code == 403
        assert (await client.get("/agent/governance/runs/nope/inspect", headers=ADMIN_H)).json() == {
            "error": "run not found"
        }


async def test_with_content_capture_each_model_step_carries_its_response() -> None:
    async with asgi(config(capture_content=True)) as (client, service):
        run_id = await full_run(service)
        steps = (await client.get(f"/agent/governance/runs/{run_id}/inspect", headers=ADMIN_H)).json()["steps"]
        first = steps[0]["detail"]
        assert first["request"] == {"user": "full"}
        assert [c["name"] for c in first["response"]["toolCalls"]] == ["lookup", "refund", "ask_billing"]
        assert steps[-1]["detail"]["response"]["text"] == "done"


async def test_two_runs_side_by_side() -> None:
    async with asgi(config()) as (client, service):
        a = await full_run(service)
        started = await service.chat(ALICE, "hello")
        await service.wait_for_run(OBSERVER, started.run_id)
        r = await client.get(f"/agent/governance/compare?a={a}&b={started.run_id}", headers=ADMIN_H)
        diff = r.json()["diff"]
        assert diff["input"] == {"a": "full", "b": "hello"}
        assert diff["tools"]["onlyA"] == ["ask_billing", "lookup", "refund"] and diff["tools"]["onlyB"] == []
        assert diff["tokens"]["a"] > diff["tokens"]["b"] > 0
        assert (await client.get(f"/agent/governance/compare?a={a}&b=nope", headers=ADMIN_H)).status_code == 404


async def test_audit_export_json_and_csv_for_a_date_range() -> None:
    async with asgi(config()) as (client, service):
        await full_run(service)
        rejected = await service.chat(ALICE, "reject")
        await wait_for_tool_status(service, rejected.run_id)
        await service.reject(Caller(ADMIN, grant=True), rejected.run_id, "c-rej", reason="not allowed today")
        await service.wait_for_run(OBSERVER, rejected.run_id)
        price = {"modelId": "fake-model", "inputPricePer1m": 1, "outputPricePer1m": 2}
        assert (await client.post("/agent/governance/pricing", json=price, headers=ADMIN_H)).status_code == 200
        today = datetime.now(UTC).date().isoformat()
        body = (await client.get(f"/agent/governance/audit?from={today}&to={today}", headers=ADMIN_H)).json()
        records = body["records"]
        calls = {r["tool_call_id"]: r for r in records if r["kind"] == "tool_call"}
        assert calls["c-act"]["decided_by"] == "root" and calls["c-act"]["requested_by"] == "alice"
        assert calls["c-act"]["arguments"] == {"order_id": 1} and calls["c-act"]["policy_decision"] == "allowed"
        assert (calls["c-rej"]["status"], calls["c-rej"]["reason"]) == ("rejected", "not allowed today")
        assert calls["c-read"]["actor"] == "alice"
        [change] = [r for r in records if r["kind"] == "change"]
        assert (change["action"], change["actor"], change["target"]) == ("price.set", "root", "fake-model")

        r = await client.get(f"/agent/governance/audit?from={today}&to={today}&format=csv", headers=ADMIN_H)
        assert r.headers["content-type"].startswith("text/csv")
        assert "attachment" in r.headers["content-disposition"]
        rows = list(csv.DictReader(io.StringIO(r.text)))
        rejected_row = next(row for row in rows if row["tool_call_id"] == "c-rej")
        assert (rejected_row["decided_by"], rejected_row["reason"]) == ("root", "not allowed today")
        assert json.loads(rejected_row["arguments"]) == {"order_id": 2}
        assert (
            await client.get("/agent/governance/audit?from=2020-01-01&to=2026-12-31", headers=ADMIN_H)
        ).status_code == 422
        assert (await client.get("/agent/governance/audit", headers=BOB_H)).status_code == 403


async def test_live_feed_pushes_changes_with_the_pending_count() -> None:
    app = create_app(config())
    service = app.state.agent_service
    async with (
        serve(app) as base,
        httpx2.AsyncClient(base_url=base, timeout=10) as client,
        client.stream("GET", "/agent/governance/live", headers=ADMIN_H) as response,
    ):
        assert response.status_code == 200
        next_event = named_events(response)

        assert await next_event() == ("hello", {"pendingApprovals": 0})
        started = await service.chat(ALICE, "reject")
        seen: list[tuple[str, Any]] = []
        while True:
            _, data = await asyncio.wait_for(next_event(), 10)
            seen.append((data["kind"], data.get("pendingApprovals")))
            if data["kind"] == "approval.requested":
                break
        assert seen[0] == ("run.started", None) and seen[-1] == ("approval.requested", 1)
        await service.reject(Caller(ADMIN, grant=True), started.run_id, "c-rej")
        while True:
            _, data = await asyncio.wait_for(next_event(), 10)
            if data["kind"] == "approval.decided":
                assert data["pendingApprovals"] == 0 and data["toolCallId"] == "c-rej"
                break


async def test_a_non_admin_cannot_follow_the_live_feed() -> None:
    async with asgi(config()) as (client, _):
        assert (await client.get("/agent/governance/live", headers=BOB_H)).status_code == 403
