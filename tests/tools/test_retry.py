"""Transient retry of tool calls: classification and the retry loop (REFERENCE RETRY-01..07)."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path

import asyncpg.exceptions
import pytest
import sqlalchemy.exc

from agora_agent.errors import ConfigurationError
from agora_agent.tools.retry import TransientRetry, is_transient_error, run_with_retry


class MySQLError(Exception):
    """Shaped like PyMySQL/aiomysql errors: (errno, message) in args."""


class DriverError(Exception):
    def __init__(self, message: str, **attrs: object) -> None:
        super().__init__(message)
        for k, v in attrs.items():
            setattr(self, k, v)


def real_sqlite_lock_error(tmp_path: Path) -> sqlite3.OperationalError:
    """Provoke a genuine "database is locked" from SQLite: a second writer while the first holds the lock."""
    db = tmp_path / "locked.db"
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("CREATE TABLE t (x INTEGER)")
    holder.execute("BEGIN EXCLUSIVE")
    other = sqlite3.connect(db, timeout=0, isolation_level=None)
    try:
        other.execute("INSERT INTO t VALUES (1)")
    except sqlite3.OperationalError as exc:
        return exc
    finally:
        other.close()
        holder.execute("ROLLBACK")
        holder.close()
    raise AssertionError("SQLite did not report a lock")


@pytest.mark.ref("RETRY-03")
@pytest.mark.parametrize(
    "exc",
    [
        MySQLError(1213, "Deadlock found when trying to get lock"),
        MySQLError(1205, "Lock wait timeout exceeded"),
        DriverError("x", errno=1213),
        DriverError("x", code="ER_LOCK_WAIT_TIMEOUT"),
        DriverError("x", code="40001"),
        DriverError("x", pgcode="40P01"),
        DriverError("x", code="SQLITE_BUSY"),
        asyncpg.exceptions.SerializationError("could not serialize access"),
        asyncpg.exceptions.DeadlockDetectedError("deadlock detected"),
        sqlite3.OperationalError("database is locked"),
        sqlite3.OperationalError("database table is locked"),
        RuntimeError("Deadlock victim chosen"),
        RuntimeError("lock wait TIMEOUT"),
        RuntimeError("ERROR: could not serialize access due to Serialization Failure"),
    ],
    ids=repr,
)
def test_transient_errors_are_recognised(exc: BaseException) -> None:
    assert is_transient_error(exc) is True


@pytest.mark.ref("RETRY-03", "RETRY-07")
@pytest.mark.parametrize(
    "exc",
    [
        MySQLError(1062, "Duplicate entry"),
        DriverError("x", code="23505"),
        DriverError("x", errno=True),
        asyncpg.exceptions.UniqueViolationError("duplicate key"),
        sqlite3.OperationalError("no such table: orders"),
        ValueError("amount must be positive"),
        asyncio.CancelledError(),
        KeyboardInterrupt(),
    ],
    ids=repr,
)
def test_other_errors_are_not_transient(exc: BaseException) -> None:
    assert is_transient_error(exc) is False


@pytest.mark.ref("RETRY-03")
def test_a_real_sqlite_lock_is_transient(tmp_path: Path) -> None:
    exc = real_sqlite_lock_error(tmp_path)
    assert "locked" in str(exc)
    assert is_transient_error(exc) is True


@pytest.mark.ref("RETRY-03")
def test_sqlalchemy_wrapped_driver_errors_are_unwrapped(tmp_path: Path) -> None:
    locked = real_sqlite_lock_error(tmp_path)
    wrapped = sqlalchemy.exc.OperationalError("INSERT INTO t VALUES (?)", (1,), locked)
    assert wrapped.orig is locked
    assert is_transient_error(wrapped) is True
    pg = sqlalchemy.exc.DBAPIError("UPDATE t", None, asyncpg.exceptions.SerializationError("conflict"))
    assert is_transient_error(pg) is True
    other = sqlalchemy.exc.OperationalError("SELECT", None, sqlite3.OperationalError("no such table: t"))
    assert is_transient_error(other) is False


@pytest.mark.ref("RETRY-03")
def test_one_level_of_cause_is_checked_but_not_two() -> None:
    deadlock = MySQLError(1213, "x")
    try:
        try:
            raise deadlock
        except MySQLError as inner:
            raise RuntimeError("could not save the order") from inner
    except RuntimeError as outer:
        one_level = outer
    assert is_transient_error(one_level) is True

    two_levels = ValueError("tool failed")
    two_levels.__cause__ = one_level
    assert is_transient_error(two_levels) is False

    sqla_cause = RuntimeError("tool failed")
    sqla_cause.__cause__ = sqlalchemy.exc.OperationalError(
        "UPDATE", None, sqlite3.OperationalError("database is locked")
    )
    assert is_transient_error(sqla_cause) is True


def test_self_cause_does_not_loop() -> None:
    exc = ValueError("odd")
    exc.__cause__ = exc
    assert is_transient_error(exc) is False


class Flaky:
    """Fails with the given errors in turn, then returns "ok"."""

    def __init__(self, *errors: BaseException) -> None:
        self.errors = list(errors)
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "ok"


@pytest.mark.ref("RETRY-01", "RETRY-06")
async def test_a_transient_failure_is_retried_once_by_default() -> None:
    fn = Flaky(MySQLError(1213, "deadlock"))
    retries: list[tuple[int, BaseException]] = []
    assert await run_with_retry(fn, TransientRetry(backoff_ms=1), on_retry=lambda n, e: retries.append((n, e))) == "ok"
    assert fn.calls == 2
    assert [n for n, _ in retries] == [1]


@pytest.mark.ref("RETRY-01", "RETRY-06")
async def test_the_last_failure_is_reraised_unchanged_after_all_attempts() -> None:
    last = MySQLError(1205, "lock wait timeout")
    fn = Flaky(MySQLError(1213, "a"), MySQLError(1213, "b"), last, MySQLError(1213, "never"))
    attempts: list[int] = []
    with pytest.raises(MySQLError) as info:
        await run_with_retry(fn, TransientRetry(attempts=3, backoff_ms=1), on_retry=lambda n, e: attempts.append(n))
    assert info.value is last
    assert fn.calls == 3
    assert attempts == [1, 2]  # the final failure is not reported as a retry


@pytest.mark.ref("RETRY-07")
async def test_a_non_transient_error_surfaces_at_once() -> None:
    boom = ValueError("card declined")
    fn = Flaky(boom)
    attempts: list[int] = []
    with pytest.raises(ValueError) as info:
        await run_with_retry(fn, TransientRetry(attempts=5, backoff_ms=1), on_retry=lambda n, e: attempts.append(n))
    assert info.value is boom and fn.calls == 1 and attempts == []


@pytest.mark.ref("RETRY-01")
async def test_no_retry_config_means_one_plain_call() -> None:
    fn = Flaky(MySQLError(1213, "deadlock"))
    with pytest.raises(MySQLError):
        await run_with_retry(fn, None)
    assert fn.calls == 1


@pytest.mark.ref("RETRY-02")
async def test_backoff_grows_with_the_attempt_number() -> None:
    fn = Flaky(MySQLError(1213, "a"), MySQLError(1213, "b"))
    stamps: list[float] = []
    start = time.monotonic()
    await run_with_retry(
        fn, TransientRetry(attempts=3, backoff_ms=40), on_retry=lambda n, e: stamps.append(time.monotonic())
    )
    total = time.monotonic() - start
    assert fn.calls == 3
    assert stamps[1] - stamps[0] >= 0.039  # wait after attempt 1 = 40 ms (minus clock resolution)
    assert total >= 0.118  # then 80 ms after attempt 2


@pytest.mark.ref("RETRY-01")
async def test_custom_classifier_decides() -> None:
    fn = Flaky(ValueError("retry me"))
    assert await run_with_retry(fn, TransientRetry(backoff_ms=0, classify=lambda e: isinstance(e, ValueError))) == "ok"
    assert fn.calls == 2


@pytest.mark.ref("RETRY-04")
async def test_cancellation_is_never_retried() -> None:
    fn = Flaky(asyncio.CancelledError())
    with pytest.raises(asyncio.CancelledError):
        await run_with_retry(fn, TransientRetry(attempts=3, backoff_ms=1, classify=lambda e: True))
    assert fn.calls == 1


def test_invalid_retry_settings_are_configuration_errors() -> None:
    with pytest.raises(ConfigurationError) as attempts:
        TransientRetry(attempts=0)
    assert attempts.value.option == "attempts"
    with pytest.raises(ConfigurationError) as backoff:
        TransientRetry(backoff_ms=-1)
    assert backoff.value.option == "backoff_ms"
