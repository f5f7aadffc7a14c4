"""The vector store protocol and the in-memory store.

Every store answers the same contract (tests/rag/test_store_contract.py runs it on each):
- `upsert` replaces a chunk with the same id (text, source, metadata and vector);
- `search` applies the metadata filter and `min_score` *inside* the query, then orders by score
  (higher = closer) and returns at most `top_k`; only vectors of `model_id` (when given) and of the
  query's length are compared;
- `keyword_search` ranks by term relevance (BM25 here, FTS5 on SQLite, `tsvector` on PostgreSQL) under the
  same filter;
- `remove(document_id)` drops the document's chunks; `remove_where(filter)` refuses `{}` with
  `UnsafeRemovalError` before any I/O and answers 0 for a filter that denies all;
- `update_metadata(document_id, patch)` is a shallow merge patch on every chunk of the document;
- `list_document_ids(filter)` lists distinct document ids under the search filter semantics.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Literal, Protocol, runtime_checkable

from agora_agent.errors import ConfigurationError
from agora_agent.rag.filters import (
    apply_metadata_patch,
    assert_removal_filter,
    effective_patch_keys,
    filter_denies_all,
    matches_filter,
    validate_filter,
)
from agora_agent.rag.types import ChunkRecord, Passage, document_id_of

__all__ = ["MemoryVectorStore", "Metric", "VectorStore", "bm25_scores", "tokenize"]

Metric = Literal["cosine", "l2", "inner"]
_TOKEN = re.compile(r"[a-z0-9]+")


@runtime_checkable
class VectorStore(Protocol):
    """Where chunks and their vectors live. See the module docstring for the contract."""

    async def upsert(self, chunks: Sequence[ChunkRecord]) -> int: ...

    async def search(
        self,
        embedding: Sequence[float],
        *,
        top_k: int = 5,
        filter: Mapping[str, Any] | None = None,
        min_score: float | None = None,
        model_id: str | None = None,
    ) -> list[Passage]: ...

    async def keyword_search(
        self, query: str, *, top_k: int = 5, filter: Mapping[str, Any] | None = None
    ) -> list[Passage]: ...

    async def remove(self, document_id: str) -> int: ...

    async def remove_where(self, filter: Mapping[str, Any]) -> int: ...

    async def update_metadata(self, document_id: str, patch: Mapping[str, Any]) -> int: ...

    async def list_document_ids(self, filter: Mapping[str, Any] | None = None) -> list[str]: ...

    async def count(self) -> int: ...


def tokenize(text: str) -> list[str]:
    """Lowercase `[a-z0-9]+` tokens."""
    return _TOKEN.findall(text.lower())


def bm25_scores(
    query: str, docs: Sequence[tuple[str, str]], *, k1: float = 1.5, b: float = 0.75
) -> list[tuple[str, float]]:
    """Okapi BM25 of `query` over `(id, text)` pairs, positive scores only (the reference's formula:
    idf = ln(1 + (N - df + 0.5) / (df + 0.5))). Statistics come from `docs` alone — callers pass the
    filtered set, so a foreign tenant's corpus cannot shift the scores an actor sees."""
    terms = set(tokenize(query))
    if not terms or not docs:
        return []
    tokenized = [(doc_id, Counter(tokenize(text))) for doc_id, text in docs]
    n = len(tokenized)
    avg_len = sum(sum(tf.values()) for _, tf in tokenized) / n or 1.0
    df = {t: sum(1 for _, tf in tokenized if t in tf) for t in terms}
    out: list[tuple[str, float]] = []
    for doc_id, tf in tokenized:
        length = sum(tf.values())
        score = 0.0
        for t in terms:
            f = tf.get(t, 0)
            if not f:
                continue
            idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
            score += idf * f * (k1 + 1) / (f + k1 * (1 - b + b * length / avg_len))
        if score > 0:
            out.append((doc_id, score))
    return out


