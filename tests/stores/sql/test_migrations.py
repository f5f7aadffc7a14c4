"""Migrations: upgrade from empty, downgrade, upgrade again; auto-created schema == migrated schema."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa

from agora_agent.stores.sql import create_engine_from_url, open_sql_backend
from agora_agent.stores.sql.migrate import VERSION_TABLE, current, downgrade, head_revision, upgrade
from agora_agent.stores.sql.tables import metadata

pytestmark = pytest.mark.ref("STORE-01", "STORE-09", "STORE-12", "STORE-13")


def _schema(sync_conn: sa.Connection) -> dict[str, Any]:
    """Tables, columns (name, type, nullability, default), primary keys, indexes, uniques and foreign keys."""
    inspector = sa.inspect(sync_conn)
    schema: dict[str, Any] = {}
    for table in sorted(inspector.get_table_names()):
        if table == VERSION_TABLE:
            continue
        columns = [
            (c["name"], str(c["type"]), c["nullable"], str(c.get("default"))) for c in inspector.get_columns(table)
        ]
        indexes = sorted(
            (
                i["name"],
                tuple(i["column_names"]),
                bool(i["unique"]),
                str(sorted((k, str(v)) for k, v in i.get("dialect_options", {}).items())),
            )
            for i in inspector.get_indexes(table)
        )
        uniques = sorted((u["name"] or "", tuple(u["column_names"])) for u in inspector.get_unique_constraints(table))
        fks = sorted(
            (tuple(f["constrained_columns"]), f["referred_table"], str(f.get("options")))
            for f in inspector.get_foreign_keys(table)
        )
        pk = tuple(inspector.get_pk_constraint(table)["constrained_columns"])
        schema[table] = {"columns": columns, "indexes": indexes, "uniques": uniques, "fks": fks, "pk": pk}
    return schema


async def _read_schema(url: str) -> dict[str, Any]:
    engine = create_engine_from_url(url)
    try:
        async with engine.connect() as conn:
            return await conn.run_sync(_schema)
    finally:
        await engine.dispose()


async def test_upgrade_downgrade_upgrade_again(empty_db_url: str) -> None:
    engine = create_engine_from_url(empty_db_url)
    try:
        assert await current(engine) is None
        await upgrade(engine)
        assert await current(engine) == head_revision()
        migrated = await _read_schema(empty_db_url)
        assert set(migrated) == set(metadata.tables)

        await downgrade(engine, "base")
        assert await current(engine) is None
        assert await _read_schema(empty_db_url) == {}

        await upgrade(engine)
        assert await current(engine) == head_revision()
        assert await _read_schema(empty_db_url) == migrated
    finally:
        await engine.dispose()


async def test_auto_created_schema_equals_the_migrated_one(empty_db_url: str, tmp_path: Any) -> None:
    engine = create_engine_from_url(empty_db_url)
    try:
        await upgrade(engine)
        migrated = await _read_schema(empty_db_url)
        await downgrade(engine, "base")
    finally:
        await engine.dispose()

    backend = await open_sql_backend(empty_db_url, auto_create_tables=True)
    try:
        # auto-create stamps the head revision, so a later `db upgrade` has nothing to do
        assert await current(backend.engine) == head_revision()
        await upgrade(backend.engine)
    finally:
        await backend.close()
    auto = await _read_schema(empty_db_url)
    assert auto == migrated
    assert auto["agent_model_pricing"]["indexes"]  # the comparison covered indexes, partial unique one included


async def test_long_composed_ids_fit(empty_db_url: str) -> None:
    """Ids the loop composes (`<run id>:<message id>`) or callers pass are up to 255 characters."""
    from datetime import UTC, datetime

    from agora_agent.records import RunRecord, UsageRecord

    backend = await open_sql_backend(empty_db_url, auto_create_tables=True)
    try:
        thread = await backend.store.create_thread(actor_ref="a" * 255)
        run_id = "r" * 255
        await backend.store.record_run_start(
            RunRecord(id=run_id, thread_id=thread.id, actor_ref=thread.actor_ref, started_at=datetime.now(UTC))
        )
        usage_id = f"{'x' * 32}:{'y' * 36}"
        await backend.store.record_usage(
            UsageRecord(
                id=usage_id,
                thread_id=thread.id,
                run_id=run_id,
                message_id="y" * 36,
                actor_ref=thread.actor_ref,
                model_id="m" * 255,
                input_tokens=1,
                output_tokens=1,
                created_at=datetime.now(UTC),
            )
        )
        assert await backend.store.run_owner(run_id) == "a" * 255
    finally:
        await backend.close()
