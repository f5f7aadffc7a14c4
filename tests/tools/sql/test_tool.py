"""The tool end to end: its spec, read-only execution, real timeouts, truncation, tenant binding, the fence."""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from agora_agent.actors import Actor
from agora_agent.errors import ConfigurationError
from agora_agent.tools.context import ToolContext
from agora_agent.tools.spec import Tool
from agora_agent.tools.sql import (
    SqlAccessDeniedError,
    SqlExecutionError,
    SqlTimeoutError,
    run_read_only,
    sql_tool,
)
from tests.tools.sql.conftest import POLICY, SCOPE, fingerprint, seed

ANALYST_A = Actor.of("u_a", ["analyst"], tenant_ref="A")


def ctx(actor: Actor = ANALYST_A) -> ToolContext:
    return ToolContext(actor=actor)


@pytest.fixture
async def sqlite_db(tmp_path: Path) -> AsyncIterator[AsyncEngine]:
    engine = create_async_engine(f"sqlite+aiosqlite:///{tmp_path / 'app.db'}")
    await seed(engine)
    yield engine
    await engine.dispose()


@pytest.fixture
async def postgres_db(postgres_url: str) -> AsyncIterator[AsyncEngine]:
    engine = create_async_engine(postgres_url)
    await seed(engine)
    yield engine
    await engine.dispose()


@pytest.mark.ref("DATA-01")
async def test_spec_is_a_read_tool_with_one_sql_field(sqlite_db: AsyncEngine) -> None:
    tool = sql_tool(sqlite_db, table_access=POLICY, roles=["analyst"], ability="reports.read")
    assert isinstance(tool, Tool)
    spec = tool.spec
    assert (spec.name, spec.kind, spec.roles, spec.ability) == ("query_database", "read", ("analyst",), "reports.read")
    schema = spec.json_schema()
    assert list(schema["properties"]) == ["sql"] and schema["required"] == ["sql"]
    assert schema["properties"]["sql"]["minLength"] == 1
    assert schema["properties"]["sql"]["description"].startswith("A single read-only SQLite SELECT statement")
    assert spec.input_model.model_validate({"sql": "SELECT 1"}).sql == "SELECT 1"  # type: ignore[attr-defined]


@pytest.mark.ref("DATA-02")
async def test_construction_fails_closed(sqlite_db: AsyncEngine) -> None:
    with pytest.raises(TypeError):
        sql_tool(sqlite_db)  # type: ignore[call-arg]
    for options, option in (
        ({"table_access": {}}, "table_access"),
        ({"table_access": POLICY, "max_rows": 0}, "max_rows"),
        ({"table_access": POLICY, "statement_timeout": 0}, "statement_timeout"),
    ):
        with pytest.raises(ConfigurationError) as bad:
            sql_tool(sqlite_db, **options)  # type: ignore[arg-type]
        assert bad.value.option == option


@pytest.mark.ref("DATA-08")
async def test_refusals_never_reach_the_database() -> None:
    # Nothing listens on port 1: a refusal that touched the database would fail with a connection error instead.
    engine = create_async_engine("postgresql+asyncpg://nobody@127.0.0.1:1/none")
    tool = sql_tool(engine, table_access=POLICY, tenant=SCOPE)
    with pytest.raises(SqlAccessDeniedError) as denied:
        await tool.invoke({"sql": "SELECT * FROM secrets"}, ctx())
    assert denied.value.tables == ("secrets",)
    await engine.dispose()


@pytest.mark.ref("DATA-09", "DATA-16")
async def test_result_shape_and_tenant_binding(sqlite_db: AsyncEngine) -> None:
    tool = sql_tool(sqlite_db, table_access=POLICY, tenant=SCOPE)
    result = await tool.invoke({"sql": "SELECT id, note FROM orders ORDER BY id"}, ctx())
    assert result == {
        "rows": [{"id": 1, "note": "100"}, {"id": 2, "note": "200"}],
        "rowCount": 2,
        "sql": result["sql"],
    }
    assert '"_scoped"."tenant_id" = ?' in result["sql"] and "'A'" not in result["sql"]
    # A hostile tenant value is bound, never spliced into the SQL.
    hostile = Actor.of("u_x", ["analyst"], tenant_ref="A' OR '1'='1")
    prepared = tool.prepare("SELECT * FROM orders", hostile)
    assert "OR '1'='1" not in prepared.sql and prepared.params == ("A' OR '1'='1",)
    assert (await tool.invoke({"sql": "SELECT * FROM orders"}, ctx(hostile)))["rows"] == []


