"""File uploads for chat attachments: `POST {prefix}/attachments` (multipart, field `file`), and
`GET {prefix}/attachments/{media_id}` to fetch one back (uploader only).

Mounted when `AgentConfig.attachment_staging` is set (by default for a SQLite file store). Upload checks,
in order: identity 401 -> missing file 400 -> declared content type not allowed 415 -> larger than
`attachment_max_bytes` 413 -> the bytes are sniffed: a file that is not what it claims (a PNG sent as
text/plain) or sniffs as a type that is not allowed is 415, named as what it is -> staged under the
sniffed type, answering `{mediaId, url, contentType, name}` to send back in `POST /chat`'s `attachments`.

Downloads are served with the sniffed type, `X-Content-Type-Options: nosniff`, a sandboxing CSP, and
`Content-Disposition: attachment` for everything a browser could run (SVG, HTML, anything not an image,
PDF or plain text): such a file is never shown inline.
"""

from __future__ import annotations

from urllib.parse import quote

from fastapi import APIRouter, Request, Response
from starlette.datastructures import UploadFile

from agora_agent.config import AgentConfig
from agora_agent.errors import NotFoundError
from agora_agent.media.sniff import sniff
from agora_agent.stores.attachments import ReadableAttachmentStore
from agora_agent.web.deps import ActorDep, ServiceDep, error_responses
from agora_agent.web.errors import BadRequestError, RequestTooLargeError, UnsupportedMediaTypeError
from agora_agent.web.route_class import carries_upload
from agora_agent.web.schemas import AttachmentWire

__all__ = ["UPLOAD_ENVELOPE_BYTES", "add_routes", "download", "upload"]

# Families a declared type and the sniffed one must share: a mismatch means the file is disguised.
_TEXT_TYPES = frozenset({"text/plain", "text/csv", "text/markdown", "application/json"})

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
        content_type = _sniffed_type(data, content_type, allowed)
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


def _sniffed_type(data: bytes, declared: str, allowed: tuple[str, ...]) -> str:
    """The type the bytes really have, or 415 when it is not the declared one or not allowed."""
    found = sniff(data, declared=declared).content_type
    if found == "application/x-empty":
        raise UnsupportedMediaTypeError("the file is empty")
    same = found == declared or (found in _TEXT_TYPES and declared in _TEXT_TYPES)
    if not same and declared != "application/octet-stream":
        raise UnsupportedMediaTypeError(f'the file was sent as "{declared}" but its content is "{found}"')
    if found not in allowed:
        raise UnsupportedMediaTypeError(f'the file\'s content is "{found}", which is not allowed')
    return found


async def download(service: ServiceDep, actor: ActorDep, media_id: str) -> Response:
    """One uploaded file, to the actor who uploaded it (404 for anyone else: its existence is not told)."""
    store = service.config.attachment_staging
    if not isinstance(store, ReadableAttachmentStore):
        raise NotFoundError("attachment not found")
    record = await store.get(media_id)
    if record is None or record.actor_id != actor.id:
        raise NotFoundError("attachment not found")
    data = await store.read(media_id)
    sniffed = sniff(data, declared=record.content_type)
    disposition = "inline" if sniffed.inline_safe else "attachment"
    return Response(
        content=data,
        media_type=sniffed.content_type,
        headers={
            "Content-Disposition": f"{disposition}; filename*=UTF-8''{quote(record.filename)}",
            "X-Content-Type-Options": "nosniff",
            "Content-Security-Policy": "default-src 'none'; sandbox",
            "Cache-Control": "private, max-age=3600",
        },
    )


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
    if isinstance(config.attachment_staging, ReadableAttachmentStore):
        router.get(
            "/attachments/{media_id}",
            response_class=Response,
            responses={
                200: {"content": {"application/octet-stream": {}}, "description": "The file"},
                **error_responses(404),
            },
        )(download)
