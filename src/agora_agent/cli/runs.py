"""`agora-agent runs list | show`: the runs of a running server, through the governance API (same gate)."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from agora_agent.cli._server import (
    ActorOption,
    CommandError,
    HeaderOption,
    JsonOption,
    PathOption,
    RolesOption,
    Server,
    ServerOption,
    TenantOption,
    TokenOption,
    money,
    out,
    run,
    short,
)

__all__ = ["register"]

runs_app = typer.Typer(
    help="Runs on a running server (governance API; needs governance_authorize).", no_args_is_help=True
)


@runs_app.command("list")
def list_command(
    server: ServerOption,
    actor: ActorOption = None,
    roles: RolesOption = "",
    tenant: TenantOption = None,
    token: TokenOption = None,
    header: HeaderOption = None,
    path: PathOption = "/agent",
    status: Annotated[str | None, typer.Option(help="running | completed | failed | cancelled")] = None,
    agent: Annotated[str | None, typer.Option(help="Only this agent's runs.")] = None,
    of: Annotated[str | None, typer.Option("--of", help="Only this actor's runs.")] = None,
    limit: Annotated[int, typer.Option(min=1, max=200, help="How many (newest first).")] = 20,
    as_json: JsonOption = False,
) -> None:
    """List runs, newest first."""

    async def body() -> None:
        target = Server.from_options(server, path, actor, roles, tenant, token, header)
        params: dict[str, Any] = {"limit": limit}
        for key, value in (("status", status), ("agent", agent), ("actor", of)):
            if value:
                params[key] = value
        page = await target.call("GET", "/governance/runs", params=params)
        if as_json:
            typer.echo(json.dumps(page, indent=2))
            return
        table = Table(title=f"Runs ({len(page['runs'])}{', more' if page.get('nextCursor') else ''})")
        for col in ("run", "status", "agent", "actor", "steps", "tokens", "cost", "duration", "started (UTC)"):
            # ids are never cut: they are what `runs show` and `approvals approve` take
            table.add_column(
                col,
                justify="right" if col in ("steps", "tokens", "cost", "duration") else "left",
                no_wrap=col == "run",
                min_width=32 if col == "run" else None,
            )
        for r in page["runs"]:
            duration = r.get("durationMs")
            table.add_row(
                r["id"],
                r["status"],
                r.get("agentName") or "—",
                r.get("actorLabel") or r["actorRef"],
                str(r["stepCount"]),
                f"{r['inputTokens'] + r['outputTokens']:,}",
                money(r.get("costUsd")),
                "—" if duration is None else f"{duration / 1000:.1f}s",
                str(r["startedAt"])[:19].replace("T", " "),
            )
        out().print(table)

    run(body())


@runs_app.command("show")
def show_command(
    run_id: Annotated[str, typer.Argument(help="The run id.")],
    server: ServerOption,
    actor: ActorOption = None,
    roles: RolesOption = "",
    tenant: TenantOption = None,
    token: TokenOption = None,
    header: HeaderOption = None,
    path: PathOption = "/agent",
    as_json: JsonOption = False,
) -> None:
    """Show one run as the inspector does: each step with its timing, tokens, cost, approver and result."""

    async def body() -> None:
        if not run_id.strip():
            raise CommandError("the run id must not be empty")
        target = Server.from_options(server, path, actor, roles, tenant, token, header)
        inspection = await target.call("GET", f"/governance/runs/{run_id}/inspect")
        if as_json:
            typer.echo(json.dumps(inspection, indent=2))
            return
        r = inspection["run"]
        out().print(
            f"[bold]{escape(r['id'])}[/bold] {r['status']} · agent {escape(r.get('agentName') or '—')} · "
            f"actor {escape(r['actorRef'])} · {r['stepCount']} steps · "
            f"{r['inputTokens'] + r['outputTokens']:,} tokens · {money(r.get('costUsd'))}"
        )
        if r.get("error"):
            out().print(f"[red]error: {escape(r['error'])}[/red]")
        _print_steps(inspection["steps"], 0)

    run(body())


def _print_steps(steps: list[dict[str, Any]], depth: int) -> None:
    pad = "  " * (depth + 1)
    for s in steps:
        d = s["detail"]
        took = "…" if s["durationMs"] is None else f"{s['durationMs']}ms"
        head = f"{pad}+{s['offsetMs']}ms {s['kind']:<10} {escape(s['name'])} [{s['status']}] {took}"
        if s["kind"] == "model":
            extra = (
                f"in {d.get('inputTokens')} out {d.get('outputTokens')} · {money(d.get('costUsd'))} · "
                f"{d.get('finishReason')}"
            )
        elif s["kind"] == "approval":
            extra = f"requested by {d.get('requestedBy')} · decided by {d.get('decidedBy') or '—'}"
            if d.get("reason"):
                extra += f" · {d['reason']}"
        else:
            extra = f"args {short(d.get('arguments'))}"
            if d.get("error"):
                extra += f" · error {short(d['error'])}"
            elif d.get("output") is not None:
                extra += f" → {short(d['output'])}"
        out().print(f"{head} [dim]{escape(extra)}[/dim]")
        if s.get("child"):
            child = s["child"]
            out().print(f"{pad}  ↳ run {escape(child['run']['id'])} ({escape(child['run'].get('agentName') or '')})")
            _print_steps(child["steps"], depth + 2)


def register(app: typer.Typer) -> None:
    """Add the `runs` command group."""
    app.add_typer(runs_app, name="runs")
