"""`agora-agent approvals list | approve | reject`: the approvals inbox of a running server (same API and gate
as the console: listing every actor's pending actions needs `governance_authorize`)."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
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
    out,
    run,
    short,
)

__all__ = ["register"]

approvals_app = typer.Typer(help="Pending approvals on a running server: list, approve, reject.", no_args_is_help=True)


@approvals_app.command("list")
def list_command(
    server: ServerOption,
    actor: ActorOption = None,
    roles: RolesOption = "",
    tenant: TenantOption = None,
    token: TokenOption = None,
    header: HeaderOption = None,
    path: PathOption = "/agent",
    mine: Annotated[bool, typer.Option("--mine", help="Only your own (no governance gate needed).")] = False,
    as_json: JsonOption = False,
) -> None:
    """Pending approvals, oldest first."""

    async def body() -> None:
        target = Server.from_options(server, path, actor, roles, tenant, token, header)
        rows = await target.call("GET", "/approvals/mine" if mine else "/governance/approvals/pending")
        if as_json:
            typer.echo(json.dumps(rows, indent=2))
            return
        if not rows:
            out().print("no pending approvals")
            return
        table = Table(title=f"Pending approvals ({len(rows)})")
        for col in ("run", "tool call", "tool", "arguments", "actor", "requested (UTC)"):
            ids = col in ("run", "tool call")  # never cut: `approvals approve RUN TOOL_CALL` takes them
            table.add_column(col, no_wrap=ids, min_width=32 if col == "run" else None)
        for r in rows:
            table.add_row(
                r.get("runId") or "—",
                r["toolCallId"],
                r["toolName"],
                short(r.get("input")),
                r.get("actorLabel") or r["actorRef"],
                str(r["requestedAt"])[:19].replace("T", " "),
            )
        out().print(table)

    run(body())


def _decide(decision: str, run_id: str, tool_call_id: str, reason: str | None, target_args: tuple[Any, ...]) -> None:
    async def body() -> None:
        if not run_id.strip() or not tool_call_id.strip():
            raise CommandError("the run id and the tool call id must not be empty")
        target = Server.from_options(*target_args)
        payload: dict[str, Any] = {"runId": run_id, "toolCallId": tool_call_id}
        if reason is not None:
            payload["reason"] = reason
        result = await target.call("POST", f"/tool-call/{decision}", json=payload)
        status = result.get("status", decision + "d") if isinstance(result, dict) else decision
        out().print(f"{tool_call_id} in run {run_id}: {status}")

    run(body())


@approvals_app.command("approve")
def approve_command(
    run_id: Annotated[str, typer.Argument(help="The run id.")],
    tool_call_id: Annotated[str, typer.Argument(help="The tool call id.")],
    server: ServerOption,
    actor: ActorOption = None,
    roles: RolesOption = "",
    tenant: TenantOption = None,
    token: TokenOption = None,
    header: HeaderOption = None,
    path: PathOption = "/agent",
) -> None:
    """Approve a pending action (the requester, or anyone governance_authorize admits)."""
    _decide("approve", run_id, tool_call_id, None, (server, path, actor, roles, tenant, token, header))


@approvals_app.command("reject")
def reject_command(
    run_id: Annotated[str, typer.Argument(help="The run id.")],
    tool_call_id: Annotated[str, typer.Argument(help="The tool call id.")],
    server: ServerOption,
    reason: Annotated[str | None, typer.Option(help="Why (the model is told).")] = None,
    actor: ActorOption = None,
    roles: RolesOption = "",
    tenant: TenantOption = None,
    token: TokenOption = None,
    header: HeaderOption = None,
    path: PathOption = "/agent",
) -> None:
    """Reject a pending action; `--reason` reaches the model."""
    _decide("reject", run_id, tool_call_id, reason, (server, path, actor, roles, tenant, token, header))


def register(app: typer.Typer) -> None:
    """Add the `approvals` command group."""
    app.add_typer(approvals_app, name="approvals")
