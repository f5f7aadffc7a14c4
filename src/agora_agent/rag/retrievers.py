"""Retrievers: embedding, keyword, hybrid (reciprocal rank fusion) and reranking.

Every retriever takes the metadata `filter` and hands it to the store query (or to each inner retriever):
no retriever fetches unfiltered and drops afterwards, so a passage outside the filter is never even read.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from agora_agent.errors import ConfigurationError
from agora_agent.rag.embedders import Embedder
from agora_agent.rag.store import VectorStore
from agora_agent.rag.types import Passage

__all__ = [
    "EmbeddingRetriever",
    "HybridRetriever",
    "KeywordRetriever",
    "Reranker",
    "RerankingRetriever",
    "Retriever",
    "TermOverlapReranker",
]

_TERM = re.compile(r"[a-z0-9]+")


@runtime_checkable
class Retriever(Protocol):
    """`retrieve(query, top_k, filter, min_score) -> passages`, best first."""

    async def retrieve(
        self,
        query: str,
        *,
        top_k: int = 5,
        filter: Mapping[str, Any] | None = None,
        min_score: float | None = None,
    ) -> list[Passage]: ...


@runtime_checkable
class Reranker(Protocol):
    """Reorders candidates for a query (e.g. a cross-encoder); returns at most `top_k`."""

    async def rerank(self, query: str, passages: Sequence[Passage], *, top_k: int = 5) -> list[Passage]: ...


class EmbeddingRetriever:
    """Embed the query, then a vector search in the store. A query with no signal (an all-zero
    vector, e.g. only punctuation for the hashing embedder) returns nothing rather than arbitrary chunks."""

    def __init__(self, embedder: Embedder, store: VectorStore) -> None:
        self.embedder = embedder
        self.store = store

    async def retrieve(
        self,
        query: str,
        *,
        top_k: int = 5,
        filter: Mapping[str, Any] | None = None,
        min_score: float | None = None,
    ) -> list[Passage]:
        if not query.strip() or top_k < 1:
            return []
        vectors = await self.embedder.embed([query])
        if not vectors or not any(vectors[0]):
            return []
        return await self.store.search(
            vectors[0], top_k=top_k, filter=filter, min_score=min_score, model_id=self.embedder.model_id
        )


class KeywordRetriever:
    """Term relevance from the store itself (BM25 in memory, FTS5 `bm25()` on SQLite, `ts_rank` over a
    `tsvector` on PostgreSQL). `min_score` is ignored: keyword scores have no fixed scale."""

    def __init__(self, store: VectorStore) -> None:
        self.store = store

    async def retrieve(
        self,
        query: str,
        *,
        top_k: int = 5,
        filter: Mapping[str, Any] | None = None,
        min_score: float | None = None,
    ) -> list[Passage]:
        if not query.strip() or top_k < 1:
            return []
        return await self.store.keyword_search(query, top_k=top_k, filter=filter)


class HybridRetriever:
    """Reciprocal rank fusion: each retriever fetches `fetch_top_k` under the same filter; a
    passage scores `Σ weight / (k + rank + 1)` (rank from 0) over the lists it is in; the fused score replaces
    the original. `min_score` is ignored (fused scores are rank-based)."""

    def __init__(
        self,
        retrievers: Sequence[Retriever],
        *,
        k: int = 60,
        fetch_top_k: int = 20,
        weights: Sequence[float] | None = None,
    ) -> None:
        if not retrievers:
            raise ConfigurationError("HybridRetriever needs at least one retriever")
        if weights is not None and len(weights) != len(retrievers):
            raise ConfigurationError(f"HybridRetriever: {len(weights)} weights for {len(retrievers)} retrievers")
        self.retrievers = list(retrievers)
        self.k = k
        self.fetch_top_k = fetch_top_k
        self.weights = list(weights) if weights is not None else [1.0] * len(retrievers)

    async def retrieve(
        self,
        query: str,
        *,
        top_k: int = 5,
        filter: Mapping[str, Any] | None = None,
        min_score: float | None = None,
    ) -> list[Passage]:
        fused: dict[str, float] = {}
        first: dict[str, Passage] = {}
        for retriever, weight in zip(self.retrievers, self.weights, strict=True):
            for rank, passage in enumerate(await retriever.retrieve(query, top_k=self.fetch_top_k, filter=filter)):
                fused[passage.id] = fused.get(passage.id, 0.0) + weight / (self.k + rank + 1)
                first.setdefault(passage.id, passage)
        ranked = sorted(fused.items(), key=lambda pair: (-pair[1], pair[0]))[:top_k]
        return [_rescored(first[i], score) for i, score in ranked]


class RerankingRetriever:
    """Fetch `fetch_top_k` candidates from `base` (same filter), then `reranker.rerank(..., top_k)`."""

    def __init__(self, base: Retriever, reranker: Reranker, *, fetch_top_k: int = 20) -> None:
        self.base = base
        self.reranker = reranker
        self.fetch_top_k = fetch_top_k

    async def retrieve(
        self,
        query: str,
        *,
        top_k: int = 5,
        filter: Mapping[str, Any] | None = None,
        min_score: float | None = None,
    ) -> list[Passage]:
        candidates = await self.base.retrieve(query, top_k=self.fetch_top_k, filter=filter, min_score=min_score)
        return await self.reranker.rerank(query, candidates, top_k=top_k)


class TermOverlapReranker:
    """Scores a passage by how many distinct query terms it contains: a dependency-free reranker
    for tests and as a cheap second stage after vector search."""

    async def rerank(self, query: str, passages: Sequence[Passage], *, top_k: int = 5) -> list[Passage]:
        terms = set(_TERM.findall(query.lower()))
        scored = [(len(terms & set(_TERM.findall(p.text.lower()))), i, p) for i, p in enumerate(passages)]
        scored.sort(key=lambda t: (-t[0], t[1]))
        return [_rescored(p, float(s)) for s, _, p in scored[:top_k]]


def _rescored(passage: Passage, score: float) -> Passage:
    return Passage(id=passage.id, text=passage.text, score=score, source=passage.source, metadata=passage.metadata)
