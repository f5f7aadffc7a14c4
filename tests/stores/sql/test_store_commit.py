"""`store_commit="effects"` on PostgreSQL: which commits stop waiting for the WAL flush, and that nothing else changes.

Only the statements that end in a budget reservation (the user's message with the thread's read, a tool's result)
carry `set_config('synchronous_commit', 'off', true)`: each precedes a model call and nothing else. The tool call's
start (before the tool runs), the run's start and end keep waiting for the disk, and the connections' own setting
stays `on`. What is stored is the same as with the default.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
import sqlalchemy as sa

from agora_agent import Actor, AgentConfig, AgentService, Budget, ConfigurationError
from agora_agent.messages import ModelRequest
from agora_agent.stores.sql import open_sql_backend
from agora_agent.stores.sql.units import units_for
from agora_agent.testing import FakeModel, ScriptedTurn
from agora_agent.testing.helpers import OBSERVER
from tests.stores.sql.test_step_statements import add, script

DEFERRED = "set_config('synchronous_commit', 'off', true)"
ALICE = Actor("alice", roles=("user",))


async def _run(url: str, store_commit: Any) -> tuple[list[str], dict[str, Any]]:
    """Two tool steps and the answer, on a new thread: the SQL of every statement sent, and what was stored."""
    await (await open_sql_backend(url, auto_create_tables=True)).close()  # the schema (PostgreSQL needs it made)
    budget = Budget(tokens_per_actor=10**9)
    config = AgentConfig(model=FakeModel(script), tools=[add], store=url, budget=budget, store_commit=store_commit)
    sent: list[str] = []

    def on_statement(conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        sent.append(statement)

    async with AgentService.from_config(config) as service:
        warm_up = await service.chat(ALICE, "1")  # the day's budget counter exists before the counted run
        await service.wait_for_run(OBSERVER, warm_up)
        engine = service._backend.engine  # type: ignore[union-attr]
        sa.event.listen(engine.sync_engine, "before_cursor_execute", on_statement)
        try:
            started = await service.chat(ALICE, "2")
            run = await service.wait_for_run(OBSERVER, started)
        finally:
            sa.event.remove(engine.sync_engine, "before_cursor_execute", on_statement)
        assert run.status == "completed"
        messages = await service.store.list_messages(started.thread_id)
        calls = await service.store.list_tool_calls(thread_id=started.thread_id)
        async with engine.connect() as conn:
            counters = (await conn.execute(sa.text("SELECT reserved_tokens FROM agent_budget_counter"))).all()
            held = (await conn.execute(sa.text("SELECT count(*) FROM agent_budget_reservation"))).scalar()
        setting = []
        if engine.dialect.name == "postgresql":  # the kept connections the run's statements went through
            for kept in units_for(engine)._idle:  # type: ignore[attr-defined]
                setting.append((await kept.exec_driver_sql("SHOW synchronous_commit")).scalar())
        stored = {
            "messages": [(m.role, m.content, len(m.tool_calls or ())) for m in messages],
            "calls": [(c.tool_name, c.status, c.output) for c in calls],
            "reserved": [row[0] for row in counters],
            "open reservations": held,
            "connection setting": setting,
        }
    return sent, stored


async def test_effects_defers_only_the_commits_before_a_model_call(postgres_url: str) -> None:
    sent, stored = await _run(postgres_url, "effects")
    writes = [s for s in sent if s.lstrip().upper().startswith(("WITH", "INSERT", "UPDATE", "DELETE"))]
    deferred = [s for s in writes if DEFERRED in s]
    # the user's message with the thread's read and the first reservation, then each tool's result with the next
    assert len(deferred) == 3, deferred
    assert all("granted" in s for s in deferred)
    flushed = [s for s in writes if DEFERRED not in s]
    assert any("called" in s for s in flushed)  # the tool call's start, before the tool runs
    assert any("run_ended" in s for s in flushed)  # the run's end
    assert any("started" in s for s in flushed)  # the run's start
    assert not any("granted" in s for s in flushed)
    # each model step after a deferred commit is written only on the server that took it
    steps = [s for s in flushed if "inserted" in s and "ledger" in s]
    assert len(steps) == 3 and all("pg_postmaster_start_time()" in s for s in steps)
    assert stored["connection setting"] and set(stored["connection setting"]) == {"on"}  # per transaction only

    _, by_default = await _run(postgres_url, "sync")
    assert stored == by_default  # what is stored is the same


async def test_by_default_every_commit_waits(postgres_url: str) -> None:
    sent, _ = await _run(postgres_url, "sync")
    assert not any(DEFERRED in s for s in sent)


async def test_sqlite_takes_effects_and_changes_nothing(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'agent.db'}"
    sent, stored = await _run(url, "effects")
    assert not any(DEFERRED in s for s in sent)
    assert stored["calls"] == [("add", "executed", 1), ("add", "executed", 2)]


async def test_store_commit_is_checked_at_configuration() -> None:
    with pytest.raises(ConfigurationError, match="store_commit"):
        AgentConfig(model=FakeModel(script), store="sqlite:///x.db", store_commit="fast")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="open_sql_backend"):
        AgentConfig(model=FakeModel(script), store_commit="effects")
    with pytest.raises(ConfigurationError, match="store_commit"):
        await open_sql_backend("sqlite://", store_commit="later")  # type: ignore[arg-type]


async def test_a_model_step_is_not_written_on_a_server_restarted_after_a_deferred_commit(postgres_url: str) -> None:
    """The server restarting between a deferred commit and the run's next model step (simulated: the start time
    the deferred commit reported is made older than the server's) fails the run instead of writing the step on
    top of what the restart may have lost."""
    await (await open_sql_backend(postgres_url, auto_create_tables=True)).close()
    units: list[Any] = []

    def restarting(request: ModelRequest, index: int) -> ScriptedTurn:
        for run_id in units[0].deferred_runs:  # the model call runs after the user message's deferred commit
            units[0].deferred_runs[run_id] = datetime(2000, 1, 1, tzinfo=UTC)
        return ScriptedTurn(text="written on a server that may have lost the message")

    budget = Budget(tokens_per_actor=10**9)
    config = AgentConfig(model=FakeModel(restarting), store=postgres_url, budget=budget, store_commit="effects")
    async with AgentService.from_config(config) as service:
        units.append(units_for(service._backend.engine))  # type: ignore[union-attr]
        started = await service.chat(ALICE, "hello")
        run = await service.wait_for_run(OBSERVER, started)
        messages = await service.store.list_messages(started.thread_id)
    assert run.status == "failed" and "restarted" in (run.error or ""), run
    assert [m.role for m in messages] == ["user"]  # the step wrote nothing
