"""What one governed model step costs the database on SQLite, counted with SQLAlchemy events (issue #18).

The counts are the budget: a change that adds a statement or a transaction to the hot path fails here, so
the gain does not erode silently. Lower is fine (update the numbers down). Timing is never asserted.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from agora_agent import Actor, AgentConfig, AgentService, Budget, tool
from agora_agent.messages import ModelRequest
from agora_agent.stores.sql import open_sql_backend
from agora_agent.stores.sql.engine import WRITE
from agora_agent.stores.sql.units import units_for
from agora_agent.testing import FakeModel, ScriptedTurn, ToolCallRequest
from agora_agent.testing.helpers import OBSERVER

# Per tool-calling model step: reserve (3 statements), the assistant step — settle, message, usage row,
# rollup — (6), the tool call's start (1) and its result (1); four write transactions.
STEP_STATEMENTS = 11
STEP_TRANSACTIONS = 4
# A whole run with one tool step and the final answer, on an existing thread: the service's budget check and
# thread read, run start, the loop's budget check, user message, history, prices, two model steps, run end,
# and the test's read of the finished run; the run start and end each add the run to the daily run rollup.
# Nine of the fourteen transactions write.
RUN_STATEMENTS = 34
RUN_TRANSACTIONS = 14
RUN_WRITE_TRANSACTIONS = 9


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def script(request: ModelRequest, _index: int) -> ScriptedTurn:
    """Tool steps as many as the user message says, then "done"."""
    wanted = int(next(m.content for m in reversed(request.messages) if m.role == "user"))
    done = 0
    for m in reversed(request.messages):
        if m.role == "user":
            break
        done += m.role == "assistant"
    if done < wanted:
        return ScriptedTurn(tool_calls=[ToolCallRequest(name="add", input={"a": done, "b": 1})])
    return ScriptedTurn(text="done")


@dataclass
class Counts:
    statements: int = 0
    transactions: int = 0
    write_transactions: int = 0
    through_async_engine: int = 0


@contextmanager
def counting(engines: dict[str, sa.Engine]) -> Iterator[Counts]:
    counts = Counts()

    def listeners(name: str) -> tuple[Any, Any]:
        def on_statement(conn: Any, cursor: Any, statement: str, *_: Any) -> None:
            if statement.startswith("BEGIN"):
                return
            counts.statements += 1
            if name == "async":
                counts.through_async_engine += 1

        def on_begin(conn: sa.Connection) -> None:
            counts.transactions += 1
            counts.write_transactions += bool(conn.get_execution_options().get(WRITE, False))

        return on_statement, on_begin

    attached = {name: listeners(name) for name in engines}
    for name, engine in engines.items():
        sa.event.listen(engine, "before_cursor_execute", attached[name][0])
        sa.event.listen(engine, "begin", attached[name][1])
    try:
        yield counts
    finally:
        for name, engine in engines.items():
            sa.event.remove(engine, "before_cursor_execute", attached[name][0])
            sa.event.remove(engine, "begin", attached[name][1])


async def test_one_governed_step_stays_within_its_statement_and_transaction_budget(tmp_path: Path) -> None:
    backend = await open_sql_backend(f"sqlite:///{tmp_path / 'agent.db'}")
    budget = Budget(tokens_per_actor=10**9)
    config = AgentConfig(model=FakeModel(script), tools=[add], store=backend.store, quota=backend.quota(budget))
    actor = Actor("alice", roles=("user",))
    engines = {"async": backend.engine.sync_engine, "units": units_for(backend.engine).sync_engine}
    try:
        async with AgentService.from_config(config) as service:
            first = await service.chat(actor, "1")
            await service.wait_for_run(OBSERVER, first.run_id)

            async def counted_run(tool_steps: int) -> Counts:
                with counting(engines) as counts:
                    started = await service.chat(actor, str(tool_steps), thread_id=first.thread_id)
                    await service.runner.wait(started.run_id, 30)  # the run's own statements only
                run = await service.wait_for_run(OBSERVER, started.run_id)
                assert run.status == "completed" and run.step_count == tool_steps + 1
                return counts

            one, two = await counted_run(1), await counted_run(2)
            calls = await service.store.list_tool_calls(thread_id=first.thread_id)
    finally:
        await backend.close()

    assert [c.status for c in calls] == ["executed"] * 4  # the counted runs did their work
    step = Counts(
        statements=two.statements - one.statements,
        transactions=two.transactions - one.transactions,
        write_transactions=two.write_transactions - one.write_transactions,
    )
    assert step.statements <= STEP_STATEMENTS and step.transactions <= STEP_TRANSACTIONS, step
    assert step.write_transactions == step.transactions  # a model step only writes
    assert one.statements <= RUN_STATEMENTS and one.transactions <= RUN_TRANSACTIONS, one
    assert one.write_transactions <= RUN_WRITE_TRANSACTIONS, one
    # The hot path never goes through aiosqlite (a thread hop per statement): every unit is the store's own.
    assert one.through_async_engine == 0 and two.through_async_engine == 0, (one, two)
