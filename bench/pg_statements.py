"""What each of a governed run's PostgreSQL statements costs, one by one (issue #18's PostgreSQL row).

bench/loop.py gives the PostgreSQL store's wall time and client CPU per model step; this splits a run into its
statements. The run is bench/loop.py's (an AgentService with a budget, 6 tool steps and a final answer, each
run on a new thread, on a fresh database dropped afterwards) and every statement it sends on the driver
(`direct.fetch_asyncpg`: all of them) is observed at its own pre-state:

- `wall`: the statement as the run sent it, from the driver call to its reply (median over the runs);
- by default, just before it, the same statement with the same parameters inside a transaction that is rolled
  back, after a `SELECT 1` in that transaction: `rtt` (the bare round trip), `no-commit` (round trip and
  execution on the server), so `exec` = no-commit - rtt, and `commit` = wall - no-commit: what its autocommit
  adds — the WAL flush (every hot-path statement runs in autocommit);
- with `--explain`: instead, `EXPLAIN (ANALYZE, BUFFERS)` of it (rolled back): the server's planning time (a
  fresh plan: the run's own prepared statements use their generic plan after five executions, as listed at the
  end), execution time, time in each trigger (foreign keys, the per-tool rollup) and shared buffers hit.

The rolled-back copies leave dead rows and consumed sequence values; the run is otherwise what it would be.
Statements are named by their CTEs (`live+inserted+bumped+…`), or by the table a plain SELECT reads.

    .venv/bin/python bench/pg_statements.py [--runs 20] [--explain [--show-plans]] [--show-sql] [--store-commit effects]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).parent))

import loop  # bench/loop.py: the same service, model and run
from agora_agent.stores.sql import direct

_CTE = re.compile(r"(?:WITH|,)\s+(\w+) AS\s*\(")
_FROM = re.compile(r"\bFROM (\w+)")
ORIGINAL = direct.fetch_asyncpg


def label(sql: str) -> str:
    """A statement's name: its CTEs, or the first table it reads."""
    names = _CTE.findall(sql)
    if sql.lstrip().upper().startswith("WITH") and names:
        return "+".join(dict.fromkeys(names))
    found = _FROM.search(sql)
    return f"SELECT {found.group(1) if found else sql[:40]}"


