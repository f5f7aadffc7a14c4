"""Attachments made ready for a model call: bytes the provider cannot reach are inlined, text becomes text.

Runs inside the model step, so the (possibly large) inlined bytes are never checkpointed:

- images (PNG, JPEG, GIF, WebP) and PDFs reach the adapters as native image / file parts: a file staged
  with us is read from the staging store and sent as a `data:` URL (a provider cannot reach our server);
  an `https` URL is passed on for the provider to fetch, or downloaded first through `SafeDownloader`
  when `download_remote` is on (for providers that cannot fetch URLs, or private buckets);
- text (plain, CSV, Markdown, JSON) is inlined into the message text, cut at `text_max_chars`;
- any other type is refused with `UnsupportedAttachmentError` before the model is called.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, replace

from agora_agent.errors import InvalidRequestError
from agora_agent.media.download import SafeDownloader
from agora_agent.media.sniff import decode_text
from agora_agent.messages import Attachment, ModelMessage, ModelRequest
from agora_agent.stores.attachments import AttachmentStagingStore, ReadableAttachmentStore

__all__ = ["NATIVE_TYPES", "TEXT_TYPES", "AttachmentPreparer", "UnsupportedAttachmentError", "attachment_kind"]

NATIVE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf"})
TEXT_TYPES = frozenset({"text/plain", "text/csv", "text/markdown", "application/json"})


class UnsupportedAttachmentError(InvalidRequestError):
    """An attachment of a type no model input takes (the message names the type and what is accepted)."""

    code = "unsupported_attachment"


def attachment_kind(content_type: str) -> str:
    """`native` (image/PDF part), `text` (inlined) or `unsupported`."""
    ct = content_type.split(";", 1)[0].strip().lower()
    if ct in NATIVE_TYPES:
        return "native"
    if ct in TEXT_TYPES:
        return "text"
    return "unsupported"


def check_supported(attachment: Attachment) -> None:
    if attachment_kind(attachment.content_type) == "unsupported":
        accepted = ", ".join(sorted(NATIVE_TYPES | TEXT_TYPES))
        raise UnsupportedAttachmentError(
            f'attachment "{attachment.name}" is {attachment.content_type}, which no model input takes '
            f"(accepted: {accepted})"
        )


def _data_url(content_type: str, data: bytes) -> str:
    return f"data:{content_type};base64,{base64.b64encode(data).decode()}"


def _decode_data_url(url: str) -> bytes | None:
    header, sep, payload = url[5:].partition(",")
    if not url.startswith("data:") or not sep:
        return None
    if header.endswith(";base64"):
        return base64.b64decode(payload)
    from urllib.parse import unquote_to_bytes

    return unquote_to_bytes(payload)


@dataclass
class AttachmentPreparer:
    """Turns a request's attachments into what a provider can read (see the module docstring)."""

    store: AttachmentStagingStore | None = None
    downloader: SafeDownloader | None = None
    download_remote: bool = False
    text_max_chars: int = 100_000

    async def prepare(self, request: ModelRequest) -> ModelRequest:
        if not any(m.attachments for m in request.messages):
            return request
        return replace(request, messages=tuple([await self._message(m) for m in request.messages]))

    async def _message(self, message: ModelMessage) -> ModelMessage:
        if not message.attachments:
            return message
        kept: list[Attachment] = []
        texts: list[str] = []
        for att in message.attachments:
            check_supported(att)
            if attachment_kind(att.content_type) == "text":
                data = await self._bytes(att, required=True)
                assert data is not None
                text = decode_text(data)
                if len(text) > self.text_max_chars:
                    text = text[: self.text_max_chars] + f"\n[… cut: {len(text) - self.text_max_chars} more characters]"
                texts.append(f"\n\n--- attachment: {att.name} ({att.content_type}) ---\n{text}")
                continue
            data = await self._bytes(att, required=False)
            kept.append(att if data is None else replace(att, url=_data_url(att.content_type, data)))
        return replace(message, content=message.content + "".join(texts), attachments=tuple(kept))

    async def _bytes(self, att: Attachment, *, required: bool) -> bytes | None:
        """The attachment's bytes when they must travel inline; None when the provider can use the URL."""
        if att.url.startswith("data:"):
            return _decode_data_url(att.url) if required else None
        if isinstance(self.store, ReadableAttachmentStore) and await self.store.get(att.media_id) is not None:
            return await self.store.read(att.media_id)
        if att.url.startswith(("http://", "https://")) and (required or self.download_remote):
            if self.downloader is None:
                raise UnsupportedAttachmentError(
                    f'attachment "{att.name}" must be downloaded to be read, and no downloader is configured '
                    "(AgentConfig.attachment_downloader)"
                )
            return (await self.downloader.fetch(att.url)).data
        if att.url.startswith(("http://", "https://")):
            return None
        raise UnsupportedAttachmentError(f'attachment "{att.name}" has a URL no model can read')
