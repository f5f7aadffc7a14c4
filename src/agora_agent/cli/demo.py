"""`agora-agent demo`: the offline demo on 127.0.0.1 — chat page, dashboard, SQLite, no API key needed."""

from __future__ import annotations

import errno
import socket
from pathlib import Path
from typing import Annotated

import typer

__all__ = ["register"]


def _port_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            if exc.errno in (errno.EADDRINUSE, errno.EACCES):
                return False
            raise
    return True


def demo(
    host: Annotated[
        str, typer.Option(help="Interface to listen on (keep 127.0.0.1: the demo login is not secure).")
    ] = ("127.0.0.1"),
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    db: Annotated[Path, typer.Option(help="SQLite file of the agent store (the shop goes next to it).")] = Path(
        ".agora/demo.db"
    ),
    daily_tokens: Annotated[int, typer.Option(help="Per-user daily token budget (0 = no limit).")] = 200_000,
    word_delay: Annotated[float, typer.Option(help="Seconds between the demo model's streamed words.", hidden=True)] = (
        0.03
    ),
    log_level: Annotated[str, typer.Option(help="uvicorn log level.")] = "warning",
    durable: Annotated[
        bool,
        typer.Option(help="Run every run as a DBOS workflow: kill the demo mid-run, restart it, the run finishes."),
    ] = False,
) -> None:
    """Start the demo: a governed shop assistant with a chat page and the governance dashboard."""
    import uvicorn

    from agora_agent.demo import create_demo_app

    if not _port_free(host, port):
        typer.echo(f"agora-agent demo: port {port} on {host} is in use; pick another with --port {port + 1}", err=True)
        raise typer.Exit(2)
    app = create_demo_app(db, word_delay=word_delay, daily_tokens=daily_tokens or None, durable=durable)
    setup = app.state.demo
    base = f"http://{host}:{port}"
    typer.echo(f"agora-agent demo — {setup.model_label}")
    typer.echo(f"  Chat:       {base}/agent/ui/")
    typer.echo(f"  Dashboard:  {base}/agent/dashboard/   (sign in as carol, the admin, in the chat page first)")
    typer.echo(f"  Data:       {db} (agent store), {setup.shop_path} (shop)")
    if durable:
        typer.echo(f"  Durable:    every run is a DBOS workflow ({db}.dbos.sqlite); kill -9 me mid-run and restart")
    typer.echo("  Users:      alice (support @ acme), bob (member @ globex), carol (admin @ acme) — demo-only login")
    keys = getattr(app.state, "demo_mcp_keys", {})
    if keys:
        typer.echo(f"  MCP:        {base}/agent/mcp   (actions refused; docs/mcp.md)")
        typer.echo("              demo-only keys: " + " | ".join(f"Authorization: Bearer {key}" for key in keys))
    typer.echo("Stop it with Ctrl+C.", err=False)
    uvicorn.run(app, host=host, port=port, log_level=log_level)


def register(app: typer.Typer) -> None:
    """Add the `demo` command."""
    app.command("demo")(demo)
