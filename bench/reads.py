"""Reading one run back on a long thread ÷ on a short one: the stored transcript and the run inspector.

The stored transcript (`runners/transcript.py`) is what a re-attach replays when no sink holds the run's frames —
another process runs it, a restart, a Redis that lost the stream — and it is re-read every 0.5 s while the run is
still running elsewhere (a run parked on an approval can be followed for hours). The run inspector
(`GET /agent/governance/runs/{id}/inspect`) reads the same messages. Both read one run: their cost should not grow
with the thread it belongs to.

For each store (memory, SQLite file, PostgreSQL in a fresh database, dropped afterwards; skipped when unreachable)
the last run of a thread with 500 prior turns and of a thread with 1 prior turn (each turn as `bench/loop.py`
seeds it) is read back in interleaved rounds; each row is the median over rounds of (time at 500 turns ÷ time at
1 turn), with the min–max spread and the median times.

    .venv/bin/python bench/reads.py [--rounds 15] [--reads 10] [--turns 500] [--pg-admin-url URL]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable

from agora_agent.governance.console import inspect_run
from agora_agent.runners.transcript import transcript_frames
from loop import ACTOR, OBSERVER, Ours, pg_database, seed_thread

Read = Callable[[], Awaitable[object]]


async def last_run(ours: Ours, turns: int) -> str:
    """The id of a completed run on a thread with `turns` prior turns."""
    thread_id = await seed_thread(ours.service.store, turns)
    started = await ours.service.chat(ACTOR, "add things", thread_id=thread_id)
    await ours.service.wait_for_run(OBSERVER, started.run_id)
    return started.run_id


async def timed(read: Read, reads: int) -> float:
    samples = []
    for _ in range(reads):
        t0 = time.perf_counter()
        await read()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--reads", type=int, default=10, help="reads per case per round")
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--pg-admin-url", default="postgresql://postgres@127.0.0.1:5432/test")
    args = parser.parse_args()

    tmp = tempfile.TemporaryDirectory()
    urls: dict[str, str | None] = {"memory": None, "sqlite": f"sqlite+aiosqlite:///{tmp.name}/reads.db"}
    cleanups: list[Callable[[], Awaitable[None]]] = []
    pg = await pg_database(args.pg_admin_url)
    if pg is not None:
        urls["postgres"], drop = pg
        cleanups.append(drop)
    cases: dict[str, Read] = {}
    try:
        for name, url in urls.items():
            ours = Ours(url, 2, False)
            await ours.start()
            cleanups.insert(0, ours.close)
            store, queries = ours.service.store, ours.service.governance_queries
            assert queries is not None
            for turns in (1, args.turns):
                run_id = await last_run(ours, turns)
                cases[f"{name} transcript @{turns}"] = lambda s=store, r=run_id: transcript_frames(s, r)
                cases[f"{name} inspector @{turns}"] = lambda s=store, q=queries, r=run_id: inspect_run(s, q, r)
        names = list(cases)
        for name in names:  # warm-up
            await timed(cases[name], 2)
        per_round: dict[str, list[float]] = {n: [] for n in names}
        for r in range(args.rounds):
            for name in names[r % len(names) :] + names[: r % len(names)]:
                per_round[name].append(await timed(cases[name], args.reads))
        load = os.getloadavg()
        print(
            f"one run read back at {args.turns} prior turns ÷ at 1, median over {args.rounds} interleaved rounds × "
            f"{args.reads} reads [min–max]; load average {load[0]:.2f} {load[1]:.2f}"
        )
        for name in urls:
            for what in ("transcript", "inspector"):
                long, short = per_round[f"{name} {what} @{args.turns}"], per_round[f"{name} {what} @1"]
                ratios = [a / b for a, b in zip(long, short, strict=True)]
                print(
                    f"  {name:<8} {what:<10} {statistics.median(ratios):6.2f}×  [{min(ratios):.2f}–{max(ratios):.2f}]"
                    f"  ({statistics.median(long) * 1e3:6.2f} ms vs {statistics.median(short) * 1e3:6.2f} ms)"
                )
    finally:
        for cleanup in cleanups:
            await cleanup()
        tmp.cleanup()


if __name__ == "__main__":
    asyncio.run(main())
