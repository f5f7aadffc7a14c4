"""`RedisTokenSink`: run streams on Redis Streams, so any process serves any run's stream (the `redis` extra).

- One Redis stream per run, key `<prefix>:run:<run_id>`; each entry carries the frame's sequence number
  (`seq`, the SSE `id:`) and the frame as JSON. `XADD` trims with an approximate `MAXLEN`; every write
  refreshes the key's TTL, and the end marker (`end`) shortens it to `ended_ttl`.
- Writes never wait for Redis inside a model step: frames queue per run and one flusher task pipelines
  whatever has accumulated (notes wave2 §4: an awaited XADD per token costs a round trip each).
- ONE blocking reader per process (`XREAD BLOCK` over every stream someone follows here) fans entries
  out to the subscribers in this process, so a thousand viewers hold one connection, not a thousand
  (redis-py's pool fails fast at 100).
- `Last-Event-ID` = `seq`. A resume whose next frame was trimmed away raises `StreamGap`, and the caller
  answers with a replay from the store (the durable journal, or the stored transcript) — never a silent gap.
- Redis down: writes are dropped with one warning (the run keeps running and persisting), and readers get
  `StreamUnavailable`, which the service answers from the store as well.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import os
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from agora_agent.errors import ConfigurationError
from agora_agent.streaming.frames import (
    AgentFrame,
    ComponentFrame,
    ErrorFrame,
    Frame,
    StreamEvent,
    TextFrame,
    ToolFrame,
)
from agora_agent.streaming.sink import StreamGap, StreamUnavailable

try:
    import redis.asyncio as aioredis
    from redis.exceptions import RedisError
except ImportError as exc:  # pragma: no cover - exercised in a venv without the extra
    raise ConfigurationError("RedisTokenSink needs the `redis` extra: pip install 'agora-agent[redis]'") from exc

__all__ = ["RedisTokenSink", "StreamGap", "StreamUnavailable"]

logger = logging.getLogger("agora_agent.redis")


_FRAMES: dict[str, type[Any]] = {
    "text": TextFrame,
    "component": ComponentFrame,
    "tool": ToolFrame,
    "agent": AgentFrame,
    "error": ErrorFrame,
}


def _encode(frame: Frame) -> str:
    return json.dumps(dataclasses.asdict(frame), ensure_ascii=False, separators=(",", ":"), default=str)


def _decode(data: str) -> Frame:
    """Only the five frame classes can come out: the payload is JSON, the class is looked up by `type`."""
    fields = json.loads(data)
    cls = _FRAMES[fields.pop("type")]
    frame: Frame = cls(**fields)
    return frame


@dataclass
class _Follower:
    key: str
    last_id: str
    queue: asyncio.Queue[tuple[str, dict[str, str]] | None] = field(default_factory=asyncio.Queue)


class _Writer:
    """A run's writer for the inline runner: numbers frames 1, 2, 3 … like `MemoryTokenSink`."""

    def __init__(self, sink: RedisTokenSink, run_id: str) -> None:
        self._sink = sink
        self._run_id = run_id
        self._seq = 0
        self._ended = False

    async def write(self, frame: Frame) -> int:
        if self._ended:
            return self._seq
        self._seq += 1
        self._sink.publish(self._run_id, StreamEvent(self._seq, frame))
        return self._seq

    async def end(self) -> None:
        if not self._ended:
            self._ended = True
            await self._sink.end_stream(self._run_id)


