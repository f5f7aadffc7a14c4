"""What an uploaded file really is, from its bytes — never from its name or the client's header.

Binary formats are recognised by `filetype` (magic numbers; correct for images, PDF and OOXML). Text has
no magic number, so our own check decodes it strictly as UTF-8 and flags markup a browser would run
(`<svg`, `<html`, `<script`, …): such a file is `text/html` or `image/svg+xml`, never `text/plain`,
and is never served inline.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass

import filetype

__all__ = ["SNIFF_BYTES", "Sniffed", "sniff"]

SNIFF_BYTES = 8192
_MARKUP = re.compile(rb"<\s*(svg|html|script|iframe|object|embed|body|head|meta|!doctype\s+html)\b", re.IGNORECASE)
_SVG = re.compile(rb"<\s*svg\b", re.IGNORECASE)
_INLINE_SAFE = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf", "text/plain"})


@dataclass(frozen=True, slots=True)
class Sniffed:
    """The detected content type, and whether a browser may show it inline (images, PDF, plain text)."""

    content_type: str
    inline_safe: bool


def _text_type(head: bytes, declared: str) -> str:
    """Text of some kind: markup (dangerous) first, then JSON/CSV/Markdown by what the client declared."""
    if _MARKUP.search(head):
        return "image/svg+xml" if _SVG.search(head) else "text/html"
    if declared in ("application/json", "text/markdown", "text/csv"):
        if declared == "application/json":
            try:
                json.loads(head.decode("utf-8"))
            except ValueError:
                return "text/plain"
        if declared == "text/csv" and not _looks_like_csv(head):
            return "text/plain"
        return declared
    return "text/plain"


def _looks_like_csv(head: bytes) -> bool:
    try:
        csv.Sniffer().sniff(head.decode("utf-8")[:4096])
    except (csv.Error, UnicodeDecodeError):
        return False
    return True


def _is_text(head: bytes, complete: bool) -> bool:
    if b"\x00" in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        # a multi-byte character cut at the sniff window's end is still text
        return not complete and exc.start >= len(head) - 3 and exc.reason == "unexpected end of data"
    return True


def sniff(data: bytes, *, declared: str = "application/octet-stream", complete: bool | None = None) -> Sniffed:
    """Detect the type of `data` (its first `SNIFF_BYTES` are enough). Empty data is `application/x-empty`.

    `declared` (the client's content type) only chooses between text types that bytes cannot tell apart
    (plain text, CSV, JSON, Markdown); it never makes binary data text or text binary.
    """
    head = bytes(data[:SNIFF_BYTES])
    whole = len(data) <= SNIFF_BYTES if complete is None else complete
    if not head:
        return Sniffed("application/x-empty", False)
    kind = filetype.guess(head)
    if kind is not None:
        mime = str(kind.mime)
        return Sniffed(mime, mime in _INLINE_SAFE)
    if _is_text(head, whole):
        mime = _text_type(head, declared.split(";", 1)[0].strip().lower())
        return Sniffed(mime, mime in _INLINE_SAFE)
    return Sniffed("application/octet-stream", False)


def decode_text(data: bytes) -> str:
    """Bytes of a text attachment as str (UTF-8, a BOM dropped, undecodable bytes replaced)."""
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8-sig", errors="replace").read()
