"""Database URLs and engines: SQLite (aiosqlite, WAL) and PostgreSQL (asyncpg), one code path.

`sqlite:///path` becomes `sqlite+aiosqlite:///path`; `postgresql://` / `postgres://` become
`postgresql+asyncpg://`. On SQLite every connection gets WAL, a busy timeout and foreign keys, and writes
run in `BEGIN IMMEDIATE` transactions (the write lock is taken up front, so two writers queue on the busy
timeout instead of failing on a lock upgrade).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
import sqlite3
from collections.abc import Awaitable, Callable
from datetime import date, datetime
from decimal import Decimal
from typing import Any, TypeVar
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.engine import URL, make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import StaticPool

from agora_agent.errors import ConfigurationError

__all__ = [
    "WRITE",
    "configure_sqlite",
    "create_engine_from_url",
    "dumps_json",
    "is_sqlite",
    "is_transient_db_error",
    "mask_url",
    "normalize_url",
    "retry_transient",
]

T = TypeVar("T")

WRITE = "agora_write"
"""Execution option marking a write transaction (BEGIN IMMEDIATE on SQLite)."""

SQLITE_BUSY_TIMEOUT_MS = 30_000


def normalize_url(url: str | URL) -> URL:
    """The async-driver URL for a user-facing one; `ConfigurationError` for an unsupported backend."""
    try:
        parsed = make_url(url) if isinstance(url, str) else url
    except sa.exc.ArgumentError as exc:
        raise ConfigurationError(
            f"cannot parse database URL {url!r}; use sqlite:///path/to/file.db or postgresql+asyncpg://user@host/db"
        ) from exc
    backend, _, driver = parsed.drivername.partition("+")
    if backend == "sqlite" and driver in ("", "aiosqlite", "pysqlite"):
        return parsed.set(drivername="sqlite+aiosqlite")
    if backend in ("postgresql", "postgres") and driver in ("", "asyncpg", "psycopg2", "psycopg"):
        return parsed.set(drivername="postgresql+asyncpg")
    raise ConfigurationError(
        f"unsupported database URL {mask_url(parsed)}: agora-agent stores use SQLite (sqlite:///file.db) "
        "or PostgreSQL (postgresql+asyncpg://user:password@host/db)"
    )


def mask_url(url: str | URL) -> str:
    """The URL with its password replaced by `***` (safe for logs and error messages)."""
    try:
        parsed = make_url(url) if isinstance(url, str) else url
    except sa.exc.ArgumentError:
        return "<unparseable database URL>"
    return parsed.render_as_string(hide_password=True)


def is_sqlite(engine: AsyncEngine) -> bool:
    return engine.dialect.name == "sqlite"


def _json_default(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if callable(dump):  # pydantic models
        return dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, UUID):
        return str(value)
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


# `json.dumps(value, default=..., ensure_ascii=False)` builds this encoder on every call (only a call without
# options reuses the module's): a model step serialises a dozen JSON values, so it is built once.
_ENCODER = json.JSONEncoder(default=_json_default, ensure_ascii=False)


def dumps_json(value: Any) -> str:
    """JSON for a JSON column; a value that cannot be serialised is stored as null."""
    try:
        return _ENCODER.encode(value)
    except (TypeError, ValueError):
        return "null"


def create_engine_from_url(url: str | URL, **kwargs: Any) -> AsyncEngine:
    """An `AsyncEngine` for a SQLite or PostgreSQL URL, configured for agora-agent's stores."""
    target = normalize_url(url)
    options: dict[str, Any] = {"json_serializer": dumps_json, **kwargs}
    if target.get_backend_name() == "sqlite":
        in_memory = target.database in (None, "", ":memory:")
        if not in_memory and target.database is not None and not target.database.startswith("file:"):
            _make_parent_dir(target.database)
        if in_memory:
            options.setdefault("poolclass", StaticPool)
            options.setdefault("connect_args", {"check_same_thread": False})
        engine = create_async_engine(target, **options)
        configure_sqlite(engine.sync_engine, wal=not in_memory)
        return engine
    # No pre-ping on checkout (a round trip per transaction): a connection the server dropped fails its first
    # statement, SQLAlchemy invalidates it, and `retry_transient` runs the transaction again on a fresh one.
    engine = create_async_engine(target, **options)
    sa.event.listen(engine.sync_engine, "before_cursor_execute", _replace_nul, retval=True)
    return engine


