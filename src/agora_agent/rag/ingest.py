"""Ingestion: chunk, embed in batches, upsert; re-ingesting a document replaces it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from agora_agent.actors import Actor
from agora_agent.errors import ConfigurationError
from agora_agent.rag.access import SHARED, stamp_acl
from agora_agent.rag.chunking import Chunk, chunk_documents
from agora_agent.rag.embedders import Embedder
from agora_agent.rag.store import VectorStore
from agora_agent.rag.types import ChunkRecord, Document

__all__ = ["IngestProgress", "ingest_chunks", "ingest_documents", "ingest_for_actor"]

IngestProgress = Callable[[int, int], None]
"""`(chunks_done, chunks_total)`, called after each embedded batch (the CLI's progress bar)."""


async def ingest_chunks(
    chunks: Sequence[Chunk],
    *,
    embedder: Embedder,
    store: VectorStore,
    batch_size: int = 64,
    progress: IngestProgress | None = None,
) -> int:
    """Embed `chunks` in batches of `batch_size` and upsert them; returns how many were written.
    No chunks -> 0 without calling the embedder or the store."""
    if batch_size < 1:
        raise ConfigurationError(f"batch_size must be at least 1 (got {batch_size})")
    written = 0
    for start in range(0, len(chunks), batch_size):
        batch = chunks[start : start + batch_size]
        vectors = await embedder.embed([c.text for c in batch])
        if len(vectors) != len(batch):
            raise ConfigurationError(f"embedder returned {len(vectors)} vectors for {len(batch)} texts")
        written += await store.upsert(
            [
                ChunkRecord(
                    id=c.id,
                    text=c.text,
                    embedding=v,
                    source=c.source,
                    metadata=dict(c.metadata or {}),
                    model_id=embedder.model_id,
                )
                for c, v in zip(batch, vectors, strict=True)
            ]
        )
        if progress is not None:
            progress(min(start + batch_size, len(chunks)), len(chunks))
    return written


async def ingest_documents(
    documents: Iterable[Document],
    *,
    embedder: Embedder,
    store: VectorStore,
    tenant_ref: str | None,
    allowed_roles: Sequence[str] | None = None,
    chunk_size: int = 800,
    overlap: int = 100,
    separator: str | None = None,
    batch_size: int = 64,
    progress: IngestProgress | None = None,
) -> int:
    """Chunk, stamp the ACL, embed and upsert `documents`; returns the number of chunks written.

    `tenant_ref` is required (keyword) so no caller forgets it: the owning tenant, `SHARED` for a corpus
    every tenant reads, or None for chunks no `acl_filter` will ever match. It overwrites any `tenant_ref`
    in the documents' metadata. `allowed_roles` (default: each document's own list, else everyone).
    Each document's previous chunks are removed first, so a shorter new version leaves no stale chunk.
    """
    docs = list(documents)
    stamped = [
        Document(
            id=d.id,
            text=d.text,
            source=d.source,
            metadata=stamp_acl(d.metadata, tenant_ref=tenant_ref, allowed_roles=allowed_roles),
        )
        for d in docs
    ]
    chunks = chunk_documents(stamped, chunk_size=chunk_size, overlap=overlap, separator=separator)
    for doc in docs:
        await store.remove(doc.id)
    return await ingest_chunks(chunks, embedder=embedder, store=store, batch_size=batch_size, progress=progress)


async def ingest_for_actor(
    actor: Actor,
    documents: Iterable[Document],
    *,
    embedder: Embedder,
    store: VectorStore,
    allowed_roles: Sequence[str] | None = None,
    chunk_size: int = 800,
    overlap: int = 100,
    separator: str | None = None,
) -> int:
    """Ingest documents an actor uploads: stamped with the actor's tenant (never shared). An actor without
    a tenant cannot upload (`ConfigurationError`), since nobody could be scoped to read it."""
    if not actor.tenant_ref or actor.tenant_ref == SHARED:
        raise ConfigurationError(f"actor {actor.id!r} has no tenant: uploads are stamped with the uploader's tenant")
    return await ingest_documents(
        documents,
        embedder=embedder,
        store=store,
        tenant_ref=actor.tenant_ref,
        allowed_roles=allowed_roles,
        chunk_size=chunk_size,
        overlap=overlap,
        separator=separator,
    )
