"""Budgets as data: rules edited through the API take effect on the next chat (in every process on the
database), are audited, validated, shown per actor, and raise `BudgetThresholdReached` once per period."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from agora_agent.governance.gate import GovernanceScope
from agora_agent.governance.quota import Budget
from agora_agent.messages import Usage
from agora_agent.observability.events import AgentEvent, BudgetThresholdReached
from agora_agent.stores.sql import create_engine_from_url
from agora_agent.stores.sql.migrate import upgrade
from agora_agent.testing import FakeModel, ScriptedTurn
from agora_agent.testing.helpers import OBSERVER
from tests.stores.sql.conftest import empty_database

from .conftest import ADMIN_H, ALICE_H, BOB_H, asgi, hdr, web_config

TURN = Usage(input_tokens=60, output_tokens=30)  # 90 tokens per chat
BUDGETS = "/agent/governance/budgets"


def model() -> FakeModel:
    return FakeModel(lambda request, i: ScriptedTurn(text="ok", usage=TURN), model_id="m1")


@asynccontextmanager
async def database(kind: str, tmp_path: Path) -> AsyncIterator[str | None]:
    """None for the memory store; else the URL of an empty, migrated SQLite or PostgreSQL database."""
    if kind == "memory":
        yield None
        return
    async with empty_database(kind, tmp_path) as url:
        engine = create_engine_from_url(url)
        await upgrade(engine)  # as a deployment would (PostgreSQL has no auto-create)
        await engine.dispose()
        yield url


async def chat(client: Any, service: Any, headers: dict[str, str] = ALICE_H) -> Any:
    r = await client.post("/agent/chat", json={"message": "hi"}, headers=headers)
    if r.status_code == 200:
        await service.wait_for_run(OBSERVER, r.headers["x-agent-run-id"])
    return r


def today() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d")


@pytest.mark.parametrize("kind", ["memory", "sqlite", "postgres"])
async def test_budgets_edited_through_the_api_take_effect_on_the_next_chat(kind: str, tmp_path: Path) -> None:
    async with database(kind, tmp_path) as url:
        config = web_config(model=model(), store=url, budget=Budget(tokens_per_actor=10_000, reserve_tokens=10))
        async with asgi(config) as (client, service), asgi(config) as (other, other_service):
            # `other` is a second process on the same database (SQL); with the memory store its own world.
            chat_client, chat_service = (other, other_service) if url else (client, service)
            assert (await chat(chat_client, chat_service)).status_code == 200  # 90 of the default 10,000

            r = await client.put(f"{BUDGETS}/actor/alice", json={"tokens": 50}, headers=ADMIN_H)
            assert r.status_code == 200, r.text
            assert r.json()["rule"] | {"updatedAt": None} == {
                "scope": "actor",
                "key": "alice",
                "period": "day",
                "tokens": 50,
                "usd": None,
                "thresholds": [0.8],
                "tenantRef": None,
                "updatedBy": "root",
                "updatedAt": None,
            }
            assert r.json()["previous"] is None

            refused = await chat(chat_client, chat_service)  # the next chat, no restart, maybe another process
            assert refused.status_code == 429
            assert refused.headers["content-type"].startswith("application/json")
            body = refused.json()
            assert body["error"].startswith("actor 'alice' is over the daily token budget of 50 (used 90")
            assert "console" in body["error"]  # the fix for a stored rule is the console, not the config
            detail = body["detail"]
            assert (detail["scope"], detail["key"], detail["limitTokens"], detail["usedTokens"]) == (
                "actor",
                "alice",
                50,
                90,
            )
            assert (detail["period"], detail["periodKey"], detail["source"]) == ("day", today(), "rule:actor:alice")
            tomorrow = datetime.fromisoformat(today()).replace(tzinfo=UTC) + timedelta(days=1)
            assert datetime.fromisoformat(detail["resetsAt"]) == tomorrow
            assert (await chat(chat_client, chat_service, BOB_H)).status_code == 200  # bob keeps the default

            assert (await client.delete(f"{BUDGETS}/actor/alice", headers=ADMIN_H)).status_code == 200
            assert (await chat(chat_client, chat_service)).status_code == 200  # back to the config's 10,000

            r = await client.put(f"{BUDGETS}/actor/*", json={"tokens": 0}, headers=ADMIN_H)  # every actor blocked
            assert r.status_code == 200
            assert (await chat(chat_client, chat_service, BOB_H)).status_code == 429

            entries = [e for e in await service.audit.entries() if e.action.startswith("budget.")]
            assert [(e.action, e.actor_ref, e.target) for e in entries] == [
                ("budget.set", "root", "actor:alice"),
                ("budget.delete", "root", "actor:alice"),
                ("budget.set", "root", "actor:*"),
            ]
            assert entries[0].detail == {
                "before": None,
                "after": {"period": "day", "tokens": 50, "usd": None, "thresholds": [0.8]},
                "tenant": None,
            }
            assert entries[1].detail["before"]["tokens"] == 50 and entries[1].detail["after"] is None


async def test_only_the_governance_gate_may_edit_budgets() -> None:
    async with asgi(web_config(model=model(), budget=Budget())) as (client, service):
        assert (await client.put(f"{BUDGETS}/actor/alice", json={"tokens": 1}, headers=ALICE_H)).status_code == 403
        assert (await client.delete(f"{BUDGETS}/actor/alice", headers=ALICE_H)).status_code == 403
        assert (await client.get(BUDGETS, headers=ALICE_H)).status_code == 403
        assert (await client.put(f"{BUDGETS}/actor/alice", json={"tokens": 1})).status_code == 401
        assert await service.audit.entries() == []
        assert (await chat(client, service)).status_code == 200  # nothing was stored


async def test_budget_routes_are_not_mounted_without_a_budget() -> None:
    async with asgi(web_config(model=model())) as (client, _):
        assert (await client.get(BUDGETS, headers=ADMIN_H)).status_code == 404


@pytest.mark.parametrize(
    ("path", "body", "says"),
    [
        ("actor/alice", {"tokens": -1}, "'tokens' must be 0 or more"),
        ("actor/alice", {"tokens": 1.5}, "tokens"),
        ("actor/alice", {"tokens": "lots"}, "tokens"),
        ("actor/alice", {"usd": -0.01}, "'usd' must be 0 or more"),
        ("actor/alice", {"period": "week"}, "'period' must be 'day' or 'month'"),
        ("actor/alice", {"thresholds": [1.5]}, "each threshold is a fraction"),
        ("actor/alice", {"thresholds": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]}, "at most 5"),
        ("actor/alice", {"tokenz": 5}, "tokenz"),
        ("actor/alice", [1, 2], "invalid request"),
        ("team/red", {"tokens": 5}, "unknown budget scope 'team': use 'actor' or 'tenant'"),
    ],
)
async def test_bad_rule_bodies_are_422_with_an_error_in_words(path: str, body: Any, says: str) -> None:
    async with asgi(web_config(model=model(), budget=Budget())) as (client, service):
        r = await client.put(f"{BUDGETS}/{path}", json=body, headers=ADMIN_H)
        assert r.status_code == 422, r.text
        assert says in r.json()["error"]
        assert (await client.get(BUDGETS, headers=ADMIN_H)).json()["rules"] == []
        assert await service.audit.entries() == []


async def test_unknown_scope_and_missing_rule_on_delete() -> None:
    async with asgi(web_config(model=model(), budget=Budget())) as (client, _):
        r = await client.delete(f"{BUDGETS}/team/red", headers=ADMIN_H)
        assert r.status_code == 422 and "unknown budget scope" in r.json()["error"]
        r = await client.delete(f"{BUDGETS}/actor/nobody", headers=ADMIN_H)
        assert (r.status_code, r.json()) == (404, {"error": "no budget rule for actor 'nobody'"})


@pytest.mark.parametrize("kind", ["memory", "sqlite", "postgres"])
async def test_usd_budgets_count_the_recorded_cost(kind: str, tmp_path: Path) -> None:
    async with (
        database(kind, tmp_path) as url,
        asgi(web_config(model=model(), store=url, budget=Budget())) as (
            client,
            service,
        ),
    ):
        price = {"modelId": "m1", "inputPricePer1m": 1000, "outputPricePer1m": 1000}  # $0.09 per chat
        assert (await client.post("/agent/governance/pricing", json=price, headers=ADMIN_H)).status_code == 200
        r = await client.put(f"{BUDGETS}/tenant/acme", json={"usd": 0.1, "period": "month"}, headers=ADMIN_H)
        assert r.status_code == 200 and r.json()["rule"]["tenantRef"] == "acme"
        assert (await chat(client, service)).status_code == 200  # $0.09 of $0.10
        assert (await chat(client, service)).status_code == 200  # 0.09 < 0.10: granted, now $0.18
        refused = await chat(client, service)
        assert refused.status_code == 429
        detail = refused.json()["detail"]
        assert (detail["scope"], detail["key"], detail["period"]) == ("tenant", "acme", "month")
        assert detail["usedUsd"] == pytest.approx(0.18)
        assert "monthly budget of $0.10" in refused.json()["error"]
        assert (await chat(client, service, BOB_H)).status_code == 200  # bob has no tenant

        usage = (await client.get(f"{BUDGETS}/usage", headers=ADMIN_H)).json()
        rows = {(row["scope"], row["key"]): row for row in usage["rows"]}
        assert rows[("tenant", "acme")]["limit"]["usd"] == 0.1
        assert rows[("tenant", "acme")]["limit"]["usedUsd"] == pytest.approx(0.18)
        assert rows[("tenant", "acme")]["limit"]["share"] == pytest.approx(1.8)
        assert rows[("actor", "alice")]["dayTokens"] == 180 and rows[("actor", "alice")]["limit"] is None
        assert rows[("actor", "bob")]["monthUsd"] == pytest.approx(0.09)


async def test_a_rule_added_mid_day_counts_what_was_already_spent() -> None:
    """No default budget: the counter a new rule meets is seeded from the usage ledger."""
    async with asgi(web_config(model=model(), budget=Budget())) as (client, service):
        for _ in range(3):
            assert (await chat(client, service)).status_code == 200  # 270 tokens, no limit yet
        r = await client.put(f"{BUDGETS}/actor/alice", json={"tokens": 200, "period": "month"}, headers=ADMIN_H)
        assert r.status_code == 200
        refused = await chat(client, service)
        assert refused.status_code == 429 and refused.json()["detail"]["usedTokens"] == 270
        quota = (await client.get("/agent/quota/today", headers=ALICE_H)).json()
        assert (quota["period"], quota["periodUsedTokens"], quota["limitTokens"]) == ("month", 270, 200)


@pytest.mark.parametrize("kind", ["memory", "sqlite", "postgres"])  # PostgreSQL settles in one statement
async def test_a_threshold_raises_budget_threshold_reached_once_per_period(kind: str, tmp_path: Path) -> None:
    events: list[AgentEvent] = []
    async with database(kind, tmp_path) as url:
        config = web_config(model=model(), store=url, budget=Budget(reserve_tokens=10), on_event=events.append)
        async with asgi(config) as (client, service):
            r = await client.put(f"{BUDGETS}/actor/alice", json={"tokens": 200, "thresholds": [0.5]}, headers=ADMIN_H)
            assert r.status_code == 200
            first = await chat(client, service)  # 90 = 45 %
            assert [e for e in events if isinstance(e, BudgetThresholdReached)] == []
            second = await chat(client, service)  # 180 = 90 %: crossed here
            third = await chat(client, service)  # 270: still crossed, not raised again
            assert [first.status_code, second.status_code, third.status_code] == [200, 200, 200]
            raised = [e for e in events if isinstance(e, BudgetThresholdReached)]
            assert len(raised) == 1
            [event] = raised
            assert (event.scope, event.key, event.unit, event.threshold) == ("actor", "alice", "tokens", 0.5)
            assert (event.used, event.limit, event.period) == (180, 200, today())
            assert event.run_id == second.headers["x-agent-run-id"] and event.actor_id == "alice"
            assert (await chat(client, service)).status_code == 429


async def test_a_stored_rule_exempts_an_actor_from_the_default() -> None:
    async with asgi(web_config(model=model(), budget=Budget(tokens_per_actor=0))) as (client, service):
        assert (await chat(client, service)).status_code == 429  # a default of 0 blocks everyone
        assert (await client.put(f"{BUDGETS}/actor/alice", json={}, headers=ADMIN_H)).status_code == 200
        assert (await chat(client, service)).status_code == 200  # no limits at all: exempt
        assert (await chat(client, service, BOB_H)).status_code == 429
        listed = (await client.get(BUDGETS, headers=ADMIN_H)).json()
        assert listed["defaults"]["tokensPerActor"] == 0
        assert [(r["scope"], r["key"], r["tokens"]) for r in listed["rules"]] == [("actor", "alice", None)]
        quota = await client.get("/agent/quota/today", headers=ALICE_H)
        assert quota.json()["usedTokens"] == 90


def scoped_gate(actor: Any, request: Any) -> Any:
    """root: global admin; `lead` of a tenant: that tenant's admin (a GovernanceScope); anyone else: nothing."""
    if "admin" in actor.roles:
        return True
    if "lead" in actor.roles:
        return GovernanceScope(tenants={actor.tenant_ref})
    return False


