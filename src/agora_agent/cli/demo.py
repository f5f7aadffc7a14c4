"""`agora-agent demo`: the offline demo on 127.0.0.1 — chat page, dashboard, SQLite, no API key needed."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agora_agent.cli._net import LogLevelOption, PortOption, bind, check_log_level, run_on

__all__ = ["register"]


def demo(
    host: Annotated[
        str, typer.Option(help="Interface to listen on (keep 127.0.0.1: the demo login is not secure).")
    ] = ("127.0.0.1"),
    port: PortOption = 8000,
    db: Annotated[Path, typer.Option(help="SQLite file of the agent store (the shop goes next to it).")] = Path(
        ".agora/demo.db"
    ),
    daily_tokens: Annotated[int, typer.Option(help="Per-user daily token budget (0 = no limit).")] = 200_000,
    word_delay: Annotated[float, typer.Option(help="Seconds between the demo model's streamed words.", hidden=True)] = (
        0.03
    ),
    log_level: LogLevelOption = "warning",
    durable: Annotated[
        bool,
        typer.Option(help="Run every run as a DBOS workflow: kill the demo mid-run, restart it, the run finishes."),
    ] = False,
) -> None:
    """Start the demo: a governed shop assistant with a chat page and the governance dashboard."""
    from agora_agent.demo import create_demo_app
    from agora_agent.errors import AgoraError

    log_level = check_log_level("demo", log_level)
    sock = bind("demo", host, port)
    try:
        app = create_demo_app(db, word_delay=word_delay, daily_tokens=daily_tokens or None, durable=durable)
    except (AgoraError, OSError) as exc:  # a bad AGORA_MODEL, an unwritable --db: one line
        sock.close()
        typer.echo(f"agora-agent demo: {exc}", err=True)
        raise typer.Exit(2) from None
    setup = app.state.demo
    base = f"http://{host}:{port}"
    typer.echo(f"agora-agent demo — {setup.model_label}")
    typer.echo(f"  Chat:       {base}/agent/ui/")
    typer.echo(f"  Dashboard:  {base}/agent/dashboard/   (sign in as carol, the admin, in the chat page first)")
    help_file = f", {setup.help_centre.path} (help centre)" if setup.help_centre.path else ""
    typer.echo(f"  Data:       {db} (agent store), {setup.shop_path} (shop){help_file}")
    if durable:
        typer.echo(f"  Durable:    every run is a DBOS workflow ({db}.dbos.sqlite); kill -9 me mid-run and restart")
    typer.echo("  Users:      alice (support @ acme), bob (member @ globex), carol (admin @ acme) — demo-only login")
    keys = getattr(app.state, "demo_mcp_keys", {})
    if keys:
        typer.echo(f"  MCP:        {base}/agent/mcp   (actions refused; docs/mcp.md)")
        typer.echo("              demo-only keys: " + " | ".join(f"Authorization: Bearer {key}" for key in keys))
    typer.echo("Stop it with Ctrl+C.", err=False)
    run_on(sock, app, log_level=log_level)


def register(app: typer.Typer) -> None:
    """Add the `demo` command."""
    app.command("demo")(demo)
