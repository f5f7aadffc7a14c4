"""Token sinks: where a run's frames go and where subscribers read them from.

Contract of a `TokenSink`:
- `open(run_id)` returns a writer; `write` appends a frame and returns its id (1, 2, 3 …);
  `end()` marks the stream finished (idempotent). Writes after `end()` are dropped.
- `subscribe(run_id, after=None)` yields every `StreamEvent` with id > `after` (all when None),
  then follows live frames, and returns once the stream has ended and been drained.
- `has_stream(run_id)` tells whether this sink holds a buffer for the run (replay is possible).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from agora_agent.errors import AgoraError
from agora_agent.streaming.frames import Frame, StreamEvent


class StreamGap(AgoraError):
    """A sink no longer holds the frames after `after` (trimmed); answer from the store instead."""

    def __init__(self, run_id: str, after: int, first_available: int) -> None:
        super().__init__(f"run {run_id}: frames {after + 1}..{first_available - 1} are no longer in the stream")
        self.after = after
        self.first_available = first_available


class StreamUnavailable(AgoraError):
    """The sink's backend cannot be reached (e.g. Redis is down); answer from the store instead."""


__all__ = ["MemoryTokenSink", "SinkWriter", "StreamGap", "StreamUnavailable", "TokenSink"]


@runtime_checkable
class SinkWriter(Protocol):
    """Writes one run's frames."""

    async def write(self, frame: Frame) -> int: ...

    async def end(self) -> None: ...


@runtime_checkable
class TokenSink(Protocol):
    """Buffers each run's frames for live subscribers and late re-attach."""

    async def open(self, run_id: str) -> SinkWriter: ...

    def subscribe(self, run_id: str, *, after: int | None = None) -> AsyncIterator[StreamEvent]: ...

    async def has_stream(self, run_id: str) -> bool: ...

    async def close(self, run_id: str) -> None: ...


@dataclass
class _Buffer:
    # The frames in order: frame n has id n + 1. Its `StreamEvent` is made when a subscriber reads it, so a run
    # nobody watches keeps one object per frame, not two (an ended stream is kept for a while).
    frames: list[Frame] = field(default_factory=list)
    ended: bool = False
    # Created only when a subscriber waits: a run nobody watches pays nothing per frame.
    _waiter: asyncio.Event | None = None

    def waiter(self) -> asyncio.Event:
        if self._waiter is None:
            self._waiter = asyncio.Event()
        return self._waiter

    def notify(self) -> None:
        if self._waiter is not None:
            self._waiter.set()
            self._waiter = None


class _MemoryWriter:
    def __init__(self, buffer: _Buffer, on_end: Callable[[], None]) -> None:
        self._buffer = buffer
        self._on_end = on_end

    async def write(self, frame: Frame) -> int:
        buf = self._buffer
        frames = buf.frames
        if buf.ended:
            return len(frames)
        frames.append(frame)
        if buf._waiter is not None:  # someone waits: wake them (a run nobody watches skips the call)
            buf.notify()
        return len(frames)

    async def end(self) -> None:
        if not self._buffer.ended:
            self._buffer.ended = True
            self._buffer.notify()
            self._on_end()


class MemoryTokenSink:
    """In-process sink (the default): one buffer per run, single process only.

    Ended streams stay replayable until `keep_ended` newer runs have ended, so a long-lived server's
    memory stays bounded; a run whose buffer was dropped replays nothing (its messages are stored).
    """

    def __init__(self, *, keep_ended: int = 1000) -> None:
        self._buffers: dict[str, _Buffer] = {}
        self._ended: deque[str] = deque()
        self._keep_ended = keep_ended

    def _ended_one(self, run_id: str) -> None:
        self._ended.append(run_id)
        while len(self._ended) > self._keep_ended:
            self._buffers.pop(self._ended.popleft(), None)

    def _buffer(self, run_id: str) -> _Buffer:
        buf = self._buffers.get(run_id)
        if buf is None:
            buf = self._buffers[run_id] = _Buffer()
        return buf

    async def open(self, run_id: str) -> SinkWriter:
        return _MemoryWriter(self._buffer(run_id), lambda: self._ended_one(run_id))

    async def has_stream(self, run_id: str) -> bool:
        return run_id in self._buffers

    async def close(self, run_id: str) -> None:
        self._buffers.pop(run_id, None)

    async def subscribe(self, run_id: str, *, after: int | None = None) -> AsyncIterator[StreamEvent]:
        buf = self._buffer(run_id)
        index = max(after or 0, 0)  # ids are 1-based, so `after` is also the next list index
        while True:
            waiter = buf.waiter()  # armed before draining, so a frame written meanwhile wakes us
            frames = buf.frames
            while index < len(frames):
                yield StreamEvent(index + 1, frames[index])
                index += 1
            if buf.ended:
                return
            await waiter.wait()
