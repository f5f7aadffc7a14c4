"""Where uploaded chat attachments are staged: the `AttachmentStagingStore` protocol and its twins.

The upload route (`POST {prefix}/attachments`) hands each accepted file (its type sniffed from the bytes)
to the configured store (`AgentConfig.attachment_staging`) and answers with the `Attachment` it returns.

- `MemoryAttachmentStore`: ids `media-1` …, `data:` URLs (tests, small files).
- `FilesystemAttachmentStore(directory)`: files under `directory`, metadata in the SQL store when the
  service has one (else in memory); its url is `{prefix}/attachments/{media_id}`, served back only to
  the uploader. Before a model call the loop reads the bytes (`read`) and hands the provider a `data:`
  URL, because a provider cannot reach your server.

A store that can also `get(media_id)` and `read(media_id)` (`ReadableAttachmentStore`) lets the service
check that a chat's attachments were uploaded by the caller, serve them back, and inline them for the model.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import secrets
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol, runtime_checkable

from agora_agent.actors import Actor
from agora_agent.errors import ConfigurationError, NotFoundError
from agora_agent.messages import Attachment

__all__ = [
    "AttachmentIndex",
    "AttachmentStagingStore",
    "FilesystemAttachmentStore",
    "MemoryAttachmentIndex",
    "MemoryAttachmentStore",
    "ReadableAttachmentStore",
    "StagedFile",
]


@runtime_checkable
class AttachmentStagingStore(Protocol):
    """Keeps an uploaded file somewhere the model provider can read it and returns its attachment."""

    async def stage(
        self, *, data: bytes, filename: str, content_type: str, size_bytes: int, actor: Actor
    ) -> Attachment: ...


@dataclass(frozen=True, kw_only=True, slots=True)
class StagedFile:
    """What a staging store recorded for one upload (the content type is the sniffed one)."""

    media_id: str
    filename: str
    content_type: str
    size_bytes: int
    actor_id: str
    tenant_ref: str | None = None
    sha256: str | None = None
    created_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    url: str = ""  # where the staged file is read from (the attachment's url), as the store gives it


@runtime_checkable
class ReadableAttachmentStore(AttachmentStagingStore, Protocol):
    """A staging store that can give a file back: ownership checks, the download route, model inlining."""

    async def get(self, media_id: str) -> StagedFile | None: ...

    async def read(self, media_id: str) -> bytes:
        """The file's bytes; NotFoundError when unknown."""
        ...


class AttachmentIndex(Protocol):
    """Where `FilesystemAttachmentStore` keeps its metadata (`put` is called once per upload)."""

    async def put(self, record: StagedFile) -> None: ...

    async def get(self, media_id: str) -> StagedFile | None: ...


class MemoryAttachmentIndex:
    """Metadata in a dict (lost on restart: use the SQL index in production)."""

    def __init__(self) -> None:
        self._records: dict[str, StagedFile] = {}

    async def put(self, record: StagedFile) -> None:
        self._records[record.media_id] = record

    async def get(self, media_id: str) -> StagedFile | None:
        return self._records.get(media_id)


class MemoryAttachmentStore:
    """Ids `media-1`, `media-2` …; the url is a `data:` URL holding the bytes (small files, tests)."""

    def __init__(self) -> None:
        self.staged: list[StagedFile] = []
        self._data: dict[str, bytes] = {}

    async def stage(
        self, *, data: bytes, filename: str, content_type: str, size_bytes: int, actor: Actor
    ) -> Attachment:
        media_id = f"media-{len(self.staged) + 1}"
        url = f"data:{content_type};base64,{base64.b64encode(data).decode()}"
        self.staged.append(
            StagedFile(
                media_id=media_id,
                filename=filename,
                content_type=content_type,
                size_bytes=size_bytes,
                actor_id=actor.id,
                tenant_ref=actor.tenant_ref,
                url=url,
            )
        )
        self._data[media_id] = data
        return Attachment(media_id=media_id, url=url, content_type=content_type, name=filename)

    async def get(self, media_id: str) -> StagedFile | None:
        return next((f for f in self.staged if f.media_id == media_id), None)

    async def read(self, media_id: str) -> bytes:
        if media_id not in self._data:
            raise NotFoundError("attachment not found")
        return self._data[media_id]


class FilesystemAttachmentStore:
    """Uploads as files under `directory` (created on first use), one random id each.

    `url_prefix` is where the download route is mounted (the service sets it to `{prefix}/attachments`).
    The metadata index defaults to memory; the service binds the SQL index when its store is SQL, so
    files stay reachable across restarts.
    """

    def __init__(self, directory: str | Path, *, index: AttachmentIndex | None = None, url_prefix: str = "") -> None:
        self.directory = Path(directory)
        self.index: AttachmentIndex = index or MemoryAttachmentIndex()
        self.url_prefix = url_prefix.rstrip("/")
        self._index_bound = index is not None

    def bind_index(self, index: AttachmentIndex) -> None:
        """Use `index` unless one was given explicitly (the service calls this with its SQL index)."""
        if not self._index_bound:
            self.index = index
            self._index_bound = True

    def _path(self, media_id: str) -> Path:
        if not media_id.startswith("att_") or not media_id[4:].isalnum():
            raise NotFoundError("attachment not found")
        return self.directory / media_id[4:6] / media_id

    async def stage(
        self, *, data: bytes, filename: str, content_type: str, size_bytes: int, actor: Actor
    ) -> Attachment:
        media_id = f"att_{secrets.token_hex(16)}"
        path = self._path(media_id)
        try:
            await asyncio.to_thread(_write_file, path, data)
        except OSError as exc:
            raise ConfigurationError(f"cannot write attachments under {self.directory}: {exc.strerror}") from exc
        record = StagedFile(
            media_id=media_id,
            filename=filename[:255],
            content_type=content_type,
            size_bytes=size_bytes,
            actor_id=actor.id,
            tenant_ref=actor.tenant_ref,
            sha256=hashlib.sha256(data).hexdigest(),
        )
        await self.index.put(record)
        return Attachment(
            media_id=media_id, url=f"{self.url_prefix}/{media_id}", content_type=content_type, name=record.filename
        )

    async def get(self, media_id: str) -> StagedFile | None:
        record = await self.index.get(media_id)
        return None if record is None else replace(record, url=f"{self.url_prefix}/{record.media_id}")

    async def read(self, media_id: str) -> bytes:
        path = self._path(media_id)
        try:
            return await asyncio.to_thread(path.read_bytes)
        except FileNotFoundError:
            raise NotFoundError("attachment not found") from None


def _write_file(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".part")
    tmp.write_bytes(data)
    tmp.replace(path)  # a reader never sees half a file
