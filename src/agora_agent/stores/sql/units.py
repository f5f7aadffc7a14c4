"""How the SQL stores run a unit of work: ONE sync function over a `sqlalchemy.Connection` = ONE transaction.

Every store call (a logical step of a run: "the assistant message with its usage row and quota settle",
"the tool call's start", "its result") is written as one sync function and handed to `units_for(engine)`:

- SQLite file (the embedded default): the function runs synchronously on the event loop's thread over a
  pysqlite connection kept open for the life of the engine (`SqliteUnits`): no thread hop at all, where
  aiosqlite makes every statement, cursor, commit and pool reset its own hop to a worker thread
  (~100–250 µs each on an idle 2-core box, milliseconds under load — measured in bench/loop.py). A unit
  that finds the file locked by another process runs on a worker thread instead, which waits for the lock.
- PostgreSQL and in-memory SQLite: `AsyncConnection.run_sync`, i.e. the same function driven by the async
  driver (asyncpg round trips are network round trips; there is nothing to save by changing threads).
  On PostgreSQL the round trips are what a unit costs (BEGIN and COMMIT are two of them), so a unit that is
  ONE statement (`one_statement=True`: atomic by itself) and every read at READ COMMITTED (each statement
  takes its own snapshot there, in a transaction or not) run in autocommit: no BEGIN, no COMMIT. The hot
  path's multi-statement steps are written as one statement on PostgreSQL (data-modifying CTEs, `pg_steps`).

A unit runs again as a whole after a deadlock, serialization failure, lock timeout or lost connection
(`retry_transient`); its ids are chosen before the first attempt, so a retry writes the same rows.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import weakref
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, Protocol, TypeVar

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from agora_agent.stores.sql import direct
from agora_agent.stores.sql.direct import Result
from agora_agent.stores.sql.engine import (
    SQLITE_BUSY_TIMEOUT_MS,
    WRITE,
    configure_sqlite,
    dumps_json,
    is_transient_db_error,
    retry_transient,
)

__all__ = ["Unit", "Units", "units_for"]

T = TypeVar("T")
Unit = Callable[[sa.Connection], T]


class Units(Protocol):
    """Runs units of work; `write=True` takes the write lock up front (BEGIN IMMEDIATE on SQLite).

    `sync_engine` is the engine whose events see every statement the units run (statement counts).
    `defer_flush`: the statements whose commit only precedes a model call (budget reservations) return before
    their WAL is flushed (`SqlBackend`'s `store_commit="effects"`; PostgreSQL only).
    """

    sync_engine: sa.Engine
    defer_flush: bool

    def deferred(self, run_id: str | None, outcome: Mapping[str, Any]) -> None:
        """Note the server that took a run's commit which did not wait for the disk (`outcome["server_started"]`,
        when the statement deferred its flush): the run's next model step is written only there."""
        ...

    def take_deferred(self, run_id: str | None) -> Any:
        """The server start time `deferred` noted for the run (None: nothing deferred since), forgotten now."""
        ...

    async def run(self, fn: Callable[[sa.Connection], T], *, write: bool, one_statement: bool = False) -> T: ...

    async def one(self, stmt: Any, params: Mapping[str, Any], *, write: bool, keyed: bool = False) -> Result:
        """ONE statement as its own unit, in autocommit where the backend allows (`direct`: on the driver)."""
        ...

    def close(self) -> None: ...