class RedisTokenSink:
    """Run streams on Redis Streams (see the module docstring). Use one instance per process."""

    def __init__(
        self,
        url: str = "redis://127.0.0.1:6379/0",
        *,
        prefix: str = "agora",
        maxlen: int = 10_000,
        ttl_seconds: int = 24 * 3600,
        ended_ttl_seconds: int = 3600,
        block_ms: int = 5000,
        max_connections: int = 32,
    ) -> None:
        self.url = url
        self.prefix = prefix
        self.maxlen = maxlen
        self.ttl_seconds = ttl_seconds
        self.ended_ttl_seconds = ended_ttl_seconds
        self.block_ms = block_ms
        self.max_connections = max_connections
        self._redis: Any = None
        self._reader_conn: Any = None
        self._queues: dict[str, list[tuple[str, dict[str, str]]]] = {}
        self._flushers: dict[str, asyncio.Task[None]] = {}
        self._followers: dict[int, _Follower] = {}
        self._reader: asyncio.Task[None] | None = None
        self._wake_key = f"{prefix}:wake:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.reader_name = f"agora-reader-{os.getpid()}-{uuid.uuid4().hex[:8]}"  # CLIENT LIST shows it
        self._warned = False

    # -- connection ----------------------------------------------------------------------------------

    def _client(self) -> Any:
        if self._redis is None:
            # A blocking pool: a burst of writers and catch-up reads waits for a connection instead of
            # failing at redis-py's default limit (notes wave2 §4). Blocking reads never use it.
            pool = aioredis.BlockingConnectionPool.from_url(
                self.url, decode_responses=True, max_connections=self.max_connections, timeout=10
            )
            self._redis = aioredis.Redis.from_pool(pool)  # the client owns (and closes) the pool
        return self._redis

    def key(self, run_id: str) -> str:
        """The Redis key of a run's stream."""
        return f"{self.prefix}:run:{run_id}"

    async def ping(self) -> bool:
        """Whether Redis answers (readiness)."""
        try:
            return bool(await self._client().ping())
        except (RedisError, OSError):
            return False

    async def aclose(self) -> None:
        """Flush pending frames, stop the reader and close the connections."""
        for task in list(self._flushers.values()):
            with contextlib.suppress(Exception):
                await asyncio.wait_for(task, 5)
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(BaseException):
                await self._reader
            self._reader = None
        for follower in self._followers.values():
            follower.queue.put_nowait(None)
        for conn in (self._reader_conn, self._redis):
            if conn is not None:
                with contextlib.suppress(Exception):
                    await conn.aclose()
        self._reader_conn = self._redis = None

    # -- writing -------------------------------------------------------------------------------------

    async def open(self, run_id: str) -> _Writer:
        """A writer numbering frames from 1, or after the last frame of a stream that already exists —
        another process's, when this one closes a run whose process died (recovery's error frame must come
        after what the run wrote, or followers drop it as seen); an ended stream's writer drops writes,
        like `MemoryTokenSink`'s."""
        writer = _Writer(self, run_id)
        try:
            last = await self._client().xrevrange(self.key(run_id), "+", "-", count=2)
        except (RedisError, OSError):
            return writer  # Redis down: writes are dropped anyway (see _flush)
        if last and "end" in last[0][1]:
            writer._ended = True
        for _entry_id, fields in last:
            if "seq" in fields:
                writer._seq = int(fields["seq"])
                break
        return writer

    def publish(self, run_id: str, event: StreamEvent) -> None:
        """Queue a frame with its (caller-given) id; never waits for Redis."""
        self._enqueue(run_id, {"seq": str(event.id), "f": _encode(event.frame)})

    async def end_stream(self, run_id: str) -> None:
        """Write the end marker after every queued frame, and wait until it is out."""
        self._enqueue(run_id, {"end": "1"})
        task = self._flushers.get(run_id)
        if task is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(task)

    def _enqueue(self, run_id: str, fields: dict[str, str]) -> None:
        self._queues.setdefault(run_id, []).append((self.key(run_id), fields))
        task = self._flushers.get(run_id)
        if task is None or task.done():
            self._flushers[run_id] = asyncio.get_running_loop().create_task(self._flush(run_id))

    async def _flush(self, run_id: str) -> None:
        """Pipeline whatever has queued for this run, until the queue stays empty."""
        while True:
            batch = self._queues.get(run_id)
            if not batch:
                self._queues.pop(run_id, None)
                self._flushers.pop(run_id, None)
                return
            self._queues[run_id] = []
            try:
                pipe = self._client().pipeline(transaction=False)
                for key, fields in batch:
                    pipe.xadd(key, fields, maxlen=self.maxlen, approximate=True)
                ttl = self.ended_ttl_seconds if "end" in batch[-1][1] else self.ttl_seconds
                pipe.expire(batch[-1][0], ttl)
                await pipe.execute()
            except (RedisError, OSError) as exc:
                if not self._warned:  # the run keeps going; readers fall back to the store
                    logger.warning("Redis stream writes failing (%s); streams are served from the store", exc)
                    self._warned = True

    # -- reading -------------------------------------------------------------------------------------

    async def has_stream(self, run_id: str) -> bool:
        try:
            return bool(await self._client().exists(self.key(run_id)))
        except (RedisError, OSError):
            return False

    async def close(self, run_id: str) -> None:
        with contextlib.suppress(RedisError, OSError):
            await self._client().delete(self.key(run_id))

    async def subscribe(self, run_id: str, *, after: int | None = None) -> AsyncIterator[StreamEvent]:
        """Frames with seq > `after`, then live ones until the end marker.

        Raises `StreamGap` when frames after `after` were trimmed, `StreamUnavailable` when Redis is down.
        """
        key = self.key(run_id)
        last_seq = after or 0
        try:
            entries = await self._client().xrange(key, "-", "+")
        except (RedisError, OSError) as exc:
            raise StreamUnavailable(str(exc)) from exc
        last_id = "0-0"
        first = True
        for entry_id, fields in entries:
            last_id = entry_id
            if "end" in fields:
                return
            seq = int(fields["seq"])
            if first and after and seq > after + 1:
                raise StreamGap(run_id, after, seq)
            first = False
            if seq > last_seq:
                last_seq = seq
                yield StreamEvent(seq, _decode(fields["f"]))
        follower = _Follower(key=key, last_id=last_id)
        token = id(follower)
        self._followers[token] = follower
        self._ensure_reader()
        await self._wake()
        try:
            while True:
                item = await follower.queue.get()
                if item is None:
                    raise StreamUnavailable("the Redis reader stopped")
                _entry_id, fields = item
                if "end" in fields:
                    return
                seq = int(fields["seq"])
                if seq > last_seq:
                    last_seq = seq
                    yield StreamEvent(seq, _decode(fields["f"]))
        finally:
            self._followers.pop(token, None)

    def _ensure_reader(self) -> None:
        if self._reader is None or self._reader.done():
            self._reader = asyncio.get_running_loop().create_task(self._read_loop())

    async def _wake(self) -> None:
        """Interrupt the reader's blocking XREAD so it picks up a new follower at once."""
        with contextlib.suppress(RedisError, OSError):
            await self._client().xadd(self._wake_key, {"w": "1"}, maxlen=10, approximate=True)
            await self._client().expire(self._wake_key, 60)

    async def _read_loop(self) -> None:
        """The one multiplexed blocking reader of this process."""
        if self._reader_conn is None:
            self._reader_conn = aioredis.Redis.from_url(self.url, decode_responses=True, client_name=self.reader_name)
        conn = self._reader_conn
        wake_id = "$"
        while self._followers:
            streams: dict[str, str] = {self._wake_key: wake_id}
            for follower in self._followers.values():
                current = streams.get(follower.key)
                if current is None or _id_tuple(follower.last_id) < _id_tuple(current):
                    streams[follower.key] = follower.last_id
            try:
                result = await conn.xread(streams, block=self.block_ms, count=500)
            except (RedisError, OSError) as exc:
                logger.warning("Redis stream reader failed (%s); followers fall back to the store", exc)
                for follower in list(self._followers.values()):
                    follower.queue.put_nowait(None)
                return
            for key, entries in result or ():
                if key == self._wake_key:
                    wake_id = entries[-1][0]
                    continue
                for follower in list(self._followers.values()):
                    if follower.key != key:
                        continue
                    for entry_id, fields in entries:
                        if _id_tuple(entry_id) > _id_tuple(follower.last_id):
                            follower.last_id = entry_id
                            follower.queue.put_nowait((entry_id, fields))


def _id_tuple(entry_id: str) -> tuple[int, int]:
    """Stream ids compare as (ms, seq) integers, not as strings (notes wave2 §4)."""
    if entry_id in ("$", "0"):
        return (0, 0)
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq or 0)