def _has_nul(values: Any) -> bool:
    # A plain loop, half the cost of any(<generator>): it runs for every statement on PostgreSQL, over every
    # parameter (dozens for a model step).
    for v in values:  # noqa: SIM110
        if isinstance(v, str) and "\x00" in v:
            return True
    return False


def _without_nul(row: Any) -> Any:
    if isinstance(row, dict):
        if not _has_nul(row.values()):
            return row
        return {k: v.replace("\x00", "\ufffd") if isinstance(v, str) else v for k, v in row.items()}
    if isinstance(row, tuple | list):
        if not _has_nul(row):
            return row
        return type(row)(v.replace("\x00", "\ufffd") if isinstance(v, str) else v for v in row)
    return row


def _replace_nul(
    _conn: Any, _cursor: Any, statement: str, parameters: Any, _context: Any, executemany: bool
) -> tuple[str, Any]:
    """PostgreSQL refuses a NUL character in text ("invalid byte sequence"), and a model's reply, a tool's
    error or an MCP tool name may hold one: each becomes U+FFFD rather than failing the run or the request.
    (JSON values are already serialised by here, with NUL escaped as `\\u0000`, which `json` columns keep.)"""
    if executemany and isinstance(parameters, list):
        return statement, [_without_nul(row) for row in parameters]
    return statement, _without_nul(parameters)


def _claim_file(sync_engine: sa.Engine, database: str) -> None:
    from agora_agent import _sqlite_files

    @sa.event.listens_for(sync_engine, "do_connect")
    def _before_connect(*_args: Any) -> None:  # before the driver opens the file
        _sqlite_files.check(database, _sqlite_files.CPYTHON)

    @sa.event.listens_for(sync_engine, "connect")
    def _opened(*_args: Any) -> None:
        _sqlite_files.claim(database, _sqlite_files.CPYTHON)

    @sa.event.listens_for(sync_engine, "close")
    def _closed(*_args: Any) -> None:
        _sqlite_files.release(database, _sqlite_files.CPYTHON)

    sa.event.listen(sync_engine, "close_detached", _closed)


def _make_parent_dir(database: str) -> None:
    """Create the directory of a SQLite file (`sqlite:///.agora/agent.db` on a fresh checkout)."""
    from pathlib import Path

    parent = Path(database).expanduser().parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigurationError(
            f"cannot create the directory {parent} for the SQLite database: {exc.strerror or exc}"
        ) from exc


def configure_sqlite(sync_engine: sa.Engine, *, wal: bool) -> None:
    """WAL, busy timeout and foreign keys on every connection; BEGIN IMMEDIATE for write transactions.

    A file database is claimed for CPython's sqlite3 while a connection is open on it, and refused while
    another SQLite library (the vector store's pysqlite3) has it open: see `agora_agent._sqlite_files`.
    """
    database = sync_engine.url.database
    if database not in (None, "", ":memory:") and "mode=memory" not in str(sync_engine.url):
        _claim_file(sync_engine, str(database))

    @sa.event.listens_for(sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy's "begin" event emit BEGIN itself (pysqlite's implicit transactions are unreliable).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            if wal:
                cursor.execute("PRAGMA journal_mode=WAL")
                cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
            cursor.execute("PRAGMA foreign_keys=ON")
        finally:
            cursor.close()

    @sa.event.listens_for(sync_engine, "begin")
    def _on_begin(connection: sa.Connection) -> None:
        immediate = connection.get_execution_options().get(WRITE, False)
        raw = connection.connection.dbapi_connection
        if isinstance(raw, sqlite3.Connection):
            # pysqlite (the store's own units): straight to the driver — a full SQLAlchemy execution costs more
            # than the BEGIN itself, once per unit on the hot path.
            statement = "BEGIN IMMEDIATE" if immediate else "BEGIN"
            try:
                raw.execute(statement)
            except sqlite3.Error as exc:
                # As SQLAlchemy raises it: a file locked by another connection (SQLITE_BUSY) must reach the
                # units' lock handling as the OperationalError it catches, not as the bare driver error.
                raise sa.exc.DBAPIError.instance(statement, (), exc, sqlite3.Error) from exc
        else:
            connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


