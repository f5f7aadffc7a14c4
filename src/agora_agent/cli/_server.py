"""Options and HTTP plumbing shared by the operators' commands (`runs`, `approvals`) against a running server.

They call the same governance API as the console, so the same gate decides: the identity you send must be
one `governance_authorize` admits. Identity: `--actor/--roles/--tenant` as the `x-actor-*` headers
(HeaderActorResolver, development or behind a gateway), `--token` as `Authorization: Bearer …`, or any
`--header 'Name: value'`. Defaults come from `AGORA_SERVER`, `AGORA_ACTOR`, `AGORA_ROLES`, `AGORA_TOKEN`.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

T = TypeVar("T")

ServerOption = Annotated[
    str, typer.Option("--server", envvar="AGORA_SERVER", help="The server, e.g. http://127.0.0.1:8000.")
]
ActorOption = Annotated[str | None, typer.Option("--actor", envvar="AGORA_ACTOR", help="Sent as x-actor-id.")]
RolesOption = Annotated[str, typer.Option("--roles", envvar="AGORA_ROLES", help="Comma-separated (x-actor-role).")]
TenantOption = Annotated[str | None, typer.Option("--tenant", help="Sent as x-tenant-ref.")]
TokenOption = Annotated[
    str | None, typer.Option("--token", envvar="AGORA_TOKEN", help="Sent as Authorization: Bearer <token>.")
]
HeaderOption = Annotated[
    list[str] | None, typer.Option("--header", "-H", help="Extra header 'Name: value' (repeatable).")
]
PathOption = Annotated[str, typer.Option("--path", help="The agent's path on the server.")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print the API's JSON instead of a table.")]

err = Console(stderr=True, highlight=False, soft_wrap=True)


def out() -> Console:
    """stdout: the terminal's width, or 200 columns when piped (a script greps whole ids, never `…`)."""
    return Console(highlight=False, width=None if sys.stdout.isatty() else 200)


class CommandError(Exception):
    """A one-line failure: printed on stderr, exit 1."""


@dataclass(frozen=True, kw_only=True)
class Server:
    """Where and as whom to call the agent API."""

    base: str
    headers: dict[str, str]

    @classmethod
    def from_options(
        cls,
        server: str,
        path: str,
        actor: str | None,
        roles: str,
        tenant: str | None,
        token: str | None,
        header: list[str] | None,
    ) -> Server:
        headers: dict[str, str] = {}
        if actor:
            headers["x-actor-id"] = actor
            headers["x-actor-role"] = roles
            if tenant:
                headers["x-tenant-ref"] = tenant
        if token:
            headers["authorization"] = f"Bearer {token}"
        for raw in header or ():
            name, sep, value = raw.partition(":")
            if not sep or not name.strip():
                raise CommandError(f"--header must look like 'Name: value', got {raw!r}")
            headers[name.strip()] = value.strip()
        if not server.startswith(("http://", "https://")):
            raise CommandError(f"--server must be an http(s) URL such as http://127.0.0.1:8000, got {server!r}")
        prefix = "/" + path.strip("/") if path.strip("/") else ""
        return cls(base=server.rstrip("/") + prefix, headers=headers)

    async def call(self, method: str, path: str, **kwargs: Any) -> Any:
        import httpx2

        try:
            async with httpx2.AsyncClient(base_url=self.base, headers=self.headers, timeout=30) as client:
                response = await client.request(method, path, **kwargs)
        except httpx2.TransportError as exc:
            raise CommandError(f"cannot reach {self.base}: {exc or type(exc).__name__}") from None
        try:
            body = response.json()
        except ValueError:
            body = response.text
        if response.status_code >= 400:
            message = body.get("error") if isinstance(body, dict) else None
            hint = ""
            if response.status_code == 401:
                hint = " (send an identity: --actor/--roles, --token or --header)"
            elif response.status_code == 403:
                hint = " (governance_authorize refused this identity)"
            elif response.status_code == 404 and path.startswith("/governance"):
                hint = " (unknown id, or the governance routes are not mounted on this server)"
            raise CommandError(f"HTTP {response.status_code}: {message or str(body)[:200]}{hint}")
        return body


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run a command body; a `CommandError` becomes one line on stderr and exit 1."""
    try:
        return asyncio.run(coro)
    except CommandError as exc:
        err.print(f"error: {escape(str(exc))}")
        raise typer.Exit(1) from None


def money(value: Any) -> str:
    return "—" if value is None else f"${float(value):,.4f}"


def short(value: Any, limit: int = 60) -> str:
    import json

    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"
