"""Text from uploaded files: a content-type allow-list, a size limit, extractors per
type (`register` to add one), and a reason for every file that is skipped.

Built in: text/plain, text/markdown, text/csv and the rest of text/* (UTF-8), text/html (scripts, styles and
tags dropped by the standard library's HTML parser, entities decoded, whitespace collapsed),
application/json (UTF-8) and application/pdf (pypdf, the `rag` extra).
"""

from __future__ import annotations

import io
import mimetypes
import re
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path

from agora_agent.errors import ConfigurationError

__all__ = [
    "DEFAULT_CONTENT_TYPES",
    "Extractor",
    "TextExtractor",
    "guess_content_type",
    "normalize_content_type",
]

Extractor = Callable[[bytes], str]

DEFAULT_CONTENT_TYPES = (
    "text/plain",
    "text/markdown",
    "text/csv",
    "text/html",
    "application/json",
    "application/pdf",
)
_SPACE = re.compile(r"[ \t\r\f\v]+")
_BLANKS = re.compile(r"\n\s*\n+")


def normalize_content_type(value: str | None) -> str:
    """`Text/HTML; charset=utf-8` -> `text/html` (lowercase, parameters stripped)."""
    return (value or "").split(";", 1)[0].strip().lower()


def guess_content_type(path: str | Path) -> str:
    """A file's content type from its name (Markdown included, which `mimetypes` may not know)."""
    suffix = Path(path).suffix.lower()
    if suffix in (".md", ".markdown"):
        return "text/markdown"
    guessed, _ = mimetypes.guess_type(str(path))
    return guessed or "application/octet-stream"


def _utf8(data: bytes) -> str:
    return data.decode("utf-8", errors="replace").lstrip("\ufeff")


class _HtmlText(HTMLParser):
    _SKIP = frozenset({"script", "style", "noscript", "template", "head"})
    _BLOCK = frozenset({"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "section", "article"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._SKIP:
            self._skipping += 1
        elif tag in self._BLOCK:
            self.parts.append("\n\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._SKIP and self._skipping:
            self._skipping -= 1
        elif tag in self._BLOCK:
            self.parts.append("\n\n")

    def handle_data(self, data: str) -> None:
        if not self._skipping:
            self.parts.append(data)


def html_to_text(data: bytes) -> str:
    """Visible text of an HTML document, paragraphs kept as blank-line breaks."""
    parser = _HtmlText()
    parser.feed(_utf8(data))
    parser.close()
    text = _SPACE.sub(" ", "".join(parser.parts))
    return _BLANKS.sub("\n\n", "\n".join(line.strip() for line in text.split("\n"))).strip()


def pdf_to_text(data: bytes) -> str:
    """The text layer of a PDF (pages joined by blank lines). Scanned pages without text give nothing."""
    try:
        from pypdf import PdfReader
    except ImportError:
        raise ConfigurationError("PDF extraction needs the rag extra: pip install 'agora-agent[rag]'") from None
    reader = PdfReader(io.BytesIO(data))
    return "\n\n".join((page.extract_text() or "").strip() for page in reader.pages).strip()


class TextExtractor:
    """Content type -> extractor. `extract` returns None for a type it has no extractor for."""

    def __init__(self) -> None:
        self._exact: dict[str, Extractor] = {
            "text/html": html_to_text,
            "application/json": _utf8,
            "application/pdf": pdf_to_text,
        }
        self._family: dict[str, Extractor] = {"text": _utf8}

    def register(self, content_type: str, extractor: Extractor) -> TextExtractor:
        """Add or replace the extractor of a type (`"application/x-foo"`) or a family (`"image/*"`)."""
        key = normalize_content_type(content_type)
        if key.endswith("/*"):
            self._family[key[:-2]] = extractor
        else:
            self._exact[key] = extractor
        return self

    def extract(self, data: bytes, content_type: str) -> str | None:
        key = normalize_content_type(content_type)
        fn = self._exact.get(key) or self._family.get(key.split("/", 1)[0])
        return None if fn is None else fn(data)
