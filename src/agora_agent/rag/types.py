"""The values retrieval passes around: documents in, chunks stored, passages out."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ChunkRecord", "Document", "Passage", "document_id_of"]

_CHUNK_SUFFIX = re.compile(r"#\d+$")


@dataclass(frozen=True, kw_only=True, slots=True)
class Document:
    """A text to index. `id` is yours and stable (re-ingesting the same id replaces its chunks)."""

    id: str
    text: str
    source: str | None = None
    metadata: Mapping[str, Any] | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class Passage:
    """One retrieved chunk: `score` is higher-is-more-relevant and comparable only within one retriever."""

    id: str
    text: str
    score: float
    source: str | None = None
    metadata: Mapping[str, Any] | None = None

    @property
    def document_id(self) -> str:
        """The id of the document this chunk came from (`doc#3` -> `doc`)."""
        return document_id_of(self.id)


@dataclass(frozen=True, kw_only=True, slots=True)
class ChunkRecord:
    """A chunk as a vector store keeps it. `model_id` names the embedder, since vectors of two embedders
    must never be compared."""

    id: str
    text: str
    embedding: Sequence[float]
    source: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    model_id: str | None = None

    @property
    def document_id(self) -> str:
        return document_id_of(self.id)


def document_id_of(chunk_id: str) -> str:
    """Strip the `#<n>` chunk suffix: `guide#12` -> `guide`; an id without one is returned as is."""
    return _CHUNK_SUFFIX.sub("", chunk_id)
