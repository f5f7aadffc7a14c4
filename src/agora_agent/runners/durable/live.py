"""Live frames of the runs this process executes, for subscribers in this process.

Unlike `MemoryTokenSink`, frame ids are given by the writer: a durable run numbers its frames
deterministically across executions, so after a crash and recovery the new process continues at
frame 57, not at 1, and `Last-Event-ID` keeps its meaning.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from agora_agent.streaming.frames import StreamEvent

__all__ = ["LiveFrames"]


@dataclass
class _Live:
    events: list[StreamEvent] = field(default_factory=list)
    ended: bool = False
    whole: bool = False  # holds every frame of the run from frame 1 (started here, never recovered)
    waiter: asyncio.Event = field(default_factory=asyncio.Event)

    def notify(self) -> None:
        self.waiter.set()
        self.waiter = asyncio.Event()


class LiveFrames:
    """One buffer per run executing here; ended buffers are kept for the `keep_ended` latest runs."""

    def __init__(self, *, keep_ended: int = 200) -> None:
        self._runs: dict[str, _Live] = {}
        self._opened: dict[str, asyncio.Event] = {}
        self._ended: deque[str] = deque()
        self._keep_ended = keep_ended

    def open(self, run_id: str, *, whole: bool = False) -> None:
        """Start (or restart, after a recovery in this process) the run's live buffer."""
        live = self._runs.get(run_id)
        if live is None or live.ended:
            self._runs[run_id] = _Live(whole=whole)
        opened = self._opened.pop(run_id, None)
        if opened is not None:
            opened.set()

    async def wait_opened(self, run_id: str, timeout: float) -> None:
        """Return when this process starts executing the run, or after `timeout` seconds."""
        if run_id in self._runs and not self._runs[run_id].ended:
            return
        opened = self._opened.setdefault(run_id, asyncio.Event())
        try:
            await asyncio.wait_for(opened.wait(), timeout)
        except TimeoutError:
            if self._opened.get(run_id) is opened and not opened.is_set():
                del self._opened[run_id]

    def is_whole(self, run_id: str) -> bool:
        """Whether the buffer holds the run's frames from frame 1 (no journal replay needed)."""
        live = self._runs.get(run_id)
        return live is not None and live.whole

    def holds(self, run_id: str) -> bool:
        """Whether frames of this run are being published here."""
        return run_id in self._runs

    def publish(self, run_id: str, event: StreamEvent) -> None:
        live = self._runs.get(run_id)
        if live is None or live.ended:
            return
        live.events.append(event)
        live.notify()

    def end(self, run_id: str) -> None:
        live = self._runs.get(run_id)
        if live is None or live.ended:
            return
        live.ended = True
        live.notify()
        self._ended.append(run_id)
        while len(self._ended) > self._keep_ended:
            old = self._ended.popleft()
            if self._runs.get(old) is not None and self._runs[old].ended:
                del self._runs[old]

    async def subscribe(self, run_id: str, *, after: int = 0) -> AsyncIterator[StreamEvent]:
        """Frames with id > `after`, then live ones until the run's buffer ends."""
        live = self._runs.get(run_id)
        if live is None:
            return
        index = 0
        while True:
            waiter = live.waiter
            while index < len(live.events):
                event = live.events[index]
                index += 1
                if event.id > after:
                    after = event.id
                    yield event
            if live.ended:
                return
            await waiter.wait()
