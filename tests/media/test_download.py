"""The SSRF guard of the attachment downloader, against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from agora_agent.media.download import AttachmentDownloadError, SafeDownloader, UnsafeUrlError

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32


class _Handler(BaseHTTPRequestHandler):
    hits: list[str] = []

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        _Handler.hits.append(self.path)
        if self.path.startswith("/img"):
            self.send_response(200)
            self.send_header("content-type", "image/png")
            self.send_header("content-length", str(len(PNG)))
            self.end_headers()
            self.wfile.write(PNG)
        elif self.path.startswith("/to-metadata"):
            self.send_response(302)
            self.send_header("location", "http://169.254.169.254/latest/meta-data/")
            self.end_headers()
        elif self.path.startswith("/to-private"):
            self.send_response(301)
            self.send_header("location", "http://10.0.0.7/secret")
            self.end_headers()
        elif self.path.startswith("/big"):
            self.send_response(200)
            self.send_header("content-length", "5000")
            self.end_headers()
            self.wfile.write(b"x" * 5000)
        else:
            self.send_response(404)
            self.end_headers()


@pytest.fixture
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/x",
        "http://10.1.2.3/x",
        "http://172.16.0.9/x",
        "http://192.168.1.1/x",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]/x",
        "http://[::ffff:127.0.0.1]/x",
        "http://[fd00:ec2::254]/x",
        "http://0.0.0.0/x",
        "http://localhost/x",  # a DNS name that resolves to loopback
    ],
)
async def test_internal_addresses_are_refused(url: str) -> None:
    with pytest.raises(UnsafeUrlError):
        await SafeDownloader().fetch(url)


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://example.com/x", "gopher://x/"])
async def test_other_schemes_are_refused(url: str) -> None:
    with pytest.raises(UnsafeUrlError):
        await SafeDownloader().fetch(url)


async def test_allow_listed_host_downloads(server: str) -> None:
    got = await SafeDownloader(allow_networks=["127.0.0.0/8"]).fetch(f"{server}/img.png")
    assert got.data == PNG and got.content_type == "image/png"


async def test_redirect_to_an_internal_address_is_checked_again(server: str) -> None:
    downloader = SafeDownloader(allow_networks=["127.0.0.0/8"])
    for path, address in (("/to-metadata", "169.254.169.254"), ("/to-private", "10.0.0.7")):
        with pytest.raises(UnsafeUrlError) as refused:
            await downloader.fetch(f"{server}{path}")
        assert refused.value.code == "internal_address"
        assert address in str(refused.value)  # the 422 says which address was refused


async def test_errors_never_echo_the_path_or_query(server: str) -> None:
    downloader = SafeDownloader(allow_networks=["127.0.0.0/8"])
    with pytest.raises(AttachmentDownloadError) as err:
        await downloader.fetch(f"{server}/missing/file.pdf?X-Amz-Signature=SECRETSIG&token=hunter2")
    text = str(err.value)
    assert "404" in text and "127.0.0.1" in text
    assert "SECRETSIG" not in text and "hunter2" not in text and "missing" not in text


async def test_size_limit(server: str) -> None:
    with pytest.raises(AttachmentDownloadError) as too_big:
        await SafeDownloader(allow_networks=["127.0.0.0/8"], max_bytes=1000).fetch(f"{server}/big")
    assert too_big.value.code == "too_large"