@pytest.mark.ref("DATA-09")
@pytest.mark.parametrize("tenant_ref", [None, ""])
async def test_actor_without_tenant_sees_no_scoped_rows(sqlite_db: AsyncEngine, tenant_ref: str | None) -> None:
    tool = sql_tool(sqlite_db, table_access=POLICY, tenant=SCOPE)
    actor = Actor.of("u_none", ["analyst"], tenant_ref=tenant_ref)
    assert (await tool.invoke({"sql": "SELECT * FROM orders"}, ctx(actor)))["rows"] == []
    assert (await tool.invoke({"sql": "SELECT count(*) AS n FROM products"}, ctx(actor)))["rows"] == [{"n": 3}]


@pytest.mark.ref("DATA-09")
async def test_tool_without_tenant_scope_is_unscoped(sqlite_db: AsyncEngine) -> None:
    tool = sql_tool(sqlite_db, table_access=POLICY)
    result = await tool.invoke({"sql": "SELECT count(*) AS n FROM orders"}, ctx())
    assert result["rows"] == [{"n": 4}]


@pytest.mark.ref("DATA-13")
async def test_max_rows_caps_every_result(sqlite_db: AsyncEngine) -> None:
    tool = sql_tool(sqlite_db, table_access=POLICY, max_rows=2)
    result = await tool.invoke({"sql": "SELECT id FROM products LIMIT 500"}, ctx())
    assert result["rowCount"] == 2 and result["sql"].endswith("LIMIT 2")


@pytest.mark.ref("DATA-16")
async def test_large_results_are_truncated_at_256_kib(tmp_path: Path) -> None:
    engine = create_async_engine(f"sqlite+aiosqlite:///{tmp_path / 'big.db'}")
    async with engine.begin() as conn:
        await conn.exec_driver_sql("CREATE TABLE docs (id INTEGER, body TEXT)")
        for i in range(12):
            await conn.exec_driver_sql("INSERT INTO docs VALUES (?, ?)", (i, "é" * 30_000))
    tool = sql_tool(engine, table_access={"reader": ["docs"]})
    result = await tool.invoke({"sql": "SELECT * FROM docs ORDER BY id"}, ctx(Actor.of("u", ["reader"])))
    assert result["truncated"] is True and result["rowCount"] == 12
    kept = len(result["rows"])
    assert 0 < kept < 12
    assert len(json.dumps(result["rows"], ensure_ascii=False, separators=(",", ":")).encode()) <= 256 * 1024
    await engine.dispose()


@pytest.mark.ref("DATA-16")
async def test_duplicate_columns_are_kept(sqlite_db: AsyncEngine) -> None:
    tool = sql_tool(sqlite_db, table_access=POLICY, tenant=SCOPE)
    sql = "SELECT o.id, c.id FROM orders o JOIN customers c ON c.id = o.customer_id ORDER BY o.id"
    assert (await tool.invoke({"sql": sql}, ctx()))["rows"] == [{"id": 1, "id_2": 1}, {"id": 2, "id_2": 2}]


@pytest.mark.ref("DATA-15")
async def test_sqlite_timeout_stops_the_query_and_restores_the_connection(sqlite_db: AsyncEngine) -> None:
    tool = sql_tool(sqlite_db, table_access=POLICY, statement_timeout=0.3)
    endless = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) FROM c"
    with pytest.raises(SqlTimeoutError) as stopped:
        await tool.invoke({"sql": endless}, ctx())
    assert stopped.value.timeout == 0.3
    assert "add a WHERE clause" in str(stopped.value)  # the model reads how to fix its query
    # The pooled connection is usable and writable again for the application (query_only and handler restored).
    async with sqlite_db.begin() as conn:
        await conn.exec_driver_sql("UPDATE products SET price = price WHERE id = 1")
    counting = (
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 200000) SELECT max(x) AS m FROM c"
    )
    async with sqlite_db.connect() as conn:
        assert (await conn.exec_driver_sql(counting)).scalar() == 200000


