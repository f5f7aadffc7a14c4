"""The inline-runner kill test: SIGKILL a server doing approved payments at random points, 20 times, on
SQLite and on PostgreSQL; then check what a user (and an auditor) would check.

- 0 duplicate effects in the external ledger (no payment made twice);
- every audit row truthful: `executed` ⇒ exactly one effect; `rejected`/`expired`/`failed` ⇒ none;
  `unknown_after_crash` ⇒ at most one, with its approval still `approved`; nothing left
  `started`/`pending_approval`; every effect belongs to an `executed` or `unknown_after_crash` row;
- no reservation left open, and the budget counter equals the usage ledger;
- no run left `running`.

Each restart recovers the previous process's runs (same host, dead pid: its lease counts as lapsed).
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import sqlalchemy as sa

from agora_agent import AgentConfig, AgentService
from agora_agent.stores.sql import create_engine_from_url, open_sql_backend
from agora_agent.stores.sql.tables import approval, budget_counter, budget_reservation, run, token_usage, tool_call
from agora_agent.testing import FakeModel, echo_script
from tests.stores.sql.conftest import empty_database

KILLS = 20
ROOT = Path(__file__).resolve().parents[3]


def paid(ledger: Path) -> int:
    if not ledger.exists():
        return 0
    with sqlite3.connect(ledger, timeout=30) as db:
        try:
            return int(db.execute("SELECT count(*) FROM payments").fetchone()[0])
        except sqlite3.OperationalError:  # the first child has not created the table yet
            return 0


def start_child(
    url: str, ledger: Path, seed: int, *extra: str, module: str = "tests.stores.sql.kill_child", ready: bool = True
) -> subprocess.Popen[str]:
    """Start `python -m module url ledger seed *extra`; with `ready`, wait for its `ready` line."""
    child = subprocess.Popen(
        [sys.executable, "-m", module, url, str(ledger), str(seed), *extra],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert child.stdout is not None
    if ready:
        line = child.stdout.readline()  # blocks until the service is up (or the child died)
        assert line.strip() == "ready", f"child did not start: {line!r} (exit {child.poll()})"
    return child


async def audit(url: str, ledger: Path) -> dict[str, int]:
    effects = Counter(
        key for (key,) in sqlite3.connect(ledger).execute("SELECT idempotency_key FROM payments").fetchall()
    )
    engine = create_engine_from_url(url)
    try:
        async with engine.connect() as conn:
            calls = (await conn.execute(sa.select(tool_call))).mappings().all()
            approvals = {
                (a["run_id"], a["tool_call_id"]): a["status"]
                for a in (await conn.execute(sa.select(approval))).mappings().all()
            }
            running = await conn.scalar(sa.select(sa.func.count()).select_from(run).where(run.c.status == "running"))
            runs = await conn.scalar(sa.select(sa.func.count()).select_from(run))
            open_reservations = await conn.scalar(sa.select(sa.func.count()).select_from(budget_reservation))
            reserved = await conn.scalar(sa.select(sa.func.coalesce(sa.func.sum(budget_counter.c.reserved_tokens), 0)))
            counted = await conn.scalar(sa.select(sa.func.coalesce(sa.func.sum(budget_counter.c.used_tokens), 0)))
            ledgered = await conn.scalar(
                sa.select(sa.func.coalesce(sa.func.sum(token_usage.c.input_tokens + token_usage.c.output_tokens), 0))
            )
    finally:
        await engine.dispose()

    statuses = Counter(c["status"] for c in calls)
    untruthful: list[str] = []
    keys = set()
    for c in calls:
        key, status = c["idempotency_key"], c["status"]
        keys.add(key)
        n = effects.get(key, 0)
        if status == "executed" and n != 1:
            untruthful.append(f"{key} executed with {n} effects")
        elif status in ("rejected", "expired", "failed") and n != 0:
            untruthful.append(f"{key} {status} but paid {n}x")
        elif status == "unknown_after_crash":
            if n > 1:
                untruthful.append(f"{key} unknown with {n} effects")
            if approvals.get((c["run_id"], c["id"])) != "approved":
                untruthful.append(f"{key} unknown_after_crash but approval {approvals.get((c['run_id'], c['id']))}")
        elif status in ("started", "pending_approval"):
            untruthful.append(f"{key} left {status}")
    untruthful += [f"effect {k} has no audit row" for k in effects if k not in keys]
    assert not untruthful, untruthful
    return {
        "runs": int(runs or 0),
        "effects": sum(effects.values()),
        "duplicate_effects": sum(n - 1 for n in effects.values() if n > 1),
        "running": int(running or 0),
        "open_reservations": int(open_reservations or 0),
        "reserved_tokens": int(reserved or 0),
        "counter_minus_ledger": int(counted or 0) - int(ledgered or 0),
        **{f"calls_{k}": v for k, v in sorted(statuses.items())},
    }


@pytest.mark.slow
@pytest.mark.timeout(900)  # 20 process starts under CI load
@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_twenty_sigkills_leave_a_truthful_audit_and_no_duplicate_effect(kind: str, tmp_path: Path) -> None:
    rng = random.Random(17)
    ledger = tmp_path / "external-ledger.db"
    async with empty_database(kind, tmp_path) as url:
        if kind == "postgres":
            await (await open_sql_backend(url, auto_create_tables=True)).close()
        started = time.monotonic()
        for i in range(KILLS):
            before = paid(ledger)
            child = start_child(url, ledger, seed=i)
            # Kill while work is in flight: once this process has paid at least once (or after 10 s), at a
            # random moment in the next half second — inside a model call, a tool, an approval wait…
            for _ in range(500):
                if paid(ledger) != before:
                    break
                await asyncio.sleep(0.02)
            await asyncio.sleep(rng.uniform(0.0, 0.5))
            os.kill(child.pid, signal.SIGKILL)
            child.wait(10)
            assert child.stdout is not None
            child.stdout.close()
            assert child.returncode == -signal.SIGKILL
        # A last, clean start recovers the last victim's runs; then everything must add up.
        async with AgentService.from_config(AgentConfig(model=FakeModel(echo_script()), store=url)):
            pass
        figures = await audit(url, ledger)
        figures["seconds"] = int(time.monotonic() - started)
    print(f"\nkill test on {kind}: {KILLS} SIGKILLs: {figures}")
    assert figures["duplicate_effects"] == 0
    assert figures["running"] == 0
    assert figures["open_reservations"] == 0 and figures["reserved_tokens"] == 0
    assert figures["counter_minus_ledger"] == 0
    assert figures["effects"] >= KILLS  # every process got to pay before it was killed