class AsyncUnits:
    """A unit through the async engine's pool (asyncpg, or aiosqlite for in-memory SQLite).

    On PostgreSQL the autocommit units (one statement, or a read) run on connections this object keeps
    checked out between units (`KEEP` at most, fewer when the pool is small): a pool checkout and check-in
    cost several times what the statement costs on the client. A connection that saw any error goes back
    to the pool at once (SQLAlchemy invalidates a broken one); the kept ones are closed with the engine.
    """

    KEEP = 4

    def __init__(self, engine: AsyncEngine) -> None:
        self.sync_engine = engine.sync_engine
        self._reader = engine
        self._writer = engine.execution_options(**{WRITE: True})
        postgres = engine.dialect.name == "postgresql"
        self._autocommit = engine.execution_options(isolation_level="AUTOCOMMIT") if postgres else None
        self._idle: list[AsyncConnection] = []
        self._keep = _room_to_keep(engine.sync_engine.pool, self.KEEP) if postgres else 0
        self.defer_flush = False
        self.deferred_runs: dict[str, Any] = {}

    def deferred(self, run_id: str | None, outcome: Mapping[str, Any]) -> None:
        started = outcome.get("server_started")
        if run_id is None or started is None:
            return
        if len(self.deferred_runs) >= 100_000:  # runs that ended without a next model step: forget the oldest
            del self.deferred_runs[next(iter(self.deferred_runs))]
        self.deferred_runs[run_id] = started

    def take_deferred(self, run_id: str | None) -> Any:
        return None if run_id is None else self.deferred_runs.pop(run_id, None)

    def _reads_in_autocommit(self) -> bool:
        """READ COMMITTED (PostgreSQL's default, unless the engine or the server asks for another level)."""
        dialect: Any = self.sync_engine.dialect
        configured = dialect._on_connect_isolation_level  # create_engine(isolation_level=...)
        return dialect.default_isolation_level == "READ COMMITTED" and configured in (None, "READ COMMITTED")

    async def _in_autocommit(self, autocommit: AsyncEngine, fn: Callable[[AsyncConnection], Awaitable[T]]) -> T:
        conn = self._idle.pop() if self._idle else await autocommit.connect()
        kept = False
        try:
            result = await fn(conn)
            if len(self._idle) < self._keep and not conn.invalidated:
                self._idle.append(conn)
                kept = True
            return result
        finally:
            if not kept:
                await conn.close()

    async def one(self, stmt: Any, params: Mapping[str, Any], *, write: bool, keyed: bool = False) -> Result:
        """On PostgreSQL in autocommit: straight on asyncpg over a kept connection (`direct.fetch_asyncpg`)."""
        autocommit = self._autocommit
        if autocommit is None or not (write or self._reads_in_autocommit()):
            return await self.run(lambda conn: direct.execute(conn, stmt, params, keyed=keyed), write=write)

        async def on_driver(conn: AsyncConnection) -> Result:
            sync = conn.sync_connection
            assert sync is not None  # a connected AsyncConnection
            return await direct.fetch_asyncpg(sync, stmt, params, keyed=keyed)

        return await self._retried(lambda: self._in_autocommit(autocommit, on_driver))

    async def run(self, fn: Callable[[sa.Connection], T], *, write: bool, one_statement: bool = False) -> T:
        autocommit = self._autocommit
        if autocommit is not None and (one_statement or (not write and self._reads_in_autocommit())):

            async def attempt() -> T:
                return await self._in_autocommit(autocommit, lambda conn: conn.run_sync(fn))

        else:
            source = self._writer if write else self._reader

            async def attempt() -> T:
                async with source.begin() as conn:
                    return await conn.run_sync(fn)

        return await self._retried(attempt)

    async def _retried(self, attempt: Callable[[], Awaitable[T]]) -> T:
        try:
            return await retry_transient(attempt)
        except sa.exc.DBAPIError as exc:
            if not exc.connection_invalidated:
                raise
            # No pre-ping on checkout: a pooled connection the server dropped fails here and SQLAlchemy discards
            # it (and the pool's older ones). Run the unit once more on a fresh connection; its ids were fixed
            # before the first attempt, so a commit that did land makes the retry a conflict, never a duplicate.
            await self._drop_idle()
            return await retry_transient(attempt)

    async def _drop_idle(self) -> None:
        """Give back the kept connections (their server may be gone): invalidated first, so closing them
        costs no round trip, and SQLAlchemy opens fresh ones."""
        idle, self._idle = self._idle, []
        for conn in idle:
            with contextlib.suppress(Exception):
                await conn.invalidate()
            with contextlib.suppress(Exception):
                await conn.close()

    def close(self) -> None:
        """Called when the engine is disposed: the kept connections are closed, not returned to the disposed
        pool (where nothing would close them). Invalidating closes the driver connection at once — inside
        `AsyncEngine.dispose`'s greenlet a clean close, elsewhere asyncpg's `terminate()`."""
        idle, self._idle = self._idle, []
        for conn in idle:
            sync = conn.sync_connection
            if sync is not None:
                with contextlib.suppress(Exception):
                    sync.invalidate()


