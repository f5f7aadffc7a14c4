"""Sync tools run on agora-agent's own worker threads (tools/threads.py): what a tool could rely on under
`anyio.to_thread` still holds — results and exceptions come back, context variables are copied, the loop is
reachable with `anyio.from_thread`, calls run in parallel, and a cancellation waits for the function."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time

import anyio.from_thread
import pytest

from agora_agent.tools.threads import run_sync

request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="none")


async def test_a_result_and_an_exception_come_back_from_the_worker_thread() -> None:
    loop_thread = threading.get_ident()
    assert await run_sync(lambda a, b: (a + b, threading.get_ident() != loop_thread), 2, b=3) == (5, True)

    def fails() -> None:
        raise KeyError("missing")

    with pytest.raises(KeyError) as raised:
        await run_sync(fails)
    assert raised.value.args == ("missing",)  # the function's own exception, unchanged


async def test_the_callers_context_variables_are_visible_in_the_thread() -> None:
    request_id.set("r-42")
    assert await run_sync(request_id.get) == "r-42"


async def test_the_event_loop_is_reachable_with_anyio_from_thread() -> None:
    seen: list[str] = []

    async def on_loop(value: str) -> str:
        seen.append(value)
        return value.upper()

    assert await run_sync(lambda: anyio.from_thread.run(on_loop, "chart")) == "CHART"
    assert seen == ["chart"]


async def test_sync_calls_run_in_parallel_not_one_after_another() -> None:
    barrier = threading.Barrier(3, timeout=5)  # each call waits until all three are running at once
    assert sorted(await asyncio.gather(*(run_sync(barrier.wait) for _ in range(3)))) == [0, 1, 2]


async def test_cancelling_waits_for_the_function_then_raises_cancelled() -> None:
    started, finished = threading.Event(), threading.Event()

    def slow() -> str:
        started.set()
        time.sleep(0.3)
        finished.set()
        return "done"

    task = asyncio.create_task(run_sync(slow))
    assert await asyncio.to_thread(started.wait, 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert finished.is_set()  # the function ran to its end before the cancellation went on
