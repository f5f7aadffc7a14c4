"""What durable runs cost: inline vs durable on SQLite vs durable on PostgreSQL, in one run, as ratios.

1. Per model→tool→model step: a run of K rounds (model asks for `add`, the tool runs, the model goes on)
   plus a final text turn, timed end to end through AgentService (store writes, audit rows, frames).
   Inline and durable runs use the same store kind, so the difference is the DBOS checkpoints.
2. Cross-process approve→resume: a run parked on an approval in one uvicorn process, approved over HTTP
   on ANOTHER process; the time until the action tool runs in the first one.
3. Parked runs: N runs parked on approvals in one process — memory per parked run and idle CPU.

    .venv/bin/python bench/durable.py [--runs 20] [--steps 5] [--parked 1000] [--parked-sqlite 200]

PostgreSQL parts need a server on 127.0.0.1:5432 (user postgres, database `test` to create scratch
databases); they are skipped with a note otherwise. Quote `uptime` with the output (shared machine).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agora_agent import Actor, AgentConfig, AgentService, tool
from agora_agent.messages import ModelRequest
from agora_agent.runners.durable import DurableConfig
from agora_agent.testing import FakeModel, ScriptedTurn, ToolCallRequest
from agora_agent.testing.helpers import OBSERVER

ROOT = Path(__file__).resolve().parents[1]
ACTOR = Actor("bench", roles=("user",))
PG = ("127.0.0.1", 5432)


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(kind="action", roles=["user"])
async def act(n: int) -> str:
    """An action that needs approval."""
    return f"did {n}"


def script(steps: int) -> Callable[[ModelRequest, int], ScriptedTurn]:
    def play(request: ModelRequest, i: int) -> ScriptedTurn:
        if request.messages[0].content.startswith("park"):
            return ScriptedTurn(tool_calls=[ToolCallRequest("act", {"n": 1})]) if i == 0 else ScriptedTurn(text="ok")
        if i < steps:
            return ScriptedTurn(tool_calls=[ToolCallRequest(name="add", input={"a": i, "b": 1})])
        return ScriptedTurn(text="done")

    return play


def pg_up() -> bool:
    try:
        with socket.create_connection(PG, timeout=0.5):
            return True
    except OSError:
        return False


async def pg_database() -> str:
    import asyncpg

    name = f"agora_bench_{uuid.uuid4().hex[:10]}"
    conn = await asyncpg.connect(host=PG[0], port=PG[1], user="postgres", database="test")
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    from agora_agent.stores.sql import open_sql_backend

    backend = await open_sql_backend(f"postgresql+asyncpg://postgres@{PG[0]}:{PG[1]}/{name}", auto_create_tables=True)
    await backend.close()
    return name


async def pg_drop(name: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(host=PG[0], port=PG[1], user="postgres", database="test")
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


async def per_run(
    store: str, durable: bool, runs: int, steps: int, commit: str = "sync"
) -> tuple[list[float], list[float]]:
    """Milliseconds per run of `steps` model→tool→model rounds and a final text turn: (chat to end, executing).

    Executing = the workflow body, from its dequeue to its end (durable); the whole run inline (no queue).
    The difference is the wait in DBOS's run queue, which polls every `polling_interval` (0.1 s): runs
    started back to back meet the same phase of that poll each time, so chat-to-end is quantized to it and
    says little about what a round costs."""
    config = AgentConfig(
        model=FakeModel(script(steps)),
        tools=[add, act],
        store=store,
        max_steps=steps + 2,
        durable=DurableConfig(executor_id="bench", checkpoint_commit=commit) if durable else False,  # type: ignore[arg-type]
    )
    total: list[float] = []
    executing: list[float] = []
    checkpoints.clear()
    async with AgentService.from_config(config) as service:
        for i in range(runs + 2):
            spans.clear()
            t0 = time.perf_counter()
            started = await service.chat(ACTOR, "add things")
            await service.wait_for_run(OBSERVER, started.run_id, timeout=60)
            t1 = time.perf_counter()
            if i >= 2:  # two warm-up runs
                total.append((t1 - t0) * 1000)
                executing.append(spans[0] * 1000 if durable and spans else (t1 - t0) * 1000)
    return total, executing


spans: list[float] = []
"""Seconds the last durable run's workflow body took (set by `time_executions`)."""


def time_executions() -> None:
    """Wrap the durable runner's workflow body: how long a run executes once dequeued."""
    from agora_agent.runners.durable.runner import DurableRunner

    real = DurableRunner._execute

    async def timed(self: DurableRunner, payload: dict[str, Any]) -> dict[str, Any]:
        t = time.perf_counter()
        try:
            return await real(self, payload)
        finally:
            spans.append(time.perf_counter() - t)

    DurableRunner._execute = timed  # type: ignore[method-assign]


