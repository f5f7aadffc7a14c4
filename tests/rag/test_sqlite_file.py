"""The SQLite vector store never shares a file with the agent store.

It opens its file through pysqlite3, a second SQLite library in the process; SQLite's POSIX locks are per
process, so two libraries on one file do not see each other's connections. When the help centre shared the
demo's agent store file, closing its last pysqlite3 connection deleted the WAL the agent store was still
writing: every commit since was gone after a restart (and CI's demo start-up once read "file is not a
database"). These tests run the agent store and the vector store side by side, as an app does.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agora_agent.errors import ConfigurationError, StoreError
from agora_agent.governance.pricing import ModelPrice
from agora_agent.rag import ChunkRecord
from agora_agent.stores.sql import open_sql_backend

pytest.importorskip("sqlite_vec")
pytest.importorskip("pysqlite3")

from agora_agent.rag.sqlite_store import SqliteVectorStore

CHILD = textwrap.dedent(
    """
    import asyncio, os, sys
    from agora_agent.governance.pricing import ModelPrice
    from agora_agent.rag import ChunkRecord
    from agora_agent.rag.sqlite_store import SqliteVectorStore
    from agora_agent.stores.sql import open_sql_backend

    def price(model_id: str) -> ModelPrice:
        return ModelPrice(model_id=model_id, input_price_per_1m=1.0, output_price_per_1m=2.0)

    async def main(url: str) -> None:
        backend = await open_sql_backend(url, auto_create_tables=True)
        await backend.pricing.upsert_price(price("before"))
        rag = SqliteVectorStore.for_url(url)
        await rag.upsert([ChunkRecord(id="doc#0", text="returns within 30 days", embedding=[1.0, 0.0])])
        await rag.close()  # the vector store's last connection closes while the agent store's stays open
        for i in range(20):
            await backend.pricing.upsert_price(price(f"after-{i}"))
        os._exit(0)  # the process dies before the agent store checkpoints (kill -9, OOM, a deploy)

    asyncio.run(main(sys.argv[1]))
    """
)


async def test_the_agent_stores_commits_survive_a_restart_beside_the_vector_store(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'agent.db'}"
    await asyncio.to_thread(subprocess.run, [sys.executable, "-c", CHILD, url], check=True, timeout=60)

    backend = await open_sql_backend(url)
    try:
        models = {p.model_id for p in await backend.pricing.list_current_prices()}
    finally:
        await backend.close()
    assert models == {"before", *(f"after-{i}" for i in range(20))}
    rag = SqliteVectorStore.for_url(url)
    try:
        assert rag.path == tmp_path / "agent-rag.db"
        assert await rag.count() == 1
    finally:
        await rag.close()


async def test_the_agent_stores_open_file_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    agent = tmp_path / "agent.db"
    backend = await open_sql_backend(f"sqlite:///{agent}", auto_create_tables=True)
    try:
        await backend.pricing.upsert_price(ModelPrice(model_id="kept", input_price_per_1m=1.0, output_price_per_1m=2.0))
        store = SqliteVectorStore(agent)
        with pytest.raises(ConfigurationError, match="two SQLite libraries on one file"):
            await store.count()
        assert [p.model_id for p in await backend.pricing.list_current_prices()] == ["kept"]
    finally:
        await backend.close()
    # Closed now, in this process or any other: the file itself says it is the agent store's.
    with pytest.raises(ConfigurationError, match=r"agent store's SQLite file.*agent-rag\.db"):
        SqliteVectorStore(agent)  # at construction: the file itself says it is the agent store's


async def test_the_agent_store_refuses_a_file_the_vector_store_has_open(tmp_path: Path) -> None:
    path = tmp_path / "chunks.db"
    store = SqliteVectorStore(path)
    await store.upsert([ChunkRecord(id="doc#0", text="kept", embedding=[1.0, 0.0])])
    try:
        with pytest.raises(ConfigurationError, match="two SQLite libraries on one file"):
            await open_sql_backend(f"sqlite:///{path}", auto_create_tables=True)
        assert await store.count() == 1
    finally:
        await store.close()
    backend = await open_sql_backend(f"sqlite:///{path}", auto_create_tables=True)  # closed: one library at a time
    await backend.close()


async def test_chunks_an_earlier_release_kept_in_the_agent_file_are_copied_beside_it_once(tmp_path: Path) -> None:
    agent = tmp_path / "agent.db"
    old = SqliteVectorStore(agent)  # what an earlier release did: the chunks in the agent store's file
    chunks = [
        ChunkRecord(id=f"returns.md#{i}", text=f"returns rule {i}", embedding=[1.0, float(i)], metadata=meta)
        for i, meta in enumerate([{"tenant_ref": "acme"}, {"tenant_ref": "globex"}, {}])
    ]
    await old.upsert(chunks)
    await old.close()
    backend = await open_sql_backend(f"sqlite:///{agent}", auto_create_tables=True)  # then the agent store
    await backend.close()

    store = SqliteVectorStore.for_url(f"sqlite:///{agent}")
    try:
        assert await store.count() == 3
        hits = await store.search([1.0, 1.0], top_k=5, filter={"tenant_ref": "globex"})
        assert [h.id for h in hits] == ["returns.md#1"]
        assert [h.id for h in await store.keyword_search("rule", filter={"tenant_ref": "acme"})] == ["returns.md#0"]
        await store.remove("returns.md")
        assert await store.count() == 0
    finally:
        await store.close()
    again = SqliteVectorStore.for_url(f"sqlite:///{agent}")  # the file exists now: nothing is copied twice
    try:
        assert await again.count() == 0
    finally:
        await again.close()


def test_beside_names_the_file_next_to_the_agent_stores() -> None:
    assert SqliteVectorStore.beside("/srv/agent.db").path == Path("/srv/agent-rag.db")
    assert SqliteVectorStore.beside("/srv/agent").path == Path("/srv/agent-rag.db")
    assert SqliteVectorStore.for_url("sqlite+aiosqlite:////srv/x.sqlite").path == Path("/srv/x-rag.sqlite")
    with pytest.raises(ConfigurationError, match="not a SQLite file URL"):
        SqliteVectorStore.for_url("sqlite://")


async def test_two_stores_on_one_file_of_their_own_work_side_by_side(tmp_path: Path) -> None:
    path = tmp_path / "kb.db"
    help_docs, faq = SqliteVectorStore(path), SqliteVectorStore(path, table="faq_chunks")
    try:
        await help_docs.upsert([ChunkRecord(id="help#0", text="returns", embedding=[1.0, 0.0])])
        await faq.upsert([ChunkRecord(id="faq#0", text="shipping", embedding=[0.0, 1.0])])
        assert (await help_docs.count(), await faq.count()) == (1, 1)
    finally:
        await help_docs.close()
        await faq.close()


async def test_a_copy_that_fails_is_tried_again_from_the_start(tmp_path: Path) -> None:
    agent = tmp_path / "agent.db"
    old = SqliteVectorStore(agent)
    await old.upsert([ChunkRecord(id="returns.md#0", text="returns", embedding=[1.0, 0.0])])
    await old.close()
    import sqlite3

    broken = sqlite3.connect(agent)  # an earlier table whose metadata is not JSON: the copy cannot read it
    broken.execute("UPDATE agent_rag_chunks SET metadata = 'not json'")
    broken.commit()
    broken.close()
    with pytest.raises(StoreError, match=r"could not copy the chunks.*tries again"):
        await SqliteVectorStore.beside(agent).count()
    assert not (tmp_path / "agent-rag.db").exists()

    fixed = sqlite3.connect(agent)
    fixed.execute("UPDATE agent_rag_chunks SET metadata = '{}'")
    fixed.commit()
    fixed.close()
    store = SqliteVectorStore.beside(agent)
    try:
        assert await store.count() == 1
    finally:
        await store.close()
