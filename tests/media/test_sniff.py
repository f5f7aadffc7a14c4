"""Content sniffing: the bytes decide the type, never the file name or the client's header."""

from __future__ import annotations

import pytest

from agora_agent.media.sniff import sniff

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + b"\x00" * 64
PDF = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\n"


@pytest.mark.parametrize(
    ("data", "declared", "expected", "inline"),
    [
        (PNG, "text/plain", "image/png", True),  # a PNG renamed .txt is a PNG
        (PDF, "image/png", "application/pdf", True),
        (b"hello, world\n", "text/plain", "text/plain", True),
        (b"a,b\n1,2\n3,4\n", "text/csv", "text/csv", False),
        (b'{"a": 1}', "application/json", "application/json", False),
        (b"not json", "application/json", "text/plain", True),
        (
            b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>',
            "text/plain",
            "image/svg+xml",
            False,
        ),
        (b"<!doctype html><html><body>x</body></html>", "text/plain", "text/html", False),
        (b"  <script>fetch('/x')</script>", "text/plain", "text/html", False),
        (b"\x00\x01\x02binary", "text/plain", "application/octet-stream", False),
        (b"", "text/plain", "application/x-empty", False),
        ("grüße".encode(), "text/plain", "text/plain", True),
    ],
)
def test_sniff(data: bytes, declared: str, expected: str, inline: bool) -> None:
    result = sniff(data, declared=declared)
    assert (result.content_type, result.inline_safe) == (expected, inline)


def test_multibyte_character_cut_by_the_window_is_still_text() -> None:
    data = b"a" * 8191 + "é".encode()  # the 2-byte character straddles the 8 KiB window
    assert sniff(data).content_type == "text/plain"
