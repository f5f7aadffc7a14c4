"""Governance read-model at scale: 1,000,000 usage rows on PostgreSQL, then time every query (target <= 200 ms).

Loads a synthetic but proportional history into a fresh database with COPY (asyncpg
`copy_records_to_table`): 250k runs (4 usage rows each), 250k tool calls, 500k messages, 20k threads,
200 actors, 12 models (8 priced, 30% of usage rows with a provider-reported cost), spread over 90 days
ending today; the daily usage rollup is rebuilt from the COPYed ledger (the store keeps it in step
row by row; COPY bypasses the store), and so is the per-tool rollup (its triggers are disabled during the
COPY). Then runs each `SqlGovernanceQueries` method a few times and
prints the median and the worst time.

    .venv/bin/python bench/governance.py [--usage 1000000] [--repeat 5] [--keep]
        [--admin-url postgresql://postgres@127.0.0.1:5432/test] [--database agora_bench_xxxxxxxx]

`--keep` leaves the loaded database behind (its name is printed); `--database NAME` re-times such a kept
database without loading again (after upgrading it to the current migrations, which backfill any new rollup).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, date, datetime, timedelta
from typing import Any

import asyncpg
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from sqlalchemy.engine import make_url

from agora_agent.governance.pricing import ModelPrice
from agora_agent.governance.queries import RunQuery
from agora_agent.stores.sql import create_engine_from_url, open_sql_backend
from agora_agent.stores.sql.migrate import upgrade
from agora_agent.stores.sql.rollup import REBUILD_SQL, RUN_REBUILD_SQL, TOOL_REBUILD_SQL
from agora_agent.stores.sql.tables import to_micros

console = Console(width=130)
BATCH = 50_000
DAYS = 90
MODELS = [f"model-{i}" for i in range(12)]
PRICED = MODELS[:8]
TOOLS = [("lookup_order", "read"), ("refund", "action"), ("search_docs", "read"), ("ask_researcher", "agent")]
STATUSES = ["completed"] * 85 + ["failed"] * 8 + ["cancelled"] * 5 + ["running"] * 2
TOOL_STATUSES = ["executed"] * 90 + ["failed"] * 5 + ["rejected"] * 4 + ["pending_approval"] * 1


def _rows_in_batches(total: int, make: Callable[[int], tuple[Any, ...]]) -> Iterator[list[tuple[Any, ...]]]:
    for start in range(0, total, BATCH):
        yield [make(i) for i in range(start, min(start + BATCH, total))]


async def load(url: str, usage_rows: int, rng: random.Random) -> dict[str, Any]:
    """Fill the tables with COPY; returns ids worth querying (a busy thread, a run with detail)."""
    runs = usage_rows // 4
    threads = max(runs // 12, 1)
    actors = [f"user-{i}" for i in range(200)]
    today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    first_day = today - timedelta(days=DAYS - 1)
    span_us = DAYS * 86_400_000_000

    thread_ids = [uuid.uuid4().hex for _ in range(threads)]
    thread_actor = [rng.choice(actors) for _ in range(threads)]
    run_ids = [uuid.uuid4().hex for _ in range(runs)]
    run_thread = [rng.randrange(threads) for _ in range(runs)]
    run_start = [to_micros(first_day) + rng.randrange(span_us - 3_600_000_000) for _ in range(runs)]

    def thread_row(i: int) -> tuple[Any, ...]:
        created = to_micros(first_day) + rng.randrange(span_us // 2)
        return (
            thread_ids[i],
            thread_actor[i],
            None,
            f"Thread {i}",
            "default",
            i % 50 == 0,
            0,
            created,
            created + rng.randrange(span_us // 2),
            None if i % 40 else created + 1,
        )

    def run_row(i: int) -> tuple[Any, ...]:
        status = rng.choice(STATUSES)
        started = run_start[i]
        finished = None if status == "running" else started + rng.randrange(200_000, 60_000_000)
        t = run_thread[i]
        return (
            run_ids[i],
            thread_ids[t],
            rng.choice(["support", "researcher", None]),
            thread_actor[t],
            None,
            status,
            started,
            finished,
            rng.randrange(1, 6),
            0,
            0,
            None,
            None,
            False,
        )

    def message_row(i: int) -> tuple[Any, ...]:
        r = i // 2
        return (
            uuid.uuid4().hex,
            thread_ids[run_thread[r]],
            "user" if i % 2 == 0 else "assistant",
            f"message {i}",
            run_ids[r],
            run_start[r] + (i % 2) * 1000,
        )

    def tool_row(i: int) -> tuple[Any, ...]:
        name, kind = rng.choice(TOOLS)
        status = rng.choice(TOOL_STATUSES)
        t = run_thread[i]
        return (
            run_ids[i],
            f"call-{i}",
            thread_ids[t],
            name,
            kind,
            json.dumps({"orderId": i}),
            status,
            thread_actor[t],
            None if status == "pending_approval" else rng.randrange(5, 900),
            run_start[i] + 2000,
        )

    def usage_row(i: int) -> tuple[Any, ...]:
        r = i // 4
        t = run_thread[r]
        model = MODELS[min(int(rng.expovariate(0.4)), len(MODELS) - 1)]
        input_tokens = rng.randrange(200, 8000)
        reported = round(rng.random() * 0.02, 6) if rng.random() < 0.3 else None
        cache_read = input_tokens // 4 if i % 5 == 0 else None
        return (
            uuid.uuid4().hex,
            thread_ids[t],
            run_ids[r],
            thread_actor[t],
            model,
            "chat",
            input_tokens,
            rng.randrange(20, 1500),
            None,
            cache_read,
            reported,
            run_start[r] + (i % 4) * 500_000,
        )

    plan: list[tuple[str, list[str], int, Callable[[int], tuple[Any, ...]]]] = [
        (
            "agent_thread",
            [
                "id",
                "actor_ref",
                "tenant_ref",
                "title",
                "persona",
                "transient",
                "summary_message_count",
                "created_at",
                "updated_at",
                "deleted_at",
            ],
            threads,
            thread_row,
        ),
        (
            "agent_run",
            [
                "id",
                "thread_id",
                "agent_name",
                "actor_ref",
                "tenant_ref",
                "status",
                "started_at",
                "finished_at",
                "step_count",
                "input_tokens",
                "output_tokens",
                "cost_usd",
                "error",
                "durable",
            ],
            runs,
            run_row,
        ),
        ("agent_message", ["id", "thread_id", "role", "content", "run_id", "created_at"], runs * 2, message_row),
        (
            "agent_tool_call",
            [
                "run_id",
                "id",
                "thread_id",
                "tool_name",
                "tool_type",
                "input",
                "status",
                "actor_ref",
                "execution_ms",
                "created_at",
            ],
            runs,
            tool_row,
        ),
        (
            "agent_token_usage",
            [
                "id",
                "thread_id",
                "run_id",
                "actor_ref",
                "model_id",
                "purpose",
                "input_tokens",
                "output_tokens",
                "cache_write_tokens",
                "cache_read_tokens",
                "cost_usd",
                "created_at",
            ],
            usage_rows,
            usage_row,
        ),
    ]
    target = make_url(url)
    conn = await asyncpg.connect(
        host=target.host, port=target.port, user=target.username, password=target.password, database=target.database
    )
    try:
        with Progress(
            TextColumn("{task.description:<18}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
        ) as progress:
            # the per-tool rollup's triggers would fire per COPYed row: off here, the rollup rebuilt below
            await conn.execute("ALTER TABLE agent_tool_call DISABLE TRIGGER USER")
            for table, columns, total, make in plan:
                task = progress.add_task(table, total=total)
                for batch in _rows_in_batches(total, make):
                    await conn.copy_records_to_table(table, records=batch, columns=columns)
                    progress.advance(task, len(batch))
            await conn.execute("ALTER TABLE agent_tool_call ENABLE TRIGGER USER")
            pending = [(run_ids[i], f"call-{i}") for i in range(0, runs, 250)]
            await conn.executemany(
                "INSERT INTO agent_approval (run_id, tool_call_id, thread_id, tool_name, args_hash, requested_by,"
                " status, created_at) SELECT run_id, id, thread_id, tool_name, 'h', actor_ref, 'pending', created_at"
                " FROM agent_tool_call WHERE run_id = $1 AND id = $2",
                pending,
            )
        with console.status("daily usage rollup (rebuilt from the COPYed ledger)"):
            await conn.execute("DELETE FROM agent_usage_daily")
            await conn.execute(REBUILD_SQL)
        with console.status("daily run rollup (rebuilt from the COPYed runs)"):
            await conn.execute("DELETE FROM agent_run_daily")
            await conn.execute(RUN_REBUILD_SQL)
        with console.status("daily per-tool rollup (rebuilt from the COPYed tool calls)"):
            await conn.execute("DELETE FROM agent_tool_daily")
            await conn.execute(TOOL_REBUILD_SQL)
        with console.status("VACUUM ANALYZE"):
            await conn.execute("VACUUM ANALYZE")
        busiest = await conn.fetchval(
            "SELECT thread_id FROM agent_token_usage GROUP BY thread_id ORDER BY count(*) DESC LIMIT 1"
        )
    finally:
        await conn.close()
    return {"run_id": run_ids[runs // 2], "thread_id": busiest, "actor": actors[7], "today": today.date()}


async def picks_of(url: str) -> dict[str, Any]:
    """The ids `load` returns, read back from a kept database (its last day is the load's "today")."""
    target = make_url(url)
    conn = await asyncpg.connect(
        host=target.host, port=target.port, user=target.username, password=target.password, database=target.database
    )
    try:
        last = await conn.fetchval("SELECT max(started_at) FROM agent_run")
        runs = await conn.fetchval("SELECT count(*) FROM agent_run")
        run_id = await conn.fetchval("SELECT id FROM agent_run ORDER BY started_at OFFSET $1 LIMIT 1", runs // 2)
        busiest = await conn.fetchval(
            "SELECT thread_id FROM agent_token_usage GROUP BY thread_id ORDER BY count(*) DESC LIMIT 1"
        )
    finally:
        await conn.close()
    today = (datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=int(last))).date()
    return {"run_id": run_id, "thread_id": busiest, "actor": "user-7", "today": today}


async def time_queries(url: str, picks: dict[str, Any], repeat: int) -> list[tuple[str, str, float, float, int]]:
    backend = await open_sql_backend(url)
    for i, model in enumerate(PRICED):
        await backend.pricing.upsert_price(
            ModelPrice(
                model_id=model,
                input_price_per_1m=0.5 + i,
                output_price_per_1m=2 + 3 * i,
                cache_read_price_per_1m=0.05 if i % 2 else None,
            )
        )
    q = backend.queries
    today: date = picks["today"]
    week = (today - timedelta(days=6), today)
    all_days = (today - timedelta(days=DAYS - 1), today)

    def size(result: Any) -> int:
        if isinstance(result, list):
            return len(result)
        runs = getattr(result, "runs", None)
        return len(runs) if isinstance(runs, list) else int(runs or 0) if isinstance(runs, int) else 1

    cases: list[tuple[str, str, Callable[[], Awaitable[Any]]]] = [
        ("GQ-01 spend_by_model", "7 days", lambda: q.spend_by_model(*week)),
        ("GQ-01 spend_by_model", "90 days (all)", lambda: q.spend_by_model(*all_days)),
        ("GQ-02 spend_by_actor", "7 days", lambda: q.spend_by_actor(*week)),
        ("GQ-02 spend_by_actor", "90 days (all)", lambda: q.spend_by_actor(*all_days)),
        ("GQ-03 usage_trend", "7 days", lambda: q.usage_trend(*week)),
        ("GQ-03 usage_trend", "90 days (all)", lambda: q.usage_trend(*all_days)),
        ("GQ-04 recent_tool_calls", "50", lambda: q.recent_tool_calls(50)),
        ("GQ-05 recent_threads", "50", lambda: q.recent_threads(50)),
        ("GQ-06 list_runs", "first page", lambda: q.list_runs(RunQuery())),
        (
            "GQ-06 list_runs",
            "actor+status, page 3",
            lambda: q.list_runs(RunQuery(actor=picks["actor"], status="completed", cursor="100")),
        ),
        (
            "GQ-06 list_runs",
            "agent, 7 days",
            lambda: q.list_runs(RunQuery(agent="support", from_day=week[0], to_day=week[1])),
        ),
        ("GQ-07 run_detail", "one run", lambda: q.run_detail(picks["run_id"])),
        ("GQ-08 pending_approvals", "all actors", lambda: q.pending_approvals()),
        ("GQ-08 pending_approvals", "one actor", lambda: q.pending_approvals(actor=picks["actor"])),
        ("GQ-09 per_tool_stats", "7 days", lambda: q.per_tool_stats(*week)),
        ("GQ-09 per_tool_stats", "all", lambda: q.per_tool_stats()),
        ("GQ-10 run_reliability", "7 days", lambda: q.run_reliability(*week)),
        ("GQ-10 run_reliability", "all", lambda: q.run_reliability()),
        ("GQ-11 thread_detail", "busiest thread", lambda: q.thread_detail(picks["thread_id"])),
    ]
    results = []
    try:
        for name, scope, call in cases:
            result = await call()  # warm-up (plans, caches)
            times = []
            for _ in range(repeat):
                started = time.perf_counter()
                result = await call()
                times.append((time.perf_counter() - started) * 1000)
            results.append((name, scope, statistics.median(times), max(times), size(result)))
    finally:
        await backend.close()
    return results


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--usage", type=int, default=1_000_000, help="usage rows to load")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per query")
    parser.add_argument("--admin-url", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--keep", action="store_true", help="keep the database afterwards")
    parser.add_argument("--database", help="re-time this kept database (upgraded first) instead of loading one")
    args = parser.parse_args()

    admin = make_url(args.admin_url)
    name = args.database or f"agora_bench_{uuid.uuid4().hex[:8]}"
    admin_conn = await asyncpg.connect(
        host=admin.host, port=admin.port, user=admin.username, password=admin.password, database=admin.database
    )
    if not args.database:
        await admin_conn.execute(f'CREATE DATABASE "{name}"')
    url = admin.set(drivername="postgresql+asyncpg", database=name).render_as_string(hide_password=False)
    try:
        engine = create_engine_from_url(url)
        started = time.perf_counter()
        await upgrade(engine)
        await engine.dispose()
        if args.database:
            console.print(f"upgraded {name} in {time.perf_counter() - started:.1f} s")
            picks = await picks_of(url)
        else:
            started = time.perf_counter()
            picks = await load(url, args.usage, random.Random(42))
            console.print(
                f"loaded {args.usage:,} usage rows (+ runs, tool calls, messages) in "
                f"{time.perf_counter() - started:.1f} s into {name}"
            )
        results = await time_queries(url, picks, args.repeat)
    finally:
        if not args.keep and not args.database:
            await admin_conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin_conn.close()

    table = Table(title=f"SqlGovernanceQueries on PostgreSQL, {args.usage:,} usage rows (median of {args.repeat})")
    for header in ("query", "scope", "median ms", "worst ms", "rows", "<= 200 ms"):
        table.add_column(header, justify="left" if header in ("query", "scope") else "right")
    for name_, scope, median, worst, rows in results:
        table.add_row(name_, scope, f"{median:.1f}", f"{worst:.1f}", str(rows), "yes" if worst <= 200 else "[red]NO")
    console.print(table)


if __name__ == "__main__":
    asyncio.run(main())
