"""What one governed model step costs the database on SQLite and PostgreSQL, counted with SQLAlchemy events
(issue #18).

The counts are the budget: a change that adds a statement or a transaction to the hot path fails here, so
the gain does not erode silently. Lower is fine (update the numbers down). Timing is never asserted.
On PostgreSQL what a unit costs is its round trips: each statement is one, and a transaction adds two
(BEGIN, COMMIT); a unit run in autocommit (one statement, or a read) has none of those two.
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

# Per tool-calling model step: the previous tool's result with the reservation (3 statements: the result, the
# reservation row, the conditional grant), the assistant step — settle, thread bump, message, usage row, rollup
# and the tool call's start row — (7). Two write transactions, and no other write: the tool call's start joins
# the assistant step's transaction, its result the next step's reservation.
STEP_STATEMENTS = 10
STEP_TRANSACTIONS = 2
# A whole run with one tool step and the final answer, on an existing thread: the service's budget check and
# thread read, run start (the loop does not check the budget again an instant after the service did: the inline
# runner starts it at once), the user message with the history read after it and the first model call's
# reservation (one transaction), prices, two model steps — the last with the run's end — and the test's read of
# the finished run; the run start and end each add the run to the daily run rollup. The one-statement units
# (thread and run reads, prices) need no transaction; five of the six transactions write (seven and six before
# the first reservation joined the history's read).
RUN_STATEMENTS = 30
RUN_TRANSACTIONS = 6
RUN_WRITE_TRANSACTIONS = 5
# PostgreSQL: a tool-calling step is TWO statements in autocommit — the previous tool's result with the budget
# reservation, and the assistant step (settle + message + thread bump + usage row + rollup + the tool call's
# start row) — as data-modifying CTEs: two round trips and two commits (it was nineteen round trips: 11
# statements in 4 BEGIN/COMMIT transactions; then four statements).
PG_STEP_STATEMENTS = 2
PG_STEP_TRANSACTIONS = 0
# The whole run: the same units as on SQLite, each ONE statement — the run start with its rollup and active
# stream, the user message with the thread bump, the history read (thread, messages, tool calls as JSON arrays)
# and the first model call's reservation (8 statements before it joined), the last model step with the run end
# (title, compare-and-set and rollup), and the service's quota check (rules and counters) one read of JSON
# arrays — all in autocommit: not one BEGIN/COMMIT.
PG_RUN_STATEMENTS = 7
PG_RUN_TRANSACTIONS = 0


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
    transactions: int = 0  # real ones: BEGIN … COMMIT (not autocommit)
    write_transactions: int = 0
    through_async_engine: int = 0

    def __sub__(self, other: Counts) -> Counts:
        return Counts(
            statements=self.statements - other.statements,
            transactions=self.transactions - other.transactions,
            write_transactions=self.write_transactions - other.write_transactions,
        )


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
            options = conn.get_execution_options()
            if options.get("isolation_level") == "AUTOCOMMIT":
                return  # the driver sends no BEGIN/COMMIT: the statement commits by itself
            counts.transactions += 1
            counts.write_transactions += bool(options.get(WRITE, False))

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


async def _step_and_run_counts(url: str) -> tuple[Counts, Counts]:
    """(one tool step, a whole run with one tool step) on a thread that already had a run."""
    backend = await open_sql_backend(url, auto_create_tables=True)
    budget = Budget(tokens_per_actor=10**9)
    config = AgentConfig(model=FakeModel(script), tools=[add], store=backend.store, quota=backend.quota(budget))
    actor = Actor("alice", roles=("user",))
    engines = {"async": backend.engine.sync_engine}
    units = units_for(backend.engine).sync_engine
    if units is not backend.engine.sync_engine:
        engines["units"] = units
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
    return two - one, one


async def test_one_governed_step_stays_within_its_statement_and_transaction_budget(tmp_path: Path) -> None:
    step, one = await _step_and_run_counts(f"sqlite:///{tmp_path / 'agent.db'}")
    assert step.statements <= STEP_STATEMENTS and step.transactions <= STEP_TRANSACTIONS, step
    assert step.write_transactions == step.transactions  # a model step only writes
    assert one.statements <= RUN_STATEMENTS and one.transactions <= RUN_TRANSACTIONS, one
    assert one.write_transactions <= RUN_WRITE_TRANSACTIONS, one
    # The hot path never goes through aiosqlite (a thread hop per statement): every unit is the store's own.
    assert one.through_async_engine == 0, one


async def test_a_governed_step_on_postgresql_is_two_round_trips_and_no_transaction(postgres_url: str) -> None:
    step, one = await _step_and_run_counts(postgres_url)
    assert step.statements <= PG_STEP_STATEMENTS and step.transactions <= PG_STEP_TRANSACTIONS, step
    assert one.statements <= PG_RUN_STATEMENTS and one.transactions <= PG_RUN_TRANSACTIONS, one
