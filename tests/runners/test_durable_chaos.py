"""The durable chaos test (issue #11): 30 SIGKILLs at random points of durable runs on PostgreSQL.

Two service processes (tests/runners/chaos_child.py) run approved payments at once; again and again one
of them, picked at random, is killed with SIGKILL at a random moment — streaming model text, inside the
tool, parked on its approval, between steps, while recovering the other's runs — and restarted, with
the same executor id (DBOS recovers its own runs) or a new one (the survivor's failover resumes them).
At the end one clean process approves what is left and lets every run finish. Then what a user, an
auditor and the payment provider would check:

- every run the clients started is terminal and `completed` (a failed run prints its `agent_run.error`);
- exactly one run row and one user message per run, one run row per workflow;
- 0 duplicate effects: one ledger row per idempotency key and at most one payment per run; every audit
  row truthful (tests/stores/sql/test_kill.py `audit`); ledger rows = `executed` pay calls;
- no reservation left open and the budget counter = the usage ledger.
"""

from __future__ import annotations

import asyncio
import os
import random
import select
import signal
import sqlite3
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest
import sqlalchemy as sa

from agora_agent.stores.sql import create_engine_from_url, open_sql_backend
from agora_agent.stores.sql.tables import message, run
from tests.stores.sql.conftest import empty_database
from tests.stores.sql.test_kill import audit, start_child

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

KILLS = 30
CHILD = "tests.runners.chaos_child"


def attempts(ledger: Path) -> int:
    if not ledger.exists():
        return 0
    with sqlite3.connect(ledger, timeout=30) as db:
        try:
            return int(db.execute("SELECT count(*) FROM attempts").fetchone()[0])
        except sqlite3.OperationalError:  # no child has created the tables yet
            return 0


def print_logs(folder: Path) -> None:
    for log in sorted(folder.glob("*.log")):
        print(f"--- {log.name}\n{log.read_text()[-3000:]}")


def is_up(child: subprocess.Popen[str], up: set[int]) -> bool:
    """Whether the child printed `ready` (read without blocking)."""
    if child.pid in up:
        return True
    assert child.stdout is not None
    if select.select([child.stdout], [], [], 0)[0] and child.stdout.readline().strip() == "ready":
        up.add(child.pid)
    return child.pid in up


def kill(child: subprocess.Popen[str]) -> None:
    os.kill(child.pid, signal.SIGKILL)
    child.wait(10)
    assert child.returncode == -signal.SIGKILL, f"the child had died already (exit {child.returncode})"
    assert child.stdout is not None
    child.stdout.close()


async def durable_figures(url: str, ledger: Path) -> dict[str, object]:
    """The durable-specific checks: runs, their rows, messages and workflows."""
    engine = create_engine_from_url(url)
    try:
        async with engine.connect() as conn:
            runs = (await conn.execute(sa.select(run.c.id, run.c.status, run.c.error))).all()
            users = Counter(
                r for (r,) in (await conn.execute(sa.select(message.c.run_id).where(message.c.role == "user"))).all()
            )
            workflows = dict(
                (await conn.execute(sa.text("SELECT workflow_uuid, status FROM dbos.workflow_status"))).all()
            )
            for wid in [w for w, status in workflows.items() if status != "SUCCESS"]:  # why, when it fails
                head = (
                    await conn.execute(
                        sa.text(
                            "SELECT executor_id, recovery_attempts, queue_name FROM dbos.workflow_status "
                            "WHERE workflow_uuid = :w"
                        ),
                        {"w": wid},
                    )
                ).all()
                steps = (
                    await conn.execute(
                        sa.text(
                            "SELECT function_id, function_name FROM dbos.operation_outputs "
                            "WHERE workflow_uuid = :w ORDER BY function_id"
                        ),
                        {"w": wid},
                    )
                ).all()
                notes = (
                    await conn.execute(
                        sa.text("SELECT topic FROM dbos.notifications WHERE destination_uuid = :w"), {"w": wid}
                    )
                ).all()
                rows = (
                    await conn.execute(sa.text("SELECT status FROM agent_approval WHERE run_id = :w"), {"w": wid})
                ).all()
                print(f"NOT SUCCEEDED {wid}: {head} approvals={rows} unread={notes} steps={steps[-6:]}")
    finally:
        await engine.dispose()
    with sqlite3.connect(ledger) as db:
        per_run = Counter(r for (r,) in db.execute("SELECT run_id FROM payments"))
        tries = Counter(k for (k,) in db.execute("SELECT idempotency_key FROM attempts"))
    failed = {rid: error for rid, status, error in runs if status == "failed"}
    for rid, error in failed.items():
        print(f"FAILED run {rid}: {error}")
    ids = [rid for rid, _, _ in runs]
    return {
        "runs": len(runs),
        "statuses": dict(Counter(status for _, status, _ in runs)),
        "failed": failed,
        "run_rows_per_run_max": max(Counter(ids).values(), default=0),
        "runs_without_one_user_message": sorted(rid for rid in ids if users.get(rid, 0) != 1),
        "runs_paid_twice": sorted(rid for rid, n in per_run.items() if n > 1),
        "workflows_not_succeeded": {w: s for w, s in workflows.items() if s != "SUCCESS"},
        "workflows_without_run_row": sorted(set(workflows) - set(ids)),
        "runs_without_workflow": sorted(set(ids) - set(workflows)),
        "tool_re_runs": sum(n - 1 for n in tries.values()),
    }


