"""Real SQLite and PostgreSQL databases seeded with two tenants and unlisted tables (one per dialect per module)."""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from agora_agent.tools.sql import SqlTool, TenantScope, sql_tool
from tests.conftest import PG_HOST, PG_PORT, require_server

POLICY = {
    "role_groups": {"analyst": ["sales", "reports"], "auditor": ["audit"]},
    "tables_by_group": {
        "sales": ["orders", "customers", "products"],
        "reports": ["report_*"],
        "audit": ["audit_log"],
    },
}
SCOPE = TenantScope("tenant_id", ["orders", "customers"])
CORPUS_TIMEOUT = 0.5
CORPUS_MAX_ROWS = 50

SEED = [
    "CREATE TABLE customers (id INTEGER PRIMARY KEY, tenant_id TEXT NOT NULL, name TEXT NOT NULL)",
    "INSERT INTO customers VALUES (1, 'A', 'Alice'), (2, 'A', 'Anna'), (3, 'B', 'TENANT_B_SECRET_Bob')",
    "CREATE TABLE orders (id INTEGER PRIMARY KEY, tenant_id TEXT NOT NULL, customer_id INTEGER, note TEXT,"
    " amount INTEGER)",
    "INSERT INTO orders VALUES (1, 'A', 1, '100', 5), (2, 'A', 2, '200', 15),"
    " (3, 'B', 3, 'TENANT_B_SECRET_1', 999), (4, 'B', 3, 'TENANT_B_SECRET_2', 1000)",
    "CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT NOT NULL, price INTEGER)",
    "INSERT INTO products VALUES (1, 'Widget', 10), (2, 'Gadget', 20), (3, 'Gizmo', 30)",
    "CREATE TABLE report_daily (day TEXT, total INTEGER)",
    "INSERT INTO report_daily VALUES ('2024-01-01', 20)",
    "CREATE TABLE secrets (id INTEGER PRIMARY KEY, tenant_id TEXT, value TEXT)",
    "INSERT INTO secrets VALUES (1, 'A', 'UNLISTED_SECRET_A'), (2, 'B', 'UNLISTED_SECRET_B')",
    "CREATE TABLE audit_log (id INTEGER PRIMARY KEY, entry TEXT)",
    "INSERT INTO audit_log VALUES (1, 'UNLISTED_SECRET_AUDIT')",
]
PG_ONLY = [
    "CREATE SCHEMA private",
    "CREATE TABLE private.orders (id INTEGER, tenant_id TEXT, note TEXT)",
    "INSERT INTO private.orders VALUES (1, 'A', 'UNLISTED_SECRET_PRIVATE')",
    'CREATE TABLE "ORDERS" (id INTEGER, tenant_id TEXT, note TEXT)',
    "INSERT INTO \"ORDERS\" VALUES (1, 'A', 'UNLISTED_SECRET_UPPER'), (3, 'B', 'TENANT_B_SECRET_UPPER')",
    "CREATE SEQUENCE orders_id_seq",
]
TABLES = ["customers", "orders", "products", "report_daily", "secrets", "audit_log"]


async def seed(engine: AsyncEngine) -> None:
    statements = SEED + (PG_ONLY if engine.dialect.name == "postgresql" else [])
    async with engine.begin() as conn:
        for statement in statements:
            await conn.exec_driver_sql(statement)


async def fingerprint(engine: AsyncEngine) -> str:
    """A digest of every row of every table plus the list of tables: any write changes it."""
    digest = hashlib.sha256()
    async with engine.connect() as conn:
        tables = TABLES + (["private.orders", '"ORDERS"'] if engine.dialect.name == "postgresql" else [])
        for table in tables:
            rows = (await conn.exec_driver_sql(f"SELECT * FROM {table} ORDER BY 1")).all()
            digest.update(repr((table, rows)).encode())
        if engine.dialect.name == "sqlite":
            catalog = "SELECT type, name, sql FROM sqlite_master ORDER BY name"
        else:
            catalog = (
                "SELECT table_schema, table_name FROM information_schema.tables "
                "WHERE table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY 1, 2"
            )
        digest.update(repr((await conn.exec_driver_sql(catalog)).all()).encode())
    return digest.hexdigest()


def corpus_tool(engine: AsyncEngine) -> SqlTool:
    return sql_tool(
        engine,
        table_access=POLICY,
        tenant=SCOPE,
        max_rows=CORPUS_MAX_ROWS,
        statement_timeout=CORPUS_TIMEOUT,
    )


@pytest.fixture(scope="module")
def module_postgres_url() -> Iterator[str]:
    """Like `postgres_url`, but one fresh database for the whole module (the corpus shares it)."""
    require_server("PostgreSQL", PG_HOST, PG_PORT)
    import asyncpg

    name = f"agora_data_{uuid.uuid4().hex[:12]}"

    async def admin(sql: str) -> None:
        conn = await asyncpg.connect(host=PG_HOST, port=PG_PORT, user="postgres", database="test")
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    asyncio.run(admin(f'CREATE DATABASE "{name}"'))
    try:
        yield f"postgresql+asyncpg://postgres@{PG_HOST}:{PG_PORT}/{name}"
    finally:
        asyncio.run(admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def sqlite_engine(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[AsyncEngine]:
    path: Path = tmp_path_factory.mktemp("data") / "corpus.db"
    engine = create_async_engine(f"sqlite+aiosqlite:///{path}")
    await seed(engine)
    yield engine
    await engine.dispose()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def postgres_engine(module_postgres_url: str) -> AsyncIterator[AsyncEngine]:
    engine = create_async_engine(module_postgres_url)
    await seed(engine)
    yield engine
    await engine.dispose()