class Observer:
    """Stands in for `direct.fetch_asyncpg` while `recording`: measures each statement, then runs it."""

    def __init__(self, explain: bool) -> None:
        self.explain = explain
        self.recording = False
        self.wall: dict[str, list[float]] = defaultdict(list)
        self.rtt: dict[str, list[float]] = defaultdict(list)
        self.dry: dict[str, list[float]] = defaultdict(list)
        self.plans: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self.sql: dict[str, str] = {}
        self.drivers: dict[int, Any] = {}
        self.count = 0

    async def fetch(self, conn: sa.Connection, stmt: Any, params: Mapping[str, Any], *, keyed: bool = False) -> Any:
        if not self.recording:
            return await ORIGINAL(conn, stmt, params, keyed=keyed)
        c = direct.compiled(stmt, conn.dialect, tuple(params) if keyed else None)
        name = label(c.sql)
        self.sql[name] = c.sql
        driver: Any = conn.connection.driver_connection
        self.drivers[id(driver)] = driver
        args = c.args(params)
        tr = driver.transaction()
        await tr.start()
        try:
            if self.explain:
                raw = await driver.fetchval("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + c.sql, *args)
                self.plans[name].append((json.loads(raw) if isinstance(raw, str) else raw)[0])
            else:
                t0 = time.perf_counter()
                await driver.fetch("SELECT 1")
                t1 = time.perf_counter()
                await driver.fetch(c.sql, *args)
                t2 = time.perf_counter()
                self.rtt[name].append(t1 - t0)
                self.dry[name].append(t2 - t1)
        finally:
            await tr.rollback()
        t0 = time.perf_counter()
        try:
            return await ORIGINAL(conn, stmt, params, keyed=keyed)
        finally:
            self.wall[name].append(time.perf_counter() - t0)
            self.count += 1


def _med(values: list[float]) -> float:
    return statistics.median(values) * 1e6


def render(node: dict[str, Any], depth: int = 0) -> list[str]:
    """A plan node and its children, one line each: type, relation/CTE, actual time (ms), rows, buffers hit."""
    what = node.get("Relation Name") or node.get("CTE Name") or node.get("Index Name") or ""
    line = (
        f"{'  ' * depth}{node['Node Type']} {what} {node.get('Subplan Name', '')} "
        f"time={node.get('Actual Total Time', 0):.3f} rows={node.get('Actual Rows', 0)} "
        f"loops={node.get('Actual Loops', 0)} hit={node.get('Shared Hit Blocks', 0)}"
    )
    return [line, *(x for child in node.get("Plans", ()) for x in render(child, depth + 1))]


def summarize(observer: Observer, runs: int) -> None:
    print(f"{observer.count / runs:.0f} statements per run")
    head = f"{'statement':<62} {'n/run':>5} {'wall':>6}"
    if observer.explain:
        print(f"{head} {'plan':>6} {'exec':>6} {'trig':>6} {'hit':>4}  (µs; triggers' time each)")
    else:
        print(f"{head} {'rtt':>6} {'exec':>6} {'commit':>6}  (µs)")
    totals = defaultdict(float)
    for name, walls in sorted(observer.wall.items(), key=lambda kv: -sum(kv[1])):
        n = len(walls) / runs
        wall = _med(walls)
        totals["wall"] += n * wall
        print(f"{name[:62]:<62} {n:5.1f} {wall:6.0f}", end="")
        plans = observer.plans.get(name)
        if plans:
            triggers: dict[str, list[float]] = defaultdict(list)
            for p in plans:
                for t in p.get("Triggers", ()):
                    triggers[t["Trigger Name"]].append(t["Time"] / 1e3)
            planning = _med([p["Planning Time"] / 1e3 for p in plans])
            execution = _med([p["Execution Time"] / 1e3 for p in plans])
            trig = sum(_med(v) for v in triggers.values())
            hit = statistics.median(p["Plan"].get("Shared Hit Blocks", 0) for p in plans)
            totals["exec"] += n * execution
            totals["trig"] += n * trig
            detail = ", ".join(f"{k} {_med(v):.0f}" for k, v in triggers.items())
            jit = " JIT!" if any("JIT" in p for p in plans) else ""
            print(f" {planning:6.0f} {execution:6.0f} {trig:6.0f} {hit:4.0f}  {detail}{jit}")
        else:
            rtt, dry = _med(observer.rtt[name]), _med(observer.dry[name])
            totals["rtt"] += n * rtt
            totals["exec"] += n * (dry - rtt)
            totals["commit"] += n * (wall - dry)
            print(f" {rtt:6.0f} {dry - rtt:6.0f} {wall - dry:6.0f}")
    print("per run (sums of medians): " + ", ".join(f"{k} {v / 1e3:.2f} ms" for k, v in totals.items()))


async def prepared(observer: Observer) -> None:
    """How the run's own prepared statements were planned on each connection (generic after five custom)."""
    print("the run's prepared statements, per connection: generic plans / custom plans")
    for driver in observer.drivers.values():
        if driver.is_closed():
            continue
        query = "SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements ORDER BY statement"
        for row in await driver.fetch(query):
            name = label(row["statement"])
            if name in observer.wall and row["generic_plans"] + row["custom_plans"]:
                print(f"  {name[:62]:<62} {row['generic_plans']:5} {row['custom_plans']:5}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--steps", type=int, default=6, help="tool-calling steps per run (plus one final step)")
    parser.add_argument("--explain", action="store_true", help="EXPLAIN (ANALYZE, BUFFERS) each statement")
    parser.add_argument("--show-plans", action="store_true", help="with --explain: each statement's last plan")
    parser.add_argument("--show-sql", action="store_true", help="print each statement's SQL")
    parser.add_argument("--store-commit", choices=("sync", "effects"), default="sync", help="AgentConfig.store_commit")
    parser.add_argument("--pg-admin-url", default=os.environ.get("AGORA_BENCH_PG", loop.PG_ADMIN))
    args = parser.parse_args()

    made = await loop.pg_database(args.pg_admin_url)
    if made is None:
        return
    url, drop = made
    observer = Observer(args.explain)
    direct.fetch_asyncpg = observer.fetch  # type: ignore[assignment]
    ours = loop.Ours(url, args.steps, sync_tool=False, store_commit=args.store_commit)
    try:
        await ours.start()
        for _ in range(5):  # warm: connections kept, statements prepared, generic plans chosen
            await ours.run()
        observer.recording = True
        for _ in range(args.runs):
            await ours.run()  # a new thread each, as bench/loop.py's PostgreSQL rows
        observer.recording = False
        load = os.getloadavg()
        print(f"load average {load[0]:.2f} {load[1]:.2f}; {args.runs} runs of {args.steps + 1} steps (async tool)")
        summarize(observer, args.runs)
        await prepared(observer)
        if args.explain and args.show_plans:
            for name, plans in observer.plans.items():
                last = plans[-1]
                planning, execution = last["Planning Time"], last["Execution Time"]
                print(f"\n-- {name}: planning {planning:.3f} ms, execution {execution:.3f} ms")
                print("\n".join(render(last["Plan"])))
                for t in last.get("Triggers", ()):
                    print(f"  trigger {t['Trigger Name']}: {t['Time']:.3f} ms, calls {t['Calls']}")
        if args.show_sql:
            for name, sql in observer.sql.items():
                print(f"\n-- {name}\n{sql}")
    finally:
        direct.fetch_asyncpg = ORIGINAL  # type: ignore[assignment]
        await ours.close()
        await drop()


if __name__ == "__main__":
    asyncio.run(main())