_TRANSIENT_CODES = {"40001", "40P01", "1213", "1205", "ER_LOCK_DEADLOCK", "ER_LOCK_WAIT_TIMEOUT", "SQLITE_BUSY"}
_TRANSIENT_MESSAGE = re.compile(r"deadlock|lock wait timeout|serialization failure|database is locked", re.I)


def _looks_transient(error: BaseException) -> bool:
    for attr in ("sqlstate", "pgcode", "code", "errno", "sqlite_errorname"):
        value = getattr(error, attr, None)
        if value is not None and str(value) in _TRANSIENT_CODES:
            return True
    return bool(_TRANSIENT_MESSAGE.search(str(error)))


# Connection loss: SQLSTATE class 08 (connection exception), 57P01..03 (the server terminated the backend
# or is shutting down / starting up); asyncpg and SQLAlchemy spell a closed connection in these words.
_DISCONNECT_CODES = {"57P01", "57P02", "57P03"}
_DISCONNECT_MESSAGE = re.compile(
    r"connection (?:was |is )?closed|connection does not exist|terminating connection|server closed the connection"
    r"|connection reset|broken pipe|connection refused|cannot connect",
    re.I,
)


def _looks_disconnected(error: BaseException) -> bool:
    if isinstance(error, sa.exc.DBAPIError) and error.connection_invalidated:
        return True  # SQLAlchemy judged it a disconnect and invalidated the connection (and the stale pool)
    if isinstance(error, ConnectionError | TimeoutError):
        return True
    code = getattr(error, "sqlstate", None) or getattr(error, "pgcode", None)
    if code is not None and (str(code).startswith("08") or str(code) in _DISCONNECT_CODES):
        return True
    return type(error).__name__ in ("ConnectionDoesNotExistError", "InterfaceError") or bool(
        _DISCONNECT_MESSAGE.search(str(error))
    )


def is_transient_db_error(error: BaseException) -> bool:
    """For database errors: deadlock / serialization failure / lock timeout / SQLITE_BUSY, and a
    lost connection (terminated backend, server restart): the retry then runs on a fresh connection.

    Checks the error and one level of cause (SQLAlchemy wraps the driver error in `.orig`).
    """
    if _looks_transient(error) or _looks_disconnected(error):
        return True
    cause = getattr(error, "orig", None) or error.__cause__
    return cause is not None and cause is not error and (_looks_transient(cause) or _looks_disconnected(cause))


async def retry_transient(operation: Callable[[], Awaitable[T]], *, attempts: int = 3, backoff_s: float = 0.05) -> T:
    """Run a whole transaction again after a deadlock, a serialization failure or a lost connection
    (with backoff). A write retried after a lost commit reply must be idempotent (ids fixed first)."""
    for attempt in range(1, attempts + 1):
        try:
            return await operation()
        except (sa.exc.DBAPIError, ConnectionError, TimeoutError) as exc:
            if attempt == attempts or not is_transient_db_error(exc):
                raise
            await asyncio.sleep(backoff_s * attempt)
    raise AssertionError("unreachable")  # pragma: no cover
