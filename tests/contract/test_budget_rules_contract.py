"""The budget rule stores and usage ledgers behave alike on memory, SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from agora_agent.actors import Actor
from agora_agent.governance.budgets import BudgetRule, BudgetRuleStore, UsageLedger, UsageTotals, parse_rule
from agora_agent.governance.quota import Budget
from agora_agent.records import UsageRecord
from agora_agent.stores.budgets import open_budget_stores
from agora_agent.stores.memory import MemoryAgentStore
from agora_agent.stores.sql import open_sql_backend
from tests.stores.sql.conftest import empty_database

NOW = datetime(2026, 12, 10, 12, tzinfo=UTC)
Stores = tuple[BudgetRuleStore, UsageLedger, Any]


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def stores(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Stores]:
    """(rules, ledger, agent store) of one backend, empty."""
    if request.param == "memory":
        store = MemoryAgentStore()
        opened = open_budget_stores(Budget(), store=store)
        assert opened is not None
        yield opened.rules, opened.ledger, store
        return
    async with empty_database(request.param, tmp_path) as url:
        backend = await open_sql_backend(url, auto_create_tables=True)
        try:
            opened = open_budget_stores(Budget(), engine=backend.engine)
            assert opened is not None
            yield opened.rules, opened.ledger, backend.store
        finally:
            await backend.close()


def rule(scope: str, key: str, **body: Any) -> BudgetRule:
    return parse_rule(scope, key, body)


async def test_put_get_list_rules_for_and_delete(stores: Stores) -> None:
    rules, _, _ = stores
    assert await rules.put(rule("actor", "alice", tokens=50, tenant_ref="acme")) is None
    previous = await rules.put(rule("actor", "alice", tokens=60, usd=1.5, period="month", thresholds=[0.5, 0.9]))
    assert previous is not None and previous.tokens == 50 and previous.tenant_ref == "acme"
    await rules.put(rule("actor", "*", tokens=10))
    await rules.put(rule("tenant", "acme", usd=5.0))
    await rules.put(rule("tenant", "globex", tokens=1))
    await rules.put(rule("tenant", "*", thresholds=None))
    got = await rules.get("actor", "alice")
    assert got is not None
    assert (got.period, got.tokens, got.usd, got.thresholds, got.tenant_ref) == ("month", 60, 1.5, (0.5, 0.9), None)
    assert [(r.scope, r.key) for r in await rules.list_rules()] == [
        ("actor", "*"),
        ("actor", "alice"),
        ("tenant", "*"),
        ("tenant", "acme"),
        ("tenant", "globex"),
    ]
    mine = sorted((r.scope, r.key) for r in await rules.rules_for(Actor("alice", tenant_ref="acme")))
    assert mine == [("actor", "*"), ("actor", "alice"), ("tenant", "*"), ("tenant", "acme")]
    lone = sorted((r.scope, r.key) for r in await rules.rules_for(Actor("zed")))
    assert lone == [("actor", "*"), ("tenant", "*")]
    removed = await rules.delete("tenant", "globex")
    assert removed is not None and removed.tokens == 1
    assert await rules.delete("tenant", "globex") is None
    assert await rules.get("tenant", "globex") is None


def usage(n: int, actor: str, tenant: str | None, at: datetime, cost: float | None) -> UsageRecord:
    return UsageRecord(
        id=f"u{n}",
        thread_id="t1",
        run_id=None,
        message_id=None,
        actor_ref=actor,
        tenant_ref=tenant,
        model_id="m",
        purpose="chat",
        input_tokens=10 * n,
        output_tokens=n,
        cost_usd=cost,
        created_at=at,
    )


async def test_the_ledger_totals_by_scope_and_actor(stores: Stores) -> None:
    _, ledger, store = stores
    thread = await store.create_thread(actor_ref="alice", tenant_ref="acme", thread_id="t1")
    assert thread.id == "t1"
    rows = [
        usage(1, "alice", "acme", NOW, 0.5),
        usage(2, "alice", "acme", NOW - timedelta(days=2), None),  # unpriced: counts tokens, no USD
        usage(3, "bob", "acme", NOW, 0.25),
        usage(4, "bob", None, NOW - timedelta(days=40), 9.0),  # last month
    ]
    for row in rows:
        await store.record_usage(row)
    month = (datetime(2026, 12, 1, tzinfo=UTC), datetime(2027, 1, 1, tzinfo=UTC) - timedelta(microseconds=1))
    assert await ledger.totals("actor", "alice", *month) == (33, 0.5)
    assert await ledger.totals("tenant", "acme", *month) == (66, 0.75)
    assert await ledger.totals("actor", "nobody", *month) == (0, 0.0)
    assert await ledger.by_actor(*month) == [
        UsageTotals("alice", "acme", 33, 0.5),
        UsageTotals("bob", "acme", 33, 0.25),
    ]
