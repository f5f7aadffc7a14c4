"""File uploads for chat attachments (REFERENCE HTTP-13, ATT-01..05).

`POST {prefix}/attachments` (multipart, field `file`) is mounted only when
`AgentConfig.attachment_staging` is set. Checks, in order (ATT-04): identity 401 -> missing file 400
-> content type not in `attachment_allowed_content_types` 415 -> larger than `attachment_max_bytes`
413 -> staged, answering `{mediaId, url, contentType, name}` to send back in `POST /chat`'s
`attachments`. The library never fetches attachment bytes itself; `url` must reach the model provider.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from fastapi import APIRouter, Request
from starlette.datastructures import UploadFile

from agora_agent.actors import Actor
from agora_agent.messages import Attachment
from agora_agent.service import AgentService
from agora_agent.web.errors import BadRequestError, RequestTooLargeError, UnsupportedMediaTypeError
from agora_agent.web.routing import current_actor, route_max_bytes
from agora_agent.web.schemas import AttachmentWire, ErrorBody

__all__ = ["AttachmentStagingStore", "MemoryAttachmentStore", "StagedFile", "add_attachment_routes"]


@runtime_checkable
class AttachmentStagingStore(Protocol):
    """Keeps an uploaded file somewhere the model provider can read it and returns its attachment (ARCH-10)."""

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
    """ATT-05: ids `media-1`, `media-2` …; the url is a `data:` URL holding the bytes (small files, tests)."""

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


def _content_type(upload: UploadFile) -> str:
    raw = upload.headers.get("content-type") or upload.content_type or "application/octet-stream"
    return raw.split(";", 1)[0].strip().lower() or "application/octet-stream"


def add_attachment_routes(router: APIRouter, service: AgentService) -> None:
    """Mount `POST /attachments` when an attachment staging store is configured."""
    config = service.config
    store = config.attachment_staging
    if store is None:
        return
    max_bytes: int = config.attachment_max_bytes
    allowed = tuple(config.attachment_allowed_content_types)

    @router.post(
        "/attachments",
        response_model=AttachmentWire,
        responses={code: {"model": ErrorBody} for code in (400, 401, 413, 415)},
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {
                    "multipart/form-data": {
                        "schema": {
                            "type": "object",
                            "properties": {"file": {"type": "string", "format": "binary"}},
                            "required": ["file"],
                        }
                    }
                },
            }
        },
    )
    @route_max_bytes(max_bytes + 1_048_576)  # room for the multipart envelope around a maximal file
    async def upload(request: Request) -> AttachmentWire:
        """HTTP-13: stage one file (multipart field `file`)."""
        actor = current_actor(request)
        try:
            form = await request.form(max_files=1, max_fields=16)
        except Exception as exc:  # not multipart, or a malformed envelope
            raise BadRequestError('multipart field "file" is required') from exc
        try:
            upload_file = form.get("file")
            if not isinstance(upload_file, UploadFile):
                raise BadRequestError('multipart field "file" is required')
            content_type = _content_type(upload_file)
            if content_type not in allowed:
                raise UnsupportedMediaTypeError(
                    f'content type "{content_type}" is not allowed (allowed: {", ".join(allowed)})'
                )
            data = await upload_file.read(max_bytes + 1)
            if len(data) > max_bytes:
                raise RequestTooLargeError(f"file exceeds the {max_bytes}-byte limit")
            attachment = await store.stage(
                data=data,
                filename=upload_file.filename or "file",
                content_type=content_type,
                size_bytes=len(data),
                actor=actor,
            )
        finally:
            await form.close()
        return AttachmentWire.of(attachment)
