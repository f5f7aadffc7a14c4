"""Two processes, one PostgreSQL and one Redis (issue #11): any process streams, approves and cancels any run."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from .procs import AppProcess, text_of, tool_statuses, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.redis]


def pg_query(url: str, sql: str, *args: object) -> list[tuple[object, ...]]:
    import asyncio

    import asyncpg

    async def go() -> list[tuple[object, ...]]:
        conn = await asyncpg.connect(url.replace("postgresql+asyncpg://", "postgresql://"))
        try:
            return [tuple(r) for r in await conn.fetch(sql, *args)]
        finally:
            await conn.close()

    return asyncio.run(go())


def wait_until(check: Callable[[], bool], timeout: float = 30) -> float:
    started = time.monotonic()
    while not check():
        if time.monotonic() - started > timeout:
            raise AssertionError("condition never became true")
        time.sleep(0.1)
    return time.monotonic() - started


@pytest.fixture
def shared_env(postgres_url: str, redis_prefix: str, tmp_path) -> dict[str, str]:
    """What every process of the pair is started with: one PostgreSQL database, one Redis prefix, one ledger."""
    import asyncio

    from agora_agent.stores.sql import open_sql_backend

    async def create_schema() -> None:
        backend = await open_sql_backend(postgres_url, auto_create_tables=True)
        await backend.close()

    asyncio.run(create_schema())
    ledger = tmp_path / "ledger"
    ledger.mkdir()
    return {
        "AGORA_TEST_STORE": postgres_url,
        "AGORA_TEST_LEDGER": str(ledger),
        "AGORA_TEST_REDIS_PREFIX": redis_prefix,
    }


@pytest.fixture
def pair(shared_env: dict[str, str]) -> Iterator[tuple[AppProcess, AppProcess, str, Path]]:
    a = AppProcess({**shared_env, "AGORA_EXECUTOR_ID": "proc-a"}).start()
    b = AppProcess({**shared_env, "AGORA_EXECUTOR_ID": "proc-b"}).start()
    try:
        yield a, b, shared_env["AGORA_TEST_STORE"], Path(shared_env["AGORA_TEST_LEDGER"])
    finally:
        a.stop()
        b.stop()


@pytest.fixture
def on_a(
    shared_env: dict[str, str],
) -> Iterator[Callable[[str, Callable[[str], bool]], tuple[AppProcess, AppProcess, str]]]:
    """`start(message, until)`: chat on A alone, wait until `until(run_id)`, check A executes the run, then
    start B (any process dequeues a run, so B starts only once A holds it)."""
    procs: list[AppProcess] = []
    url = shared_env["AGORA_TEST_STORE"]

    def start(message: str, until: Callable[[str], bool]) -> tuple[AppProcess, AppProcess, str]:
        a = AppProcess({**shared_env, "AGORA_EXECUTOR_ID": "proc-a"}).start()
        procs.append(a)
        run_id = a.chat(message)
        wait_until(lambda: until(run_id))
        assert executor_of(url, run_id) == "proc-a"
        b = AppProcess({**shared_env, "AGORA_EXECUTOR_ID": "proc-b"}).start()
        procs.append(b)
        return a, b, run_id

    yield start
    for proc in procs:
        proc.stop()


def executor_of(url: str, run_id: str) -> str | None:
    rows = pg_query(url, "SELECT executor_id FROM dbos.workflow_status WHERE workflow_uuid = $1", run_id)
    return str(rows[0][0]) if rows else None


def run_status(url: str, run_id: str) -> str:
    rows = pg_query(url, "SELECT status FROM agent_run WHERE id = $1", run_id)
    return str(rows[0][0]) if rows else "missing"


def test_two_processes_share_runs(pair: tuple[AppProcess, AppProcess, str, Path]) -> None:
    a, b, url, ledger = pair
    # chat on A, stream on B resuming after frame 3
    streaming = a.chat("stream a long answer")
    events = b.stream(streaming, last_event_id=3)
    assert next(e for e, _, _ in events) == "meta"
    assert events[1][2] == "4"  # the first frame after Last-Event-ID 3
    assert text_of(events) == "".join(f"word{i} " for i in range(3, 30))
    assert events[-1][0] == "done"

    # approve on B a run parked on A
    parked = a.chat("please approve a payment")
    wait_until(lambda: bool(pg_query(url, "SELECT 1 FROM agent_approval WHERE run_id = $1", parked)))
    approved = b.post("/agent/tool-call/approve", {"runId": parked, "toolCallId": "c1"})
    assert approved.status_code == 200, approved.text
    wait_until(lambda: run_status(url, parked) == "completed")
    assert tool_statuses(b.stream(parked)) == ["pending_approval", "approved", "executed"]

    # cancel on B a run executing (inside a tool) on A
    tooling = a.chat("run the tool")
    wait_for(ledger / "tool-attempt-1")
    cancelled = b.post(f"/agent/chat/{tooling}/cancel", {})
    assert cancelled.status_code == 200 and cancelled.json()["cancelled"] is True
    assert run_status(url, tooling) == "cancelled"
    events = a.stream(tooling)  # A's stream ends too
    assert events[-1][0] == "done"
    assert not list(ledger.glob(f"effect-{tooling}*"))


def test_kill_a_mid_run_and_b_finishes_it(
    on_a: Callable[[str, Callable[[str], bool]], tuple[AppProcess, AppProcess, str]], shared_env: dict[str, str]
) -> None:
    """Failover with the default settings: A is SIGKILLed inside a tool; B (alive, heartbeating) sees A's
    lease lapse, resumes the run from its last checkpoint and re-runs the tool once (attempt 2). The
    run's lifecycle events fire once: `run.started` from A only, `run.finished` from B."""
    url, ledger = shared_env["AGORA_TEST_STORE"], Path(shared_env["AGORA_TEST_LEDGER"])
    a, b, run_id = on_a("run the tool", lambda _run: (ledger / "tool-attempt-1").exists())
    a.kill()
    try:
        took = wait_until(lambda: run_status(url, run_id) == "completed", timeout=30)
    except AssertionError:
        print("B:", "".join(b.output))
        raise
    print(f"\nB finished A's run {took:.1f} s after A was killed")
    assert (ledger / "tool-attempt-2").read_text() == str(b.process.pid if b.process else "")
    assert [p.name for p in ledger.glob(f"effect-{run_id}*")] == [f"effect-{run_id}:c1"]
    assert (ledger / f"effect-{run_id}:c1").read_text() == "2"
    events = b.stream(run_id)  # the whole run, from B: A's frames from the journal, then B's
    assert tool_statuses(events) == ["started", "executed"]  # "started" was A's, "executed" B's
    assert text_of(events) == "finished"
    assert executor_of(url, run_id) == "proc-b"
    assert a.process is not None and b.process is not None
    emitted = events_of_run(ledger, run_id)  # run-level events once per run, though two processes ran it
    assert emitted["run.started"] == {a.process.pid: 1}  # B's replay did not start the run again
    assert emitted["run.finished"] == {b.process.pid: 1}


