"""`agora-agent init [DIR]`: scaffold a config module and a tools package to start your own agent.

Writes `agent_config.py` (a commented `AgentConfig`) and `agent_tools/` (one read tool, one action
tool that needs approval), then prints the commands to run next. Never overwrites: when any of the
files exists, nothing is written and the command exits with code 1.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

__all__ = ["SCAFFOLD", "register", "scaffold"]

CONFIG = '''"""The agent of this application. Serve it with:  agora-agent serve agent_config:config --reload"""

import os

from agora_agent import AgentConfig
from agora_agent.actors import HeaderActorResolver
from agora_agent.governance.quota import Budget

config = AgentConfig(
    # The model: "openai:gpt-4o-mini" (OPENAI_API_KEY), "anthropic:claude-sonnet-4-5" (ANTHROPIC_API_KEY), or any
    # OpenAI-compatible server with AGORA_MODEL_BASE_URL. A ModelProvider object works too.
    model=os.environ.get("AGORA_MODEL") or "openai:gpt-4o-mini",
    # Tools: every tool defined in the modules of this package is registered.
    tools_package="agent_tools",
    # Persistence: a SQLite file (tables created on first start). For PostgreSQL use
    # "postgresql+asyncpg://user:pass@host/db" and run `agora-agent db upgrade` first.
    store="sqlite:///.agora/agent.db",
    # Identity. DEVELOPMENT ONLY: HeaderActorResolver trusts the x-actor-id / x-actor-role / x-tenant-ref headers,
    # which a browser can forge. Replace it with CallableActorResolver(your_function) reading your own session.
    actor_resolver=HeaderActorResolver(),
    # Who may open the governance dashboard, see every actor's runs and approve on their behalf.
    governance_authorize=lambda actor, request: "admin" in actor.roles,
    # A daily budget per user; over it, a chat is refused with HTTP 429.
    budget=Budget(tokens_per_actor=200_000),
    # Roles are open by default (a tool without roles is usable by everyone); uncomment to close them.
    # empty_roles="deny",
    # The URL prefix of the API; the chat page is at <path>/ui and the dashboard at <path>/dashboard.
    path="/agent",
)
'''

TOOLS_INIT = '''"""The tools of this agent. Every module here is scanned for tools (AgentConfig.tools_package)."""
'''

TOOLS = '''"""Example tools: one that reads, one that writes (an action: a human approves each call first)."""

from typing import Any

from agora_agent.tools.authoring import tool
from agora_agent.tools.context import ToolContext

# Stand-in data. Scope real queries to ctx.actor (and ctx.actor.tenant_ref), never to ids the model supplies.
_TICKETS: dict[int, dict[str, Any]] = {
    1: {"id": 1, "title": "Cannot log in", "status": "open"},
    2: {"id": 2, "title": "Invoice is wrong", "status": "open"},
}


@tool
async def list_tickets(ctx: ToolContext) -> list[dict[str, Any]]:
    """List the support tickets of the caller."""
    return list(_TICKETS.values())


@tool(kind="action", roles=["support", "admin"])
async def close_ticket(ticket_id: int, ctx: ToolContext) -> dict[str, Any]:
    """Close a support ticket. The chat asks a human to approve this call before it runs."""
    ticket = _TICKETS.get(ticket_id)
    if ticket is None:
        raise ValueError(f"no ticket {ticket_id}")
    ticket["status"] = "closed"
    return ticket
'''

SCAFFOLD: dict[str, str] = {
    "agent_config.py": CONFIG,
    "agent_tools/__init__.py": TOOLS_INIT,
    "agent_tools/tickets.py": TOOLS,
}
"""Relative path -> content of every file `init` writes."""

NEXT_STEPS = """Next:
  pip install "agora-agent[openai]"          # or [anthropic] / [pydantic-ai]
  export OPENAI_API_KEY=...                  # or AGORA_MODEL=... for another provider
  cd {dir} && agora-agent serve agent_config:config --reload
  curl -N -H 'x-actor-id: me' -H 'x-actor-role: support' -H 'content-type: application/json' \\
       -d '{{"message": "list my tickets"}}' http://127.0.0.1:8000/agent/chat
  open http://127.0.0.1:8000/agent/ui/ (the chat page; it needs a real actor resolver for browsers)"""


def scaffold(directory: Path) -> list[Path]:
    """Write the scaffold into `directory`; return the files written. Raises FileExistsError listing existing files."""
    targets = {directory / rel: content for rel, content in SCAFFOLD.items()}
    existing = [p for p in targets if p.exists()]
    if existing:
        raise FileExistsError(", ".join(str(p) for p in existing))
    for path, content in targets.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
    return list(targets)


def init(
    directory: Annotated[Path, typer.Argument(help="Where to write the files (created if missing).")] = Path("."),
) -> None:
    """Scaffold agent_config.py and an agent_tools package (one read tool, one action tool)."""
    try:
        written = scaffold(directory)
    except FileExistsError as exc:
        typer.echo(f"agora-agent init: refusing to overwrite existing files: {exc}; nothing was written", err=True)
        raise typer.Exit(1) from None
    except OSError as exc:  # an unwritable or impossible path: one line, not a traceback
        where = exc.filename or directory
        typer.echo(f"agora-agent init: cannot write {where}: {exc.strerror or exc}", err=True)
        raise typer.Exit(1) from None
    for path in written:
        typer.echo(f"  created {path}")
    typer.echo(NEXT_STEPS.format(dir=directory))


def register(app: typer.Typer) -> None:
    """Add the `init` command."""
    app.command("init")(init)
