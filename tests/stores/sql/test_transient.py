"""RETRY-03 for store writes: a real PostgreSQL deadlock is classified transient and the transaction re-run."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

import pytest
import sqlalchemy as sa

from agora_agent.stores.sql import SqlBackend, create_engine_from_url, open_sql_backend
from agora_agent.stores.sql.engine import is_transient_db_error, retry_transient
from agora_agent.stores.sql.tables import budget_counter
from agora_agent.stores.sql.units import units_for
from tests.stores.sql.conftest import empty_database


@pytest.mark.ref("RETRY-03")
def test_classifier_matches_codes_and_messages_one_cause_deep() -> None:
    class Driver(Exception):
        def __init__(self, message: str, sqlstate: str | None = None) -> None:
            super().__init__(message)
            self.sqlstate = sqlstate

    assert is_transient_db_error(Driver("boom", "40P01"))
    assert is_transient_db_error(Driver("could not serialize access due to concurrent update", "40001"))
    assert is_transient_db_error(Driver("database is locked"))
    wrapped = sa.exc.OperationalError("INSERT …", {}, Driver("deadlock detected"))
    assert is_transient_db_error(wrapped)
    assert not is_transient_db_error(sa.exc.IntegrityError("INSERT …", {}, Driver("duplicate key", "23505")))


@pytest.mark.slow
@pytest.mark.ref("RETRY-03")
async def test_a_real_deadlock_is_retried_and_both_transactions_land(tmp_path: Path) -> None:
    async with empty_database("postgres", tmp_path) as url:
        backend: SqlBackend = await open_sql_backend(url, auto_create_tables=True)
        try:
            async with backend.engine.begin() as conn:
                for key in ("a", "b"):
                    await conn.execute(sa.insert(budget_counter).values(scope="actor", key=key, period="p"))
            both_hold_first_lock = asyncio.Barrier(2)
            attempts = {"ab": 0, "ba": 0}

            def bump(key: str) -> sa.Update:
                return (
                    sa.update(budget_counter)
                    .where(budget_counter.c.key == key)
                    .values(used_tokens=budget_counter.c.used_tokens + 1)
                )

            async def locks_in_order(first: str, second: str) -> None:
                async def transaction() -> None:
                    attempts[first + second] += 1
                    engine = create_engine_from_url(url)
                    try:
                        async with engine.begin() as conn:
                            await conn.execute(bump(first))
                            if attempts[first + second] == 1:
                                await both_hold_first_lock.wait()  # now each waits for the other's row
                            await conn.execute(bump(second))
                    finally:
                        await engine.dispose()

                await retry_transient(transaction)

            await asyncio.wait_for(asyncio.gather(locks_in_order("a", "b"), locks_in_order("b", "a")), timeout=30)
            assert sorted(attempts.values()) == [1, 2]  # PostgreSQL chose one victim; it ran again
            async with backend.engine.connect() as conn:
                used = dict((await conn.execute(sa.select(budget_counter.c.key, budget_counter.c.used_tokens))).all())
            assert used == {"a": 2, "b": 2}
        finally:
            await backend.close()


async def test_a_connection_the_server_dropped_is_replaced_without_a_ping(tmp_path: Path) -> None:
    """No pre-ping on PostgreSQL: the pooled connections are killed server-side, the next store call still works."""
    async with empty_database("postgres", tmp_path) as url:
        backend: SqlBackend = await open_sql_backend(url, auto_create_tables=True)
        try:
            store = backend.store
            thread = await store.create_thread(actor_ref="alice")
            admin = create_engine_from_url(url)
            try:
                async with admin.begin() as conn:
                    killed = await conn.scalar(
                        sa.text(
                            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
                        )
                    )
            finally:
                await admin.dispose()
            assert killed and killed >= 1  # the store's pooled connection is gone
            got = await store.get_thread(thread.id)
            assert got is not None and got.id == thread.id
            await store.append_message(thread_id=thread.id, role="user", content="still here")
            assert [m.content for m in await store.list_messages(thread.id)] == ["still here"]
        finally:
            await backend.close()


async def test_a_write_unit_that_finds_the_file_locked_waits_for_the_lock_and_lands(tmp_path: Path) -> None:
    """Another connection (another process, or a WAL recovery after a crash) holds the write lock when a unit
    begins: the unit's BEGIN IMMEDIATE fails at once on the inline connection and the unit runs again on the
    worker thread, which waits for the lock — it never fails with the bare driver error."""
    backend = await open_sql_backend(f"sqlite:///{tmp_path / 'locked.db'}", auto_create_tables=True)
    try:
        units = units_for(backend.engine)
        other = sqlite3.connect(tmp_path / "locked.db", isolation_level=None, check_same_thread=False)
        other.execute("BEGIN IMMEDIATE")
        timer = threading.Timer(0.3, lambda: other.execute("COMMIT"))
        timer.start()
        try:
            await units.run(lambda conn: conn.execute(sa.text("DELETE FROM agent_process")), write=True)
        finally:
            timer.join()
            other.close()
    finally:
        await backend.close()