def _room_to_keep(pool: Any, most: int) -> int:
    """How many connections the units may keep out of `pool`: leave at least one for everything else."""
    size = getattr(pool, "size", None)
    if not callable(size):
        return 0  # NullPool, StaticPool: nothing to save, or nothing to share
    overflow = getattr(pool, "_max_overflow", 0)
    if overflow < 0:
        return most  # unbounded overflow
    return max(0, min(most, int(size()) + int(overflow) - 1))


class SqliteUnits:
    """File SQLite: a unit runs on the event loop's thread, synchronously, unless the database is locked.

    Two synchronous pysqlite connections stay open for the life of the engine:
    - the inline one, used on the event loop's thread with `busy_timeout=0`: a unit there is a few
      sqlite3 calls (tens of µs for the hot-path units), no thread hop, no scheduler wake-up. Units never
      overlap on it (a unit is sync: nothing else runs on the loop until it commits), so in-process writers
      never wait for each other;
    - the worker's, on one dedicated thread with the usual 30 s busy timeout: a unit that found the database
      locked by ANOTHER process (SQLITE_BUSY at once, before it wrote anything) runs again there, and the
      loop awaits it without blocking.
    The inline connection does not checkpoint the WAL (a checkpoint fsyncs); every `CHECKPOINT_EVERY` write
    units the worker thread checkpoints it instead: PASSIVE (it copies the log into the database without
    blocking anyone), and TRUNCATE once the log file has grown past `WAL_TRUNCATE_BYTES` (it also empties it).
    A passive checkpoint never rewinds the log — only the first write after a checkpoint that left nothing to
    copy does, which a steady stream of writes never meets — so with passive checkpoints alone the WAL of a
    busy server grew by every page ever written (2.5 GB after 6,000 governed runs, for a 29 MB database).
    While a TRUNCATE runs (little is left to copy by then: a few ms), an inline write finds the database locked
    and goes to the worker thread, behind it, as for another process's lock; readers are never blocked. It
    waits at most `CHECKPOINT_BUSY_MS` for a writer or reader of another process, then copies what it can.
    """

    CHECKPOINT_EVERY = 500
    CHECKPOINT_BUSY_MS = 100
    WAL_TRUNCATE_BYTES = 64 * 1024 * 1024
    defer_flush = False  # no commit waits for an fsync here already (WAL with synchronous=NORMAL)

    def deferred(self, run_id: str | None, outcome: Mapping[str, Any]) -> None:
        return

    def take_deferred(self, run_id: str | None) -> Any:
        return None

    def __init__(self, url: sa.URL) -> None:
        self._engine = sa.create_engine(
            url.set(drivername="sqlite+pysqlite"),
            connect_args={"check_same_thread": False},  # the worker's connection is closed from the loop
            json_serializer=dumps_json,
        )
        configure_sqlite(self._engine, wal=True)
        self.sync_engine = self._engine
        self._inline: sa.Connection | None = None
        self._worker: sa.Connection | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._writes = 0

    @staticmethod
    def _in_transaction(conn: sa.Connection, fn: Callable[[sa.Connection], T], write: bool) -> T:
        conn.execution_options(**{WRITE: write})  # read by the "begin" listener: BEGIN IMMEDIATE or BEGIN
        with conn.begin():
            return fn(conn)

    def _inline_connection(self) -> sa.Connection:
        conn = self._inline
        if conn is None or conn.invalidated:
            conn = self._inline = self._engine.connect()
            raw: Any = conn.connection.dbapi_connection
            raw.execute("PRAGMA busy_timeout=0")  # locked by another process: go to the worker, never wait here
            raw.execute("PRAGMA wal_autocheckpoint=0")  # checkpoints (fsync) run on the worker thread
        return conn

    def _on_worker(self, fn: Callable[[sa.Connection], T], write: bool) -> T:
        conn = self._worker
        if conn is None or conn.invalidated:
            conn = self._worker = self._engine.connect()
        return self._in_transaction(conn, fn, write)

    def _checkpoint(self) -> None:
        conn = self._worker
        if conn is None or conn.invalidated:
            conn = self._worker = self._engine.connect()
        raw: Any = conn.connection.dbapi_connection
        try:
            wal = os.path.getsize(f"{self._engine.url.database}-wal")
        except OSError:
            wal = 0
        if wal <= self.WAL_TRUNCATE_BYTES:
            raw.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            return
        raw.execute(f"PRAGMA busy_timeout={self.CHECKPOINT_BUSY_MS}")
        try:
            raw.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        finally:
            raw.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")

    def _executor_(self) -> ThreadPoolExecutor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(1, thread_name_prefix="agora-sqlite")
        return self._executor

    async def run(self, fn: Callable[[sa.Connection], T], *, write: bool, one_statement: bool = False) -> T:
        try:
            result = self._in_transaction(self._inline_connection(), fn, write)
        except sa.exc.OperationalError as exc:
            if not is_transient_db_error(exc):
                raise
            # Another process holds the lock: nothing was written; wait for it off the loop.
            executor = self._executor_()
            loop = asyncio.get_running_loop()
            result = await retry_transient(lambda: loop.run_in_executor(executor, partial(self._on_worker, fn, write)))
        self._wrote(write)
        return result

    async def one(self, stmt: Any, params: Mapping[str, Any], *, write: bool, keyed: bool = False) -> Result:
        """ONE statement in autocommit on the inline connection, on the driver (`direct.execute`): no BEGIN,
        no COMMIT — SQLite runs a lone statement as its own transaction, a write taking the write lock first
        (like BEGIN IMMEDIATE). Locked by another process: on the worker thread, as `run` does."""
        try:
            result = direct.execute(self._inline_connection(), stmt, params, keyed=keyed)
        except sa.exc.OperationalError as exc:
            if not is_transient_db_error(exc):
                raise
            executor = self._executor_()
            loop = asyncio.get_running_loop()
            result = await retry_transient(
                lambda: loop.run_in_executor(executor, partial(self._one_on_worker, stmt, params, keyed))
            )
        self._wrote(write)
        return result

    def _one_on_worker(self, stmt: Any, params: Mapping[str, Any], keyed: bool) -> Result:
        conn = self._worker
        if conn is None or conn.invalidated:
            conn = self._worker = self._engine.connect()
        return direct.execute(conn, stmt, params, keyed=keyed)

    def _wrote(self, write: bool) -> None:
        if write:
            self._writes += 1
            if self._writes % self.CHECKPOINT_EVERY == 0:
                self._executor_().submit(self._checkpoint)

    def _shutdown_worker(self) -> None:
        if self._worker is not None:
            self._worker.close()
            self._worker = None

    def close(self) -> None:
        """Close both connections and stop the worker thread (a later unit opens them again)."""
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.submit(self._shutdown_worker).result()
            executor.shutdown(wait=True)
        if self._inline is not None:
            self._inline.close()
            self._inline = None
        self._engine.dispose()


_UNITS: weakref.WeakKeyDictionary[sa.Engine, Units] = weakref.WeakKeyDictionary()


def units_for(engine: AsyncEngine) -> Units:
    """The unit runner shared by every store on `engine` (created on first use, closed by `engine.dispose()`)."""
    sync_engine = engine.sync_engine
    units = _UNITS.get(sync_engine)
    if units is None:
        database = engine.url.database
        if (
            engine.dialect.name == "sqlite"
            and database not in (None, "", ":memory:")
            and "mode=memory" not in str(engine.url)
        ):
            units = SqliteUnits(engine.url)
        else:
            units = AsyncUnits(engine)
        _UNITS[sync_engine] = units
        sa.event.listen(sync_engine, "engine_disposed", _close_on_dispose(units))
    return units


def _close_on_dispose(units: Units) -> Callable[[Any], None]:
    def on_dispose(_engine: Any) -> None:
        units.close()

    return on_dispose
