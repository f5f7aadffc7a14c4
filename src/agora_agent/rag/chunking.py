"""Chunking: prose windows that prefer paragraph/sentence/word boundaries, or whole
records split on a separator; chunk ids `<document id>#<n>` are stable when the same text is re-chunked."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from agora_agent.errors import ConfigurationError
from agora_agent.rag.types import Document

__all__ = ["Chunk", "chunk_documents", "chunk_text"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Chunk:
    """A piece of a document, ready to embed. `metadata` is the document's, copied onto every chunk."""

    id: str
    document_id: str
    text: str
    source: str | None = None
    metadata: dict[str, object] | None = None


def _check(chunk_size: int, overlap: int) -> None:
    if chunk_size < 1:
        raise ConfigurationError(f"chunk_size must be at least 1 (got {chunk_size})")
    if overlap < 0 or overlap >= chunk_size:
        raise ConfigurationError(f"overlap must be in [0, chunk_size) (got {overlap} for chunk_size {chunk_size})")


def chunk_text(text: str, *, chunk_size: int = 800, overlap: int = 100, separator: str | None = None) -> list[str]:
    """Split `text` into chunks of at most `chunk_size` characters (an over-long separator record excepted).

    Prose (no `separator`): windows of `chunk_size`; a window that does not reach the end is cut after the
    last paragraph break, sentence end or space in it, if that lies past half the window; the next window
    starts `overlap` characters before the cut. With a `separator` (e.g. `"\\n"` for CSV rows), whole
    records are packed and the overlap is made of whole trailing records. Empty text gives `[]`.
    """
    _check(chunk_size, overlap)
    if separator:
        return _chunk_records(text, chunk_size, overlap, separator)
    text = text.strip()
    if not text:
        return []
    if len(text) <= chunk_size:
        return [text]
    chunks: list[str] = []
    start = 0
    n = len(text)
    while start < n:
        end = min(start + chunk_size, n)
        break_at = end
        if end < n:
            window = text[start:end]
            boundary = max(window.rfind("\n\n"), window.rfind(". "), window.rfind(" "))
            if boundary > chunk_size / 2:
                break_at = start + boundary + 1
        piece = text[start:break_at].strip()
        if piece:
            chunks.append(piece)
        if break_at >= n:
            break
        start = max(break_at - overlap, start + 1)
    return chunks


def _chunk_records(text: str, chunk_size: int, overlap: int, separator: str) -> list[str]:
    records = [r.strip() for r in text.split(separator)]
    records = [r for r in records if r]
    sep = len(separator)
    chunks: list[str] = []
    i = 0
    while i < len(records):
        length = len(records[i])
        j = i + 1  # the first record is always taken, so an over-long record is its own chunk
        while j < len(records) and length + sep + len(records[j]) <= chunk_size:
            length += sep + len(records[j])
            j += 1
        chunks.append(separator.join(records[i:j]))
        if j >= len(records):
            break
        # Overlap: whole trailing records, but the next chunk must still take record j (one new record).
        back, carried, k = 0, 0, j - 1
        while k > i:
            grown = carried + len(records[k]) + sep
            if grown > overlap or grown + len(records[j]) > chunk_size:
                break
            carried, back, k = grown, back + 1, k - 1
        i = j - back
    return chunks


def chunk_documents(
    documents: Iterable[Document], *, chunk_size: int = 800, overlap: int = 100, separator: str | None = None
) -> list[Chunk]:
    """Chunk each document; ids are `f"{document.id}#{n}"` (n from 0), source and metadata carried over."""
    out: list[Chunk] = []
    for doc in documents:
        for n, piece in enumerate(chunk_text(doc.text, chunk_size=chunk_size, overlap=overlap, separator=separator)):
            out.append(
                Chunk(
                    id=f"{doc.id}#{n}",
                    document_id=doc.id,
                    text=piece,
                    source=doc.source,
                    metadata=dict(doc.metadata) if doc.metadata is not None else None,
                )
            )
    return out
