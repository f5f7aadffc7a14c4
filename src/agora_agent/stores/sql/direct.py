"""The hot path's statements run on the driver's connection itself: compiled once, no SQLAlchemy execution.

A Core statement executed through SQLAlchemy costs far more on the client than the statement costs the
database: the compiled-cache lookup, an execution context, a cursor, a `CursorResult` and its row
processing (and, on PostgreSQL, the greenlet bridge around asyncpg) — ~120 µs of CPU per statement through
SQLAlchemy async + asyncpg against ~20 µs for asyncpg with a prepared statement, and several times the
statement itself on a SQLite file. `compiled(stmt, dialect)` compiles a statement ONCE per dialect (and
per set of parameter keys for an INSERT/UPDATE whose columns are the keys) into its SQL text, the order
of its positional parameters, their bind processors and the result columns' processors — exactly what
SQLAlchemy would apply — and `execute` (sync, a pysqlite connection) / `fetch_asyncpg` (an asyncpg
connection) run it on the driver, so what reaches the database is byte for byte what SQLAlchemy sends.

What still goes through SQLAlchemy: the engine's `before_cursor_execute` listeners run for every
statement (the NUL replacement on PostgreSQL, statement counters in tests and benches), transactions are
SQLAlchemy's (so its "begin" listeners and BEGIN IMMEDIATE on SQLite are unchanged), and a driver error is
raised as SQLAlchemy's `DBAPIError` subclass (`IntegrityError`, `OperationalError`, …, with
`connection_invalidated` on a lost PostgreSQL connection), so the callers' conflict handling and
`retry_transient` see what they saw before. Anything else — a connection that is not a plain pysqlite
one (aiosqlite for in-memory SQLite) — runs through `Connection.execute` unchanged.

Statements with Python-side column defaults, expanding or post-compile parameters are refused at compile
time (`TypeError`): the hot path has none, and a statement that grows one must stay on SQLAlchemy.
"""

from __future__ import annotations

import re
import sqlite3
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Dialect

__all__ = ["Compiled", "Result", "compiled", "execute", "fetch_asyncpg", "via_sqlalchemy"]

_Processor = Callable[[Any], Any] | None
_REQUIRED = object()


@dataclass(frozen=True, slots=True)
class Result:
    """A statement's rows (as dicts keyed by result column name, values processed) and its row count."""

    rows: list[dict[str, Any]]
    rowcount: int

    def first(self) -> dict[str, Any] | None:
        return self.rows[0] if self.rows else None

    def one(self) -> dict[str, Any]:
        if len(self.rows) != 1:
            raise sa.exc.NoResultFound("expected one row") if not self.rows else sa.exc.MultipleResultsFound()
        return self.rows[0]

    def scalar(self) -> Any:
        row = self.first()
        return None if row is None else next(iter(row.values()))


@dataclass(slots=True)
class Compiled:
    """One statement compiled for one dialect: the SQL, and how parameters go in and rows come out.

    `results` is None until the driver's column types are known (asyncpg: some result processors depend
    on the column's type oid, as SQLAlchemy reads it from the cursor description)."""

    statement: Any  # kept alive: the cache is keyed by its id
    sql: str
    names: tuple[str, ...]
    defaults: tuple[Any, ...]  # a bound literal's value, or _REQUIRED
    binds: tuple[_Processor, ...]
    columns: tuple[str, ...]
    types: tuple[Any, ...]
    returns_rows: bool
    results: tuple[_Processor, ...] | None = None
    # derived: every parameter is the caller's (no bound literal), and the positions that have a processor
    plain: bool = False
    processed: tuple[tuple[int, Callable[[Any], Any]], ...] = ()

    def __post_init__(self) -> None:
        self.plain = all(d is _REQUIRED for d in self.defaults)
        self.processed = tuple((i, p) for i, p in enumerate(self.binds) if p is not None)

    def typed(self, dialect: Dialect, oids: Sequence[Any]) -> None:
        """The result processors for the driver's column types `oids` (None for each: not needed)."""
        self.results = tuple(t._cached_result_processor(dialect, oid) for t, oid in zip(self.types, oids, strict=True))

    def args(self, params: Mapping[str, Any]) -> list[Any]:
        """The positional driver parameters for `params` (bind processors applied, as SQLAlchemy does)."""
        if self.plain:
            out = [params[name] for name in self.names]
        else:
            out = [
                params[name] if default is _REQUIRED else params.get(name, default)
                for name, default in zip(self.names, self.defaults, strict=True)
            ]
        for i, process in self.processed:
            # None too, as SQLAlchemy does: a JSON column stores Python None as JSON null, not SQL NULL
            out[i] = process(out[i])
        return out

    def rows(self, raw: Sequence[Sequence[Any]]) -> list[dict[str, Any]]:
        columns, results = self.columns, self.results
        assert results is not None  # `typed` first
        if not any(results):
            return [dict(zip(columns, row, strict=True)) for row in raw]
        return [{c: v if p is None else p(v) for c, p, v in zip(columns, results, row, strict=True)} for row in raw]


_MOST = 1024
_CACHE: weakref.WeakKeyDictionary[Dialect, dict[tuple[int, tuple[str, ...] | None], Compiled]] = (
    weakref.WeakKeyDictionary()
)


def compiled(stmt: Any, dialect: Dialect, keys: Sequence[str] | None = None) -> Compiled:
    """`stmt` compiled for `dialect` (cached by the statement's identity: pass statements built once, as
    the hot path's are). `keys`: the parameter keys, for an INSERT/UPDATE whose columns are the keys of
    its parameters (a statement built without `.values()`)."""
    cache = _CACHE.get(dialect)
    if cache is None:
        cache = _CACHE[dialect] = {}
    key = (id(stmt), None if keys is None else tuple(keys))
    found = cache.get(key)
    if found is None:
        if len(cache) >= _MOST:  # meant for statements built once; never grow without bound
            cache.clear()
        found = cache[key] = _compile(stmt, dialect, keys)
    return found


