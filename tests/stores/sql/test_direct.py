"""`stores/sql/direct.py`: a statement run on the driver returns exactly what SQLAlchemy's `execute` returns,
sends the same values, and fails with the same SQLAlchemy errors — on SQLite and PostgreSQL.

Each hot-path statement is run both ways on the same rows and the results compared value for value
(timestamps through their type decorator, JSON, booleans, floats, NULLs, RETURNING rows, row counts).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
import sqlalchemy as sa

from agora_agent.stores.sql import SqlBackend, direct
from agora_agent.stores.sql import store as sql_store
from agora_agent.stores.sql.units import units_for

NOW = datetime(2026, 12, 1, 13, 0, 0, 123456, tzinfo=UTC)


def _thread(thread_id: str) -> dict[str, Any]:
    return {
        "id": thread_id,
        "actor_ref": "alice",
        "tenant_ref": None,
        "title": "a \u00e9 title",
        "persona": "default",
        "transient": False,
        "created_at": NOW,
        "updated_at": NOW,
        "deleted_at": None,
        "pinned_at": None,
        "active_stream_id": None,
    }


def _message(message_id: str, thread_id: str) -> dict[str, Any]:
    return {
        "id": message_id,
        "thread_id": thread_id,
        "role": "assistant",
        "content": "hello",
        "tool_calls": [{"id": "c1", "name": "add", "input": {"a": 1.5, "b": [1, None, "x"]}}],
        "attachments": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
        "persona": None,
        "run_id": "r1",
        "created_at": NOW,
    }


async def _both(backend: SqlBackend, stmt: Any, params: dict[str, Any], *, keyed: bool = False) -> tuple[Any, Any]:
    """(direct result, SQLAlchemy result) of the same read-only statement."""
    units = units_for(backend.engine)
    fast = await units.one(stmt, params, write=False, keyed=keyed)
    slow = await units.run(lambda conn: direct.via_sqlalchemy(conn, stmt, params), write=False)
    return fast, slow


async def test_reads_return_what_sqlalchemy_returns(sql_backend: SqlBackend) -> None:
    units = units_for(sql_backend.engine)
    await units.one(sql_store._INSERT["agent_thread"], _thread("t1"), write=True, keyed=True)
    await units.run(lambda conn: conn.execute(sql_store._INSERT_MESSAGE, _message("m1", "t1")), write=True)
    for stmt, params in (
        (sql_store._THREAD, {"tid": "t1"}),
        (sql_store._MESSAGES_OF, {"tid": "t1"}),
        (sql_store._MESSAGE_BY_ID, {"mid": "m1"}),
        (sql_store._THREAD, {"tid": "missing"}),
    ):
        fast, slow = await _both(sql_backend, stmt, params)
        assert fast.rows == slow.rows
    fast, _ = await _both(sql_backend, sql_store._THREAD, {"tid": "t1"})
    row = fast.one()
    assert row["created_at"] == NOW and row["created_at"].tzinfo is not None
    assert row["transient"] is False and row["title"] == "a \u00e9 title"
    message = (await units.one(sql_store._MESSAGE_BY_ID, {"mid": "m1"}, write=False)).one()
    assert message["tool_calls"] == _message("m1", "t1")["tool_calls"]
    assert message["usage"] == {"input_tokens": 10, "output_tokens": 5}


async def test_writes_store_what_sqlalchemy_stores(sql_backend: SqlBackend) -> None:
    units = units_for(sql_backend.engine)
    await units.one(sql_store._INSERT["agent_thread"], _thread("fast"), write=True, keyed=True)
    await units.run(lambda conn: conn.execute(sql_store._INSERT["agent_thread"], _thread("slow")), write=True)
    rows = await units.run(
        lambda conn: conn.execute(sa.select(sql_store.thread).order_by(sql_store.thread.c.id)).mappings().all(),
        write=False,
    )
    fast, slow = ({k: v for k, v in r.items() if k != "id"} for r in rows)
    assert fast == slow
    # a message (JSON columns, Python None in them) written both ways: the same stored values, byte for byte
    await units.run(
        lambda conn: direct.execute(conn, sql_store._INSERT_MESSAGE, _message("mf", "fast"), keyed=True), write=True
    )
    await units.run(lambda conn: conn.execute(sql_store._INSERT_MESSAGE, _message("ms", "fast")), write=True)
    m = sql_store.message.c
    as_text = [sa.cast(c, sa.Text) if isinstance(c.type, sa.JSON) else c for c in sql_store.message.columns]
    stored = await units.run(
        lambda conn: conn.execute(sa.select(*as_text).where(m.thread_id == "fast").order_by(m.seq)).all(), write=False
    )
    assert [tuple(v for k, v in zip(m.keys(), r, strict=True) if k not in ("id", "seq")) for r in stored] == [
        tuple(v for k, v in zip(m.keys(), stored[0], strict=True) if k not in ("id", "seq"))
    ] * 2
    assert stored[0][list(m.keys()).index("attachments")] == "null"  # JSON null, as SQLAlchemy writes None
    # UPDATE … RETURNING and a row count
    bumped = await units.one(sql_store._BUMP_THREAD, {"tid": "fast", "now": NOW}, write=True)
    assert bumped.rowcount == 1 and bumped.rows == []
    missing = await units.one(sql_store._BUMP_THREAD, {"tid": "nope", "now": NOW}, write=True)
    assert missing.rowcount == 0


async def test_a_duplicate_key_is_sqlalchemys_integrity_error(sql_backend: SqlBackend) -> None:
    units = units_for(sql_backend.engine)
    await units.one(sql_store._INSERT["agent_thread"], _thread("dup"), write=True, keyed=True)
    with pytest.raises(sa.exc.IntegrityError):
        await units.one(sql_store._INSERT["agent_thread"], _thread("dup"), write=True, keyed=True)
    # the connection is still usable afterwards
    assert (await units.one(sql_store._THREAD, {"tid": "dup"}, write=False)).one()["id"] == "dup"


async def test_the_engines_statement_listeners_see_every_direct_statement(sql_backend: SqlBackend) -> None:
    units = units_for(sql_backend.engine)
    seen: list[str] = []

    def on_statement(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        seen.append(statement.split(None, 1)[0])

    engines = {sql_backend.engine.sync_engine, units.sync_engine}
    for engine in engines:
        sa.event.listen(engine, "before_cursor_execute", on_statement)
    try:
        await units.one(sql_store._THREAD, {"tid": "x"}, write=False)
        await units.one(sql_store._INSERT["agent_thread"], _thread("x"), write=True, keyed=True)
    finally:
        for engine in engines:
            sa.event.remove(engine, "before_cursor_execute", on_statement)
    assert seen == ["SELECT", "INSERT"]


def test_a_statement_with_python_side_defaults_is_refused() -> None:
    table = sa.Table(
        "t", sa.MetaData(), sa.Column("id", sa.Integer, primary_key=True), sa.Column("x", sa.Integer, default=1)
    )
    with pytest.raises(TypeError, match="not a direct statement"):
        direct.compiled(sa.insert(table), sa.create_engine("sqlite://").dialect, ["id"])


async def test_load_thread_returns_what_the_per_table_reads_return(sql_backend: SqlBackend) -> None:
    """On PostgreSQL `load_thread` is one statement of JSON aggregates: the records it builds equal those the
    plain per-table reads build (timestamps, JSON values with floats and nulls, booleans, non-ASCII text)."""
    from agora_agent.messages import ToolCall
    from agora_agent.records import ToolCallRecord

    store = sql_backend.store
    thread = await store.create_thread(actor_ref="alice", title="t \u00e9")
    first = await store.append_message(thread_id=thread.id, role="user", content="h\u00e9llo \u2603", run_id="r1")
    call = ToolCall(id="c1", name="add", input={"a": 1.25, "b": [None, 0.1, "x"], "c": {"d": True}})
    asked = await store.append_message(
        thread_id=thread.id, role="assistant", content="", run_id="r1", tool_calls=[call], usage={"cost": 0.000123}
    )
    await store.record_tool_call(
        ToolCallRecord(
            id="c1",
            run_id="r1",
            thread_id=thread.id,
            message_id=asked.id,
            tool_name="add",
            tool_type="read",
            input=call.input,
            output={"sum": 1.35, "none": None},
            status="executed",
            actor_ref="alice",
            created_at=NOW,
            executed_at=NOW,
            execution_ms=7,
        )
    )
    await store.append_message(thread_id=thread.id, role="assistant", content="done", run_id="r1")
    full = await store.load_thread(thread.id)
    assert full.complete and full.thread == await store.get_thread(thread.id)
    assert full.messages == await store.list_messages(thread.id)
    assert full.tool_calls == await store.list_tool_calls(thread_id=thread.id)
    since = await store.load_thread(thread.id, after=first.id)
    assert not since.complete and since.messages == full.messages[1:] and since.tool_calls == full.tool_calls
    gone = await store.load_thread(thread.id, after="no-such-message")
    assert gone.complete and gone.messages == full.messages
    assert (await store.load_thread("no-such-thread")).thread is None
