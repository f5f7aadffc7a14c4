"""Retrievers over a real store: embedding, keyword, hybrid RRF, reranking (REFERENCE RAG-13..16, TEST-08/09)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from agora_agent.rag import (
    Document,
    EmbeddingRetriever,
    HashingEmbedder,
    HybridRetriever,
    KeywordRetriever,
    MemoryVectorStore,
    Passage,
    RerankingRetriever,
    TermOverlapReranker,
    ingest_documents,
)
from agora_agent.rag.embedders import fnv1a

DOCS = [
    Document(id="refunds", text="Refunds are paid within five days to the original card.", source="refunds.md"),
    Document(id="shipping", text="Parcels ship in two days; tracking links arrive by email.", source="shipping.md"),
    Document(id="password", text="Reset a forgotten password from the sign-in page.", source="password.md"),
]


async def corpus() -> tuple[HashingEmbedder, MemoryVectorStore]:
    embedder, store = HashingEmbedder(64), MemoryVectorStore()
    await ingest_documents(DOCS, embedder=embedder, store=store, tenant_ref="*")
    return embedder, store


@pytest.mark.ref("TEST-08")
async def test_hashing_embedder_is_fnv1a_token_counts() -> None:
    assert fnv1a("a") == 0xE40C292C  # the published FNV-1a 32-bit test vector
    embedder = HashingEmbedder(16)
    (vec,) = await embedder.embed(["Refund, refund! card"])
    assert sum(vec) == 3.0
    assert vec[fnv1a("refund") % 16] >= 2.0
    assert (await embedder.embed(["Refund, refund! card"]))[0] == vec  # deterministic
    assert embedder.model_id == "hashing-fnv1a-16" and embedder.dimensions == 16


@pytest.mark.ref("RAG-13", "RAG-05", "TEST-10")
async def test_embedding_retriever_finds_by_overlap_and_passes_filter() -> None:
    embedder, store = await corpus()
    retriever = EmbeddingRetriever(embedder, store)
    top = await retriever.retrieve("how do refunds get paid", top_k=1)
    assert [p.document_id for p in top] == ["refunds"] and top[0].source == "refunds.md"
    assert await retriever.retrieve("how do refunds get paid", filter={"tenant_ref": "acme"}) == []
    assert await retriever.retrieve("?!", top_k=3) == []  # no tokens -> zero vector -> nothing
    assert await retriever.retrieve("   ") == []
    assert len(await retriever.retrieve("days", top_k=5)) == 3  # default top_k honoured up to corpus size
    assert await retriever.retrieve("refunds paid card", min_score=0.99) == []


@pytest.mark.ref("RAG-14")
async def test_keyword_retriever_uses_the_store_and_ignores_min_score() -> None:
    _, store = await corpus()
    retriever = KeywordRetriever(store)
    got = await retriever.retrieve("forgotten password", min_score=1000.0)
    assert [p.document_id for p in got] == ["password"]


class Fixed:
    """A retriever with a fixed answer, recording what it was asked."""

    def __init__(self, ids: Sequence[str]) -> None:
        self.ids = ids
        self.calls: list[tuple[int, Mapping[str, Any] | None]] = []

    async def retrieve(
        self, query: str, *, top_k: int = 5, filter: Mapping[str, Any] | None = None, min_score: float | None = None
    ) -> list[Passage]:
        self.calls.append((top_k, filter))
        return [Passage(id=i, text=i, score=1.0) for i in self.ids[:top_k]]


@pytest.mark.ref("RAG-15")
async def test_hybrid_rrf_with_weights_dedupes_and_passes_the_filter_to_each() -> None:
    a, b = Fixed(["x", "y", "z"]), Fixed(["y", "w"])
    hybrid = HybridRetriever([a, b], k=60, fetch_top_k=7, weights=[1.0, 2.0])
    got = await hybrid.retrieve("q", top_k=3, filter={"tenant_ref": "acme"})
    assert a.calls == b.calls == [(7, {"tenant_ref": "acme"})]
    scores = {p.id: p.score for p in got}
    assert [p.id for p in got] == ["y", "w", "x"]
    assert scores["y"] == pytest.approx(1 / 62 + 2 / 61)
    assert scores["w"] == pytest.approx(2 / 62)
    assert scores["x"] == pytest.approx(1 / 61)


async def test_hybrid_over_real_retrievers() -> None:
    embedder, store = await corpus()
    hybrid = HybridRetriever([EmbeddingRetriever(embedder, store), KeywordRetriever(store)])
    got = await hybrid.retrieve("tracking email for parcels", top_k=2)
    assert got[0].document_id == "shipping"


@pytest.mark.ref("RAG-16", "TEST-09")
async def test_reranking_fetches_candidates_then_reorders() -> None:
    base = Fixed(["p1", "p2", "p3"])
    base_passages = {
        "p1": "nothing relevant here",
        "p2": "refund to card",
        "p3": "refund",
    }

    class TextFixed(Fixed):
        async def retrieve(self, query: str, **kw: Any) -> list[Passage]:
            await super().retrieve(query, **kw)
            return [Passage(id=i, text=base_passages[i], score=1.0) for i in self.ids]

    base = TextFixed(["p1", "p2", "p3"])
    got = await RerankingRetriever(base, TermOverlapReranker(), fetch_top_k=9).retrieve(
        "refund card", top_k=2, filter={"k": "v"}
    )
    assert base.calls == [(9, {"k": "v"})]
    assert [(p.id, p.score) for p in got] == [("p2", 2.0), ("p3", 1.0)]
