"""`PgVectorStore`: chunks in PostgreSQL with pgvector, over the same
SQLAlchemy `AsyncEngine` as the agent store (asyncpg).

The table comes from `pg_schema.upgrade_pgvector` (an Alembic chain of its own, HNSW index for the metric).
Scores: cosine `1 - (e <=> q)`, l2 `-(e <-> q)`, inner `-(e <#> q)`; ORDER BY the operator (so the HNSW
index serves it), the filter and `min_score` in the same WHERE. On pgvector ≥ 0.8 filtered queries run with
`hnsw.iterative_scan = relaxed_order`, so a narrow filter still fills `top_k`; older versions post-filter
the index's `ef_search` candidates (raised to at least 4 × top_k here) and can return fewer rows.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from agora_agent.errors import ConfigurationError
from agora_agent.rag.filters import assert_removal_filter, effective_patch_keys, filter_denies_all
from agora_agent.rag.pg_schema import check_table_options, upgrade_pgvector
from agora_agent.rag.sql_filters import pg_filter_sql
from agora_agent.rag.store import Metric, tokenize
from agora_agent.rag.types import ChunkRecord, Passage, document_id_of

__all__ = ["PgVectorStore"]

# A zero vector has no cosine: pgvector answers NaN, which PostgreSQL sorts above every number, so map it to 0.
_OPS = {
    "cosine": ("<=>", "(CASE WHEN ({d}) = 'NaN' THEN 0.0 ELSE 1 - ({d}) END)"),
    "l2": ("<->", "-({d})"),
    "inner": ("<#>", "-({d})"),
}


def _literal(vector: Sequence[float]) -> str:
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


class PgVectorStore:
    """A `VectorStore` on PostgreSQL + pgvector. `ensure_schema=True` migrates the table on first use."""

    def __init__(
        self,
        engine: AsyncEngine,
        *,
        table: str = "agent_rag_chunks",
        dimension: int = 1536,
        metric: Metric = "cosine",
        ensure_schema: bool = False,
    ) -> None:
        check_table_options(table, dimension, metric)
        if engine.dialect.name != "postgresql":
            raise ConfigurationError("PgVectorStore needs a PostgreSQL engine")
        self.engine = engine
        self.table = table
        self.dimension = dimension
        self.metric: Metric = metric
        self._ensure = ensure_schema
        self._ready = False
        self._iterative: bool | None = None

    async def _prepare(self) -> None:
        if self._ready:
            return
        if self._ensure:
            await upgrade_pgvector(self.engine, table=self.table, dimension=self.dimension, metric=self.metric)
        async with self.engine.connect() as conn:
            version = (
                await conn.execute(sa.text("SELECT extversion FROM pg_extension WHERE extname = 'vector'"))
            ).scalar()
        if version is None:
            raise ConfigurationError(
                "the vector extension is not installed in this database: run `agora-agent rag db upgrade --url …`"
            )
        major, minor = (int(p) for p in str(version).split(".")[:2])
        self._iterative = (major, minor) >= (0, 8)
        self._ready = True

    def _check(self, vector: Sequence[float]) -> None:
        if len(vector) != self.dimension:
            raise ConfigurationError(f"{self.table} holds {self.dimension}-d vectors, got {len(vector)}")

    # -- writes ------------------------------------------------------------------------------------

    async def upsert(self, chunks: Sequence[ChunkRecord]) -> int:
        if not chunks:
            return 0
        await self._prepare()
        for c in chunks:
            self._check(c.embedding)
        rows = [
            {
                "id": c.id,
                "doc": document_id_of(c.id),
                "text": c.text,
                "source": c.source,
                "meta": json.dumps(dict(c.metadata), ensure_ascii=False),
                "model": c.model_id,
                "emb": _literal(c.embedding),
            }
            for c in chunks
        ]
        sql = sa.text(
            f"INSERT INTO {self.table} (id, document_id, text, source, metadata, model_id, embedding) "
            "VALUES (:id, :doc, :text, :source, CAST(:meta AS jsonb), :model, CAST(CAST(:emb AS text) AS vector)) "
            "ON CONFLICT (id) DO UPDATE SET document_id = EXCLUDED.document_id, text = EXCLUDED.text, "
            "source = EXCLUDED.source, metadata = EXCLUDED.metadata, model_id = EXCLUDED.model_id, "
            "embedding = EXCLUDED.embedding"
        )
        async with self.engine.begin() as conn:
            await conn.execute(sql, rows)
        return len(rows)

    async def remove(self, document_id: str) -> int:
        await self._prepare()
        async with self.engine.begin() as conn:
            result = await conn.execute(
                sa.text(f"DELETE FROM {self.table} WHERE document_id = :doc RETURNING id"), {"doc": document_id}
            )
            return len(result.fetchall())

    async def remove_where(self, filter: Mapping[str, Any]) -> int:
        checked = assert_removal_filter(filter)
        if filter_denies_all(checked):
            return 0
        await self._prepare()
        where, params = pg_filter_sql(checked)
        async with self.engine.begin() as conn:
            result = await conn.execute(sa.text(f"DELETE FROM {self.table} WHERE {where} RETURNING id"), params)
            return len(result.fetchall())

    async def update_metadata(self, document_id: str, patch: Mapping[str, Any]) -> int:
        keys = effective_patch_keys(patch)
        if not keys:
            return 0
        await self._prepare()
        sets = {k: v for k, v in patch.items() if v is not None}
        drops = [k for k in keys if patch[k] is None]
        # RAG-21: the shallow merge in SQL: `(COALESCE(m, '{}') || sets) - drops`.
        sql = sa.text(
            f"UPDATE {self.table} SET metadata = (COALESCE(metadata, '{{}}'::jsonb) || CAST(:sets AS jsonb)) "
            "- CAST(:drops AS text[]) WHERE document_id = :doc RETURNING id"
        )
        async with self.engine.begin() as conn:
            result = await conn.execute(sql, {"sets": json.dumps(sets), "drops": drops, "doc": document_id})
            return len(result.fetchall())

    # -- reads -------------------------------------------------------------------------------------

    async def _scan_settings(self, conn: AsyncConnection, top_k: int, filtered: bool) -> None:
        await conn.execute(sa.text(f"SET LOCAL hnsw.ef_search = {max(40, 4 * top_k)}"))
        if filtered and self._iterative:
            await conn.execute(sa.text("SET LOCAL hnsw.iterative_scan = relaxed_order"))

    async def search(
        self,
        embedding: Sequence[float],
        *,
        top_k: int = 5,
        filter: Mapping[str, Any] | None = None,
        min_score: float | None = None,
        model_id: str | None = None,
    ) -> list[Passage]:
        where, params = pg_filter_sql(filter)
        if top_k < 1 or where == "FALSE" or len(embedding) != self.dimension:
            return []
        await self._prepare()
        op, score_of = _OPS[self.metric]
        distance = f"embedding {op} CAST(CAST(:q AS text) AS vector)"
        score = score_of.format(d=distance)
        conds = [where]
        args: dict[str, Any] = {**params, "q": _literal(embedding), "k": top_k}
        if model_id is not None:
            conds.append("model_id = :model")
            args["model"] = model_id
        if min_score is not None:
            conds.append(f"{score} >= :min_score")
            args["min_score"] = min_score
        sql = sa.text(
            f"SELECT id, text, source, metadata, {score} AS score FROM {self.table} WHERE {' AND '.join(conds)} "
            f"ORDER BY {distance}, id LIMIT :k"
        )
        async with self.engine.begin() as conn:
            await self._scan_settings(conn, top_k, bool(params) or min_score is not None or model_id is not None)
            rows = (await conn.execute(sql, args)).fetchall()
        return [_passage(r) for r in rows]

    async def keyword_search(
        self, query: str, *, top_k: int = 5, filter: Mapping[str, Any] | None = None
    ) -> list[Passage]:
        terms = sorted(set(tokenize(query)))
        where, params = pg_filter_sql(filter)
        if not terms or top_k < 1 or where == "FALSE":
            return []
        await self._prepare()
        # An OR of the terms (tokens are [a-z0-9]+, so the tsquery text needs no escaping), ranked by ts_rank_cd.
        tsquery = "CAST(:tsq AS tsquery)"
        sql = sa.text(
            f"SELECT id, text, source, metadata, ts_rank_cd(tsv, {tsquery}) AS score FROM {self.table} "
            f"WHERE tsv @@ {tsquery} AND {where} ORDER BY score DESC, id LIMIT :k"
        )
        args = {**params, "tsq": " | ".join(terms), "k": top_k}
        async with self.engine.connect() as conn:
            rows = (await conn.execute(sql, args)).fetchall()
        return [_passage(r) for r in rows]

    async def list_document_ids(self, filter: Mapping[str, Any] | None = None) -> list[str]:
        where, params = pg_filter_sql(filter)
        if where == "FALSE":
            return []
        await self._prepare()
        sql = sa.text(f"SELECT DISTINCT document_id FROM {self.table} WHERE {where} ORDER BY document_id")
        async with self.engine.connect() as conn:
            return [r[0] for r in (await conn.execute(sql, params)).fetchall()]

    async def count(self) -> int:
        await self._prepare()
        async with self.engine.connect() as conn:
            return int((await conn.execute(sa.text(f"SELECT count(*) FROM {self.table}"))).scalar() or 0)


def _passage(row: Any) -> Passage:
    metadata = row[3] if isinstance(row[3], dict) else json.loads(row[3])
    return Passage(id=row[0], text=row[1], source=row[2], metadata=metadata, score=float(row[4]))
