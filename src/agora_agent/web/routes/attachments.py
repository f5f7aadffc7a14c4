"""File uploads for chat attachments: `POST {prefix}/attachments` (multipart, field `file`).

Mounted only when `AgentConfig.attachment_staging` is set. Checks, in order: identity 401 -> missing
file 400 -> content type not in `attachment_allowed_content_types` 415 -> larger than
`attachment_max_bytes` 413 -> staged, answering `{mediaId, url, contentType, name}` to send back in
`POST /chat`'s `attachments`. The library never fetches attachment bytes itself; `url` must reach the
model provider.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.datastructures import UploadFile

from agora_agent.config import AgentConfig
from agora_agent.errors import NotFoundError
from agora_agent.web.deps import ActorDep, ServiceDep, error_responses
from agora_agent.web.errors import BadRequestError, RequestTooLargeError, UnsupportedMediaTypeError
from agora_agent.web.route_class import carries_upload
from agora_agent.web.schemas import AttachmentWire

__all__ = ["UPLOAD_ENVELOPE_BYTES", "add_routes", "upload"]

UPLOAD_ENVELOPE_BYTES = 1_048_576
"""Room for the multipart envelope around a maximal file, on top of `attachment_max_bytes`."""


def _content_type(upload_file: UploadFile) -> str:
    raw = upload_file.headers.get("content-type") or upload_file.content_type or "application/octet-stream"
    return raw.split(";", 1)[0].strip().lower() or "application/octet-stream"


@carries_upload
async def upload(request: Request, service: ServiceDep, actor: ActorDep) -> AttachmentWire:
    """Stage one file (multipart field `file`) and answer the attachment to send with a chat message."""
    config = service.config
    store = config.attachment_staging
    if store is None:  # not mounted without a store; kept as a guard for a hand-mounted handler
        raise NotFoundError("not found")
    max_bytes = config.attachment_max_bytes
    allowed = tuple(config.attachment_allowed_content_types)
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


def add_routes(router: APIRouter, config: AgentConfig) -> None:
    """Add `POST /attachments` when an attachment staging store is configured."""
    if config.attachment_staging is None:
        return
    router.post(
        "/attachments",
        response_model=AttachmentWire,
        responses=error_responses(400, 413, 415),
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
    )(upload)