def events_of_run(ledger: Path, run_id: str) -> dict[str, dict[int, int]]:
    """{event kind: {pid: how many}} of one run, from the processes' event logs (tests/runners/durable_app.py)."""
    out: dict[str, dict[int, int]] = {}
    for log in ledger.glob("events-*.log"):
        pid = int(log.stem.split("-", 1)[1])
        for line in log.read_text().splitlines():
            kind, _, rid = line.partition(" ")
            if rid == run_id:
                out.setdefault(kind, {}).setdefault(pid, 0)
                out[kind][pid] += 1
    return out


def test_cancel_on_b_a_run_parked_on_a(
    on_a: Callable[[str, Callable[[str], bool]], tuple[AppProcess, AppProcess, str]], shared_env: dict[str, str]
) -> None:
    """A run parked on an approval in A, cancelled on B: A wakes at once (no restart), the run ends
    `cancelled`, its approval is closed (a late approve is a 409) and the tool never runs."""
    url, ledger = shared_env["AGORA_TEST_STORE"], Path(shared_env["AGORA_TEST_LEDGER"])

    def parked(run_id: str) -> bool:
        return bool(pg_query(url, "SELECT 1 FROM agent_approval WHERE run_id = $1 AND status = 'pending'", run_id))

    a, b, run_id = on_a("please approve a payment", parked)
    watching: list[list[tuple[str, str, str]]] = []
    watcher = threading.Thread(target=lambda: watching.append(a.stream(run_id, timeout=20)))
    watcher.start()  # a client following the run on A, from before the cancel
    time.sleep(0.5)
    cancelled_at = time.monotonic()
    cancelled = b.post(f"/agent/chat/{run_id}/cancel", {})
    assert cancelled.status_code == 200 and cancelled.json()["cancelled"] is True
    watcher.join(20)
    took = time.monotonic() - cancelled_at
    assert watching and watching[0][-1][0] == "done"  # A's stream of the run ended, without a restart
    assert tool_statuses(watching[0]) == ["pending_approval"]
    assert run_status(url, run_id) == "cancelled"
    assert pg_query(url, "SELECT status FROM agent_approval WHERE run_id = $1", run_id) == [("expired",)]
    assert pg_query(url, "SELECT status FROM agent_tool_call WHERE run_id = $1", run_id) == [("expired",)]
    statuses = "SELECT status FROM dbos.workflow_status WHERE workflow_uuid = $1"
    assert pg_query(url, statuses, run_id) == [("CANCELLED",)]
    late = a.post("/agent/tool-call/approve", {"runId": run_id, "toolCallId": "c1"})
    assert late.status_code == 409, late.text
    time.sleep(1)
    assert not list(ledger.glob(f"effect-{run_id}*"))
    print(f"\nA let go of the parked run {took:.2f} s after the cancel on B")


