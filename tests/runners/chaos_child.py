"""The process the durable chaos test SIGKILLs: a durable service doing approved payments in a loop.

    python -m tests.runners.chaos_child STORE_URL LEDGER_PATH SEED EXECUTOR_ID [drain]

Each run: the model (a short streamed answer, a moment of thought) asks to pay; the action tool waits
for approval (an approver task here approves every pending one, also those of runs a killed process
left parked); then it writes the external ledger (its own SQLite file, as a payment provider would keep
it) deduplicated on the call's idempotency key — the tool's half of "exactly once" (docs/durable.md) —
and records every execution attempt; then it lingers, so a kill lands between the effect and the
checkpoint. `drain` starts no new chats: it approves, lets every run finish, and exits.
Prints `ready` once the service is up.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import sqlite3
import sys
import time

from agora_agent import Actor, AgentConfig, AgentService, Caller, ToolContext, tool
from agora_agent.governance.quota import Budget
from agora_agent.models.base import TextCallback
from agora_agent.runners.durable import DurableConfig
from tests.paying_model import PayingModel

LEDGER = sys.argv[2] if len(sys.argv) > 2 else "ledger.db"
rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 0)
ACTORS = {f"user{i}": Actor(f"user{i}", roles=("support",)) for i in range(3)}


def ledger_schema(path: str) -> None:
    """No UNIQUE constraint on the key: the tool dedupes, and a duplicate would show."""
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("CREATE TABLE IF NOT EXISTS payments (idempotency_key TEXT NOT NULL, run_id TEXT, amount INTEGER)")
        db.execute("CREATE TABLE IF NOT EXISTS attempts (idempotency_key TEXT NOT NULL, attempt INTEGER, pid INTEGER)")


@tool(kind="action", roles=["support"])
def pay(amount: int, ctx: ToolContext) -> str:
    """Pay `amount` once per idempotency key."""
    key = ctx.idempotency_key
    with sqlite3.connect(LEDGER, timeout=30, isolation_level=None) as db:
        db.execute("BEGIN IMMEDIATE")  # check and insert in one writer transaction
        db.execute("INSERT INTO attempts VALUES (?, ?, ?)", (key, ctx.attempt, os.getpid()))
        if db.execute("SELECT count(*) FROM payments WHERE idempotency_key = ?", (key,)).fetchone()[0] == 0:
            db.execute("INSERT INTO payments VALUES (?, ?, ?)", (key, ctx.run_id, amount))
        db.execute("COMMIT")
    time.sleep(rng.uniform(0, 0.15))
    return f"paid {amount}"


async def think(on_text: TextCallback) -> None:
    """A few streamed words, a moment of thought between them."""
    for word in ("let", "me", "see "):
        await on_text(word + " ")
        await asyncio.sleep(rng.uniform(0, 0.04))


async def chatter(service: AgentService, actor: Actor) -> None:
    while True:
        started = await service.chat(actor, "pay someone")
        await service.runner.wait(started.run_id, timeout=60)


async def approver(service: AgentService) -> None:
    everyone = Caller(Actor("chaos-approver"), grant=True)  # lists every pending approval; each run's actor decides
    while True:
        for pending in await service.pending_approvals(everyone, limit=100):
            actor = ACTORS[pending.requested_by]
            with contextlib.suppress(Exception):  # decided meanwhile (another process), or its run was closed
                await service.approve(actor, pending.run_id, pending.tool_call_id)
        await asyncio.sleep(0.05)


async def drained(service: AgentService) -> None:
    """Every run row ended and every workflow finished (a run's row ends in its last step, just before
    DBOS records the workflow's outcome)."""
    from dbos import DBOS

    store = service.store

    async def busy() -> bool:
        return bool(
            await store.list_runs_by_status("running", limit=1)
            or await DBOS.list_workflows_async(
                status=["PENDING", "ENQUEUED"], limit=1, load_input=False, load_output=False
            )
        )

    while True:
        if not await busy():
            return
        await asyncio.sleep(0.1)


async def main() -> None:
    # Warnings and errors of every process go next to the ledger: the test prints them when it fails.
    logging.basicConfig(filename=f"{LEDGER}.{sys.argv[4]}.log", level=logging.WARNING, format="%(asctime)s %(message)s")
    ledger_schema(LEDGER)
    config = AgentConfig(
        model=PayingModel("chaos-test", rng, think),
        tools=[pay],
        store=sys.argv[1],
        budget=Budget(tokens_per_actor=10**9, reserve_tokens=500),
        run_lease_interval=0.3,
        durable=DurableConfig(executor_id=sys.argv[4], failover_after=3.0),
    )
    async with AgentService.from_config(config) as service:
        print("ready", flush=True)
        tasks = [asyncio.create_task(approver(service))]
        if "drain" in sys.argv[5:]:
            await asyncio.wait_for(drained(service), 120)
            print("drained", flush=True)
            tasks[0].cancel()
            return
        tasks += [asyncio.create_task(chatter(service, a)) for a in ACTORS.values()]
        await asyncio.gather(*tasks)


if __name__ == "__main__":
    asyncio.run(main())
