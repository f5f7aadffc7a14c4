"""Fetch an attachment URL the model provider cannot reach, with a guard against server-side request forgery.

Every address a host name resolves to must be public: loopback, private (10/8, 172.16/12, 192.168/16,
fc00::/7), link-local (169.254/16 — cloud metadata lives there — and fe80::/10), multicast, reserved
and unspecified addresses are refused unless their host or network is allow-listed. The connection goes
to the address that was checked (the name is resolved once; TLS still verifies the name), so a DNS
answer that changes between check and connect cannot slip through. Redirects are followed by hand and
every hop is checked again. Errors name the host and the status, never the path or query string,
which may hold a signature or a token.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit

import httpx2

from agora_agent.errors import InvalidRequestError

__all__ = ["AttachmentDownloadError", "Downloaded", "SafeDownloader", "UnsafeUrlError"]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


class AttachmentDownloadError(InvalidRequestError):
    """An attachment URL could not be fetched (status or network error); the message names only the host.
    `code`: `too_large` beyond `max_bytes`, else `attachment_download`."""

    code = "attachment_download"


class UnsafeUrlError(AttachmentDownloadError):
    """The URL points at an address we must not reach from the server (loopback, private, metadata …)."""

    code = "unsafe_url"


@dataclass(frozen=True, slots=True)
class Downloaded:
    data: bytes
    content_type: str | None


def _blocked(address: IPAddress) -> bool:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return _blocked(address.ipv4_mapped)
    return (
        address.is_loopback
        or address.is_private
        or address.is_link_local
        or address.is_multicast
        or address.is_reserved
        or address.is_unspecified
        or not address.is_global
    )


@dataclass
class SafeDownloader:
    """Download `http(s)` URLs to bytes, refusing internal addresses; one instance per app is enough.

    - `allow_hosts`: host names that may resolve to internal addresses (e.g. your own media proxy).
    - `allow_networks`: CIDR ranges that are allowed although internal (e.g. `"10.20.0.0/16"`).
    - `max_bytes`: a larger body is refused without reading it all.
    """

    allow_hosts: Iterable[str] = ()
    allow_networks: Iterable[str] = ()
    max_bytes: int = 20 * 1024 * 1024
    timeout: float = 10.0
    max_redirects: int = 3
    _hosts: frozenset[str] = field(init=False)
    _networks: tuple[IPNetwork, ...] = field(init=False)

    def __post_init__(self) -> None:
        self._hosts = frozenset(h.lower().rstrip(".") for h in self.allow_hosts)
        self._networks = tuple(ipaddress.ip_network(n, strict=False) for n in self.allow_networks)

    async def resolve(self, host: str, port: int) -> str:
        """The one address to connect to, after checking every address `host` resolves to."""
        name = host.lower().rstrip(".").strip("[]")
        try:
            literal: IPAddress | None = ipaddress.ip_address(name)
        except ValueError:
            literal = None
        if literal is not None:
            addresses = [literal]
        else:
            try:
                infos = await asyncio.get_running_loop().getaddrinfo(name, port, type=socket.SOCK_STREAM)
            except socket.gaierror:
                raise AttachmentDownloadError(f"attachment host {name!r} does not resolve") from None
            addresses = [ipaddress.ip_address(info[4][0]) for info in infos]
        if not addresses:
            raise AttachmentDownloadError(f"attachment host {name!r} does not resolve")
        if name not in self._hosts:
            for address in addresses:
                if _blocked(address) and not any(address in net for net in self._networks):
                    raise UnsafeUrlError(
                        f"attachment host {name!r} resolves to {address}, an internal address; "
                        "allow-list it (SafeDownloader(allow_hosts=…)) if it is yours",
                        code="internal_address",
                    )
        return str(addresses[0])

    async def fetch(self, url: str) -> Downloaded:
        """GET `url` (following up to `max_redirects`, each hop checked); raises `AttachmentDownloadError`."""
        async with httpx2.AsyncClient(timeout=self.timeout, follow_redirects=False) as client:
            for _ in range(self.max_redirects + 1):
                parts = urlsplit(url)
                if parts.scheme not in ("http", "https") or not parts.hostname:
                    raise UnsafeUrlError(f"attachment URL scheme {parts.scheme!r} is not allowed (http or https only)")
                host = parts.hostname
                port = parts.port or (443 if parts.scheme == "https" else 80)
                address = await self.resolve(host, port)
                pinned = parts._replace(netloc=f"[{address}]:{port}" if ":" in address else f"{address}:{port}")
                request = client.build_request(
                    "GET",
                    pinned.geturl(),
                    headers={"host": parts.netloc.rsplit("@", 1)[-1]},
                    extensions={"sni_hostname": host},
                )
                try:
                    response = await client.send(request, stream=True)
                except httpx2.HTTPError as exc:
                    raise AttachmentDownloadError(
                        f"attachment host {host!r} could not be reached ({type(exc).__name__})"
                    ) from None
                try:
                    if response.is_redirect and "location" in response.headers:
                        url = urljoin(url, response.headers["location"])
                        continue
                    if response.status_code >= 400:
                        raise AttachmentDownloadError(f"attachment host {host!r} answered {response.status_code}")
                    return Downloaded(await self._body(response, host), response.headers.get("content-type"))
                finally:
                    await response.aclose()
        raise AttachmentDownloadError(f"attachment URL redirected more than {self.max_redirects} times")

    async def _body(self, response: httpx2.Response, host: str) -> bytes:
        declared = response.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > self.max_bytes:
            raise AttachmentDownloadError(
                f"attachment from {host!r} exceeds the {self.max_bytes}-byte limit", code="too_large"
            )
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > self.max_bytes:
                raise AttachmentDownloadError(
                    f"attachment from {host!r} exceeds the {self.max_bytes}-byte limit", code="too_large"
                )
            chunks.append(chunk)
        return b"".join(chunks)
