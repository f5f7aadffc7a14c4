"""The process the kill test SIGKILLs: an inline-runner service doing approved payments in a loop.

    python -m tests.stores.sql.kill_child STORE_URL LEDGER_PATH SEED

Each payment is an action tool that writes one row to an external ledger (its own SQLite file, as a
payment provider would keep it) keyed by the call's idempotency key, then lingers a little so a kill
can land between the side effect and the audit row. The model sleeps a little too (a kill can land
while a budget reservation is held). Prints `ready` once the service is up.
"""

from __future__ import annotations

import asyncio
import random
import sqlite3
import sys
import time

from agora_agent import Actor, AgentConfig, AgentService, ToolContext, tool
from agora_agent.governance.quota import Budget
from agora_agent.models.base import TextCallback
from agora_agent.testing.helpers import OBSERVER
from tests.paying_model import PayingModel

LEDGER = sys.argv[2] if len(sys.argv) > 2 else "ledger.db"
rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 0)


def ledger_schema(path: str) -> None:
    """The external ledger: deliberately no UNIQUE constraint, so a duplicate effect would show."""
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE IF NOT EXISTS payments (idempotency_key TEXT NOT NULL, amount INTEGER NOT NULL)")


@tool(kind="action", roles=["support"])
def pay(amount: int, ctx: ToolContext) -> str:
    """Pay `amount` (writes the external ledger, then takes a moment to report back)."""
    with sqlite3.connect(LEDGER, timeout=30) as db:
        db.execute("INSERT INTO payments VALUES (?, ?)", (ctx.idempotency_key, amount))
    time.sleep(rng.uniform(0, 0.15))
    return f"paid {amount}"


async def think(on_text: TextCallback) -> None:
    """A moment (a kill can land while a budget reservation is held)."""
    await asyncio.sleep(rng.uniform(0, 0.1))


async def worker(service: AgentService, actor: Actor) -> None:
    while True:
        started = await service.chat(actor, "pay someone")
        for _ in range(200):
            pending = await service.pending_approvals(actor)
            mine = [p for p in pending if p.run_id == started.run_id]
            if mine:
                await service.approve(actor, started.run_id, mine[0].tool_call_id)
                break
            run = await service.get_run(OBSERVER, started.run_id)
            if run is not None and run.status != "running":
                break
            await asyncio.sleep(0.01)
        await service.wait_for_run(OBSERVER, started.run_id, timeout=30)


async def main() -> None:
    ledger_schema(LEDGER)
    config = AgentConfig(
        model=PayingModel("kill-test", rng, think),
        tools=[pay],
        store=sys.argv[1],
        budget=Budget(tokens_per_actor=10**9, reserve_tokens=500),
        run_lease_interval=0.2,
        run_lease_ttl=2.0,
    )
    async with AgentService.from_config(config) as service:
        print("ready", flush=True)
        actors = [Actor(f"user{i}", roles=("support",)) for i in range(3)]
        await asyncio.gather(*(worker(service, a) for a in actors))


if __name__ == "__main__":
    asyncio.run(main())
