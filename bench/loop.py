"""Governed-loop cost per model step on the stores people deploy, as ratios to Pydantic AI measured in one run.

Each run is K tool-calling model steps (tool `add(a, b)`) plus one final text step, with a scripted model
and no network, budgets on. A sync tool runs in a worker thread in both frameworks (the hop dominates a
trivial tool); ours also runs the same function declared `@tool(blocking=False)`, called on the event loop.
Ours runs through AgentService (offer/authorize filter chain, audit rows, stream
frames, usage ledger, budget reservation — everything a real turn does) on the in-memory store,
SQLite (a file, WAL) and PostgreSQL (a fresh database, dropped afterwards; skipped when unreachable).

The cases are measured in interleaved rounds (every case once per round, in a rotating order), so
a neighbour's load hits all of them alike; each row of the table is the ratio of two cases in the same
round, and the printed figure is the median over rounds with the min–max spread.

The sync rows' floor: the run's worker-thread hops (`tools/threads.py`, one per tool step) awaited with no loop
around them, ÷ Pydantic AI's sync step — what the sync row costs even if our loop cost nothing.

The sync hop's anatomy (memory store, after the table): the same runs with the sync tool in a worker thread and
declared `blocking=False`, each thread's CPU read with `pthread_getcpuclockid`, beside a bare `threading.Lock`
round trip between two threads after 100 µs of work on the first (no loop, no tool, no asyncio): what the
operating system and this machine charge for two wake-ups of a parked thread.

A synced price table: the SQLite case again on a database holding the `agora-agent prices sync` catalogue
(every model of the bundled genai-prices data, priced per token) and the bench model's own price ÷ the same on a
database holding only the bench model's price — a run reads its model's price, not the table.

Thread growth: a chat on a thread that already holds 500 prior turns (each: user message, an assistant
tool call with its executed result, the final answer) ÷ a chat on a thread with 1 prior turn.

Each row also shows this process's CPU per model step and its ratio (a database server's own CPU and its
WAL flushes are not in it): on a loaded machine the wall-time ratio of a PostgreSQL row mostly measures the
server's queue, the CPU ratio what our client costs.

Statement counts: SQLAlchemy events count the statements, transactions (BEGIN … COMMIT; a statement in
autocommit has none) and write transactions of one run; on SQLite the round trips to aiosqlite's worker
thread, on PostgreSQL the round trips to the server.

    .venv/bin/python bench/loop.py [--rounds 15] [--runs 10] [--steps 6] [--pg-admin-url URL] [--only memory,sqlite]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from agora_agent import Actor, AgentConfig, AgentService, Budget, tool
from agora_agent.messages import ModelRequest, ModelTurn, ToolCall, Usage
from agora_agent.records import ToolCallRecord
from agora_agent.stores.base import AgentStore
from agora_agent.testing.helpers import OBSERVER

ACTOR = Actor("bench", roles=("user",))
PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/test"


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(name="add", blocking=False)
def add_inline(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(name="add", blocking=False)
def add_parking(a: int, b: int) -> int:
    """Add two integers, after parking the calling thread for 100 µs (the sync hop's anatomy: a park, no hand-off)."""
    time.sleep(100e-6)
    return a + b


@tool(name="add")
async def add_async(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class ScriptModel:
    """K tool steps then "done": step i asks for `call-<i>`, found from the last message alone (a long thread plays
    the same run at the same cost).

    A `ModelProvider` of its own rather than `FakeModel`, whose turn index counts every assistant message of
    the history (O(thread) per call): the thread-growth row measures our runtime, not the fake model. Like Pydantic
    AI's `FunctionModel` below, it answers from the newest message in O(1), so neither stand-in's own cost grows
    with the run or weighs on the ratio.
    """

    model_id = "bench-model"
    usage = Usage(input_tokens=10, output_tokens=5)  # frozen: one value serves every turn

    def __init__(self, steps: int) -> None:
        self.steps = steps

    async def run_turn(self, request: ModelRequest, on_text: Callable[[str], Awaitable[None]]) -> ModelTurn:
        last = request.messages[-1]
        i = 0 if last.role == "user" else int(last.tool_results[-1].tool_call_id[5:]) + 1  # after "call-<i>"'s result
        if i < self.steps:
            call = ToolCall(id=f"call-{i}", name="add", input={"a": i, "b": 1})
            return ModelTurn(text="", tool_calls=(call,), usage=self.usage)
        await on_text("done")
        return ModelTurn(text="done", usage=self.usage)


# -- one run of each framework -------------------------------------------------------------------


class AddArgs(BaseModel):
    a: int
    b: int


class Ours:
    """An AgentService on one store; `run(thread_id)` is one chat to completion."""

    def __init__(
        self,
        store: str | None,
        steps: int,
        sync_tool: bool,
        inline: bool = False,
        tool: object = None,
        store_commit: Literal["sync", "effects"] = "sync",
    ) -> None:
        self.config = AgentConfig(
            model=ScriptModel(steps),
            tools=[tool or ((add_inline if inline else add) if sync_tool else add_async)],
            budget=Budget(tokens_per_actor=10**12),
            store=store,
            store_commit=store_commit,
        )
        self.service = AgentService.from_config(self.config)

    async def start(self) -> None:
        await self.service.start()

    async def close(self) -> None:
        await self.service.close()

    async def run(self, thread_id: str | None = None) -> None:
        started = await self.service.chat(ACTOR, "add things", thread_id=thread_id)
        run = await self.service.wait_for_run(OBSERVER, started)  # checked against the row chat recorded
        assert run.status == "completed", run


class PydanticAI:
    def __init__(self, steps: int, sync_tool: bool) -> None:
        from pydantic_ai import Agent
        from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
        from pydantic_ai.models.function import AgentInfo, FunctionModel

        def fn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            i = len(messages) // 2  # request, response, request, …: the responses so far, in O(1) like ScriptModel
            if i < steps:
                return ModelResponse(parts=[ToolCallPart(tool_name="add", args={"a": i, "b": 1})])
            return ModelResponse(parts=[TextPart(content="done")])

        self.agent: Agent[None, str] = Agent(FunctionModel(fn))
        if sync_tool:

            @self.agent.tool_plain
            def add(a: int, b: int) -> int:
                """Add two integers."""
                return a + b

        else:

            @self.agent.tool_plain(name="add")
            async def add_async(a: int, b: int) -> int:
                """Add two integers."""
                return a + b

    async def run(self) -> None:
        await self.agent.run("add things")


# -- seeding long threads ------------------------------------------------------------------------


async def seed_thread(store: AgentStore, turns: int) -> str:
    """A thread with `turns` prior turns written through the store API, as the loop would have left them."""
    thread = await store.create_thread(actor_ref=ACTOR.id)
    for t in range(turns):
        run_id = uuid.uuid4().hex
        await store.append_message(thread_id=thread.id, role="user", content="add things", run_id=run_id)
        call = ToolCall(id=f"call-{t}", name="add", input={"a": t, "b": 1})
        asked = await store.append_message(
            thread_id=thread.id, role="assistant", content="", run_id=run_id, tool_calls=[call]
        )
        now = datetime.now(UTC)
        await store.record_tool_call(
            ToolCallRecord(
                id=call.id,
                run_id=run_id,
                thread_id=thread.id,
                message_id=asked.id,
                tool_name="add",
                tool_type="read",
                input=call.input,
                output=t + 1,
                status="executed",
                actor_ref=ACTOR.id,
                created_at=now,
                executed_at=now,
            )
        )
        await store.append_message(thread_id=thread.id, role="assistant", content="done", run_id=run_id)
    return thread.id


async def seed_prices(ours: Ours, catalogue: bool) -> int:
    """The bench model's price, after the `prices sync` catalogue when `catalogue`; returns how many prices."""
    from agora_agent.governance.pricing import ModelPrice, seed_model_prices
    from agora_agent.stores.sql.price_catalog import catalog_prices

    pricing = ours.service.pricing
    assert pricing is not None
    prices = catalog_prices() if catalogue else []
    prices.append(ModelPrice(model_id=ScriptModel.model_id, input_price_per_1m=1.0, output_price_per_1m=2.0))
    return await seed_model_prices(pricing, prices)


# -- statement counting --------------------------------------------------------------------------


@dataclass
class SqlCounts:
    statements: int = 0
    transactions: int = 0
    write_transactions: int = 0
    driver_calls: int = 0
    unit_hops: int = 0
    kinds: Counter[str] = field(default_factory=Counter)


async def count_one_run(ours: Ours) -> SqlCounts:
    """One run with SQLAlchemy event listeners (and an aiosqlite hop counter) attached, then detached."""
    import sqlalchemy as sa

    from agora_agent.stores.sql.engine import WRITE
    from agora_agent.stores.sql.units import SqliteUnits, units_for

    counts = SqlCounts()
    async_engine = ours.service._backend.engine
    units = units_for(async_engine)
    engines = {async_engine.sync_engine, units.sync_engine}

    def on_statement(conn: Any, cursor: Any, statement: str, params: Any, context: Any, executemany: bool) -> None:
        if statement.startswith("BEGIN"):
            return
        counts.statements += 1
        counts.kinds[statement.split(None, 1)[0].upper()] += 1

    def on_begin(conn: sa.Connection) -> None:
        options = conn.get_execution_options()
        if options.get("isolation_level") == "AUTOCOMMIT":
            return  # no BEGIN/COMMIT reaches the server: the statement commits by itself
        counts.transactions += 1
        if options.get(WRITE, False):
            counts.write_transactions += 1

    import aiosqlite.core

    original = aiosqlite.core.Connection._execute

    async def counted(self: Any, fn: Any, *args: Any, **kwargs: Any) -> Any:
        counts.driver_calls += 1
        return await original(self, fn, *args, **kwargs)

    original_unit = SqliteUnits._on_worker

    def counted_unit(self: Any, fn: Any, write: bool) -> Any:
        counts.unit_hops += 1
        return original_unit(self, fn, write)

    for engine in engines:
        sa.event.listen(engine, "before_cursor_execute", on_statement)
        sa.event.listen(engine, "begin", on_begin)
    aiosqlite.core.Connection._execute = counted  # type: ignore[method-assign]
    SqliteUnits._on_worker = counted_unit  # type: ignore[method-assign]
    try:
        await ours.run()
    finally:
        aiosqlite.core.Connection._execute = original  # type: ignore[method-assign]
        SqliteUnits._on_worker = original_unit  # type: ignore[method-assign]
        for engine in engines:
            sa.event.remove(engine, "before_cursor_execute", on_statement)
            sa.event.remove(engine, "begin", on_begin)
    return counts


# -- the measurement -----------------------------------------------------------------------------


Case = Callable[[], Awaitable[None]]


CPU: dict[str, list[float]] = {}
"""Per case, this process's CPU seconds per model step in each round (all its threads; a database server's
own CPU is not in it): what the client costs, which a busy machine inflates far less than wall time."""


async def timed(case: Case, runs: int, steps: int, name: str | None = None) -> float:
    """Median seconds per model step over `runs` runs (and the round's CPU per step kept in `CPU[name]`)."""
    samples = []
    c0 = time.process_time()
    for _ in range(runs):
        t0 = time.perf_counter()
        await case()
        samples.append((time.perf_counter() - t0) / (steps + 1))
    if name is not None:
        CPU.setdefault(name, []).append((time.process_time() - c0) / (runs * (steps + 1)))
    return statistics.median(samples)


def thread_cpu() -> dict[str, float]:
    """By role (the event loop's thread, the sync-tool workers): CPU seconds so far, and how many times the threads
    parked (voluntary context switches, from /proc on Linux; 0 elsewhere)."""
    out = {"loop": 0.0, "workers": 0.0, "loop parks": 0.0, "workers parks": 0.0}
    for thread in threading.enumerate():
        if thread.ident is None:
            continue
        role = "loop" if thread is threading.main_thread() else "workers" if thread.name == "agora-sync-tool" else None
        if role is not None:
            with contextlib.suppress(OSError, ProcessLookupError):
                out[role] += time.clock_gettime(time.pthread_getcpuclockid(thread.ident))
            with contextlib.suppress(OSError, IndexError, ValueError):
                status = Path(f"/proc/self/task/{thread.native_id}/status").read_text()
                out[f"{role} parks"] += int(status.split("\nvoluntary_ctxt_switches:")[1].split()[0])
    return out


async def hop_anatomy(sync: Ours, inline: Ours, steps: int, runs: int = 300) -> None:
    """Per model step: wall and each thread's CPU, sync tool (worker thread) vs `blocking=False` (on the loop), and
    the `blocking=False` tool parking the loop's thread for 100 µs (`time.sleep`: a park, and no other thread)."""
    parking = Ours(None, steps, True, tool=add_parking)
    await parking.start()
    figures: dict[str, tuple[float, dict[str, float]]] = {}
    for name, ours in (("sync", sync), ("inline", inline), ("parking", parking)):
        for _ in range(20):
            await ours.run()
        cpu0, t0 = thread_cpu(), time.perf_counter()
        for _ in range(runs):
            await ours.run()
        wall = (time.perf_counter() - t0) / (runs * (steps + 1))
        cpu1 = thread_cpu()
        figures[name] = (wall, {k: (cpu1[k] - cpu0[k]) / (runs * (steps + 1)) for k in cpu1})
    await parking.close()
    (ws, cs), (wi, ci), (wp, cp) = figures["sync"], figures["inline"], figures["parking"]
    hop_loop, hop_parks = (cs["loop"] - ci["loop"]) * 1e6, (cs["loop parks"] - ci["loop parks"]) * (steps + 1) / steps
    print(
        "  the sync hop as the loop pays it (memory store, sync tool − blocking=False): "
        f"{(ws - wi) * 1e6:+.0f} µs/step wall ({ws * 1e6:.0f} vs {wi * 1e6:.0f}); "
        f"the loop's thread {hop_loop:+.0f} µs CPU, the worker thread {cs['workers'] * 1e6:.0f} µs CPU; "
        f"parks per tool step: the loop's thread {hop_parks:.2f}, "
        f"the worker {cs['workers parks'] * (steps + 1) / steps:.2f} (one each is the least a hand-off can do)"
    )
    print(
        "  the blocking=False tool parking the loop's thread 100 µs a call (time.sleep): "
        f"{(wp - wi) * 1e6:+.0f} µs/step wall, the loop's thread {(cp['loop'] - ci['loop']) * 1e6:+.0f} µs CPU "
        "for sleeping — what a park costs here"
    )
    print(
        "  a bare threading.Lock round trip between two threads, after 100 µs of work: "
        f"{lock_round_trip() * 1e6:.0f} µs (no loop, no tool: the wake-ups alone)"
    )


def lock_round_trip(samples: int = 2000, work_s: float = 100e-6) -> float:
    """Median seconds of `release(a); acquire(b)` answered by a thread parked on `a`, each after `work_s` busy."""
    a, b = threading.Lock(), threading.Lock()
    a.acquire()
    b.acquire()

    def echo() -> None:
        for _ in range(samples):
            a.acquire()
            b.release()

    thread = threading.Thread(target=echo, daemon=True)
    thread.start()
    times = []
    for _ in range(samples):
        end = time.perf_counter() + work_s
        while time.perf_counter() < end:
            pass
        t0 = time.perf_counter()
        a.release()
        b.acquire()
        times.append(time.perf_counter() - t0)
    thread.join()
    return statistics.median(times)


async def pg_database(admin_url: str) -> tuple[str, Callable[[], Awaitable[None]]] | None:
    try:
        import asyncpg

        admin = await asyncio.wait_for(asyncpg.connect(admin_url), 3)
    except (OSError, TimeoutError, ImportError, Exception) as exc:  # any failure means "skip PostgreSQL"
        print(f"PostgreSQL skipped: {type(exc).__name__}: {exc}")
        return None
    name = f"agora_bench_{uuid.uuid4().hex[:10]}"
    await admin.execute(f'CREATE DATABASE "{name}"')
    await admin.close()
    from sqlalchemy.engine import make_url

    url = make_url(admin_url).set(drivername="postgresql+asyncpg", database=name)
    from agora_agent.stores.sql import create_engine_from_url
    from agora_agent.stores.sql.migrate import upgrade

    engine = create_engine_from_url(url)
    await upgrade(engine)
    await engine.dispose()

    async def drop() -> None:
        conn = await asyncpg.connect(admin_url)
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await conn.close()

    return url.render_as_string(hide_password=False), drop


async def commit_latency(url: str, samples: int = 200) -> tuple[float, float]:
    """(µs per `SELECT 1`, µs per committed one-row INSERT) on the server at `url`: the round trip, and the
    round trip plus the WAL flush every autocommit write waits for — what a PostgreSQL row's wall time is
    made of besides our CPU (a busy shared server makes the flush, not the statement, the cost)."""
    import asyncpg

    from agora_agent.stores.sql.engine import normalize_url

    target = normalize_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    conn = await asyncpg.connect(target)
    try:
        await conn.execute("CREATE TABLE IF NOT EXISTS bench_commit_probe (x int)")  # logged: its commits flush WAL
        select, insert = (
            await conn.prepare("SELECT 1"),
            await conn.prepare("INSERT INTO bench_commit_probe VALUES ($1)"),
        )
        t0 = time.perf_counter()
        for _ in range(samples):
            await select.fetchval()
        t1 = time.perf_counter()
        for i in range(samples):
            await insert.fetchval(i)
        t2 = time.perf_counter()
        await conn.execute("DROP TABLE bench_commit_probe")
    finally:
        await conn.close()
    return (t1 - t0) / samples * 1e6, (t2 - t1) / samples * 1e6


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--runs", type=int, default=10, help="runs per case per round")
    parser.add_argument("--steps", type=int, default=6, help="tool-calling steps per run (plus one final step)")
    parser.add_argument("--turns", type=int, default=500, help="prior turns of the long thread")
    parser.add_argument("--pg-admin-url", default=os.environ.get("AGORA_BENCH_PG", PG_ADMIN))
    parser.add_argument("--only", default="memory,sqlite,postgres", help="stores to measure")
    args = parser.parse_args()
    stores = set(args.only.split(","))
    steps = args.steps

    tmp = tempfile.TemporaryDirectory(prefix="agora-bench-")
    cleanups: list[Callable[[], Awaitable[None]]] = []
    services: dict[str, Ours] = {}
    cases: dict[str, Case] = {}

    pai_sync, pai_async = PydanticAI(steps, True), PydanticAI(steps, False)
    cases["pai sync"] = pai_sync.run
    cases["pai async"] = pai_async.run

    urls: dict[str, str | None] = {}
    if "memory" in stores:
        urls["memory"] = None
    if "sqlite" in stores:
        urls["sqlite"] = f"sqlite:///{tmp.name}/bench.db"
    if "postgres" in stores:
        made = await pg_database(args.pg_admin_url)
        if made is not None:
            urls["postgres"], drop = made
            cleanups.append(drop)

    try:
        await measure_all(args, urls, cases, services, cleanups)
    finally:
        for cleanup in cleanups:
            await cleanup()
        tmp.cleanup()


async def measure_all(
    args: argparse.Namespace,
    urls: dict[str, str | None],
    cases: dict[str, Case],
    services: dict[str, Ours],
    cleanups: list[Callable[[], Awaitable[None]]],
) -> None:
    steps = args.steps
    counts: dict[str, SqlCounts] = {}
    for name, url in urls.items():
        for sync in (True, False):
            key = f"{name} {'sync' if sync else 'async'}"
            ours = Ours(url, steps, sync)
            await ours.start()
            services[key] = ours
            cleanups.insert(0, ours.close)
            cases[key] = ours.run
        if name == "postgres" and url is not None:  # the opt-in: reservations' commits do not wait for the disk
            for sync in (True, False):
                key = f"postgres {'sync' if sync else 'async'} effects"
                ours = Ours(url, steps, sync, store_commit="effects")
                await ours.start()
                services[key] = ours
                cleanups.insert(0, ours.close)
                cases[key] = ours.run
        if url is None:  # the same sync tool declared `@tool(blocking=False)`: no worker-thread hop
            inline = Ours(url, steps, True, inline=True)
            await inline.start()
            cleanups.insert(0, inline.close)
            cases[f"{name} sync inline"] = inline.run
            services[f"{name} sync inline"] = inline
        # thread growth on the sync-tool service of this store
        ours = services[f"{name} sync"]
        store = ours.service.store
        long_thread = await seed_thread(store, args.turns)
        short_threads = [await seed_thread(store, 1) for _ in range(args.rounds * args.runs + args.runs)]

        def short_case(ours: Ours = ours, pool: list[str] = short_threads) -> Awaitable[None]:
            return ours.run(pool.pop())

        cases[f"{name} @1 turn"] = short_case
        cases[f"{name} @{args.turns} turns"] = lambda ours=ours, tid=long_thread: ours.run(tid)
        if url is not None:
            await ours.run()  # warm-up, then one counted run
            counts[name] = await count_one_run(ours)
        if name == "sqlite" and url is not None:  # the same case with a synced price table, and with one price
            for label, catalogue in (("priced", False), ("catalogue", True)):
                priced = Ours(f"{url.removesuffix('.db')}-{label}.db", steps, True)
                await priced.start()
                cleanups.insert(0, priced.close)
                await seed_prices(priced, catalogue)
                cases[f"sqlite {label}"] = priced.run

    if None in urls.values():  # the sync rows' floor: the same hops with no loop around them at all
        from agora_agent.tools import threads

        async def hops_alone() -> None:
            for i in range(steps):
                await threads.run_sync(add, i, 1)

        cases["hops alone"] = hops_alone

    # warm-up every case, then interleaved rounds
    for case in cases.values():
        await timed(case, 2, steps)
    names = list(cases)
    per_round: dict[str, list[float]] = {n: [] for n in names}
    for r in range(args.rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        for n in order:
            per_round[n].append(await timed(cases[n], args.runs, steps, n))

    def ratio_row(label: str, num: str, den: str, target: str) -> None:
        if num not in per_round or den not in per_round:
            return
        ratios = [a / b for a, b in zip(per_round[num], per_round[den], strict=True)]
        med_num = statistics.median(per_round[num]) * 1e3
        cpu = statistics.median(CPU[num]) * 1e3
        cpu_ratio = statistics.median(a / b for a, b in zip(CPU[num], CPU[den], strict=True))
        print(
            f"  {label:<52} {statistics.median(ratios):7.3f}×  [{min(ratios):.3f}–{max(ratios):.3f}]"
            f"  ({med_num:7.3f} ms/step; CPU {cpu:.3f} ms/step, {cpu_ratio:.3f}×)  target {target}"
        )

    print(
        f"per model step, median over {args.rounds} interleaved rounds × {args.runs} runs × {steps + 1} steps "
        f"[min–max over rounds]; load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}"
    )
    for n in names:
        if n.startswith("pai"):
            ms = statistics.median(per_round[n]) * 1e3
            cpu = statistics.median(CPU[n]) * 1e3
            print(f"  Pydantic AI Agent+FunctionModel, {n[4:]} tool: {ms:.3f} ms/step (CPU {cpu:.3f} ms/step)")
    for sync in ("sync", "async"):
        ratio_row(f"memory store ÷ Pydantic AI ({sync} tool)", f"memory {sync}", f"pai {sync}", "≤ 0.03")
    ratio_row("memory store ÷ Pydantic AI (sync, blocking=False)", "memory sync inline", "pai sync", "≤ 0.03")
    ratio_row("  its floor: the worker-thread hops alone ÷ PAI (sync)", "hops alone", "pai sync", "(no loop at all)")
    for sync in ("sync", "async"):
        ratio_row(f"SQLite store ÷ Pydantic AI ({sync} tool)", f"sqlite {sync}", f"pai {sync}", "≤ 1.0 (0.5)")
    for sync in ("sync", "async"):
        ratio_row(f"PostgreSQL store ÷ Pydantic AI ({sync} tool)", f"postgres {sync}", f"pai {sync}", "≤ 1.0")
    for sync in ("sync", "async"):
        label = f'  the same, store_commit="effects" ({sync} tool)'
        ratio_row(label, f"postgres {sync} effects", f"pai {sync}", "(opt-in)")
    ratio_row("sqlite: a synced price table ÷ one price", "sqlite catalogue", "sqlite priced", "≈ 1")
    for name in urls:
        label = f"{name}: chat at {args.turns} prior turns ÷ at 1"
        ratio_row(label, f"{name} @{args.turns} turns", f"{name} @1 turn", "≤ 1.2")
    if "memory sync" in services and "memory sync inline" in services:
        await hop_anatomy(services["memory sync"], services["memory sync inline"], steps)
    if "postgres" in urls and urls["postgres"] is not None:
        rtt, commit = await commit_latency(urls["postgres"])
        print(
            f"  PostgreSQL server now: SELECT 1 {rtt:.0f} µs, a committed INSERT {commit:.0f} µs"
            " (round trip + WAL flush)"
        )
    for name, c in counts.items():
        print(
            f"  {name} one {steps + 1}-step run: {c.statements} statements ({dict(c.kinds)}), "
            f"{c.transactions} transactions ({c.write_transactions} write)"
            + (
                f", {c.driver_calls} round trips to aiosqlite's thread, {c.unit_hops} units sent to the worker thread"
                if name == "sqlite"
                else f", {c.statements + 2 * c.transactions} round trips to the server (BEGIN and COMMIT are two)"
            )
        )


if __name__ == "__main__":
    asyncio.run(main())
