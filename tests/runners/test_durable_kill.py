"""Embedded durable runs (one SQLite file, no server) survive SIGKILL of their process (issue #11).

One uvicorn process is killed with SIGKILL while (a) streaming model text, (b) executing a tool,
(c) parked on an approval; a new process on the same files finishes each run. The parked run is
approved after the restart and its tool runs exactly once.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest

from .procs import AppProcess, text_of, tool_statuses, wait_for

pytestmark = pytest.mark.slow


def run_row(db: Path, run_id: str) -> tuple[str, str | None]:
    with closing(sqlite3.connect(db)) as conn:
        status, error = conn.execute("SELECT status, error FROM agent_run WHERE id = ?", (run_id,)).fetchone()
    return status, error


def pending_approvals(db: Path, run_id: str) -> int:
    with closing(sqlite3.connect(db)) as conn:
        (count,) = conn.execute(
            "SELECT count(*) FROM agent_approval WHERE run_id = ? AND status = 'pending'", (run_id,)
        ).fetchone()
    return int(count)


def wait_until(check: Callable[[], bool], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("condition never became true")
        time.sleep(0.05)


def test_sigkill_while_streaming_tool_and_parked_then_each_run_completes(tmp_path: Path) -> None:
    db = tmp_path / "agent.db"
    ledger = tmp_path / "ledger"
    ledger.mkdir()
    env = {"AGORA_TEST_STORE": f"sqlite:///{db}", "AGORA_TEST_LEDGER": str(ledger)}

    first = AppProcess(env).start()
    try:
        parked = first.chat("please approve a payment")
        wait_until(lambda: pending_approvals(db, parked) == 1)
        streaming = first.chat("stream a long answer")
        wait_for(ledger / "streaming")
        first.kill()
    finally:
        first.stop()

    second = AppProcess(env).start()
    try:
        events = second.stream(streaming)
        assert text_of(events) == "".join(f"word{i} " for i in range(30))
        assert events[-1][0] == "done"
        assert run_row(db, streaming) == ("completed", None)

        tooling = second.chat("run the tool")
        wait_for(ledger / "tool-attempt-1")
        second.kill()
    finally:
        second.stop()

    third = AppProcess(env).start()
    try:
        events = third.stream(tooling)
        assert tool_statuses(events)[-1] == "executed"
        assert text_of(events).endswith("finished")
        assert (ledger / "tool-attempt-2").exists()
        effects = sorted(p.name for p in ledger.glob("effect-*"))
        assert effects == [f"effect-{tooling}:c1"]
        assert (ledger / f"effect-{tooling}:c1").read_text() == "2"
        with closing(sqlite3.connect(db)) as conn:
            (decision,) = conn.execute(
                "SELECT policy_decision FROM agent_tool_call WHERE run_id = ?", (tooling,)
            ).fetchone()
        assert "attempt 1 was interrupted" in decision

        approved = third.post("/agent/tool-call/approve", {"runId": parked, "toolCallId": "c1"})
        assert approved.status_code == 200, approved.text
        events = third.stream(parked)
        assert tool_statuses(events) == ["pending_approval", "approved", "executed"]
        assert run_row(db, parked) == ("completed", None)
        assert [p.name for p in ledger.glob(f"effect-{parked}*")] == [f"effect-{parked}:c1-1"]
    finally:
        third.stop()
