"""Tenant scopes in the read model: every `GovernanceQueries` implementation, given a `GovernanceScope`,
answers from the rows of those tenants only (the tenant stored on each row when the service wrote it);
None answers from every row; an empty scope from none.

The rows are written by a real `AgentService` over each store, so the tenant is stored as users' runs store it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from agora_agent import Actor, AgentConfig, AgentService, GovernanceScope, tool
from agora_agent.governance.queries import GovernanceQueries, RunQuery
from agora_agent.testing import FakeModel, ScriptedTurn, ToolCallRequest, wait_for_tool_status
from tests.contract.conftest import QUERIES_FACTORIES, open_store, pricing_for

ALICE = Actor("alice", ("support",), "acme")
BOB = Actor("bob", ("support",), "globex")
CAROL = Actor("carol", ("support",))  # no tenant: outside every scope
ACME = GovernanceScope(tenants={"acme"})


@tool
def lookup(order_id: int) -> str:
    """Look an order up."""
    return f"order {order_id}: shipped"


@tool(kind="action", roles=["support"])
def refund(order_id: int) -> str:
    """Refund an order."""
    return f"refunded {order_id}"


def script(request: object, turn: int) -> ScriptedTurn:
    if turn == 0:
        return ScriptedTurn(text="Looking. ", tool_calls=[ToolCallRequest("lookup", {"order_id": 1})])
    if turn == 1:
        return ScriptedTurn(tool_calls=[ToolCallRequest("refund", {"order_id": 1})])
    return ScriptedTurn(text="Done.")


@dataclass
class World:
    queries: GovernanceQueries
    runs: dict[str, str]  # actor id -> run id
    threads: dict[str, str]


@pytest.fixture
async def world(queries_name: str, request: pytest.FixtureRequest) -> AsyncIterator[World]:
    async with open_store(queries_name, request) as store:
        queries = QUERIES_FACTORIES[queries_name](store, pricing_for(queries_name, store))
        config = AgentConfig(model=FakeModel(script), tools=[lookup, refund], store=store, governance_queries=queries)
        async with AgentService.from_config(config) as service:
            runs, threads = {}, {}
            for actor in (ALICE, BOB, CAROL):
                started = await service.chat(actor, "refund order 1")
                await wait_for_tool_status(service, started.run_id, caller=actor)  # parked on the refund
                runs[actor.id], threads[actor.id] = started.run_id, started.thread_id
            yield World(queries=queries, runs=runs, threads=threads)


def _today() -> tuple[datetime, datetime]:
    now = datetime.now(UTC)
    return now - timedelta(days=1), now + timedelta(days=1)


async def _actors_seen(q: GovernanceQueries, scope: GovernanceScope | None) -> dict[str, set[str]]:
    """The actors each list-shaped query shows under `scope`."""
    start, end = _today()
    first, last = start.date(), end.date()
    page = await q.list_runs(RunQuery(), scope=scope)
    seen = {
        "spend_by_actor": {r.actor_ref for r in await q.spend_by_actor(first, last, scope=scope)},
        "recent_tool_calls": {r.actor_ref or "" for r in await q.recent_tool_calls(scope=scope)},
        "recent_threads": {r.actor_ref for r in await q.recent_threads(scope=scope)},
        "list_runs": {r.actor_ref for r in page.runs},
        "pending_approvals": {r.actor_ref for r in await q.pending_approvals(scope=scope)},
        "audit_rows": {r.actor_ref for r in await q.audit_rows(start, end, scope=scope)},  # type: ignore[attr-defined]
    }
    return seen


async def test_a_scope_sees_only_its_tenants_rows(world: World) -> None:
    q = world.queries
    everyone = await _actors_seen(q, None)
    assert all(actors == {"alice", "bob", "carol"} for actors in everyone.values()), everyone
    acme = await _actors_seen(q, ACME)
    assert all(actors == {"alice"} for actors in acme.values()), acme
    nobody = await _actors_seen(q, GovernanceScope())
    assert all(actors == set() for actors in nobody.values()), nobody


async def test_totals_under_a_scope_count_that_tenant_only(world: World) -> None:
    q = world.queries
    first, last = (d.date() for d in _today())
    for name, per_actor in (
        ("spend_by_model", lambda rows: sum(r.requests for r in rows)),
        ("usage_trend", lambda rows: sum(r.total_tokens for r in rows)),
    ):
        method = getattr(q, name)
        total, acme = per_actor(await method(first, last)), per_actor(await method(first, last, scope=ACME))
        assert 0 < acme < total and acme * 3 == total, name  # three identical conversations, one in acme
    calls = sum(r.calls for r in await q.per_tool_stats())
    assert sum(r.calls for r in await q.per_tool_stats(scope=ACME)) * 3 == calls
    assert (await q.run_reliability()).runs == 3
    assert (await q.run_reliability(scope=ACME)).runs == 1
    assert (await q.run_reliability(scope=GovernanceScope())).runs == 0


async def test_another_tenants_run_and_thread_are_unknown_under_a_scope(world: World) -> None:
    q = world.queries
    assert (await q.run_detail(world.runs["alice"], scope=ACME)) is not None
    assert (await q.thread_detail(world.threads["alice"], scope=ACME)) is not None
    for actor in ("bob", "carol"):
        assert await q.run_detail(world.runs[actor], scope=ACME) is None
        assert await q.thread_detail(world.threads[actor], scope=ACME) is None
        assert await q.run_detail(world.runs[actor]) is not None  # a global view sees them


async def test_a_runs_usage_rows_are_its_detail_usage_and_scoped_like_it(world: World) -> None:
    # the inspector reads only these (`run_usage`), not the whole `run_detail`
    q = world.queries
    run_usage = getattr(q, "run_usage", None)
    assert run_usage is not None  # both bundled read models have it (the run inspector reads it)
    for actor in ("alice", "bob", "carol"):
        detail = await q.run_detail(world.runs[actor])
        assert detail is not None and detail.usage  # every run of this world made model calls
        assert await run_usage(world.runs[actor]) == detail.usage
    assert await run_usage(world.runs["alice"], scope=ACME) == (await q.run_detail(world.runs["alice"])).usage  # type: ignore[union-attr]
    assert await run_usage(world.runs["bob"], scope=ACME) == []  # another tenant's run: no rows under acme
    assert await run_usage("no-such-run") == []
