"""The worker threads a sync tool runs in: persistent, with a light hand-off.

`anyio.to_thread.run_sync` costs ~150 µs per call here (a checkpoint, a capacity limiter, a cancel scope,
a `queue.Queue` with its condition variable); the hop itself — wake a parked thread, run, wake the loop —
is ~20 µs. A tool step pays it on every sync tool call, so sync tools run here instead: a shared
`SimpleQueue` of jobs, up to `LIMIT` threads started on demand (an idle one exits after `IDLE_S`), the
result handed back with `call_soon_threadsafe` — one wake-up of the loop for every result that finished
before the loop got to them (`_Wakeups`), and no `asyncio.shield` around the wait.

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


class _Job:
    """One call handed to a worker thread; its outcome comes back to `loop` (see `_Wakeups`)."""

    __slots__ = ("args", "context", "error", "finished", "fn", "future", "kwargs", "loop", "result", "waiter")

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        future: asyncio.Future[Any],
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> None:
        self.loop = loop
        self.future = future
        self.fn = fn
        self.args = args
        self.kwargs = kwargs
        self.context = contextvars.copy_context()  # the job runs in a copy of the caller's context
        self.result: Any = None
        self.error: BaseException | None = None
        self.finished = False  # set on the loop's thread once the outcome is back
        self.waiter: asyncio.Future[None] | None = None  # a cancelled caller waiting for the function to return

    def run(self) -> None:
        """In a worker thread: call the function and keep its outcome."""
        try:
            self.result = self.context.run(self.fn, *self.args, **self.kwargs)
        except BaseException as exc:  # handed to the awaiting task, like any exception of the tool
            self.error = exc

    def settle(self) -> None:
        """On the loop's thread: hand the outcome to the awaiting task (unless it stopped waiting)."""
        self.finished = True
        future = self.future
        if not future.done():
            if self.error is not None:
                future.set_exception(self.error)
            else:
                future.set_result(self.result)
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


class _Wakeups:
    """The outcomes finished for one loop, delivered by one wake-up however many finished meanwhile: a worker
    writes to the loop's self-pipe (`call_soon_threadsafe`) only when no delivery is scheduled already."""

    def __init__(self, loop: asyncio.AbstractEventLoop, token: object) -> None:
        self.loop = loop
        self.token = token  # anyio's event loop token, which `anyio.from_thread.run` finds in the worker
        self._lock = threading.Lock()
        self._done: list[_Job] = []
        self._scheduled = False

    def finished(self, job: _Job) -> None:
        """In a worker thread: queue the job's outcome and wake the loop if nobody did yet."""
        with self._lock:
            self._done.append(job)
            if self._scheduled:
                return
            self._scheduled = True
        with contextlib.suppress(RuntimeError):  # the loop closed while the tool ran: nobody is waiting any more
            self.loop.call_soon_threadsafe(self._deliver)

    def _deliver(self) -> None:
        with self._lock:
            done, self._done, self._scheduled = self._done, [], False
        for job in done:
            job.settle()


class _Threads:
    """A pool of worker threads fed by one queue. `idle` counts the threads parked on the queue minus the
    jobs queued for them, so a job never waits while a thread could be started for it."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[_Wakeups, _Job]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads = 0
        self._idle = 0

    def submit(self, wakeups: _Wakeups, job: _Job) -> None:
        with self._lock:
            if self._idle > 0:
                self._idle -= 1
                start = False
            else:
                start = self._threads < LIMIT
                self._threads += start
        self._jobs.put((wakeups, job))
        if start:
            threading.Thread(target=self._work, name="agora-sync-tool", daemon=True).start()

    def _work(self) -> None:
        while True:
            try:
                wakeups, job = self._jobs.get(timeout=IDLE_S)
            except queue.Empty:
                with self._lock:
                    if self._idle > 0:  # no queued job is counting on this thread: stop
                        self._idle -= 1
                        self._threads -= 1
                        return
                continue
            _run_job(wakeups, job)
            with self._lock:
                self._idle += 1
            # Waking the loop is the last thing before parking again: the woken loop then finds the GIL free
            # instead of waiting for this thread's bookkeeping (one more thread hand-off per call).
            wakeups.finished(job)


def _run_job(wakeups: _Wakeups, job: _Job) -> None:
    if _anyio_threadlocals is not None:
        _anyio_threadlocals.current_token = wakeups.token
    try:
        job.run()
    finally:
        if _anyio_threadlocals is not None:
            del _anyio_threadlocals.current_token


_THREADS = _Threads()
_WAKEUPS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Wakeups] = weakref.WeakKeyDictionary()


def _wakeups(loop: asyncio.AbstractEventLoop) -> _Wakeups:
    wakeups = _WAKEUPS.get(loop)
    if wakeups is None:
        wakeups = _WAKEUPS[loop] = _Wakeups(loop, anyio.lowlevel.current_token())
    return wakeups


async def run_sync(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run `fn(*args, **kwargs)` in a worker thread and return its result (or raise its exception)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    if loop is None or _anyio_threadlocals is None:
        return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs))
    future: asyncio.Future[T] = loop.create_future()
    job = _Job(loop, future, fn, args, kwargs)
    _THREADS.submit(_wakeups(loop), job)
    try:
        return await future
    except asyncio.CancelledError:
        # Cancelled while the function runs: wait for it to return first (as anyio's shielded worker does),
        # then deliver the cancellation. A cancellation after it returned (or its own) goes through at once.
        while not job.finished:
            job.waiter = loop.create_future()
            with contextlib.suppress(asyncio.CancelledError):
                await job.waiter
        raise
