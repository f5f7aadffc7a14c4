"""Where uploaded chat attachments are staged: the `AttachmentStagingStore` protocol and its memory twin.

The upload route (`POST {prefix}/attachments`) hands each accepted file to the configured store
(`AgentConfig.attachment_staging`) and answers with the `Attachment` it returns. The library never
fetches attachment bytes itself, so the store must return a `url` the model provider can read.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from agora_agent.actors import Actor
from agora_agent.messages import Attachment

__all__ = ["AttachmentStagingStore", "MemoryAttachmentStore", "StagedFile"]


@runtime_checkable
class AttachmentStagingStore(Protocol):
    """Keeps an uploaded file somewhere the model provider can read it and returns its attachment."""

    async def stage(
        self, *, data: bytes, filename: str, content_type: str, size_bytes: int, actor: Actor
    ) -> Attachment: ...


@dataclass(frozen=True, kw_only=True, slots=True)
class StagedFile:
    """What `MemoryAttachmentStore` recorded for one upload."""

    media_id: str
    filename: str
    content_type: str
    size_bytes: int
    actor_id: str


class MemoryAttachmentStore:
    """Ids `media-1`, `media-2` …; the url is a `data:` URL holding the bytes (small files, tests)."""

    def __init__(self) -> None:
        self.staged: list[StagedFile] = []

    async def stage(
        self, *, data: bytes, filename: str, content_type: str, size_bytes: int, actor: Actor
    ) -> Attachment:
        media_id = f"media-{len(self.staged) + 1}"
        self.staged.append(
            StagedFile(
                media_id=media_id,
                filename=filename,
                content_type=content_type,
                size_bytes=size_bytes,
                actor_id=actor.id,
            )
        )
        url = f"data:{content_type};base64,{base64.b64encode(data).decode()}"
        return Attachment(media_id=media_id, url=url, content_type=content_type, name=filename)
