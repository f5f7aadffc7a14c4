"""A run streamed from another process ends when its own process dies (issue #17).

Process A (a real uvicorn process, tests/streaming/stuck_app.py) runs the agent. A client re-attaches to
the run through process B (another service on the same database): with the default in-memory sink B
holds none of the frames and follows the stored transcript; with Redis it reads A's stream there. Then
A is SIGKILLed mid-tool. B's
lease tick sees A's lease lapse, recovers the run, and the client's stream from B must get the
terminal error frame and end — never hang.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx2
import pytest

from agora_agent.stores.sql import open_sql_backend
from agora_agent.web import create_app
from tests.stores.sql.conftest import empty_database
from tests.web.conftest import serve

from .stuck_app import config

ROOT = Path(__file__).resolve().parents[2]
ALICE = {"x-actor-id": "alice", "x-actor-role": "support"}


@pytest.fixture(params=["sqlite", "postgres"])
async def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    async with empty_database(request.param, tmp_path) as url:
        await (await open_sql_backend(url, auto_create_tables=True)).close()
        yield url


@pytest.fixture(params=["memory", "redis"])
def stream_via(request: pytest.FixtureRequest) -> str | None:
    """Where the frames live: A's memory (B follows the stored transcript) or Redis (B reads A's stream)."""
    return request.getfixturevalue("redis_prefix") if request.param == "redis" else None


@pytest.fixture
def process_a(store_url: str, stream_via: str | None) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """Process A serving the agent on uvicorn; yields (base URL, process)."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "tests.streaming.stuck_app:create_app", "--factory", "--port", str(port)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "AGORA_TEST_STORE": store_url}
        | ({"AGORA_TEST_REDIS_PREFIX": stream_via} if stream_via else {}),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"process A did not start: {proc.stderr.read().decode() if proc.stderr else ''}")
            try:
                if httpx2.get(f"{base}/agent/healthz", timeout=1).status_code == 200:
                    break
            except httpx2.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("process A did not answer in time")
            time.sleep(0.1)
        yield base, proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
        if proc.stderr is not None:
            proc.stderr.close()


def free_port() -> int:
    """A free 127.0.0.1 port (released at once, for the child to bind)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_run(base: str) -> str:
    """POST /chat on A and read until its tool call started (A is then mid-tool); returns the run id."""
    run_id = ""
    with (
        httpx2.Client(base_url=base, timeout=10) as client,
        client.stream("POST", "/agent/chat", json={"message": "do it"}, headers=ALICE) as response,
    ):
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.startswith("data: ") and "runId" in line:
                run_id = json.loads(line[6:])["runId"]
            if line.startswith("data: ") and '"status":"started"' in line:
                return run_id
    raise AssertionError("the run never reached its tool call")


@pytest.mark.slow
async def test_a_stream_followed_from_another_process_ends_when_the_owner_dies(
    store_url: str, stream_via: str | None, process_a: tuple[str, subprocess.Popen[bytes]]
) -> None:
    base_a, proc_a = process_a
    run_id = await asyncio.to_thread(start_run, base_a)
    seen: list[tuple[str, dict[str, object]]] = []
    got_transcript = asyncio.Event()

    async def follow(base_b: str) -> None:
        async with (
            httpx2.AsyncClient(base_url=base_b, timeout=30) as client,
            client.stream("GET", f"/agent/chat/{run_id}/stream", headers=ALICE) as response,
        ):
            assert response.status_code == 200
            event = "message"
            async for line in response.aiter_lines():
                if line.startswith("event: "):
                    event = line[7:]
                elif line.startswith("data: "):
                    seen.append((event, json.loads(line[6:])))
                    if event == "tool":
                        got_transcript.set()
                    event = "message"

    app_b = create_app(config(store=store_url, redis_prefix=stream_via))  # process B: same database (and Redis)
    async with serve(app_b) as base_b:
        follower = asyncio.create_task(follow(base_b))
        await asyncio.wait_for(got_transcript.wait(), 10)  # B follows A's live run
        assert not follower.done()  # A is alive: the run is still going, so is the stream
        proc_a.send_signal(signal.SIGKILL)
        killed_at = time.monotonic()
        await asyncio.wait_for(follower, 20)  # never a hang: B recovers the run and the stream ends
        ended_after = time.monotonic() - killed_at
    sink = app_b.state.agent_service.config.sink
    if sink is not None:
        await sink.aclose()  # the service leaves a sink it was given open (its owner closes it)

    events = [event for event, _ in seen]
    assert events[0] == "meta" and events[-1] == "done", events
    error = next(data for event, data in seen if event == "error")
    assert str(error["message"]).startswith("interrupted"), error
    tool = [data for event, data in seen if event == "tool"][-1]
    assert tool["status"] == "failed" and "unknown" in str(tool["error"])  # the tool's outcome is unknown
    assert ended_after < 10, ended_after  # within a few lease ticks (ttl 1 s), not a timeout
