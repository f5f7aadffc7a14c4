"""ONE contract suite for every vector store (memory, SQLite + sqlite-vec, PostgreSQL + pgvector).

Filters are checked against `matches_filter` (the reference semantics) on a corpus whose metadata mixes
strings, numbers, booleans, null, arrays and missing keys: a store that compiles a filter to SQL must
return exactly the chunks the reference predicate accepts.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from agora_agent.rag import ChunkRecord, InvalidFilterError, UnsafeRemovalError, VectorStore, matches_filter

from .conftest import StoreFactory

pytestmark = pytest.mark.ref("RAG-07", "RAG-08", "RAG-09", "RAG-10", "RAG-21", "RAG-22", "RAG-23", "ARCH-11")

MODEL = "test-model"


def rec(id: str, vec: list[float], text: str = "", meta: dict[str, Any] | None = None, **kw: Any) -> ChunkRecord:
    return ChunkRecord(
        id=id, text=text or f"text of {id}", embedding=vec, source=kw.get("source"), metadata=meta or {}, model_id=MODEL
    )


CORPUS_META: dict[str, dict[str, Any]] = {
    "c1#0": {"tenant_ref": "acme", "allowed_roles": ["*"], "rank": 1, "public": True},
    "c2#0": {"tenant_ref": "globex", "allowed_roles": ["admin"], "rank": 2, "public": False, "tags": ["a", "b"]},
    "c3#0": {"tenant_ref": "*", "allowed_roles": ["support", "admin"], "rank": 1.5, "tags": "a", "note": None},
    "c4#0": {},
    "c5#0": {"tenant_ref": "acme", "allowed_roles": ["admin"], "rank": "1", "tags": [1, 2], "public": 1},
    "c5#1": {"tenant_ref": "acme", "allowed_roles": ["admin"], "rank": "1", "tags": [1, 2], "public": 1},
    "c6#0": {"tenant_ref": ["acme", "globex"], "allowed_roles": ["*"], "rank": True},
    "c7#0": {"tenant_ref": 7, "allowed_roles": "*", "tags": {"a": 1}},
}

FILTERS: list[dict[str, Any]] = [
    {},
    {"tenant_ref": "acme"},
    {"tenant_ref": "nobody"},
    {"tenant_ref": ["globex", "acme"]},
    {"tenant_ref": []},
    {"tags": ["a"]},
    {"tags": "a"},
    {"tags": [1]},
    {"tags": [2, "b"]},
    {"rank": 1},
    {"rank": [1, 2]},
    {"rank": 1.5},
    {"rank": "1"},
    {"public": True},
    {"public": [True]},
    {"public": 1},
    {"note": None},
    {"note": [None]},
    {"missing": None},
    {"tenant_ref": ["acme", "*"], "allowed_roles": ["support", "*"]},
    {"tenant_ref": ["acme", "*"], "allowed_roles": []},
    {"tenant_ref": ["globex"]},
    {"tenant_ref": [7]},
    {"tenant_ref": ["acme", 7]},
    {"rank": [1, True]},
    {"rank": [True]},
    {"public": [1]},
    {"public": [False, None]},
    {"tags": ["a", 1]},
    {"allowed_roles": ["*"]},
    {"allowed_roles": "*"},
]


async def seeded(factory: StoreFactory) -> VectorStore:
    store = await factory()
    await store.upsert([rec(i, [1.0, float(n + 1) / 10, 0.0], meta=m) for n, (i, m) in enumerate(CORPUS_META.items())])
    return store


async def test_search_filter_matches_the_reference_semantics(store_factory: StoreFactory) -> None:
    store = await seeded(store_factory)
    for flt in FILTERS:
        expected = {i for i, m in CORPUS_META.items() if matches_filter(m, flt)}
        got = await store.search([1.0, 0.1, 0.0], top_k=100, filter=flt, model_id=MODEL)
        assert {p.id for p in got} == expected, flt
        keyword = await store.keyword_search("text", top_k=100, filter=flt)
        assert {p.id for p in keyword} == expected, flt
        docs = await store.list_document_ids(flt)
        assert docs == sorted({i.split("#")[0] for i in expected}), flt


async def test_search_orders_by_cosine_with_top_k_and_min_score(store_factory: StoreFactory) -> None:
    store = await store_factory()
    await store.upsert(
        [
            rec("near#0", [1.0, 0.0, 0.0], source="near.md"),
            rec("mid#0", [1.0, 1.0, 0.0]),
            rec("far#0", [0.0, 0.0, 1.0]),
            rec("zero#0", [0.0, 0.0, 0.0]),
        ]
    )
    got = await store.search([2.0, 0.0, 0.0], top_k=2, model_id=MODEL)
    assert [p.id for p in got] == ["near#0", "mid#0"]
    assert got[0].score == pytest.approx(1.0, abs=1e-5)
    assert got[1].score == pytest.approx(1 / math.sqrt(2), abs=1e-5)
    assert got[0].source == "near.md" and got[0].text == "text of near#0"
    floored = await store.search([2.0, 0.0, 0.0], top_k=10, min_score=0.5, model_id=MODEL)
    assert [p.id for p in floored] == ["near#0", "mid#0"]  # min_score applied before top_k
    assert await store.search([1.0, 0.0, 0.0], top_k=0) == []


async def test_other_models_vectors_are_never_compared(store_factory: StoreFactory) -> None:
    store = await store_factory()
    await store.upsert([rec("a#0", [1.0, 0.0, 0.0])])
    await store.upsert([ChunkRecord(id="b#0", text="b", embedding=[1.0, 0.0, 0.0], model_id="other", metadata={})])
    got = await store.search([1.0, 0.0, 0.0], top_k=10, model_id=MODEL)
    assert [p.id for p in got] == ["a#0"]
    assert [p.id for p in await store.search([1.0, 0.0, 0.0], top_k=10, model_id="other")] == ["b#0"]
    assert await store.search([1.0, 0.0], top_k=10) == []  # a query of another length matches nothing


async def test_upsert_replaces_text_metadata_and_vector(store_factory: StoreFactory) -> None:
    store = await store_factory()
    await store.upsert([rec("d#0", [1.0, 0.0, 0.0], text="old", meta={"v": 1})])
    await store.upsert([rec("d#0", [0.0, 1.0, 0.0], text="new", meta={"v": 2})])
    assert await store.count() == 1
    (p,) = await store.search([0.0, 1.0, 0.0], top_k=5, model_id=MODEL)
    assert (p.text, p.score, dict(p.metadata or {})) == ("new", pytest.approx(1.0, abs=1e-5), {"v": 2})


async def test_keyword_search_ranks_by_terms_under_the_filter(store_factory: StoreFactory) -> None:
    store = await store_factory()
    await store.upsert(
        [
            rec("refund#0", [1.0, 0.0, 0.0], text="How to request a refund for a damaged parcel", meta={"t": "a"}),
            rec("refund#1", [1.0, 0.0, 0.0], text="Refund refund refund policy for parcels", meta={"t": "b"}),
            rec("login#0", [1.0, 0.0, 0.0], text="Reset your password from the login page", meta={"t": "a"}),
        ]
    )
    got = await store.keyword_search("refund parcel", top_k=5)
    assert {p.id for p in got} == {"refund#0", "refund#1"}
    assert all(p.score > 0 for p in got)
    scoped = await store.keyword_search("refund parcel", top_k=5, filter={"t": "a"})
    assert [p.id for p in scoped] == ["refund#0"]
    assert await store.keyword_search("password", top_k=5, filter={"t": []}) == []
    assert await store.keyword_search("!!! ???", top_k=5) == []
    assert [p.id for p in await store.keyword_search("PASSWORD", top_k=5)] == ["login#0"]


async def test_remove_by_document_id_is_exact(store_factory: StoreFactory) -> None:
    store = await store_factory()
    ids = ["guide#0", "guide#1", "guide-2#0", "gui_e#0", "g%#0", "guide#x#0"]
    await store.upsert([rec(i, [1.0, 0.0, 0.0]) for i in ids])
    assert await store.remove("guide") == 2
    assert await store.remove("g%") == 1
    assert await store.remove("gui_e") == 1
    assert await store.remove("nothing") == 0
    assert await store.list_document_ids() == ["guide#x", "guide-2"]


async def test_remove_where(store_factory: StoreFactory) -> None:
    store = await seeded(store_factory)
    with pytest.raises(UnsafeRemovalError):
        await store.remove_where({})
    with pytest.raises(InvalidFilterError):
        await store.remove_where({"tenant_ref": {"$ne": "x"}})
    assert await store.count() == len(CORPUS_META)
    assert await store.remove_where({"tenant_ref": []}) == 0
    assert await store.remove_where({"tenant_ref": "acme"}) == 3
    assert await store.list_document_ids() == ["c2", "c3", "c4", "c6", "c7"]


async def test_update_metadata_merge_patch(store_factory: StoreFactory) -> None:
    store = await seeded(store_factory)
    assert await store.update_metadata("c5", {"tenant_ref": "globex", "tags": None, "extra": ["x"]}) == 2
    assert await store.update_metadata("unknown", {"a": 1}) == 0
    assert await store.update_metadata("c5", {}) == 0
    got = await store.search([1.0, 0.1, 0.0], top_k=10, filter={"tenant_ref": "globex"}, model_id=MODEL)
    by_id = {p.id: dict(p.metadata or {}) for p in got}
    assert set(by_id) == {"c2#0", "c5#0", "c5#1"}
    assert by_id["c5#0"] == {
        "tenant_ref": "globex",
        "allowed_roles": ["admin"],
        "rank": "1",
        "public": 1,
        "extra": ["x"],
    }
    assert [p.text for p in got if p.id == "c5#1"] == ["text of c5#1"]  # text and vector untouched