def _score(metric: Metric, query: Sequence[float], vector: Sequence[float], query_norm: float) -> float:
    dot = sum(a * b for a, b in zip(query, vector, strict=True))
    if metric == "inner":
        return dot
    if metric == "l2":
        return -math.sqrt(sum((a - b) ** 2 for a, b in zip(query, vector, strict=True)))
    norm = math.sqrt(sum(b * b for b in vector))
    return 0.0 if norm == 0 or query_norm == 0 else dot / (norm * query_norm)


class MemoryVectorStore:
    """Chunks in a dict, exact (brute-force) search. For tests, the demo and small corpora (≈10⁴ chunks)."""

    def __init__(self, *, metric: Metric = "cosine") -> None:
        if metric not in ("cosine", "l2", "inner"):
            raise ConfigurationError(f"unknown metric {metric!r} (cosine, l2 or inner)")
        self.metric: Metric = metric
        self._rows: dict[str, ChunkRecord] = {}

    async def upsert(self, chunks: Sequence[ChunkRecord]) -> int:
        for chunk in chunks:
            self._rows[chunk.id] = chunk
        return len(chunks)

    def _visible(self, filter: Mapping[str, Any] | None) -> list[ChunkRecord]:
        checked = validate_filter(filter)
        if filter_denies_all(checked):
            return []
        return [r for r in self._rows.values() if matches_filter(r.metadata, checked)]

    async def search(
        self,
        embedding: Sequence[float],
        *,
        top_k: int = 5,
        filter: Mapping[str, Any] | None = None,
        min_score: float | None = None,
        model_id: str | None = None,
    ) -> list[Passage]:
        if top_k < 1:
            return []
        query = [float(x) for x in embedding]
        query_norm = math.sqrt(sum(x * x for x in query))
        scored: list[tuple[float, ChunkRecord]] = []
        for row in self._visible(filter):
            if (model_id is not None and row.model_id != model_id) or len(row.embedding) != len(query):
                continue
            score = _score(self.metric, query, row.embedding, query_norm)
            if min_score is None or score >= min_score:
                scored.append((score, row))
        scored.sort(key=lambda pair: (-pair[0], pair[1].id))
        return [_passage(row, score) for score, row in scored[:top_k]]

    async def keyword_search(
        self, query: str, *, top_k: int = 5, filter: Mapping[str, Any] | None = None
    ) -> list[Passage]:
        if top_k < 1:
            return []
        rows = {r.id: r for r in self._visible(filter)}
        scores = bm25_scores(query, [(r.id, r.text) for r in rows.values()])
        scores.sort(key=lambda pair: (-pair[1], pair[0]))
        return [_passage(rows[i], s) for i, s in scores[:top_k]]

    async def remove(self, document_id: str) -> int:
        ids = [i for i in self._rows if document_id_of(i) == document_id]
        for i in ids:
            del self._rows[i]
        return len(ids)

    async def remove_where(self, filter: Mapping[str, Any]) -> int:
        checked = assert_removal_filter(filter)
        if filter_denies_all(checked):
            return 0
        ids = [r.id for r in self._rows.values() if matches_filter(r.metadata, checked)]
        for i in ids:
            del self._rows[i]
        return len(ids)

    async def update_metadata(self, document_id: str, patch: Mapping[str, Any]) -> int:
        if not effective_patch_keys(patch):
            return 0
        written = 0
        for chunk_id, row in list(self._rows.items()):
            if document_id_of(chunk_id) == document_id:
                self._rows[chunk_id] = ChunkRecord(
                    id=row.id,
                    text=row.text,
                    embedding=row.embedding,
                    source=row.source,
                    metadata=apply_metadata_patch(row.metadata, patch),
                    model_id=row.model_id,
                )
                written += 1
        return written

    async def list_document_ids(self, filter: Mapping[str, Any] | None = None) -> list[str]:
        return sorted({r.document_id for r in self._visible(filter)})

    async def count(self) -> int:
        return len(self._rows)


def _passage(row: ChunkRecord, score: float) -> Passage:
    return Passage(id=row.id, text=row.text, score=score, source=row.source, metadata=dict(row.metadata))
