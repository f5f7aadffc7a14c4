"""Two processes, one PostgreSQL and one Redis (issue #11): any process streams, approves and cancels any run."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

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
def pair(postgres_url: str, redis_prefix: str, tmp_path) -> Iterator[tuple[AppProcess, AppProcess, str, object]]:
    import asyncio

    from agora_agent.stores.sql import open_sql_backend

    async def create_schema() -> None:
        backend = await open_sql_backend(postgres_url, auto_create_tables=True)
        await backend.close()

    asyncio.run(create_schema())
    ledger = tmp_path / "ledger"
    ledger.mkdir()
    env = {
        "AGORA_TEST_STORE": postgres_url,
        "AGORA_TEST_LEDGER": str(ledger),
        "AGORA_TEST_REDIS_PREFIX": redis_prefix,
    }
    a = AppProcess({**env, "AGORA_EXECUTOR_ID": "proc-a"}).start()
    b = AppProcess({**env, "AGORA_EXECUTOR_ID": "proc-b"}).start()
    try:
        yield a, b, postgres_url, ledger
    finally:
        a.stop()
        b.stop()


def run_status(url: str, run_id: str) -> str:
    rows = pg_query(url, "SELECT status FROM agent_run WHERE id = $1", run_id)
    return str(rows[0][0]) if rows else "missing"


def test_two_processes_share_runs(pair: tuple[AppProcess, AppProcess, str, object]) -> None:
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