@pytest.mark.timeout(600)
async def test_thirty_random_sigkills_lose_no_run_and_duplicate_no_effect(tmp_path: Path) -> None:
    rng = random.Random(11)
    ledger = tmp_path / "external-ledger.db"
    async with empty_database("postgres", tmp_path) as url:
        await (await open_sql_backend(url, auto_create_tables=True)).close()
        started = time.monotonic()
        executors = ["chaos-0", "chaos-1"]
        slots = [start_child(url, ledger, i, executors[i], module=CHILD) for i in range(2)]
        fresh = 2
        up: set[int] = set()
        booting_kills = 0
        for i in range(KILLS):
            for _ in range(500):  # a process that is up (at most 10 s), unless we kill one while it boots
                if any(is_up(c, up) for c in slots) or rng.random() < 0.01:
                    break
                await asyncio.sleep(0.02)
            before = attempts(ledger)
            for _ in range(75):  # let it get some work going (at most 1.5 s), then a random moment
                if attempts(ledger) != before:
                    break
                await asyncio.sleep(0.02)
            await asyncio.sleep(rng.uniform(0.0, 0.6))
            running = [n for n, c in enumerate(slots) if is_up(c, up)]
            victim = rng.choice(running) if running and rng.random() < 0.85 else rng.randrange(2)
            booting_kills += victim not in running
            kill(slots[victim])
            if rng.random() < 0.5:  # a new executor id: only the survivor's failover can resume its runs
                executors[victim] = f"chaos-{fresh}"
                fresh += 1
            # Not waiting for it to be up: the next kill may land while it launches and recovers.
            slots[victim] = start_child(url, ledger, 100 + i, executors[victim], module=CHILD, ready=False)
        for child in slots:
            kill(child)
        drain = start_child(url, ledger, 999, "chaos-drain", "drain", module=CHILD)
        assert drain.stdout is not None
        line = await asyncio.to_thread(drain.stdout.readline)
        drain.wait(30)
        drain.stdout.close()
        seconds = int(time.monotonic() - started)
        extra = await durable_figures(url, ledger)
        print(
            f"\nchaos test: {KILLS} SIGKILLs ({booting_kills} while starting up) in {seconds} s "
            f"(drain: {line.strip()!r}): {extra}"
        )
        try:
            figures = await audit(url, ledger)
        except AssertionError:
            print_logs(tmp_path)
            raise
    print(f"audit: {figures}")
    assert line.strip() == "drained", f"the drain process did not finish every run: {line!r}"
    assert extra["failed"] == {}
    assert figures["running"] == 0 and extra["statuses"] == {"completed": extra["runs"]}
    assert extra["run_rows_per_run_max"] == 1 and extra["runs_without_one_user_message"] == []
    assert extra["workflows_not_succeeded"] == {}
    assert extra["workflows_without_run_row"] == [] and extra["runs_without_workflow"] == []
    assert figures["duplicate_effects"] == 0 and extra["runs_paid_twice"] == []
    assert figures["effects"] == figures.get("calls_executed", 0) == extra["runs"]
    assert figures["open_reservations"] == 0 and figures["reserved_tokens"] == 0
    assert figures["counter_minus_ledger"] == 0
    assert figures["runs"] >= KILLS
