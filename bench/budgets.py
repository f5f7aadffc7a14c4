"""The quota check's cost with stored budget rules vs the config's budget alone (SQLite file, one process).

    .venv/bin/python bench/budgets.py [--checks 1000] [--rounds 5]

Prints the median time of one `SqlQuotaStore.check` per variant: the rules are read in the same read unit
as the counters, so the difference is one indexed SELECT.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from agora_agent.actors import Actor
from agora_agent.governance.quota import Budget
from agora_agent.stores.sql import open_sql_backend
from agora_agent.stores.sql.budgets import SqlBudgetRuleStore
from agora_agent.stores.sql.quota import SqlQuotaStore


async def main(checks: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        backend = await open_sql_backend(f"sqlite:///{Path(tmp) / 'bench.db'}")
        budget = Budget(tokens_per_actor=10**9)
        variants = {
            "config only": SqlQuotaStore(backend.engine, budget),
            "with stored rules": SqlQuotaStore(backend.engine, budget, rules=SqlBudgetRuleStore(backend.engine)),
        }
        actor, day = Actor("alice", tenant_ref="acme"), "2026-12-01"
        await variants["config only"].reserve(actor, day, reservation_id="warm", tokens=1, usd=0)
        for name, quota in variants.items():
            for _ in range(checks // 5):
                await quota.check(actor, day)
            samples = []
            for _ in range(rounds):
                started = time.perf_counter()
                for _ in range(checks):
                    await quota.check(actor, day)
                samples.append((time.perf_counter() - started) / checks * 1e6)
            print(f"{name:>18}: {statistics.median(samples):7.1f} µs per check (median of {rounds}×{checks})")
        await backend.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checks", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    asyncio.run(main(args.checks, args.rounds))
