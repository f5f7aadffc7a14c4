"""`SqlAgentStore.open_run`: a chat's start in ONE write, storing exactly what the three separate writes stored.

The rows of every table a start touches (thread, run, run owner, run rollup) are compared, on both backends,
with those `create_thread` + `SqlLeaseStore.claim_run` + `record_run_start(active_stream=True)` leave; the
store-issued instants (the thread's `created_at`/`updated_at`, the owner's `claimed_at`) and the thread id
the store picks are the only values that may differ. The statement and transaction counts of a chat's start
are the budget, as in test_step_statements.py: a change that splits it again fails here.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from agora_agent import Actor, AgentConfig, AgentService
from agora_agent.records import RunRecord
from agora_agent.stores.base import NewThread
from agora_agent.stores.sql import SqlBackend, open_sql_backend
from agora_agent.stores.sql.leases import SqlLeaseStore
from agora_agent.stores.sql.tables import run, run_daily, run_owner, thread
from agora_agent.stores.sql.units import units_for
from agora_agent.testing import FakeModel, ScriptedTurn

from .test_step_statements import counting

T0 = datetime(2026, 12, 1, 9, 30, 0, 250000, tzinfo=UTC)
_ISSUED = {"created_at", "updated_at", "claimed_at"}  # instants the store issues itself


async def _rows(backend: SqlBackend) -> dict[str, list[dict[str, Any]]]:
    """Every row of the tables a run start writes, the store-issued instants left out."""
    out: dict[str, list[dict[str, Any]]] = {}
    async with backend.engine.connect() as conn:
        for table in (thread, run, run_owner, run_daily):
            rows = (await conn.execute(sa.select(table).order_by(*table.primary_key.columns))).mappings().all()
            out[table.name] = [{k: v for k, v in row.items() if k not in _ISSUED} for row in rows]
    return out


def _record(run_id: str, thread_id: str) -> RunRecord:
    return RunRecord(
        id=run_id, thread_id=thread_id, agent_name="support", actor_ref="alice", tenant_ref="acme", started_at=T0
    )


async def _three_writes(backend: SqlBackend) -> dict[str, list[dict[str, Any]]]:
    leases = SqlLeaseStore(backend.engine)
    made = await backend.store.create_thread(actor_ref="alice", tenant_ref="acme", persona="p1", thread_id="t-1")
    await leases.claim_run("r-1", "proc-1")
    await backend.store.record_run_start(_record("r-1", made.id), active_stream=True)
    await leases.claim_run("r-2", "proc-1")  # a second run on the same (now existing) thread
    await backend.store.record_run_start(_record("r-2", made.id), active_stream=True)
    return await _rows(backend)


async def _open_run(backend: SqlBackend) -> dict[str, list[dict[str, Any]]]:
    spec = NewThread(actor_ref="alice", tenant_ref="acme", persona="p1", thread_id="t-1")
    opened = await backend.store.open_run(_record("r-1", ""), new_thread=spec, owner_id="proc-1", active_stream=True)
    assert opened.thread is not None and opened.run.thread_id == "t-1"
    await backend.store.open_run(_record("r-2", "t-1"), owner_id="proc-1", active_stream=True)
    assert await SqlLeaseStore(backend.engine).owners(["r-1", "r-2"]) == {"r-1": "proc-1", "r-2": "proc-1"}
    return await _rows(backend)


async def test_open_run_stores_the_rows_the_three_writes_stored(empty_db_url: str, tmp_path: Path) -> None:
    results = []
    for write in (_three_writes, _open_run):
        url = empty_db_url
        if url.startswith("sqlite"):
            url = f"sqlite:///{tmp_path / (write.__name__ + '.db')}"
        backend = await open_sql_backend(url, auto_create_tables=True)
        try:
            results.append(await write(backend))
            if not url.startswith("sqlite"):  # one PostgreSQL database: empty it for the other way
                async with backend.engine.begin() as conn:
                    for table in (run_owner, run_daily, run, thread):
                        await conn.execute(sa.delete(table))
        finally:
            await backend.close()
    old, new = results
    assert old == new
    assert [r["active_stream_id"] for r in new["agent_thread"]] == ["r-2"]
    assert [(r["runs"], r["running"]) for r in new["agent_run_daily"]] == [(2, 2)]


# A chat's start on a new thread, on a SQLite file: ONE write transaction — the thread (inserted with its active
# stream), the run row, the run rollup and the run owner: four statements (it was three transactions).
START_STATEMENTS = 4
START_TRANSACTIONS = 1
# On an existing thread: the service's ownership read (one statement, no transaction), then the same one
# transaction, whose first statement sets the active stream only on a live thread.
START_ON_THREAD_STATEMENTS = 5
# PostgreSQL: the whole start is ONE statement in autocommit (data-modifying CTEs), on an existing thread
# after the ownership read.
PG_START_STATEMENTS = 1
PG_START_ON_THREAD_STATEMENTS = 2


async def _start_counts(url: str) -> tuple[Any, Any]:
    """The counts of `service.chat` (everything stored before its stream opens) on a new thread, then on it."""
    await (await open_sql_backend(url, auto_create_tables=True)).close()  # the schema, as `db upgrade` makes it
    config = AgentConfig(model=FakeModel(lambda request, i: ScriptedTurn(text="ok")), store=url)
    alice = Actor("alice", roles=("user",))
    async with AgentService.from_config(config) as service:
        backend = service._backend
        assert service.leases is not None  # a URL store: the run owner is recorded with the run
        engines = {"async": backend.engine.sync_engine}
        units = units_for(backend.engine).sync_engine
        if units is not backend.engine.sync_engine:
            engines["units"] = units
        with counting(engines) as fresh:
            started = await service.chat(alice, "hi")  # returns before the run takes its first step
        await service.runner.wait(started.run_id, 30)
        with counting(engines) as again:
            second = await service.chat(alice, "again", thread_id=started.thread_id)
        await service.runner.wait(second.run_id, 30)
        owners = await service.leases.owners([started.run_id, second.run_id])
        assert service.identity is not None
        assert owners == {started.run_id: service.identity.id, second.run_id: service.identity.id}
    return fresh, again


async def test_a_chats_start_on_sqlite_is_one_write_transaction(tmp_path: Path) -> None:
    fresh, again = await _start_counts(f"sqlite:///{tmp_path / 'agent.db'}")
    assert fresh.statements <= START_STATEMENTS and fresh.transactions <= START_TRANSACTIONS, fresh
    assert fresh.write_transactions == fresh.transactions and fresh.through_async_engine == 0, fresh
    assert again.statements <= START_ON_THREAD_STATEMENTS and again.transactions <= START_TRANSACTIONS, again


async def test_a_chats_start_on_postgresql_is_one_statement(postgres_url: str) -> None:
    fresh, again = await _start_counts(postgres_url)
    assert fresh.statements <= PG_START_STATEMENTS and fresh.transactions == 0, fresh
    assert again.statements <= PG_START_ON_THREAD_STATEMENTS and again.transactions == 0, again
