"""Read-model parity: every GovernanceQueries implementation gives these exact answers on one scenario.

The scenario is built only through the AgentStore and PricingStore protocols, with explicit timestamps on
runs, tool calls, approvals and usage (messages and threads get the store's clock). Three UTC days:
D1 = 2024-03-01, D2, D3, plus one usage row the day before D1 that no D1..D3 range may count.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest

from agora_agent.governance.pricing import ModelPrice, PricingStore, estimate_cost
from agora_agent.governance.queries import GovernanceQueries, RunQuery
from agora_agent.messages import Usage
from agora_agent.records import ApprovalRecord, RunRecord, ThreadRecord, ToolCallPatch, ToolCallRecord, UsageRecord
from agora_agent.stores.base import AgentStore
from tests.contract.conftest import QUERIES_FACTORIES, open_store, pricing_for

D0, D1, D2, D3 = date(2024, 2, 29), date(2024, 3, 1), date(2024, 3, 2), date(2024, 3, 3)
MS = timedelta(milliseconds=1)


def at(day: date, hh: int, mm: int = 0, ss: int = 0, ms: int = 0) -> datetime:
    return datetime(day.year, day.month, day.day, hh, mm, ss, ms * 1000, tzinfo=UTC)


@dataclass
class World:
    store: AgentStore
    pricing: PricingStore
    queries: GovernanceQueries
    name: str
    threads: dict[str, str] = field(default_factory=dict)  # label -> id
    messages: dict[str, str] = field(default_factory=dict)  # content -> id


async def _build(world: World) -> None:
    store = world.store
    await world.pricing.upsert_price(
        ModelPrice(model_id="m-priced", input_price_per_1m=3, output_price_per_1m=15, cache_read_price_per_1m=0.3)
    )

    async def thread(label: str, actor: str, **kw: Any) -> ThreadRecord:
        t = await store.create_thread(actor_ref=actor, title=label, **kw)
        world.threads[label] = t.id
        return t

    t_e = await thread("Empty", "alice")
    t_a = await thread("Refunds", "alice", tenant_ref="acme")
    t_b = await thread("Reports", "bob")
    t_c = await thread("Sub-research", "alice", transient=True, persona="researcher")
    t_d = await thread("Old", "carol")
    del t_e

    async def run(run_id: str, t: ThreadRecord, agent: str | None, started: datetime) -> None:
        await store.record_run_start(
            RunRecord(id=run_id, thread_id=t.id, agent_name=agent, actor_ref=t.actor_ref, started_at=started)
        )

    async def end(run_id: str, status: Any, started: datetime, ms: int, **kw: Any) -> None:
        assert await store.record_run_end(run_id, status=status, finished_at=started + ms * MS, **kw)

    async def say(t: ThreadRecord, role: Any, content: str, run_id: str) -> None:
        m = await store.append_message(thread_id=t.id, role=role, content=content, run_id=run_id)
        world.messages[content] = m.id

    # runs (started_at explicit; durations 2000, 500, 1500, -, 250, 1000 ms)
    await run("r1", t_a, "support", at(D1, 10))
    await run("r2", t_a, "support", at(D2, 9))
    await run("r3", t_b, "support", at(D2, 12))
    await run("r4", t_b, None, at(D3, 8))
    await run("r5", t_c, "researcher", at(D3, 9))
    await run("r6", t_d, "support", at(D1, 23, 59, 59, 999))
    await end(
        "r1", "completed", at(D1, 10), 2000, step_count=2, input_tokens=1_001_000, output_tokens=500_100, cost_usd=0.01
    )
    await end("r2", "failed", at(D2, 9), 500, error="model down")
    await end("r3", "completed", at(D2, 12), 1500)
    await end("r5", "cancelled", at(D3, 9), 250)
    await end("r6", "completed", at(D1, 23, 59, 59, 999), 1000)

    # messages, in this order (drives updated_at: tC, tB, tA, tE newest first among live threads)
    await say(t_a, "user", "Refund order 42", "r1")
    await say(t_a, "assistant", "Refunded order 42", "r1")
    await say(t_d, "user", "old question", "r6")
    await say(t_d, "assistant", "old answer", "r6")
    await say(t_a, "user", "And order 43?", "r2")
    await say(t_b, "user", "Weekly report", "r3")
    await say(t_b, "assistant", "Here it is", "r3")
    await say(t_b, "user", "Refund order 7", "r4")
    await say(t_c, "user", "Research refunds", "r5")

    async def call(
        run_id: str, call_id: str, t: ThreadRecord, name: str, kind: str, created: datetime, **patch: Any
    ) -> None:
        record = ToolCallRecord(
            id=call_id,
            run_id=run_id,
            thread_id=t.id,
            message_id=None,
            tool_name=name,
            tool_type=kind,
            input=patch.pop("input", {"id": call_id}),
            actor_ref=t.actor_ref,
            created_at=created,
            status=patch.pop("initial", "started"),
        )
        await store.record_tool_call(record)
        if patch:
            await store.update_tool_call(run_id, call_id, ToolCallPatch(**patch))

    await call(
        "r1",
        "c1",
        t_a,
        "lookup_order",
        "read",
        at(D1, 10, 0, 0, 500),
        status="executed",
        output={"ok": 1},
        execution_ms=40,
    )
    await call(
        "r1", "c2", t_a, "refund", "action", at(D1, 10, 0, 1), status="executed", execution_ms=120, decided_by="alice"
    )
    await call(
        "r2", "c3", t_a, "lookup_order", "read", at(D2, 9, 0, 0, 200), status="failed", error="timeout", execution_ms=60
    )
    await call("r3", "c4", t_b, "lookup_order", "read", at(D2, 12, 0, 0, 300), status="executed")
    await call(
        "r4",
        "c5",
        t_b,
        "refund",
        "action",
        at(D3, 8, 0, 0, 100),
        initial="pending_approval",
        input={"orderId": 7, "amount": 30},
    )
    await call("r5", "c6", t_c, "refund", "action", at(D3, 9, 0, 0, 200), status="rejected", error="rejected: no")
    await call("r6", "c7", t_d, "lookup_order", "read", at(D1, 23, 59, 59, 999), status="executed", execution_ms=20)
    await call(
        "r2", "c8", t_a, "refund", "action", at(D2, 9, 0, 0, 300), initial="pending_approval", input={"orderId": 43}
    )

    async def approval(run_id: str, call_id: str, t: ThreadRecord, created: datetime) -> None:
        record = ApprovalRecord(
            run_id=run_id,
            tool_call_id=call_id,
            thread_id=t.id,
            tool_name="refund",
            args_hash="0" * 64,
            requested_by=t.actor_ref,
            created_at=created,
        )
        await store.create_approval(record)

    await approval("r1", "c2", t_a, at(D1, 10, 0, 1))
    await approval("r4", "c5", t_b, at(D3, 8, 0, 0, 100))
    await approval("r5", "c6", t_c, at(D3, 9, 0, 0, 200))
    await approval("r2", "c8", t_a, at(D2, 9, 0, 0, 300))
    await store.decide_approval("r1", "c2", status="approved", decided_by="alice")
    await store.decide_approval("r5", "c6", status="rejected", decided_by="dave", reason="no")

    prices = {p.model_id: p for p in await world.pricing.list_current_prices()}

    async def spend(
        t: ThreadRecord, run_id: str | None, model: str, created: datetime, inp: int, out: int, **kw: Any
    ) -> None:
        # As the loop records it: a reported cost wins, else priced now with the price in force, else unpriced.
        price = prices.get(model)
        if "cost_usd" in kw:
            kw["cost_source"] = "reported"
        elif price is not None:
            usage = Usage(input_tokens=inp, output_tokens=out, cache_read_tokens=kw.get("cache_read_tokens"))
            kw.update(cost_usd=estimate_cost(usage, price), cost_source="priced", price_id=price.id)
        record = UsageRecord(
            id=uuid.uuid4().hex,
            thread_id=t.id,
            run_id=run_id,
            message_id=None,
            actor_ref=t.actor_ref,
            model_id=model,
            input_tokens=inp,
            output_tokens=out,
            created_at=created,
            **kw,
        )
        await store.record_usage(record)

    await spend(t_a, "r1", "m-priced", at(D1, 10, 0, 1), 1_000_000, 500_000)  # 10.5 estimated
    await spend(t_a, "r1", "m-unpriced", at(D1, 10, 0, 2), 1000, 100)  # unpriced -> 0 / None
    await spend(t_a, "r2", "m-reported", at(D2, 9, 0, 1), 2000, 300, cost_usd=0.42)
    await spend(t_b, "r3", "m-priced", at(D2, 12, 0, 1), 100_000, 10_000, cache_read_tokens=50_000)  # 0.315
    await spend(t_b, "r3", "m-priced", at(D2, 12, 0, 2), 10, 10, cost_usd=1.0)  # reported wins
    await spend(t_c, "r5", "m-unpriced", at(D3, 9, 0, 1), 500, 50)
    await spend(t_d, "r6", "m-priced", at(D1, 23, 59, 59, 999), 0, 1_000_000)  # 15.0
    await spend(t_b, "r4", "m-priced", at(D3, 0), 1000, 0)  # 0.003
    await spend(t_a, None, "m-priced", at(D0, 23, 59, 59, 999), 1_000_000, 0)  # 3.0, outside D1..D3

    assert await store.soft_delete_thread(t_d.id)


@pytest.fixture
async def world(queries_name: str, request: pytest.FixtureRequest) -> AsyncIterator[World]:
    async with open_store(queries_name, request) as store:
        pricing = pricing_for(queries_name, store)
        queries = QUERIES_FACTORIES[queries_name](store, pricing)
        w = World(store=store, pricing=pricing, queries=queries, name=queries_name)
        await _build(w)
        yield w


def close(actual: Any, expected: Any) -> bool:
    """Deep equality with float tolerance (sums may be added in another order)."""
    if isinstance(expected, float) and isinstance(actual, int | float):
        return actual == pytest.approx(expected, rel=1e-9, abs=1e-12)
    if isinstance(expected, dict):
        return (
            isinstance(actual, dict)
            and actual.keys() == expected.keys()
            and all(close(actual[k], v) for k, v in expected.items())
        )
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(expected)
            and all(close(a, e) for a, e in zip(actual, expected, strict=True))
        )
    return bool(actual == expected)


def _without_run_id_alias(value: Any) -> Any:
    # RunSummaryRow.run_id is a computed copy of `id` (the reference dashboard's name); compare the rest.
    if isinstance(value, dict):
        return {
            k: _without_run_id_alias(v)
            for k, v in value.items()
            if not (k == "run_id" and value.get("id") == v and "status" in value)
        }
    if isinstance(value, list):
        return [_without_run_id_alias(v) for v in value]
    return value


def dump(value: Any) -> Any:
    if isinstance(value, list):
        return [dump(v) for v in value]
    return _without_run_id_alias(value.model_dump())


def assert_rows(actual: Any, expected: Any, drop: set[str] | None = None) -> None:
    got = dump(actual)
    if drop:
        got = [{k: v for k, v in row.items() if k not in drop} for row in got]
    assert close(got, expected), f"\n got: {got}\nwant: {expected}"


# -- spend and usage (GQ-01..03, COST-07/08) --


@pytest.mark.ref("GQ-01", "COST-07")
async def test_spend_by_model(world: World) -> None:
    assert_rows(
        await world.queries.spend_by_model(D1, D3),
        [
            {
                "model_id": "m-priced",
                "requests": 5,
                "input_tokens": 1_101_010,
                "output_tokens": 1_510_010,
                "cost_usd": 26.818,
            },
            {"model_id": "m-reported", "requests": 1, "input_tokens": 2000, "output_tokens": 300, "cost_usd": 0.42},
            {"model_id": "m-unpriced", "requests": 2, "input_tokens": 1500, "output_tokens": 150, "cost_usd": 0.0},
        ],
    )
    assert_rows(
        await world.queries.spend_by_model(D2, D2),
        [
            {
                "model_id": "m-priced",
                "requests": 2,
                "input_tokens": 100_010,
                "output_tokens": 10_010,
                "cost_usd": 1.315,
            },
            {"model_id": "m-reported", "requests": 1, "input_tokens": 2000, "output_tokens": 300, "cost_usd": 0.42},
        ],
    )
    assert await world.queries.spend_by_model(date(2024, 4, 1), date(2024, 4, 30)) == []


@pytest.mark.ref("GQ-01")
async def test_day_bounds_are_inclusive_utc(world: World) -> None:
    # 23:59:59.999 on D1 belongs to D1; 00:00:00.000 on D3 to D3; D0's last millisecond to neither.
    d1 = await world.queries.spend_by_model(D1, D1)
    assert [(r.model_id, r.requests) for r in d1] == [("m-priced", 2), ("m-unpriced", 1)]
    d3 = await world.queries.spend_by_model(D3, D3)
    assert [(r.model_id, r.requests) for r in d3] == [("m-priced", 1), ("m-unpriced", 1)]
    d0 = await world.queries.spend_by_model(D0, D0)
    assert [(r.model_id, r.requests, r.cost_usd) for r in d0] == [("m-priced", 1, pytest.approx(3.0))]


@pytest.mark.ref("GQ-02")
async def test_spend_by_actor(world: World) -> None:
    assert_rows(
        await world.queries.spend_by_actor(D1, D3),
        [
            {"actor_ref": "carol", "requests": 1, "total_tokens": 1_000_000, "cost_usd": 15.0},
            {"actor_ref": "alice", "requests": 4, "total_tokens": 1_503_950, "cost_usd": 10.92},
            {"actor_ref": "bob", "requests": 3, "total_tokens": 111_020, "cost_usd": 1.318},
        ],
    )


@pytest.mark.ref("GQ-03")
async def test_usage_trend_per_utc_day_without_empty_days(world: World) -> None:
    expected = [
        {"day": D1, "total_tokens": 2_501_100, "cost_usd": 25.5},
        {"day": D2, "total_tokens": 112_320, "cost_usd": 1.735},
        {"day": D3, "total_tokens": 1550, "cost_usd": 0.003},
    ]
    assert_rows(await world.queries.usage_trend(D1, D3), expected)
    assert_rows(await world.queries.usage_trend(D1, date(2024, 3, 9)), expected)


async def test_a_price_change_never_rewrites_past_spend(world: World) -> None:
    # Spend is history (DESIGN, issue 15): rows were priced when recorded; new prices apply to new rows only.
    before = {r.model_id: r.cost_usd for r in await world.queries.spend_by_model(D1, D1)}
    await world.pricing.upsert_price(ModelPrice(model_id="m-priced", input_price_per_1m=6, output_price_per_1m=30))
    await world.pricing.upsert_price(ModelPrice(model_id="m-unpriced", input_price_per_1m=1, output_price_per_1m=1))
    after = {r.model_id: r.cost_usd for r in await world.queries.spend_by_model(D1, D1)}
    assert after == before and after["m-priced"] == pytest.approx(25.5) and after["m-unpriced"] == 0.0


async def test_costs_do_not_depend_on_the_pricing_store_at_query_time(world: World) -> None:
    bare = QUERIES_FACTORIES[world.name](world.store, None)
    rows = {r.model_id: r for r in await bare.spend_by_model(D1, D3)}
    assert rows["m-priced"].input_tokens == 1_101_010
    assert rows["m-priced"].cost_usd == pytest.approx(26.818)
    assert rows["m-reported"].cost_usd == pytest.approx(0.42)
    assert [(p.day, p.cost_usd) for p in await bare.usage_trend(D1, D1)] == [(D1, pytest.approx(25.5))]


# -- activity feeds (GQ-04, GQ-05) --


@pytest.mark.ref("GQ-04")
async def test_recent_tool_calls_newest_first(world: World) -> None:
    rows = await world.queries.recent_tool_calls()
    assert [r.tool_call_id for r in rows] == ["c6", "c5", "c4", "c8", "c3", "c7", "c2", "c1"]
    assert [r.tool_call_id for r in await world.queries.recent_tool_calls(3)] == ["c6", "c5", "c4"]
    assert len(await world.queries.recent_tool_calls(-1)) == 8
    first = rows[0]
    assert (first.tool_name, first.tool_type, first.status) == ("refund", "action", "rejected")
    assert first.thread_id == world.threads["Sub-research"] and first.created_at == at(D3, 9, 0, 0, 200)


@pytest.mark.ref("GQ-05")
async def test_recent_threads(world: World) -> None:
    t = world.threads
    rows = await world.queries.recent_threads()
    assert [r.thread_id for r in rows] == [t["Sub-research"], t["Reports"], t["Refunds"], t["Empty"]]
    assert [(r.title, r.actor_ref, r.message_count, r.total_tokens) for r in rows] == [
        ("Sub-research", "alice", 1, 550),
        ("Reports", "bob", 3, 111_020),
        ("Refunds", "alice", 3, 2_503_400),
        ("Empty", "alice", 0, 0),
    ]
    threads = [await world.store.get_thread(r.thread_id) for r in rows]
    assert [r.last_activity_at for r in rows] == [th.updated_at for th in threads if th is not None]
    assert [r.title for r in await world.queries.recent_threads(2)] == ["Sub-research", "Reports"]


# -- runs (GQ-06, GQ-07) --


@pytest.mark.ref("GQ-06")
async def test_list_runs_order_and_cursor(world: World) -> None:
    page = await world.queries.list_runs(RunQuery())
    assert [r.id for r in page.runs] == ["r5", "r4", "r3", "r2", "r6", "r1"] and page.next_cursor is None
    ids, cursor = [], None
    for _ in range(4):
        page = await world.queries.list_runs(RunQuery(limit=2, cursor=cursor))
        ids.append([r.id for r in page.runs])
        cursor = page.next_cursor
        if cursor is None:
            break
    assert ids == [["r5", "r4"], ["r3", "r2"], ["r6", "r1"]]
    assert (await world.queries.list_runs(RunQuery(limit=2))).next_cursor == "2"


@pytest.mark.ref("GQ-06")
@pytest.mark.parametrize(
    ("query", "expected"),
    [
        (RunQuery(actor="alice"), ["r5", "r2", "r1"]),
        (RunQuery(agent="support"), ["r3", "r2", "r6", "r1"]),
        (RunQuery(status="completed"), ["r3", "r6", "r1"]),
        (RunQuery(from_day=D2, to_day=D2), ["r3", "r2"]),
        (RunQuery(from_day=D3), ["r5", "r4"]),
        (RunQuery(to_day=D1), ["r6", "r1"]),
        (RunQuery(actor="alice", agent="support"), ["r2", "r1"]),
        (RunQuery(status="running", actor="alice"), []),
    ],
)
async def test_list_runs_filters(world: World, query: RunQuery, expected: list[str]) -> None:
    assert [r.id for r in (await world.queries.list_runs(query)).runs] == expected


@pytest.mark.ref("GQ-06")
async def test_run_summary_row(world: World) -> None:
    runs = {r.id: r for r in (await world.queries.list_runs(RunQuery())).runs}
    assert_rows(
        runs["r1"],
        {
            "id": "r1",
            "thread_id": world.threads["Refunds"],
            "agent_name": "support",
            "actor_ref": "alice",
            "tenant_ref": None,
            "status": "completed",
            "started_at": at(D1, 10),
            "finished_at": at(D1, 10, 0, 2),
            "step_count": 2,
            "input_tokens": 1_001_000,
            "output_tokens": 500_100,
            "cost_usd": 0.01,
            "error": None,
            "durable": False,
            "duration_ms": 2000,
        },
    )
    assert (runs["r2"].status, runs["r2"].error, runs["r2"].duration_ms, runs["r2"].cost_usd) == (
        "failed",
        "model down",
        500,
        None,
    )
    assert (runs["r4"].status, runs["r4"].finished_at, runs["r4"].duration_ms) == ("running", None, None)


@pytest.mark.ref("GQ-07")
async def test_run_detail(world: World) -> None:
    detail = await world.queries.run_detail("r1")
    assert detail is not None and detail.run.id == "r1"
    assert [(m.role, m.content) for m in detail.messages] == [
        ("user", "Refund order 42"),
        ("assistant", "Refunded order 42"),
    ]
    assert detail.messages[0].id == world.messages["Refund order 42"]
    # the audit columns (issue 15); executed_at is the store's clock, so only its presence is checked
    assert [(c.actor_ref, c.decided_by, c.executed_at is not None) for c in detail.tool_calls] == [
        ("alice", None, True),
        ("alice", "alice", True),
    ]
    audit = {"actor_ref", "policy_decision", "decided_by", "executed_by_ref", "idempotency_key", "executed_at"}
    assert_rows(
        detail.tool_calls,
        drop=audit,
        expected=[
            {
                "tool_call_id": "c1",
                "tool_name": "lookup_order",
                "tool_type": "read",
                "status": "executed",
                "input": {"id": "c1"},
                "output": {"ok": 1},
                "error": None,
                "execution_ms": 40,
                "created_at": at(D1, 10, 0, 0, 500),
            },
            {
                "tool_call_id": "c2",
                "tool_name": "refund",
                "tool_type": "action",
                "status": "executed",
                "input": {"id": "c2"},
                "output": None,
                "error": None,
                "execution_ms": 120,
                "created_at": at(D1, 10, 0, 1),
            },
        ],
    )
    assert detail.approvals == []
    [priced_id] = [p.id for p in await world.pricing.list_current_prices() if p.model_id == "m-priced"]
    assert_rows(
        detail.usage,
        [
            {
                "model_id": "m-priced",
                "purpose": "chat",
                "input_tokens": 1_000_000,
                "output_tokens": 500_000,
                "cost_usd": 10.5,
                "created_at": at(D1, 10, 0, 1),
                "price_id": priced_id,
                "cost_source": "priced",
            },
            {
                "model_id": "m-unpriced",
                "purpose": "chat",
                "input_tokens": 1000,
                "output_tokens": 100,
                "cost_usd": None,
                "created_at": at(D1, 10, 0, 2),
                "price_id": None,
                "cost_source": None,
            },
        ],
    )


@pytest.mark.ref("GQ-07")
async def test_run_detail_pending_subset_raw_costs_and_unknown(world: World) -> None:
    detail = await world.queries.run_detail("r4")
    assert detail is not None
    assert [c.tool_call_id for c in detail.approvals] == ["c5"] == [c.tool_call_id for c in detail.tool_calls]
    assert detail.approvals[0].input == {"orderId": 7, "amount": 30}
    r2 = await world.queries.run_detail("r2")
    assert r2 is not None
    assert [(u.model_id, u.cost_usd) for u in r2.usage] == [("m-reported", 0.42)]
    assert [c.tool_call_id for c in r2.tool_calls] == ["c3", "c8"] and [c.tool_call_id for c in r2.approvals] == ["c8"]
    assert await world.queries.run_detail("no-such-run") is None


# -- approvals (GQ-08) --


@pytest.mark.ref("GQ-08", "HTTP-14", "HTTP-25")
async def test_pending_approvals(world: World) -> None:
    t = world.threads
    assert_rows(
        await world.queries.pending_approvals(),
        [
            {
                "tool_call_id": "c8",
                "tool_name": "refund",
                "input": {"orderId": 43},
                "thread_id": t["Refunds"],
                "run_id": "r2",
                "actor_ref": "alice",
                "requested_at": at(D2, 9, 0, 0, 300),
            },
            {
                "tool_call_id": "c5",
                "tool_name": "refund",
                "input": {"orderId": 7, "amount": 30},
                "thread_id": t["Reports"],
                "run_id": "r4",
                "actor_ref": "bob",
                "requested_at": at(D3, 8, 0, 0, 100),
            },
        ],
    )
    assert [a.tool_call_id for a in await world.queries.pending_approvals(actor="bob")] == ["c5"]
    assert [a.tool_call_id for a in await world.queries.pending_approvals(limit=1)] == ["c8"]
    assert await world.queries.pending_approvals(actor="carol") == []
    await world.store.decide_approval("r2", "c8", status="expired", decided_by=None)
    assert [a.tool_call_id for a in await world.queries.pending_approvals(limit=0)] == ["c5"]


# -- tools and reliability (GQ-09, GQ-10) --


@pytest.mark.ref("GQ-09")
async def test_per_tool_stats(world: World) -> None:
    assert_rows(
        await world.queries.per_tool_stats(),
        [
            {
                "tool_name": "lookup_order",
                "tool_type": "read",
                "calls": 4,
                "failed": 1,
                "rejected": 0,
                "avg_duration_ms": 40.0,
            },
            {
                "tool_name": "refund",
                "tool_type": "action",
                "calls": 4,
                "failed": 0,
                "rejected": 1,
                "avg_duration_ms": 120.0,
            },
        ],
    )
    assert_rows(
        await world.queries.per_tool_stats(D2, D2),
        [
            {
                "tool_name": "lookup_order",
                "tool_type": "read",
                "calls": 2,
                "failed": 1,
                "rejected": 0,
                "avg_duration_ms": 60.0,
            },
            {
                "tool_name": "refund",
                "tool_type": "action",
                "calls": 1,
                "failed": 0,
                "rejected": 0,
                "avg_duration_ms": None,
            },
        ],
    )
    assert_rows(
        await world.queries.per_tool_stats(D3, None),
        [
            {
                "tool_name": "refund",
                "tool_type": "action",
                "calls": 2,
                "failed": 0,
                "rejected": 1,
                "avg_duration_ms": None,
            }
        ],
    )


@pytest.mark.ref("GQ-10")
async def test_run_reliability(world: World) -> None:
    assert_rows(
        await world.queries.run_reliability(),
        {
            "runs": 6,
            "completed": 3,
            "failed": 1,
            "cancelled": 1,
            "running": 1,
            "success_rate": 0.5,
            "failure_rate": 1 / 6,
            "cancel_rate": 1 / 6,
            "avg_duration_ms": 1050.0,
            "by_agent": [
                {"agent_name": "support", "runs": 4, "failed": 1, "success_rate": 0.75},
                {"agent_name": None, "runs": 1, "failed": 0, "success_rate": 0.0},
                {"agent_name": "researcher", "runs": 1, "failed": 0, "success_rate": 0.0},
            ],
            "trend": [
                {"day": D1, "runs": 2, "failed": 0},
                {"day": D2, "runs": 2, "failed": 1},
                {"day": D3, "runs": 2, "failed": 0},
            ],
        },
    )
    assert_rows(
        await world.queries.run_reliability(D2, D2),
        {
            "runs": 2,
            "completed": 1,
            "failed": 1,
            "cancelled": 0,
            "running": 0,
            "success_rate": 0.5,
            "failure_rate": 0.5,
            "cancel_rate": 0.0,
            "avg_duration_ms": 1000.0,
            "by_agent": [{"agent_name": "support", "runs": 2, "failed": 1, "success_rate": 0.5}],
            "trend": [{"day": D2, "runs": 2, "failed": 1}],
        },
    )
    empty = await world.queries.run_reliability(date(2024, 4, 1), None)
    assert (empty.runs, empty.success_rate, empty.avg_duration_ms, empty.by_agent, empty.trend) == (
        0,
        0.0,
        None,
        [],
        [],
    )


# -- thread detail (GQ-11) --


@pytest.mark.ref("GQ-11")
async def test_thread_detail(world: World) -> None:
    t = world.threads
    detail = await world.queries.thread_detail(t["Refunds"])
    assert detail is not None
    assert (detail.thread_id, detail.title, detail.actor_ref, detail.tenant_ref) == (
        t["Refunds"],
        "Refunds",
        "alice",
        "acme",
    )
    assert (detail.persona, detail.transient, detail.deleted) == ("default", False, False)
    assert_rows(detail.usage, {"total_tokens": 2_503_400, "cost_usd": 13.92, "run_count": 2, "message_count": 3})
    assert [r.id for r in detail.runs] == ["r2", "r1"]
    assert [m.content for m in detail.messages] == ["And order 43?", "Refunded order 42", "Refund order 42"]
    stored = await world.store.get_thread(t["Refunds"])
    assert stored is not None and (detail.created_at, detail.updated_at) == (stored.created_at, stored.updated_at)


@pytest.mark.ref("GQ-11", "STORE-17")
async def test_thread_detail_of_soft_deleted_unpriced_empty_and_unknown(world: World) -> None:
    t = world.threads
    old = await world.queries.thread_detail(t["Old"])
    assert old is not None and old.deleted is True
    assert_rows(old.usage, {"total_tokens": 1_000_000, "cost_usd": 15.0, "run_count": 1, "message_count": 2})
    assert [r.id for r in old.runs] == ["r6"]

    sub = await world.queries.thread_detail(t["Sub-research"])
    assert sub is not None and sub.transient is True and sub.persona == "researcher"
    assert_rows(sub.usage, {"total_tokens": 550, "cost_usd": 0.0, "run_count": 1, "message_count": 1})

    empty = await world.queries.thread_detail(t["Empty"])
    assert empty is not None and (empty.runs, empty.messages) == ([], [])
    assert_rows(empty.usage, {"total_tokens": 0, "cost_usd": None, "run_count": 0, "message_count": 0})
    assert await world.queries.thread_detail("no-such-thread") is None


# -- limits and caps --


@pytest.fixture
async def bare(queries_name: str, request: pytest.FixtureRequest) -> AsyncIterator[World]:
    """An empty store with its read-model (for volume tests)."""
    async with open_store(queries_name, request) as store:
        pricing = pricing_for(queries_name, store)
        yield World(store=store, pricing=pricing, queries=QUERIES_FACTORIES[queries_name](store, pricing), name="")


@pytest.mark.slow
@pytest.mark.ref("GQ-11")
async def test_thread_detail_caps_runs_at_20_and_messages_at_50_newest_first(bare: World) -> None:
    thread = await bare.store.create_thread(actor_ref="alice")
    for i in range(22):
        started = at(D1, 0) + i * timedelta(minutes=1)
        await bare.store.record_run_start(
            RunRecord(id=f"run-{i:02d}", thread_id=thread.id, actor_ref="alice", started_at=started)
        )
    for i in range(55):
        await bare.store.append_message(thread_id=thread.id, role="user", content=f"m{i}")
    detail = await bare.queries.thread_detail(thread.id)
    assert detail is not None
    assert [r.id for r in detail.runs] == [f"run-{i:02d}" for i in range(21, 1, -1)]
    assert [m.content for m in detail.messages] == [f"m{i}" for i in range(54, 4, -1)]
    assert (detail.usage.run_count, detail.usage.message_count) == (22, 55)


@pytest.mark.slow
@pytest.mark.ref("GQ-06", "HTTP-16")
async def test_limits_clamp_to_200(bare: World) -> None:
    thread = await bare.store.create_thread(actor_ref="alice")
    for i in range(201):
        started = at(D1, 0) + i * timedelta(seconds=1)
        await bare.store.record_run_start(
            RunRecord(id=f"run-{i:03d}", thread_id=thread.id, actor_ref="alice", started_at=started)
        )
    page = await bare.queries.list_runs(RunQuery(limit=1000))
    assert len(page.runs) == 200 and page.next_cursor == "200"
    assert page.runs[0].id == "run-200"
    rest = await bare.queries.list_runs(RunQuery(limit=1000, cursor=page.next_cursor))
    assert [r.id for r in rest.runs] == ["run-000"] and rest.next_cursor is None
    default = await bare.queries.list_runs(RunQuery(limit=0))
    assert len(default.runs) == 50 and default.next_cursor == "50"
    bad = await bare.queries.list_runs(RunQuery(limit=2, cursor="not-a-number"))
    assert [r.id for r in bad.runs] == ["run-200", "run-199"]


# -- wire shape --


@pytest.mark.ref("GQ-01", "GQ-06", "GQ-10", "GQ-11")
def test_rows_serialise_to_the_reference_camel_case_names() -> None:
    """Rows carry Python names; the web edge writes them as the reference's camelCase (`wire_dump`)."""
    from agora_agent.governance import queries as rm
    from agora_agent.web.schemas import wire_dump, wire_name

    def keys(model: type[Any]) -> set[str]:
        return {wire_name(name) for name in model.model_fields}

    assert keys(rm.ModelSpendRow) == {"modelId", "requests", "inputTokens", "outputTokens", "costUsd"}
    assert keys(rm.ActorSpendRow) == {"actorRef", "requests", "totalTokens", "costUsd"}
    assert keys(rm.UsageTrendPoint) == {"day", "totalTokens", "costUsd"}
    assert keys(rm.ToolCallActivityRow) == {"toolCallId", "toolName", "toolType", "status", "threadId", "createdAt"} | {
        "runId",
        "actorRef",
        "policyDecision",
        "decidedBy",
        "reason",
        "input",
    }
    assert keys(rm.ThreadActivityRow) == {
        "threadId",
        "title",
        "actorRef",
        "messageCount",
        "totalTokens",
        "lastActivityAt",
    }
    assert keys(rm.RunPage) == {"runs", "nextCursor"}
    assert keys(rm.RunDetail) == {"run", "messages", "toolCalls", "approvals", "usage"}
    assert keys(rm.PendingApprovalRow) == {
        "toolCallId",
        "toolName",
        "input",
        "threadId",
        "runId",
        "actorRef",
        "requestedAt",
    }
    assert keys(rm.PerToolStatRow) == {"toolName", "toolType", "calls", "failed", "rejected", "avgDurationMs"}
    assert keys(rm.AgentReliabilityRow) == {"agentName", "runs", "failed", "successRate"}
    assert keys(rm.ReliabilityTrendPoint) == {"day", "runs", "failed"}
    assert {"successRate", "failureRate", "cancelRate", "avgDurationMs", "byAgent", "trend"} <= keys(rm.RunReliability)
    assert keys(rm.ThreadUsage) == {"totalTokens", "costUsd", "runCount", "messageCount"}
    assert {"threadId", "deleted", "usage", "runs", "messages", "createdAt", "updatedAt"} <= keys(
        rm.GovernanceThreadDetail
    )
    point = rm.UsageTrendPoint(day=D1, total_tokens=3, cost_usd=0.5)
    assert wire_dump(point) == {"day": "2024-03-01", "totalTokens": 3, "costUsd": 0.5}
    assert point.model_dump(mode="json") == {"day": "2024-03-01", "total_tokens": 3, "cost_usd": 0.5}
