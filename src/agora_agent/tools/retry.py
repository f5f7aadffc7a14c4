"""Transient retry of tool calls.

A tool that hits a database deadlock, a lock-wait timeout or a serialization failure is retried (default:
2 attempts in total, 150 ms then 300 ms … between them); every other error surfaces at once, unchanged.
The loop runs the retry inside the tool's checkpointed step, so a durable replay never repeats it.
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from agora_agent.errors import ConfigurationError

__all__ = ["TransientRetry", "is_transient_error", "run_with_retry"]

T = TypeVar("T")

_MYSQL_ERRNOS = frozenset({1213, 1205})  # ER_LOCK_DEADLOCK, ER_LOCK_WAIT_TIMEOUT
_MYSQL_NAMES = frozenset({"ER_LOCK_DEADLOCK", "ER_LOCK_WAIT_TIMEOUT"})
_SQLSTATES = frozenset({"40001", "40P01"})  # serialization_failure, deadlock_detected
_SQLITE_BUSY = re.compile(r"database is locked|database table is locked|\bbusy\b", re.IGNORECASE)
_MESSAGE = re.compile(r"deadlock|lock wait timeout|serialization failure", re.IGNORECASE)


def _as_code(value: Any) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | str):
        return str(value)
    return None


def _matches(exc: BaseException) -> bool:
    for attr in ("errno", "code", "sqlstate", "pgcode"):
        code = _as_code(getattr(exc, attr, None))
        if code is not None and (code in _SQLSTATES or code in _MYSQL_NAMES or code == "SQLITE_BUSY"):
            return True
        if code is not None and code.isdigit() and int(code) in _MYSQL_ERRNOS:
            return True
    # MySQL drivers (PyMySQL, aiomysql, mysqlclient) put the errno in args[0].
    first = exc.args[0] if exc.args else None
    if isinstance(first, int) and not isinstance(first, bool) and first in _MYSQL_ERRNOS:
        return True
    if isinstance(exc, sqlite3.OperationalError) and _SQLITE_BUSY.search(str(exc)):
        return True
    return bool(_MESSAGE.search(str(exc)))


def is_transient_error(exc: BaseException) -> bool:
    """True for a lock or serialization conflict worth one more try.

    Looks at the exception, at SQLAlchemy's wrapped driver error (`.orig`) and at one level of
    `__cause__` (and its `.orig`). Cancellation is never transient.
    """
    if isinstance(exc, asyncio.CancelledError) or not isinstance(exc, Exception):
        return False
    candidates: list[BaseException] = [exc]
    cause = exc.__cause__
    if cause is not None and cause is not exc:
        candidates.append(cause)
    for candidate in list(candidates):
        orig = getattr(candidate, "orig", None)
        if isinstance(orig, BaseException) and orig is not candidate:
            candidates.append(orig)
    return any(_matches(c) for c in candidates if not isinstance(c, asyncio.CancelledError))


@dataclass(frozen=True)
class TransientRetry:
    """How tool calls are retried: `attempts` tries in total, waiting `backoff_ms * N` after failed try N."""

    attempts: int = 2
    backoff_ms: float = 150
    classify: Callable[[BaseException], bool] = field(default=is_transient_error)

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ConfigurationError(
                f"TransientRetry.attempts must be at least 1 (total tries), got {self.attempts}", option="attempts"
            )
        if self.backoff_ms < 0:
            raise ConfigurationError(
                f"TransientRetry.backoff_ms must be >= 0, got {self.backoff_ms}", option="backoff_ms"
            )


async def run_with_retry(
    fn: Callable[[], Awaitable[T]],
    retry: TransientRetry | None,
    *,
    on_retry: Callable[[int, BaseException], None] | None = None,
) -> T:
    """Call `fn` until it succeeds, a non-transient error occurs, or `retry.attempts` tries are used.

    `on_retry(attempt, exc)` is called before each retry with the 1-based number of the failed attempt.
    The last error (or the first non-transient one) is re-raised unchanged. `retry=None` = one plain call.
    """
    if retry is None:
        return await fn()
    attempt = 1
    while True:
        try:
            return await fn()
        except Exception as exc:
            if attempt >= retry.attempts or not retry.classify(exc):
                raise
            if on_retry is not None:
                on_retry(attempt, exc)
            await asyncio.sleep(retry.backoff_ms * attempt / 1000)
            attempt += 1