async def parked(store: str, count: int) -> tuple[float, float, float]:
    """(KiB per parked run, idle CPU % of one core over 10 s, seconds to park them all)."""
    durable = DurableConfig(executor_id="bench-park", worker_concurrency=count + 100)
    config = AgentConfig(model=FakeModel(script(1)), tools=[add, act], store=store, durable=durable)
    async with AgentService.from_config(config) as service:
        before = rss_kib()
        t0 = time.perf_counter()
        ids = [(await service.chat(ACTOR, f"park {i}")).run_id for i in range(count)]
        while len(await service.store.list_pending_approvals(limit=count + 10)) < count:  # noqa: ASYNC110
            await asyncio.sleep(0.2)
        took = time.perf_counter() - t0
        await asyncio.sleep(2)
        after = rss_kib()
        cpu0, wall0 = cpu_seconds(), time.perf_counter()
        await asyncio.sleep(10)
        idle = (cpu_seconds() - cpu0) / (time.perf_counter() - wall0) * 100
        for run_id in ids:
            await service.cancel(OBSERVER, run_id)
    return (after - before) / count, idle, took


checkpoints: list[float] = []
"""Milliseconds each DBOS step spent outside its body (DBOS's check + record transactions), last durable run."""


def time_checkpoints() -> None:
    """Wrap `DBOS.run_step_async`: the step's wall time minus its body's is what the checkpoint cost."""
    from dbos import DBOS

    real = DBOS.run_step_async

    async def timed(options: Any, fn: Any, *args: Any) -> Any:
        inner = 0.0

        async def body() -> Any:
            nonlocal inner
            t = time.perf_counter()
            try:
                return await fn(*args)
            finally:
                inner = time.perf_counter() - t

        t0 = time.perf_counter()
        result = await real(options, body)
        checkpoints.append((time.perf_counter() - t0 - inner) * 1000)
        return result

    DBOS.run_step_async = timed  # type: ignore[method-assign,assignment]


def rss_kib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return float(line.split()[1])
    return 0.0


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def approve_resume(store: str, approvals: int, workdir: Path) -> list[float]:
    """Milliseconds from an approval on process B to the tool running in process A."""
    import httpx2

    ledger = workdir / "ledger"
    ledger.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "AGORA_TEST_STORE": store,
        "AGORA_TEST_LEDGER": str(ledger),
    }
    procs = []
    bases = []
    for name in ("bench-a", "bench-b"):
        port = free_port()
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "uvicorn",
                    "tests.runners.durable_app:create_app",
                    "--factory",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(port),
                    "--log-level",
                    "warning",
                ],
                cwd=ROOT,
                env={**env, "AGORA_EXECUTOR_ID": name},
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
        bases.append(f"http://127.0.0.1:{port}")
        time.sleep(1.0)  # stagger the two DBOS launches on one fresh database
    headers = {"x-actor-id": "alice", "x-actor-role": "user"}
    out: list[float] = []
    try:
        for base in bases:
            for _ in range(300):
                try:
                    if httpx2.get(f"{base}/agent/threads", headers=headers, timeout=1).status_code == 200:
                        break
                except httpx2.TransportError:
                    pass
                time.sleep(0.1)
        a, b = bases
        for i in range(approvals + 1):
            with (
                httpx2.Client(timeout=10) as client,
                client.stream(
                    "POST", f"{a}/agent/chat", json={"message": f"please approve {i}"}, headers=headers
                ) as response,
            ):
                run_id = ""
                for line in response.iter_lines():
                    if line.startswith("data: ") and '"runId"' in line:
                        run_id = json.loads(line[6:])["runId"]
                    if "pending_approval" in line:
                        break
            # Approve on the process that does NOT execute the run (any process may have dequeued it).
            other = b if executor_of(store, run_id) == "bench-a" else a
            t0 = time.time()
            r = httpx2.post(
                f"{other}/agent/tool-call/approve", json={"runId": run_id, "toolCallId": "c1"}, headers=headers
            )
            assert r.status_code == 200, r.text
            effect = ledger / f"effect-{run_id}:c1-1"
            while not effect.exists():
                time.sleep(0.002)
            if i > 0:  # one warm-up
                out.append((effect.stat().st_mtime - t0) * 1000)
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=10)
    return out


def executor_of(store: str, run_id: str) -> str:
    """The executor id the run's workflow is PENDING on (read from the DBOS system database)."""
    import sqlalchemy as sa

    url = DurableConfig().resolved_system_database_url(store)
    table = "workflow_status" if url.startswith("sqlite") else "dbos.workflow_status"
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            query = sa.text(f"SELECT executor_id FROM {table} WHERE workflow_uuid = :id")
            return str(conn.execute(query, {"id": run_id}).scalar())
    finally:
        engine.dispose()