def test_a_process_whose_lease_lapsed_while_alive_stops_the_run_another_took_over(shared_env: dict[str, str]) -> None:
    """Split brain: A is frozen (SIGSTOP) inside a tool until its lease lapses; B takes the run over and
    finishes it (tool attempt 2). When A runs again (SIGCONT), its next heartbeat finds B owning the run
    and stops its own execution — the tool is cancelled and nothing is written: the run stays
    `completed`, the tool row `executed` by B, and A emits no `run.cancelled`/`run.failed`."""
    url, ledger = shared_env["AGORA_TEST_STORE"], Path(shared_env["AGORA_TEST_LEDGER"])
    env = {**shared_env, "AGORA_TEST_FAILOVER_AFTER": "3"}
    a = AppProcess({**env, "AGORA_EXECUTOR_ID": "proc-a"}).start()
    b: AppProcess | None = None
    try:
        run_id = a.chat("run the tool")
        wait_for(ledger / "tool-attempt-1")
        assert executor_of(url, run_id) == "proc-a"
        b = AppProcess({**env, "AGORA_EXECUTOR_ID": "proc-b"}).start()
        assert a.process is not None
        a.process.send_signal(signal.SIGSTOP)
        try:
            took = wait_until(lambda: run_status(url, run_id) == "completed", timeout=30)
        finally:
            a.process.send_signal(signal.SIGCONT)
        assert (ledger / f"effect-{run_id}:c1").read_text() == "2"  # B's attempt
        resumed = time.monotonic()
        wait_for(ledger / "tool-attempt-1-stopped", timeout=10)  # A let go of it
        stopped = time.monotonic() - resumed
        time.sleep(0.5)
        assert run_status(url, run_id) == "completed"
        rows = pg_query(url, "SELECT status, error FROM agent_tool_call WHERE run_id = $1", run_id)
        assert rows == [("executed", None)]  # A wrote no "run cancelled during execution"
        statuses = "SELECT status FROM dbos.workflow_status WHERE workflow_uuid = $1"
        assert pg_query(url, statuses, run_id) == [("SUCCESS",)]
        emitted = events_of_run(ledger, run_id)
        assert "run.cancelled" not in emitted and "run.failed" not in emitted
        assert b.process is not None and emitted["run.finished"] == {b.process.pid: 1}
        assert "owns it now" in "".join(a.output)
        print(f"\nB finished the frozen A's run {took:.1f} s after SIGSTOP; A let go {stopped:.2f} s after SIGCONT")
    finally:
        a.stop()
        if b is not None:
            b.stop()
