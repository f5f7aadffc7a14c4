"""The worker threads a sync tool runs in: persistent, with a light hand-off (issue #18).

`anyio.to_thread.run_sync` costs ~150 µs per call here (a checkpoint, a capacity limiter, a cancel scope,
a `queue.Queue` with its condition variable); the hop itself — wake a parked thread, run, wake the loop —
is ~20 µs. A tool step pays it on every sync tool call, so sync tools run here instead: a shared
`SimpleQueue` of jobs, up to `LIMIT` threads started on demand (an idle one exits after `IDLE_S`), the
result handed back with `call_soon_threadsafe`.

What a sync tool could rely on under anyio keeps working:
- `anyio.from_thread.run(ctx.emit_ui, ...)` / `run_sync`: each job runs with anyio's thread-local event
  loop token set to the submitting loop (what anyio's own worker threads carry);
- contextvars: the job runs in a copy of the caller's context;
- cancellation waits for the function: a cancelled run's tool call is not abandoned while it still runs
  (anyio shields the wait the same way), and the cancellation is raised once it returned;
- at most `LIMIT` (anyio's default, 40) sync tools run at once; more wait in the queue.
Off asyncio (anyio on trio), or if anyio's thread-local is not where this version expects it, the call
goes through `anyio.to_thread.run_sync` as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import queue
import threading
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

import anyio.lowlevel
import anyio.to_thread

__all__ = ["run_sync"]

T = TypeVar("T")

LIMIT = 40
IDLE_S = 30.0

_anyio_threadlocals: Any
try:  # where anyio (>= 4.11, `EventLoopToken`) keeps the token `anyio.from_thread.run` uses in a worker thread
    from anyio._core._eventloop import threadlocals as _anyio_threadlocals

    if not hasattr(anyio.lowlevel, "EventLoopToken"):
        _anyio_threadlocals = None
except ImportError:  # pragma: no cover - another anyio layout: use its own worker threads
    _anyio_threadlocals = None

_Job = tuple[asyncio.AbstractEventLoop, "asyncio.Future[Any]", object, Callable[[], Any]]


class _Threads:
    """A pool of worker threads fed by one queue. `idle` counts the threads parked on the queue minus the
    jobs queued for them, so a job never waits while a thread could be started for it."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads = 0
        self._idle = 0

    def submit(self, job: _Job) -> None:
        with self._lock:
            if self._idle > 0:
                self._idle -= 1
                start = False
            else:
                start = self._threads < LIMIT
                self._threads += start
        self._jobs.put(job)
        if start:
            threading.Thread(target=self._work, name="agora-sync-tool", daemon=True).start()

    def _work(self) -> None:
        while True:
            try:
                job = self._jobs.get(timeout=IDLE_S)
            except queue.Empty:
                with self._lock:
                    if self._idle > 0:  # no queued job is counting on this thread: stop
                        self._idle -= 1
                        self._threads -= 1
                        return
                continue
            _run_job(job)
            with self._lock:
                self._idle += 1


def _run_job(job: _Job) -> None:
    loop, future, token, call = job
    if _anyio_threadlocals is not None:
        _anyio_threadlocals.current_token = token
    try:
        result = call()
    except BaseException as exc:  # handed to the awaiting task, like any exception of the tool
        _hand_back(loop, future, None, exc)
    else:
        _hand_back(loop, future, result, None)
    finally:
        if _anyio_threadlocals is not None:
            del _anyio_threadlocals.current_token


def _hand_back(loop: asyncio.AbstractEventLoop, future: asyncio.Future[Any], result: Any, exc: Any) -> None:
    def settle() -> None:
        if future.done():
            return
        if exc is not None:
            future.set_exception(exc)
        else:
            future.set_result(result)

    with contextlib.suppress(RuntimeError):  # the loop closed while the tool ran: nobody is waiting any more
        loop.call_soon_threadsafe(settle)


_THREADS = _Threads()
_TOKENS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, object] = weakref.WeakKeyDictionary()


def _token(loop: asyncio.AbstractEventLoop) -> object:
    token = _TOKENS.get(loop)
    if token is None:
        token = _TOKENS[loop] = anyio.lowlevel.current_token()
    return token


async def run_sync(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run `fn(*args, **kwargs)` in a worker thread and return its result (or raise its exception)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    if loop is None or _anyio_threadlocals is None:
        return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs))
    future: asyncio.Future[T] = loop.create_future()
    context = contextvars.copy_context()
    _THREADS.submit((loop, future, _token(loop), functools.partial(context.run, fn, *args, **kwargs)))
    cancelled = False
    while not future.done():
        try:
            await asyncio.shield(future)
        except asyncio.CancelledError:
            cancelled = True  # wait for the function to return first, as anyio's shielded worker does
        except BaseException:
            break  # the tool's own exception: `future.result()` raises it below
    if cancelled:
        raise asyncio.CancelledError  # the run's cancellation, delivered once the function returned
    return future.result()
