"""Ingesting files and uploads: allow-list -> size -> extract -> chunk -> embed -> upsert, with a reason for
every skip. A file's previous chunks are replaced (re-ingest)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from agora_agent.actors import Actor
from agora_agent.errors import ConfigurationError, NotFoundError
from agora_agent.rag.access import SHARED
from agora_agent.rag.embedders import Embedder
from agora_agent.rag.extract import DEFAULT_CONTENT_TYPES, TextExtractor, normalize_content_type
from agora_agent.rag.ingest import ingest_documents
from agora_agent.rag.store import VectorStore
from agora_agent.rag.types import Document
from agora_agent.stores.attachments import ReadableAttachmentStore

__all__ = ["FileOutcome", "SkipReason", "UploadedFile", "ingest_attachment", "ingest_files", "ingest_upload"]

SkipReason = Literal["unsupported-type", "too-large", "empty-text", "unreadable"]


@dataclass(frozen=True, kw_only=True, slots=True)
class UploadedFile:
    """One file: its bytes, declared content type, a stable `document_id` and a `source` label (its name)."""

    document_id: str
    data: bytes
    content_type: str
    source: str | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class FileOutcome:
    document_id: str
    status: Literal["ingested", "skipped"]
    chunks: int = 0
    reason: SkipReason | None = None
    detail: str | None = None


async def ingest_files(
    files: Sequence[UploadedFile],
    *,
    embedder: Embedder,
    store: VectorStore,
    tenant_ref: str | None,
    allowed_roles: Sequence[str] | None = None,
    content_types: Sequence[str] = DEFAULT_CONTENT_TYPES,
    max_bytes: int = 20 * 1024 * 1024,
    extractor: TextExtractor | None = None,
    chunk_size: int = 800,
    overlap: int = 100,
    on_file: Callable[[FileOutcome], None] | None = None,
) -> list[FileOutcome]:
    """Ingest each file, or skip it with a reason: `unsupported-type` (not on the allow-list, or no extractor),
    `too-large` (over `max_bytes`), `unreadable` (the extractor failed: a broken PDF), `empty-text`.
    CSV is chunked by whole rows. `tenant_ref` stamps every chunk (see `ingest_documents`)."""
    allowed = {normalize_content_type(t) for t in content_types}
    extractor = extractor or TextExtractor()
    outcomes: list[FileOutcome] = []
    for f in files:
        outcome = await _one(
            f, allowed, max_bytes, extractor, embedder, store, tenant_ref, allowed_roles, chunk_size, overlap
        )
        outcomes.append(outcome)
        if on_file is not None:
            on_file(outcome)
    return outcomes


async def _one(
    f: UploadedFile,
    allowed: set[str],
    max_bytes: int,
    extractor: TextExtractor,
    embedder: Embedder,
    store: VectorStore,
    tenant_ref: str | None,
    allowed_roles: Sequence[str] | None,
    chunk_size: int,
    overlap: int,
) -> FileOutcome:
    kind = normalize_content_type(f.content_type)
    if kind not in allowed:
        return FileOutcome(document_id=f.document_id, status="skipped", reason="unsupported-type", detail=kind)
    if len(f.data) > max_bytes:
        detail = f"{len(f.data)} bytes > {max_bytes}"
        return FileOutcome(document_id=f.document_id, status="skipped", reason="too-large", detail=detail)
    try:
        text = extractor.extract(f.data, kind)
    except ConfigurationError:
        raise
    except Exception as exc:  # a malformed file is the file's problem, not the batch's
        detail = type(exc).__name__
        return FileOutcome(document_id=f.document_id, status="skipped", reason="unreadable", detail=detail)
    if text is None:
        return FileOutcome(document_id=f.document_id, status="skipped", reason="unsupported-type", detail=kind)
    if not text.strip():
        return FileOutcome(document_id=f.document_id, status="skipped", reason="empty-text")
    chunks = await ingest_documents(
        [Document(id=f.document_id, text=text, source=f.source, metadata={"content_type": kind})],
        embedder=embedder,
        store=store,
        tenant_ref=tenant_ref,
        allowed_roles=allowed_roles,
        chunk_size=chunk_size,
        overlap=overlap,
        separator="\n" if kind == "text/csv" else None,
    )
    return FileOutcome(document_id=f.document_id, status="ingested", chunks=chunks)


async def ingest_upload(
    actor: Actor,
    file: UploadedFile,
    *,
    embedder: Embedder,
    store: VectorStore,
    allowed_roles: Sequence[str] | None = None,
    content_types: Sequence[str] = DEFAULT_CONTENT_TYPES,
    max_bytes: int = 20 * 1024 * 1024,
) -> FileOutcome:
    """An actor's upload, stamped with the actor's tenant (the uploader's identity, never the file's claims).
    An actor without a tenant cannot upload (`ConfigurationError`)."""
    if not actor.tenant_ref or actor.tenant_ref == SHARED:
        raise ConfigurationError(
            f"actor {actor.id!r} has no tenant: uploads are stamped with the uploader's tenant", code="no_tenant"
        )
    (outcome,) = await ingest_files(
        [file],
        embedder=embedder,
        store=store,
        tenant_ref=actor.tenant_ref,
        allowed_roles=allowed_roles,
        content_types=content_types,
        max_bytes=max_bytes,
    )
    return outcome


async def ingest_attachment(
    actor: Actor,
    media_id: str,
    *,
    staging: ReadableAttachmentStore,
    embedder: Embedder,
    store: VectorStore,
    allowed_roles: Sequence[str] | None = None,
    content_types: Sequence[str] = DEFAULT_CONTENT_TYPES,
    max_bytes: int = 20 * 1024 * 1024,
) -> FileOutcome:
    """Ingest a file the actor uploaded as a chat attachment (its sniffed type, its bytes from the staging
    store) into the knowledge base, stamped with the actor's tenant; document id `attachment:<media id>`.

    Someone else's (or an unknown) media id is a `NotFoundError`: an attachment is only its uploader's.
    """
    record = await staging.get(media_id)
    if record is None or record.actor_id != actor.id:
        raise NotFoundError("attachment not found")
    data = await staging.read(media_id)
    upload = UploadedFile(
        document_id=f"attachment:{media_id}", data=data, content_type=record.content_type, source=record.filename
    )
    return await ingest_upload(
        actor,
        upload,
        embedder=embedder,
        store=store,
        allowed_roles=allowed_roles,
        content_types=content_types,
        max_bytes=max_bytes,
    )
