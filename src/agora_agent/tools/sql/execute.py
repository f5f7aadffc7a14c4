"""Run one validated SELECT read-only, under a statement timeout the database enforces (defence in depth).

- PostgreSQL: `SET TRANSACTION READ ONLY`, `SET LOCAL statement_timeout`, `SET LOCAL
  standard_conforming_strings = on` (so the regenerated string literals mean what was validated); the
  transaction is always rolled back.
- SQLite: `PRAGMA query_only = ON` on the pooled connection for the duration, and a progress handler on
  the raw sqlite3 connection that aborts the statement at the deadline; both are restored afterwards.

A database refusal becomes `SqlExecutionError` carrying the database's one-line reason (never a traceback,
never the SQL with its bound values); a timeout becomes `SqlTimeoutError`.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy.exc import DBAPIError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from agora_agent.tools.sql.errors import SqlExecutionError, SqlTimeoutError

__all__ = ["QueryOutcome", "run_read_only"]

QueryOutcome = tuple[list[str], list[tuple[Any, ...]]]
_PG_QUERY_CANCELED = "57014"
_CLASS_PREFIX = re.compile(r"^(?:\([\w.]+\)\s*)?<class '[\w.]+'>:\s*")
# Safety net above the database's own timeout: if the server does not stop the query, we stop waiting.
_GUARD_SECONDS = 5.0


def _reason(err: BaseException) -> str:
    orig = getattr(err, "orig", None) or err
    text = _CLASS_PREFIX.sub("", str(orig)).strip()
    first = text.splitlines()[0] if text else type(orig).__name__
    return first[:500]


def _sqlstate(err: BaseException) -> str | None:
    orig = getattr(err, "orig", None)
    for candidate in (orig, getattr(orig, "__cause__", None)):
        code = getattr(candidate, "sqlstate", None) or getattr(candidate, "pgcode", None)
        if isinstance(code, str):
            return code
    return None


async def run_read_only(
    engine: AsyncEngine,
    sql: str,
    params: Sequence[Any] | Mapping[str, Any],
    *,
    timeout: float,
    max_rows: int,
    tool_name: str,
) -> QueryOutcome:
    """Execute `sql` (driver paramstyle) read-only; return column names and at most `max_rows` rows."""
    dialect = engine.dialect.name
    async with engine.connect() as conn:
        try:
            async with asyncio.timeout(timeout + _GUARD_SECONDS):
                if dialect == "postgresql":
                    return await _run_postgres(conn, sql, params, timeout, max_rows)
                if dialect == "sqlite":
                    return await _run_sqlite(conn, sql, params, timeout, max_rows)
        except TimeoutError:
            await conn.invalidate()
            raise SqlTimeoutError(tool_name, timeout) from None
        except _SqliteTimeout:
            raise SqlTimeoutError(tool_name, timeout) from None
        except DBAPIError as err:
            if _sqlstate(err) == _PG_QUERY_CANCELED:
                raise SqlTimeoutError(tool_name, timeout) from None
            raise SqlExecutionError(
                tool_name, f"The database rejected the query: {_reason(err)}. Fix the SQL and try again."
            ) from None
        except SQLAlchemyError as err:
            raise SqlExecutionError(tool_name, f"The query failed: {_reason(err)}.") from None
    raise SqlExecutionError(tool_name, f"Unsupported database dialect {dialect!r}; use SQLite or PostgreSQL.")


def _split(result: Any, max_rows: int) -> QueryOutcome:
    columns = list(map(str, result.keys()))
    rows = [tuple(row) for row in result.fetchmany(max_rows)]
    return columns, rows


async def _run_postgres(
    conn: AsyncConnection, sql: str, params: Sequence[Any] | Mapping[str, Any], timeout: float, max_rows: int
) -> QueryOutcome:
    trans = await conn.begin()
    try:
        await conn.exec_driver_sql("SET TRANSACTION READ ONLY")
        await conn.exec_driver_sql(f"SET LOCAL statement_timeout = {max(1, round(timeout * 1000))}")
        await conn.exec_driver_sql("SET LOCAL standard_conforming_strings = on")
        result = await conn.exec_driver_sql(sql, params if params else None)
        return _split(result, max_rows)
    finally:
        await trans.rollback()


class _SqliteTimeout(Exception):
    pass


async def _run_sqlite(
    conn: AsyncConnection, sql: str, params: Sequence[Any] | Mapping[str, Any], timeout: float, max_rows: int
) -> QueryOutcome:
    raw = await conn.get_raw_connection()
    driver = raw.driver_connection
    previous = (await conn.exec_driver_sql("PRAGMA query_only")).scalar()
    await conn.exec_driver_sql("PRAGMA query_only = ON")
    timed_out = False
    deadline = time.monotonic() + timeout

    def progress() -> int:
        nonlocal timed_out
        if time.monotonic() > deadline:
            timed_out = True
            return 1  # non-zero aborts the running statement ("interrupted")
        return 0

    await driver.set_progress_handler(progress, 1000)  # type: ignore[union-attr]
    try:
        result = await conn.exec_driver_sql(sql, tuple(params) if not isinstance(params, Mapping) else params)
        return _split(result, max_rows)
    except DBAPIError:
        if timed_out:
            raise _SqliteTimeout() from None
        raise
    finally:
        await driver.set_progress_handler(None, 0)  # type: ignore[union-attr]
        await conn.exec_driver_sql(f"PRAGMA query_only = {'ON' if previous else 'OFF'}")
        await conn.rollback()
