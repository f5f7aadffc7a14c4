"""Retrieval quality and query latency.

1. Quality: the help-centre question set shipped in bench/data/helpcentre_qa.json (36 articles, 108 labelled
   questions, two of three paraphrased). recall@5 (the right article in the top 5) and MRR@10 for keyword
   (BM25), the hashing embedder, the local embedder (all-MiniLM-L6-v2 int8, `rag-local` extra) and hybrids
   (reciprocal rank fusion with keyword).
2. Latency: p50/p99 of filtered top-5 queries (a tenant filter, as the access control applies) at 10k and
   100k chunks for the memory, SQLite (sqlite-vec) and pgvector stores, on seeded random 128-d unit vectors
   spread over 10 tenants. pgvector runs on the embedded PostgreSQL of `pgserver` (or AGORA_PGVECTOR_URL);
   its HNSW index is built after the bulk load, and the build time is printed. Ratios are against the
   memory store measured in the same run.

    .venv/bin/python bench/rag.py [--sizes 10000,100000] [--queries 50] [--stores memory,sqlite-vec,pgvector]
                                  [--skip-latency] [--skip-quality]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import tempfile
import time
import uuid
import warnings
from pathlib import Path
from typing import Any

from agora_agent.rag import (
    ChunkRecord,
    Document,
    EmbeddingRetriever,
    HashingEmbedder,
    HybridRetriever,
    KeywordRetriever,
    MemoryVectorStore,
    Retriever,
    VectorStore,
    ingest_documents,
)

DATA = Path(__file__).parent / "data" / "helpcentre_qa.json"
DIM = 128
TENANTS = [f"t{i}" for i in range(10)]


# -- quality --------------------------------------------------------------------------------------------


async def quality() -> None:
    data = json.loads(DATA.read_text())
    docs = [Document(id=a["id"], text=a["text"]) for a in data["articles"]]
    questions = [(q, a["id"]) for a in data["articles"] for q in a["questions"]]
    store_hash, store_local = MemoryVectorStore(), MemoryVectorStore()
    hashing = HashingEmbedder(256)
    await ingest_documents(docs, embedder=hashing, store=store_hash, tenant_ref="*")
    retrievers: dict[str, Retriever] = {
        "keyword (BM25)": KeywordRetriever(store_hash),
        "hashing-256": EmbeddingRetriever(hashing, store_hash),
        "hybrid hashing+keyword": HybridRetriever(
            [EmbeddingRetriever(hashing, store_hash), KeywordRetriever(store_hash)]
        ),
    }
    try:
        from agora_agent.rag.local import LocalEmbedder

        local = LocalEmbedder()
        local.load()
        started = time.perf_counter()
        await ingest_documents(docs, embedder=local, store=store_local, tenant_ref="*")
        print(f"local embedder: {len(docs)} articles embedded in {time.perf_counter() - started:.2f} s")
        retrievers["local MiniLM-L6 int8"] = EmbeddingRetriever(local, store_local)
        retrievers["hybrid local+keyword"] = HybridRetriever(
            [EmbeddingRetriever(local, store_local), KeywordRetriever(store_local)]
        )
        retrievers["hybrid local×2+keyword"] = HybridRetriever(
            [EmbeddingRetriever(local, store_local), KeywordRetriever(store_local)], weights=[2.0, 1.0]
        )
    except Exception as exc:  # the rag-local extra is optional
        print(f"local embedder skipped: {exc}")
    print(f"\nquality: {len(docs)} articles, {len(questions)} questions")
    print(f"{'retriever':<26} {'recall@5':>9} {'MRR@10':>8} {'ms/query':>9}")
    for name, retriever in retrievers.items():
        hits = 0
        rr = 0.0
        started = time.perf_counter()
        for question, expected in questions:
            ranked = [p.document_id for p in await retriever.retrieve(question, top_k=10)]
            hits += expected in ranked[:5]
            rr += 1 / (ranked.index(expected) + 1) if expected in ranked else 0.0
        per_query = (time.perf_counter() - started) * 1000 / len(questions)
        print(f"{name:<26} {hits / len(questions):>9.3f} {rr / len(questions):>8.3f} {per_query:>9.2f}")


# -- latency --------------------------------------------------------------------------------------------


def unit(rng: random.Random) -> list[float]:
    v = [rng.gauss(0, 1) for _ in range(DIM)]
    n = sum(x * x for x in v) ** 0.5
    return [x / n for x in v]


def corpus(n: int, seed: int = 7) -> list[ChunkRecord]:
    rng = random.Random(seed)
    return [
        ChunkRecord(
            id=f"doc{i // 4}#{i % 4}",
            text=f"chunk {i}",
            embedding=unit(rng),
            metadata={"tenant_ref": TENANTS[i % len(TENANTS)], "allowed_roles": ["*"]},
            model_id="bench",
        )
        for i in range(n)
    ]


async def timed_queries(store: VectorStore, queries: list[list[float]]) -> list[float]:
    out = []
    for i, q in enumerate(queries):
        flt = {"tenant_ref": [TENANTS[i % len(TENANTS)], "*"], "allowed_roles": ["member", "*"]}
        started = time.perf_counter()
        got = await store.search(q, top_k=5, filter=flt, model_id="bench")
        out.append((time.perf_counter() - started) * 1000)
        assert len(got) == 5 or store.__class__.__name__ == "PgVectorStore", len(got)
    return out


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


async def load_pgvector(rows: list[ChunkRecord]) -> tuple[Any, Any, float]:
    from agora_agent.rag.pgvector_store import PgVectorStore
    from agora_agent.stores.sql import create_engine_from_url

    url = os.environ.get("AGORA_PGVECTOR_URL")
    server = None
    if not url:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import pgserver

            data = f"/tmp/agora-bench-pg-{uuid.uuid4().hex[:8]}"
            server = pgserver.get_server(data, cleanup_mode="delete")
        url = f"postgresql+asyncpg://postgres@/postgres?host={data}"
    engine = create_engine_from_url(url)
    table = f"bench_{uuid.uuid4().hex[:8]}"
    store = PgVectorStore(engine, table=table, dimension=DIM, ensure_schema=True)
    await store.count()  # migrate
    import sqlalchemy as sa

    async with engine.begin() as conn:  # bulk load first, index after (a live HNSW index makes inserts slow)
        await conn.execute(sa.text(f"DROP INDEX ix_{table}_hnsw"))
    for start in range(0, len(rows), 2000):
        await store.upsert(rows[start : start + 2000])
    started = time.perf_counter()
    async with engine.begin() as conn:
        await conn.execute(sa.text("SET maintenance_work_mem = '256MB'"))
        await conn.execute(sa.text(f"CREATE INDEX ix_{table}_hnsw ON {table} USING hnsw (embedding vector_cosine_ops)"))
        await conn.execute(sa.text(f"ANALYZE {table}"))
    build = time.perf_counter() - started

    async def cleanup() -> None:
        async with engine.begin() as conn:
            await conn.execute(sa.text(f"DROP TABLE {table}"))
            await conn.execute(sa.text(f"DROP TABLE {table}_alembic_version"))
        await engine.dispose()
        if server is not None:
            server.cleanup()

    return store, cleanup, build


async def latency(sizes: list[int], n_queries: int, stores: set[str]) -> None:
    rng = random.Random(99)
    queries = [unit(rng) for _ in range(n_queries)]
    print(f"\nlatency: filtered top-5 (1 tenant of 10 + shared), {DIM}-d, {n_queries} queries per store")
    print(f"{'chunks':>8} {'store':<12} {'load s':>8} {'p50 ms':>9} {'p99 ms':>9} {'p50 vs memory':>14}")
    for n in sizes:
        rows = corpus(n)
        results: dict[str, tuple[float, list[float]]] = {}
        # The memory store is the baseline: always measured (fewer queries at 100k: it is pure Python).
        memory = MemoryVectorStore()
        started = time.perf_counter()
        await memory.upsert(rows)
        load = time.perf_counter() - started
        memory_queries = queries[: max(10, n_queries // (10 if n >= 100_000 else 1))]
        results["memory"] = (load, await timed_queries(memory, memory_queries))
        del memory
        try:
            if "sqlite-vec" not in stores:
                raise RuntimeError("not selected")
            from agora_agent.rag.sqlite_store import SqliteVectorStore

            with tempfile.TemporaryDirectory() as tmp:
                sqlite = SqliteVectorStore(Path(tmp) / "agent.db")
                started = time.perf_counter()
                for start in range(0, n, 5000):
                    await sqlite.upsert(rows[start : start + 5000])
                load = time.perf_counter() - started
                results["sqlite-vec"] = (load, await timed_queries(sqlite, queries))
                await sqlite.close()
        except Exception as exc:
            print(f"sqlite-vec skipped: {exc}")
        try:
            if "pgvector" not in stores:
                raise RuntimeError("not selected")
            started = time.perf_counter()
            pg, cleanup, build = await load_pgvector(rows)
            load = time.perf_counter() - started
            try:
                results["pgvector"] = (load, await timed_queries(pg, queries))
                print(f"{'':>8} (pgvector HNSW build {build:.1f} s, included in load)")
            finally:
                await cleanup()
        except Exception as exc:
            print(f"pgvector skipped: {type(exc).__name__}: {exc}")
        base = statistics.median(results["memory"][1])
        for name, (load, times) in results.items():
            p50 = statistics.median(times)
            print(f"{n:>8} {name:<12} {load:>8.1f} {p50:>9.2f} {pct(times, 99):>9.2f} {p50 / base:>13.3f}x")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--stores", default="memory,sqlite-vec,pgvector")
    parser.add_argument("--skip-latency", action="store_true")
    parser.add_argument("--skip-quality", action="store_true")
    args = parser.parse_args()
    print(f"load average: {os.getloadavg()}")
    if not args.skip_quality:
        await quality()
    if not args.skip_latency:
        await latency([int(s) for s in args.sizes.split(",")], args.queries, set(args.stores.split(",")))
    print(f"load average: {os.getloadavg()}")


if __name__ == "__main__":
    asyncio.run(main())
