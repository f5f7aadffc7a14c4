"""Shared option and error handling for the commands that open the SQL database (`db`, `prices`)."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console

from agora_agent.errors import ConfigurationError, StoreError

T = TypeVar("T")

ENV_VAR = "AGORA_DATABASE_URL"

UrlOption = Annotated[
    str | None,
    typer.Option(
        "--url",
        envvar=ENV_VAR,
        help="Database URL: sqlite:///path/to/agora.db or postgresql+asyncpg://user:password@host/db "
        f"(default: ${ENV_VAR}).",
        show_default=False,
    ),
]

err_console = Console(stderr=True)


def require_url(url: str | None) -> str:
    """The URL, or exit 2 with the two ways to give one."""
    if not url:
        err_console.print(f"[red]error:[/red] no database URL: pass --url sqlite:///agora.db or set {ENV_VAR}")
        raise typer.Exit(2)
    return url


def run_async(coro: Coroutine[Any, Any, T]) -> T:
    """Run a command body; a store or configuration error becomes one red line and exit code 1."""
    try:
        return asyncio.run(coro)
    except (StoreError, ConfigurationError) as exc:
        err_console.print(f"[red]error:[/red] {exc}", highlight=False, soft_wrap=True)
        raise typer.Exit(1) from None