def _compile(stmt: Any, dialect: Dialect, keys: Sequence[str] | None) -> Compiled:
    c: Any = stmt.compile(dialect=dialect, column_keys=None if keys is None else list(keys))
    if c.insert_prefetch or c.update_prefetch or c.literal_execute_params or c.post_compile_params:
        raise TypeError(f"not a direct statement (Python-side defaults or post-compile parameters): {c.string}")
    names = tuple(c.positiontup or ())
    processors = c._bind_processors
    defaults = []
    for name in names:
        bind = c.binds[name]
        defaults.append(_REQUIRED if bind.required or bind.callable is not None else bind.value)
    result_columns = c._result_columns
    return Compiled(
        statement=stmt,
        sql=c.string,
        names=names,
        defaults=tuple(defaults),
        binds=tuple(processors.get(name) for name in names),
        columns=tuple(r.keyname for r in result_columns),
        types=tuple(r.type for r in result_columns),
        returns_rows=bool(result_columns),
    )


def _before_cursor_execute(conn: sa.Connection, sql: str, args: list[Any]) -> tuple[str, Any]:
    """The engine's `before_cursor_execute` listeners, as SQLAlchemy calls them (they may replace both)."""
    statement: Any = sql
    parameters: Any = args
    for listener in conn.dispatch.before_cursor_execute:
        statement, parameters = listener(conn, None, statement, parameters, None, False)
    return statement, parameters


def via_sqlalchemy(conn: sa.Connection, stmt: Any, params: Mapping[str, Any]) -> Result:
    """The same statement through `Connection.execute` (connections that are not plain pysqlite)."""
    result = conn.execute(stmt, dict(params))
    rows = [dict(row) for row in result.mappings().all()] if result.returns_rows else []
    return Result(rows, result.rowcount)


def execute(conn: sa.Connection, stmt: Any, params: Mapping[str, Any], *, keyed: bool = False) -> Result:
    """Run `stmt` with `params` inside the caller's unit on `conn` (its transaction, if it began one).

    On a pysqlite connection: straight on the driver. `keyed`: the statement's columns are the keys of
    `params` (`sa.insert(table)` / an UPDATE without `.values()`)."""
    raw = conn.connection.dbapi_connection
    if not isinstance(raw, sqlite3.Connection):
        return via_sqlalchemy(conn, stmt, params)
    c = compiled(stmt, conn.dialect, tuple(params) if keyed else None)
    if c.results is None:
        c.typed(conn.dialect, [None] * len(c.types))
    sql, args = _before_cursor_execute(conn, c.sql, c.args(params))
    try:
        cursor = raw.execute(sql, args)
        rows = cursor.fetchall() if c.returns_rows else []
    except sqlite3.Error as exc:
        raise sa.exc.DBAPIError.instance(sql, args, exc, sqlite3.Error) from exc
    return Result(c.rows(rows) if rows else [], cursor.rowcount)


_ROWCOUNT = re.compile(r"(?:SELECT|UPDATE|DELETE|INSERT \d+) (\d+)")


async def fetch_asyncpg(conn: sa.Connection, stmt: Any, params: Mapping[str, Any], *, keyed: bool = False) -> Result:
    """Run `stmt` in autocommit on the asyncpg connection under `conn` (the sync face of an AsyncConnection
    the caller holds exclusively, not in a transaction). Errors come out as SQLAlchemy's, with the
    connection invalidated when it was lost."""
    fairy = conn.connection
    adapted: Any = fairy.dbapi_connection
    driver: Any = fairy.driver_connection
    c = compiled(stmt, conn.dialect, tuple(params) if keyed else None)
    sql, args = _before_cursor_execute(conn, c.sql, c.args(params))
    try:
        if c.returns_rows:
            if c.results is None:  # once per statement: the column type oids, as SQLAlchemy's cursor sees them
                prepared = await driver.prepare(sql)
                c.typed(conn.dialect, [a.type.oid for a in prepared.get_attributes()])
            records = await driver.fetch(sql, *args)
            return Result(c.rows(records) if records else [], len(records))
        status = await driver.execute(sql, *args)
    except Exception as exc:  # translated below, as SQLAlchemy's asyncpg dialect does
        raise _translated(conn, adapted, sql, args, exc) from exc
    matched = _ROWCOUNT.match(status or "")
    return Result([], int(matched.group(1)) if matched else -1)


def _translated(conn: sa.Connection, adapted: Any, sql: str, args: Any, exc: Exception) -> BaseException:
    """asyncpg's error as the `DBAPIError` SQLAlchemy would raise (the adapter's translation, then the
    dialect's disconnect check); a lost connection is invalidated so it never goes back to the pool."""
    dbapi: Any = adapted.dbapi
    try:
        adapted._handle_exception(exc)
    except dbapi.Error as translated:
        lost = conn.dialect.is_disconnect(translated, adapted, None)
        if lost:
            conn.invalidate(translated)
        wrapped: BaseException = sa.exc.DBAPIError.instance(
            sql, args, translated, dbapi.Error, connection_invalidated=lost
        )
        return wrapped
    except BaseException as other:  # not a driver error (OSError on a dropped socket, cancellation): as is
        kept: BaseException = other
        return kept
    return exc  # pragma: no cover — `_handle_exception` always raises