async def test_a_tenant_admin_edits_only_its_tenants_budgets() -> None:
    acme_lead = hdr("ann", "lead", tenant="acme")
    config = web_config(model=model(), budget=Budget(), governance_authorize=scoped_gate)
    async with asgi(config) as (client, service):
        assert (await chat(client, service, hdr("gus", tenant="globex"))).status_code == 200
        assert (await chat(client, service)).status_code == 200  # alice, acme
        assert (await client.put(f"{BUDGETS}/actor/bob", json={"tokens": 5}, headers=ADMIN_H)).status_code == 200

        r = await client.put(f"{BUDGETS}/tenant/acme", json={"tokens": 1000}, headers=acme_lead)
        assert r.status_code == 200
        r = await client.put(f"{BUDGETS}/actor/alice", json={"tokens": 50, "tenantRef": "acme"}, headers=acme_lead)
        assert r.status_code == 200
        refused = [
            (f"{BUDGETS}/tenant/globex", {"tokens": 1}, "outside your governance scope"),
            (f"{BUDGETS}/actor/gus", {"tokens": 1, "tenantRef": "globex"}, "tenantRef"),
            (f"{BUDGETS}/actor/gus", {"tokens": 1}, "tenantRef"),
            (f"{BUDGETS}/actor/*", {"tokens": 1}, "global governance grant"),
            (f"{BUDGETS}/actor/bob", {"tokens": 1, "tenantRef": "acme"}, "set outside your governance scope"),
        ]
        for path, body, says in refused:
            r = await client.put(path, json=body, headers=acme_lead)
            assert r.status_code == 403 and says in r.json()["error"], (path, r.text)
        assert (await client.delete(f"{BUDGETS}/actor/bob", headers=acme_lead)).status_code == 404  # not visible

        listed = (await client.get(BUDGETS, headers=acme_lead)).json()["rules"]
        assert sorted((r["scope"], r["key"]) for r in listed) == [("actor", "alice"), ("tenant", "acme")]
        usage = (await client.get(f"{BUDGETS}/usage", headers=acme_lead)).json()["rows"]
        assert sorted((r["scope"], r["key"]) for r in usage) == [("actor", "alice"), ("tenant", "acme")]
        everyone = (await client.get(f"{BUDGETS}/usage", headers=ADMIN_H)).json()["rows"]
        assert ("actor", "gus") in {(r["scope"], r["key"]) for r in everyone}

        audit = (await client.get("/agent/governance/audit", headers=acme_lead)).json()["records"]
        changes = [(r["action"], r["target"], r["actor"]) for r in audit if r["kind"] != "tool_call"]
        assert changes == [("budget.set", "tenant:acme", "ann"), ("budget.set", "actor:alice", "ann")]  # not bob's
        everything = (await client.get("/agent/governance/audit", headers=ADMIN_H)).json()["records"]
        assert [r["target"] for r in everything if r["kind"] != "tool_call"] == [
            "actor:bob",
            "tenant:acme",
            "actor:alice",
        ]

        assert (await chat(client, service)).status_code == 429  # alice: 90 of the 50 ann set
        # A rule bound to acme does not follow alice into another tenant.
        assert (await chat(client, service, hdr("alice", tenant="globex"))).status_code == 200
        assert (await client.delete(f"{BUDGETS}/actor/alice", headers=acme_lead)).status_code == 200
        assert (await chat(client, service)).status_code == 200


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_a_threshold_is_raised_once_across_processes(kind: str, tmp_path: Path) -> None:
    """Two services on one database: the step that crosses the threshold raises it; later steps in either
    process (also past it) do not — the claim is a row in `agent_budget_alert`."""
    seen: dict[str, list[AgentEvent]] = {"a": [], "b": []}
    async with database(kind, tmp_path) as url:

        def config(name: str) -> Any:
            return web_config(model=model(), store=url, budget=Budget(reserve_tokens=10), on_event=seen[name].append)

        async with asgi(config("a")) as (a, service_a), asgi(config("b")) as (b, service_b):
            body = {"tokens": 1000, "thresholds": [0.1, 0.2]}
            assert (await a.put(f"{BUDGETS}/actor/alice", json=body, headers=ADMIN_H)).status_code == 200
            assert (await chat(a, service_a)).status_code == 200  # 90: below 10 %
            assert (await chat(b, service_b)).status_code == 200  # 180: crosses 10 % in B
            assert (await chat(a, service_a)).status_code == 200  # 270: crosses 20 % in A, past 10 %
            assert (await chat(b, service_b)).status_code == 200  # 360: past both
            assert (await chat(a, service_a)).status_code == 200  # 450: past both
    raised = {
        name: [(e.threshold, e.used) for e in events if isinstance(e, BudgetThresholdReached)]
        for name, events in seen.items()
    }
    assert raised == {"a": [(0.2, 270)], "b": [(0.1, 180)]}