@pytest.mark.ref("DATA-15")
@pytest.mark.postgres
async def test_postgres_timeout_is_enforced_by_the_server(postgres_db: AsyncEngine, postgres_url: str) -> None:
    tool = sql_tool(postgres_db, table_access=POLICY, statement_timeout=0.3)
    marker = f"agora_probe_{uuid.uuid4().hex[:8]}"
    endless = f"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x), '{marker}' FROM c"
    with pytest.raises(SqlTimeoutError) as stopped:
        await tool.invoke({"sql": endless}, ctx())
    assert stopped.value.timeout == 0.3
    conn = await asyncpg.connect(postgres_url.replace("postgresql+asyncpg", "postgresql"))
    try:
        running = await conn.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE $1", f"%{marker}%"
        )
    finally:
        await conn.close()
    assert running == 0
    assert (await tool.invoke({"sql": "SELECT 1 AS one"}, ctx()))["rows"] == [{"one": 1}]


async def _write_attempt(engine: AsyncEngine) -> str:
    with pytest.raises(SqlExecutionError) as caught:
        await run_read_only(
            engine, "UPDATE products SET price = 0", (), timeout=2.0, max_rows=10, tool_name="query_database"
        )
    return str(caught.value)


async def test_sqlite_execution_is_read_only_even_without_the_validator(sqlite_db: AsyncEngine) -> None:
    before = await fingerprint(sqlite_db)
    assert "readonly" in await _write_attempt(sqlite_db)
    assert await fingerprint(sqlite_db) == before
    async with sqlite_db.begin() as conn:  # the application's own connection is not left read-only
        await conn.exec_driver_sql("UPDATE products SET price = price")


@pytest.mark.postgres
async def test_postgres_execution_is_read_only_even_without_the_validator(postgres_db: AsyncEngine) -> None:
    before = await fingerprint(postgres_db)
    assert "read-only transaction" in await _write_attempt(postgres_db)
    assert await fingerprint(postgres_db) == before


async def test_database_errors_are_one_line_and_actionable(sqlite_db: AsyncEngine) -> None:
    tool = sql_tool(sqlite_db, table_access=POLICY, tenant=SCOPE)
    with pytest.raises(SqlExecutionError) as caught:
        await tool.invoke({"sql": "SELECT nope FROM orders"}, ctx())
    message = str(caught.value)
    assert message.startswith("The database rejected the query: no such column: nope")
    assert "\n" not in message and "Traceback" not in message and "[SQL:" not in message


OUTER_FILTER = "SELECT id FROM orders WHERE CAST(note AS INTEGER) > 0"


def _plan_nodes(plan: dict[str, Any]) -> list[dict[str, Any]]:
    nodes = [plan]
    for child in plan.get("Plans", []):
        nodes.extend(_plan_nodes(child))
    return nodes


@pytest.mark.postgres
@pytest.mark.ref("DATA-12")
async def test_postgres_plan_filters_the_tenant_before_the_callers_predicates(
    postgres_db: AsyncEngine, postgres_url: str
) -> None:
    prepared = sql_tool(postgres_db, table_access=POLICY, tenant=SCOPE).prepare(OUTER_FILTER, ANALYST_A)
    conn = await asyncpg.connect(postgres_url.replace("postgresql+asyncpg", "postgresql"))
    try:
        plan = json.loads(await conn.fetchval("EXPLAIN (FORMAT JSON) " + prepared.sql, *prepared.params))[0]["Plan"]
    finally:
        await conn.close()
    nodes = _plan_nodes(plan)
    scan = next(n for n in nodes if n.get("Relation Name") == "orders")
    wrapper = next(n for n in nodes if n["Node Type"] == "Subquery Scan")
    assert scan["Filter"] == "(tenant_id = 'A'::text)"  # only the tenant predicate reaches the table's rows
    assert "note" in wrapper["Filter"]  # the caller's predicate only sees the tenant's rows


@pytest.mark.ref("DATA-12")
async def test_sqlite_plan_keeps_the_scoped_table_unflattened(sqlite_db: AsyncEngine, tmp_path: Path) -> None:
    prepared = sql_tool(sqlite_db, table_access=POLICY, tenant=SCOPE).prepare(OUTER_FILTER, ANALYST_A)
    with sqlite3.connect(tmp_path / "app.db") as conn:
        plan = [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + prepared.sql, prepared.params)]
    assert "CO-ROUTINE orders" in plan and "SCAN _scoped" in plan