def med(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--parked", type=int, default=1000, help="parked runs on PostgreSQL")
    parser.add_argument("--parked-sqlite", type=int, default=200, help="parked runs on SQLite (waiters poll)")
    parser.add_argument("--approvals", type=int, default=10)
    parser.add_argument(
        "--parts", default="steps,approve,parked", help="comma-separated subset of steps, approve, parked"
    )
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    print(f"load average: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        pg_db = await pg_database() if pg_up() else None
        if pg_db is None:
            print("(PostgreSQL not reachable on 127.0.0.1:5432: its rows are skipped)")
        pg_url = f"postgresql+asyncpg://postgres@{PG[0]}:{PG[1]}/{pg_db}" if pg_db else None
        try:
            if "steps" in parts:
                await steps_part(work, pg_url, args.runs, args.steps)
            if "approve" in parts:
                for label, store in (
                    ("SQLite", f"sqlite:///{work / 'x.db'}"),
                    *((("PostgreSQL", pg_url),) if pg_url else ()),
                ):
                    xs = approve_resume(store, args.approvals, work / label)
                    print(
                        f"\ncross-process approve→resume on {label} ({len(xs)} approvals): median {med(xs):.0f} ms, "
                        f"max {max(xs):.0f} ms (target ≤ 250)"
                    )
            if "parked" in parts:
                targets = [("SQLite", f"sqlite:///{work / 'p.db'}", args.parked_sqlite)]
                if pg_url:
                    targets.append(("PostgreSQL", pg_url, args.parked))
                for label, store, count in targets:
                    per_run, idle, took = await parked(store, count)
                    print(
                        f"\n{count} runs parked on approval ({label}, one process): {per_run:.1f} KiB RSS per parked "
                        f"run, idle CPU {idle:.1f} % of a core, parked in {took:.1f} s"
                    )
        finally:
            if pg_db:
                await pg_drop(pg_db)
    print(f"load average at the end: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")


async def steps_part(work: Path, pg_url: str | None, runs: int, steps: int) -> None:
    """Per model→tool→model round, inline vs durable on each store kind (interleaved, so load hits both).

    Two figures per configuration: end to end (a run's time ÷ its rounds: includes the per-run costs —
    the run queue's poll, the workflow's start and end) and per round (the difference between runs of
    `steps` rounds and runs of none, ÷ `steps`: what one more round costs). The second is the per-step
    overhead; the difference of the zero-round runs is the per-run overhead."""
    configs = [
        ("inline, SQLite", f"sqlite:///{work / 'i.db'}", False, "sync"),
        ("durable, SQLite", f"sqlite:///{work / 'd.db'}", True, "sync"),
    ]
    if pg_url:
        configs += [
            ("inline, PostgreSQL", pg_url, False, "sync"),
            ("durable, PostgreSQL", pg_url, True, "sync"),
            ("durable, PG async commit", pg_url, True, "async"),
        ]
    time_checkpoints()
    time_executions()
    rows: dict[str, tuple[float, float, float]] = {}  # name: (end-to-end per round, per round, queue wait)
    per_checkpoint: dict[str, tuple[float, float]] = {}
    for name, store, durable, commit in configs:
        full, full_exec = await per_run(store, durable, runs, steps, commit)
        counted = len(checkpoints) / (runs + 2)
        cost = med(checkpoints)
        _, empty_exec = await per_run(store, durable, runs, 0, commit)
        if durable:
            per_checkpoint[name] = (cost, (counted - len(checkpoints) / (runs + 2)) / steps)
        rows[name] = (med(full) / steps, (med(full_exec) - med(empty_exec)) / steps, med(full) - med(full_exec))
    base = rows["inline, SQLite"][0]
    print(f"\nper model→tool→model round ({runs} runs × {steps} rounds vs {runs} runs of 0 rounds, median ms)")
    print(f"  {'':<26} {'end to end':>10} {'per round':>10} {'queue wait per run':>19}  ratio e2e")
    for name, (e2e, round_ms, queued) in rows.items():
        print(f"  {name:<26} {e2e:10.2f} {round_ms:10.2f} {queued:19.1f}  ×{e2e / base:5.2f}")
    print(
        "  (end to end = chat to end ÷ rounds, with the per-run costs; per round = what one more round costs while"
        " executing: (runs of N rounds − runs of 0) ÷ N, queue wait excluded)"
    )

    def overhead(durable: str, inline: str) -> str:
        (e2e, r, _), (e2e0, r0, _) = rows[durable], rows[inline]
        return f"{r - r0:.2f} ms per round (end to end, queue wait included: {e2e - e2e0:.2f} ms per round)"

    if pg_url:
        print(f"  durable overhead on PostgreSQL: {overhead('durable, PostgreSQL', 'inline, PostgreSQL')} (target ≤ 5)")
        print(f"  ... checkpoint_commit='async':  {overhead('durable, PG async commit', 'inline, PostgreSQL')}")
    print(f"  durable overhead on SQLite:     {overhead('durable, SQLite', 'inline, SQLite')}")
    for name, (cost, per_round) in per_checkpoint.items():
        print(
            f"  one DBOS step ({name}): median {cost:.2f} ms outside its body (DBOS's check + record); "
            f"{per_round:.1f} steps per round"
        )


if __name__ == "__main__":
    asyncio.run(main())
