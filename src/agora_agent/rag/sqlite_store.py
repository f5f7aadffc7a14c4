"""`SqliteVectorStore`: chunks and vectors in a SQLite file — by default one beside the agent store's file
(`agent.db` → `agent-rag.db`) — with sqlite-vec's distance functions for search and FTS5 `bm25()` for
keyword search (the `rag` extra).

Python's bundled `sqlite3` is often built without extension loading (it is here), so this store opens its
own connection through `pysqlite3` (a DB-API twin of `sqlite3` with a current SQLite that can load
extensions) and loads sqlite-vec into it. That is a second SQLite library in the process, and two libraries
must never open the same file: SQLite's POSIX locks are per process, so neither sees the other's
connections — closing the last pysqlite3 connection deleted the WAL the agent store's connection was still
writing, and its commits since were lost at the next restart (sqlite.org/howtocorrupt.html §2.2.1;
tests/rag/test_sqlite_file.py). So the store refuses the agent store's own file, and `beside()` / `for_url()`
put it in a file of its own (copying, once, the chunks an earlier release kept in the agent store's file).
Search is exact (sqlite-vec scans the vectors in C), which is fast enough for about 10⁵ chunks per model;
past that use pgvector. The filter, `min_score` and `model_id` are all in the WHERE.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import sqlite3
import struct
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from agora_agent import _sqlite_files
from agora_agent.errors import ConfigurationError, StoreError
from agora_agent.rag.filters import apply_metadata_patch, assert_removal_filter, effective_patch_keys, filter_denies_all
from agora_agent.rag.sql_filters import sqlite_filter_sql
from agora_agent.rag.store import Metric, tokenize
from agora_agent.rag.types import ChunkRecord, Passage, document_id_of

__all__ = ["SqliteVectorStore"]

logger = logging.getLogger("agora_agent.rag")
T = TypeVar("T")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_INSTALL = "the SQLite vector store needs the rag extra: pip install 'agora-agent[rag]'"
_AGENT_TABLE = "agent_thread"  # present in every agent store's file (its first migration)


# `tenant_ref` is in (almost) every access filter: its string value is copied to an indexed column so a
# tenant-scoped query skips other tenants' rows before parsing their JSON (the JSON check still decides).
_INDEXED = {"tenant_ref": "tenant_key"}


def _tenant_key(metadata: Mapping[str, Any]) -> str:
    # '' = "not a plain string": such rows are always in the prefilter and left to the JSON check
    value = metadata.get("tenant_ref")
    return value if isinstance(value, str) else ""


def _beside(agent_db: Path) -> Path:
    """The vector store's own file next to the agent store's: `agent.db` -> `agent-rag.db`."""
    return agent_db.with_name(f"{agent_db.stem}-rag{agent_db.suffix or '.db'}")


def _pack(vector: Sequence[float]) -> bytes:
    return struct.pack(f"{len(vector)}f", *vector)


class SqliteVectorStore:
    """A `VectorStore` in a SQLite file (`path`), table `table` (created on first use), metric cosine or l2.

    `SqliteVectorStore.for_url("sqlite:///agent.db")` takes the agent store's URL and keeps the chunks in
    `agent-rag.db` beside it; `path` itself must not be the agent store's file (see the module docstring).
    """

    def __init__(self, path: str | Path, *, table: str = "agent_rag_chunks", metric: Metric = "cosine") -> None:
        if not _IDENT.match(table):
            raise ConfigurationError(f"Invalid table name {table!r}")
        if metric not in ("cosine", "l2"):
            raise ConfigurationError(f"SqliteVectorStore supports the cosine and l2 metrics, not {metric!r}")
        if str(path) in ("", ":memory:"):
            raise ConfigurationError(
                "SqliteVectorStore needs a database file (an in-memory database is per connection)"
            )
        self.path = Path(path)
        self.table = table
        self.metric: Metric = metric
        self._conn: Any = None
        self._lock = asyncio.Lock()
        self._copy_from: Path | None = None  # set by beside(): the agent store's file an earlier release used
        self._refuse_agent_file()  # now, when the file says so, rather than at the first search

    def _refuse_agent_file(self) -> None:
        if _sqlite_files.PYSQLITE3 in _sqlite_files.holders(self.path):
            # Another vector store has it open, so it is no agent store's; and a peek through CPython's sqlite3
            # would close a descriptor of the file, which drops that connection's POSIX locks.
            return
        if _AGENT_TABLE in _tables(self.path):
            raise ConfigurationError(
                f"{self.path} is the agent store's SQLite file: the vector store opens it through pysqlite3, a second "
                "SQLite library in this process, and two libraries on one file lose each other's writes "
                "(sqlite.org/howtocorrupt.html). Use SqliteVectorStore.beside() or .for_url() with the agent "
                f"store's file: the chunks go to {_beside(self.path).name}, and those "
                "stored here are copied there"
            )

    @classmethod
    def beside(cls, agent_db: str | Path, **options: Any) -> SqliteVectorStore:
        """The store in its own file next to the agent store's `agent_db` (`agent.db` → `agent-rag.db`).

        The first time that file is made, the chunks an earlier release kept in `agent_db` itself are copied
        into it (they stay where they were too; drop that table when you no longer need it).
        """
        agent = Path(agent_db)
        store = cls(_beside(agent), **options)
        store._copy_from = agent
        return store

    @classmethod
    def for_url(cls, url: str, **options: Any) -> SqliteVectorStore:
        """`beside()` the file of the agent store's SQLite URL (`sqlite:///agent.db`, `sqlite+aiosqlite:///…`)."""
        from sqlalchemy.engine import make_url

        parsed = make_url(url)
        if parsed.get_backend_name() != "sqlite" or not parsed.database or parsed.database == ":memory:":
            raise ConfigurationError(f"not a SQLite file URL: {parsed.render_as_string(hide_password=True)}")
        return cls.beside(parsed.database, **options)

    def probe(self) -> None:
        """Open the file and close it again, now: `ConfigurationError` if the `rag` extra is missing or the
        file is refused (the agent store's own), instead of at the first search."""
        self._disconnect(self._connect())

    # -- connection --------------------------------------------------------------------------------

    def _connect(self) -> Any:
        try:
            import pysqlite3.dbapi2 as sqlite
            import sqlite_vec
        except ImportError:
            raise ConfigurationError(_INSTALL) from None
        self._refuse_agent_file()  # again: the agent store may have made its tables since
        _sqlite_files.check(self.path, _sqlite_files.PYSQLITE3)  # the agent store has it open in this process
        new = not self.path.exists() or self.path.stat().st_size == 0
        _sqlite_files.claim(self.path, _sqlite_files.PYSQLITE3)
        try:
            conn = self._open(sqlite, sqlite_vec)
        except BaseException:
            _sqlite_files.release(self.path, _sqlite_files.PYSQLITE3)
            raise
        if new and self._copy_from is not None and self.table in _tables(self._copy_from):
            try:
                copied = self._copy_chunks(conn, self._copy_from)
            except BaseException as exc:
                # Start over next time rather than keep a file that would never be copied into again.
                self._disconnect(conn)
                for suffix in ("", "-wal", "-shm"):
                    Path(f"{self.path}{suffix}").unlink(missing_ok=True)
                if isinstance(exc, Exception):
                    raise StoreError(
                        f"could not copy the chunks of {self._copy_from} ({self.table}) into {self.path}: {exc}; "
                        "nothing was changed, the next use tries again"
                    ) from exc
                raise
            logger.info(
                "rag: copied %d chunks from %s (table %s) into %s", copied, self._copy_from, self.table, self.path
            )
        return conn

    def _disconnect(self, conn: Any) -> None:
        """Close a connection `_connect` opened, and release the file's claim."""
        try:
            conn.close()
        finally:
            _sqlite_files.release(self.path, _sqlite_files.PYSQLITE3)

    def _open(self, sqlite: Any, sqlite_vec: Any) -> Any:
        conn = sqlite.connect(str(self.path), check_same_thread=False, isolation_level=None, timeout=5.0)
        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        conn.enable_load_extension(False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA busy_timeout=5000")
        t = self.table
        columns = {row[1] for row in conn.execute(f"PRAGMA table_info({t})")}
        if columns and "tenant_key" not in columns:  # a table made before the tenant prefilter column
            conn.execute(f"ALTER TABLE {t} ADD COLUMN tenant_key TEXT NOT NULL DEFAULT ''")
            conn.execute(f"DROP INDEX IF EXISTS ix_{t}_model")
            conn.execute(
                f"UPDATE {t} SET tenant_key = json_extract(metadata, '$.tenant_ref') "
                "WHERE json_type(metadata, '$.tenant_ref') = 'text'"
            )
        conn.executescript(
            f"""
            BEGIN;
            CREATE TABLE IF NOT EXISTS {t} (
                rid INTEGER PRIMARY KEY,
                id TEXT NOT NULL UNIQUE,
                document_id TEXT NOT NULL,
                text TEXT NOT NULL,
                source TEXT,
                metadata TEXT NOT NULL DEFAULT '{{}}',
                model_id TEXT,
                dims INTEGER NOT NULL,
                embedding BLOB NOT NULL,
                tenant_key TEXT NOT NULL DEFAULT ''
            );
            CREATE INDEX IF NOT EXISTS ix_{t}_document ON {t} (document_id);
            CREATE INDEX IF NOT EXISTS ix_{t}_model ON {t} (model_id, dims, tenant_key);
            CREATE VIRTUAL TABLE IF NOT EXISTS {t}_fts USING fts5(text, content='{t}', content_rowid='rid');
            CREATE TRIGGER IF NOT EXISTS {t}_ai AFTER INSERT ON {t} BEGIN
                INSERT INTO {t}_fts (rowid, text) VALUES (new.rid, new.text);
            END;
            CREATE TRIGGER IF NOT EXISTS {t}_ad AFTER DELETE ON {t} BEGIN
                INSERT INTO {t}_fts ({t}_fts, rowid, text) VALUES ('delete', old.rid, old.text);
            END;
            CREATE TRIGGER IF NOT EXISTS {t}_au AFTER UPDATE OF text ON {t} BEGIN
                INSERT INTO {t}_fts ({t}_fts, rowid, text) VALUES ('delete', old.rid, old.text);
                INSERT INTO {t}_fts (rowid, text) VALUES (new.rid, new.text);
            END;
            COMMIT;
            """
        )
        return conn

    def _copy_chunks(self, conn: Any, source: Path) -> int:
        """The chunks of `source`'s table (an earlier release's, in the agent store's file) into this file."""
        t = self.table
        with _peek(source) as old:  # tenant_key is recomputed from the metadata: older tables lack the column
            rows = old.execute(
                f"SELECT id, document_id, text, source, metadata, model_id, dims, embedding FROM {t} ORDER BY rid"
            ).fetchall()
        with _transaction(conn):
            conn.executemany(
                f"INSERT OR IGNORE INTO {t} (id, document_id, text, source, metadata, model_id, dims, embedding, "
                "tenant_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(*row, _tenant_key(json.loads(row[4]))) for row in rows],
            )
        return len(rows)

    async def _run(self, fn: Callable[[Any], T]) -> T:
        # One connection, one statement sequence at a time, off the event loop.
        async with self._lock:
            if self._conn is None:
                self._conn = await asyncio.to_thread(self._connect)
            return await asyncio.to_thread(fn, self._conn)

    async def close(self) -> None:
        """Close the connection (the next call reopens it)."""
        async with self._lock:
            if self._conn is not None:
                conn, self._conn = self._conn, None
                await asyncio.to_thread(self._disconnect, conn)

    # -- writes ------------------------------------------------------------------------------------

    async def upsert(self, chunks: Sequence[ChunkRecord]) -> int:
        rows = [
            (
                c.id,
                document_id_of(c.id),
                c.text,
                c.source,
                json.dumps(dict(c.metadata), ensure_ascii=False),
                c.model_id,
                len(c.embedding),
                _pack(c.embedding),
                _tenant_key(c.metadata),
            )
            for c in chunks
        ]

        def write(conn: Any) -> int:
            with _transaction(conn):
                conn.executemany(
                    f"INSERT INTO {self.table} (id, document_id, text, source, metadata, model_id, dims, embedding, "
                    "tenant_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET "
                    "document_id = excluded.document_id, text = excluded.text, source = excluded.source, "
                    "metadata = excluded.metadata, "
                    "model_id = excluded.model_id, dims = excluded.dims, embedding = excluded.embedding, "
                    "tenant_key = excluded.tenant_key",
                    rows,
                )
            return len(rows)

        return await self._run(write) if rows else 0

    async def remove(self, document_id: str) -> int:
        def delete(conn: Any) -> int:
            with _transaction(conn):
                return int(conn.execute(f"DELETE FROM {self.table} WHERE document_id = ?", (document_id,)).rowcount)

        return await self._run(delete)

    async def remove_where(self, filter: Mapping[str, Any]) -> int:
        checked = assert_removal_filter(filter)
        if filter_denies_all(checked):
            return 0
        where, params = sqlite_filter_sql(checked, indexed=_INDEXED)

        def delete(conn: Any) -> int:
            with _transaction(conn):
                return int(conn.execute(f"DELETE FROM {self.table} WHERE {where}", params).rowcount)

        return await self._run(delete)

    async def update_metadata(self, document_id: str, patch: Mapping[str, Any]) -> int:
        if not effective_patch_keys(patch):
            return 0

        def update(conn: Any) -> int:
            with _transaction(conn):
                rows = conn.execute(
                    f"SELECT rid, metadata FROM {self.table} WHERE document_id = ?", (document_id,)
                ).fetchall()
                patched = [(apply_metadata_patch(json.loads(m), patch), r) for r, m in rows]
                conn.executemany(
                    f"UPDATE {self.table} SET metadata = ?, tenant_key = ? WHERE rid = ?",
                    [(json.dumps(m, ensure_ascii=False), _tenant_key(m), r) for m, r in patched],
                )
                return len(rows)

        return await self._run(update)

    # -- reads -------------------------------------------------------------------------------------

    async def search(
        self,
        embedding: Sequence[float],
        *,
        top_k: int = 5,
        filter: Mapping[str, Any] | None = None,
        min_score: float | None = None,
        model_id: str | None = None,
    ) -> list[Passage]:
        where, params = sqlite_filter_sql(filter, indexed=_INDEXED)
        if top_k < 1 or where == "0":
            return []
        score = (
            "COALESCE(1.0 - vec_distance_cosine(embedding, ?), 0.0)"
            if self.metric == "cosine"
            else "-vec_distance_l2(embedding, ?)"
        )
        conds = ["dims = ?", where]
        args: list[Any] = [_pack(embedding), len(embedding), *params]
        if model_id is not None:
            conds.append("model_id = ?")
            args.append(model_id)
        outer = "WHERE score >= ?" if min_score is not None else ""
        if min_score is not None:
            args.append(min_score)
        args.append(top_k)
        sql = (
            f"SELECT id, text, source, metadata, score FROM (SELECT id, text, source, metadata, {score} AS score "
            f"FROM {self.table} WHERE {' AND '.join(conds)}) {outer} ORDER BY score DESC, id LIMIT ?"
        )
        return await self._run(lambda conn: [_passage(r) for r in conn.execute(sql, args).fetchall()])

    async def keyword_search(
        self, query: str, *, top_k: int = 5, filter: Mapping[str, Any] | None = None
    ) -> list[Passage]:
        terms = sorted(set(tokenize(query)))
        where, params = sqlite_filter_sql(filter, column="c.metadata", indexed={"tenant_ref": "c.tenant_key"})
        if not terms or top_k < 1 or where == "0":
            return []
        match = " OR ".join(f'"{t}"' for t in terms)  # tokens are [a-z0-9]+: safe inside FTS5 quotes
        t = self.table
        sql = (
            f"SELECT c.id, c.text, c.source, c.metadata, -bm25({t}_fts) AS score FROM {t}_fts "
            f"JOIN {t} AS c ON c.rid = {t}_fts.rowid WHERE {t}_fts MATCH ? AND {where} "
            "ORDER BY score DESC, c.id LIMIT ?"
        )
        args = [match, *params, top_k]
        return await self._run(lambda conn: [_passage(r) for r in conn.execute(sql, args).fetchall()])

    async def list_document_ids(self, filter: Mapping[str, Any] | None = None) -> list[str]:
        where, params = sqlite_filter_sql(filter, indexed=_INDEXED)
        if where == "0":
            return []
        sql = f"SELECT DISTINCT document_id FROM {self.table} WHERE {where} ORDER BY document_id"
        return await self._run(lambda conn: [r[0] for r in conn.execute(sql, params).fetchall()])

    async def count(self) -> int:
        return await self._run(lambda conn: int(conn.execute(f"SELECT count(*) FROM {self.table}").fetchone()[0]))


def _peek(path: Path) -> contextlib.closing[sqlite3.Connection]:
    """A look at a SQLite file through CPython's `sqlite3` — the agent store's own library, so it cannot
    disturb the agent store's connections — opened immutable: no locks, no WAL, nothing written or deleted."""
    return contextlib.closing(sqlite3.connect(f"{path.resolve().as_uri()}?immutable=1", uri=True))


def _tables(path: Path) -> set[str]:
    """The tables in `path`'s main file ({} when there is no such file or it is not a readable database)."""
    if not path.is_file() or path.stat().st_size == 0:
        return set()
    try:
        with _peek(path) as conn:
            return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.Error:
        return set()


class _transaction:
    """BEGIN IMMEDIATE … COMMIT (ROLLBACK on error) on an autocommit connection."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def __enter__(self) -> None:
        self.conn.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, *rest: object) -> None:
        self.conn.execute("ROLLBACK" if exc_type is not None else "COMMIT")


def _passage(row: Sequence[Any]) -> Passage:
    return Passage(id=row[0], text=row[1], source=row[2], metadata=json.loads(row[3]), score=float(row[4]))
