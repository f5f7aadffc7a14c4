"""`agora-agent chat --url URL --actor ID --roles A,B`: a terminal chat against a running agent server.

Text streams as it arrives; each tool call prints a line whenever its status changes; a pending
approval asks y/n and sends the decision; dropped streams re-attach on their own. Identity goes in
the `x-actor-id` / `x-actor-role` / `x-tenant-ref` headers, so the server must use
`HeaderActorResolver` (development, or behind a gateway that sets them). Errors are one line on
stderr with a non-zero exit code. `--message` sends one message and exits (scripts, tests).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

__all__ = ["chat", "register", "run_chat"]

_STYLE = {
    "started": "cyan",
    "pending_approval": "yellow",
    "approved": "green",
    "executed": "green",
    "rejected": "red",
    "failed": "red",
    "expired": "red",
}


def _short(value: Any, limit: int = 160) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


async def run_chat(
    client: Any,
    console: Console,
    messages: Callable[[], str | None],
    confirm: Callable[[str], bool],
    *,
    agent: str | None = None,
    thread_id: str | None = None,
) -> None:
    """Send each message `messages()` returns (None ends) and render the stream.

    `confirm(question)` answers each pending approval. Raises the client's errors (the command turns
    them into one line).
    """
    from agora_agent.client import (
        AgentFrame,
        ComponentFrame,
        DoneFrame,
        ErrorFrame,
        MetaFrame,
        TextFrame,
        ToolFrame,
    )

    while (message := messages()) is not None:
        run_id = ""
        at_line_start = True
        async for frame in client.chat(message, thread_id=thread_id, agent=agent):
            if isinstance(frame, MetaFrame):
                run_id, thread_id = frame.run_id, frame.thread_id or thread_id
            elif isinstance(frame, TextFrame):
                console.print(escape(frame.delta), end="", highlight=False, soft_wrap=True)
                at_line_start = frame.delta.endswith("\n")
            elif isinstance(frame, AgentFrame):
                console.print(f"[dim]{escape(frame.delta)}[/dim]", end="", soft_wrap=True)
                at_line_start = frame.delta.endswith("\n")
            else:
                if not at_line_start:
                    console.print()
                    at_line_start = True
                if isinstance(frame, ToolFrame):
                    style = _STYLE.get(frame.status, "white")
                    detail = frame.error or (frame.output if frame.status == "executed" else frame.input)
                    console.print(
                        f"  [{style}]⚙ {escape(frame.name)} · {frame.status}[/{style}] "
                        f"[dim]{escape(_short(detail))}[/dim]",
                        highlight=False,
                    )
                    if frame.status == "pending_approval":
                        question = f"Approve {frame.name}({_short(frame.input, 80)})?"
                        if confirm(question):
                            await client.approve(run_id, frame.tool_call_id)
                        else:
                            await client.reject(run_id, frame.tool_call_id, reason="rejected in the terminal")
                elif isinstance(frame, ComponentFrame):
                    console.print(
                        f"  [magenta]▣ {escape(frame.name)}[/magenta] [dim]{escape(_short(frame.data))}[/dim]"
                    )
                elif isinstance(frame, ErrorFrame):
                    console.print(f"[red][error] {escape(frame.message)}[/red]")
                elif isinstance(frame, DoneFrame) and not at_line_start:
                    console.print()


def chat(
    url: Annotated[str, typer.Option(help="The server, e.g. http://127.0.0.1:8000")],
    actor: Annotated[str, typer.Option(help="Your actor id (sent as x-actor-id).")],
    roles: Annotated[str, typer.Option(help="Comma-separated roles (x-actor-role).")] = "",
    tenant: Annotated[str | None, typer.Option(help="Tenant ref (x-tenant-ref).")] = None,
    path: Annotated[str, typer.Option(help="The agent's path on the server.")] = "/agent",
    agent: Annotated[str | None, typer.Option(help="A named agent (default agent when omitted).")] = None,
    thread: Annotated[str | None, typer.Option(help="Continue this thread.")] = None,
    message: Annotated[str | None, typer.Option("--message", "-m", help="Send one message and exit.")] = None,
) -> None:
    """Chat with an agent in the terminal; approve or reject its actions as they come."""
    import httpx2
    from rich.prompt import Confirm

    from agora_agent.client import AgentClient, AgentHTTPError, ChatDisconnectedError

    console = Console(highlight=False)
    headers = {"x-actor-id": actor, "x-actor-role": roles}
    if tenant:
        headers["x-tenant-ref"] = tenant
    pending = [message] if message is not None else None

    def next_message() -> str | None:
        if pending is not None:
            return pending.pop() if pending else None
        try:
            text = console.input("[bold]you>[/bold] ")
        except (EOFError, KeyboardInterrupt):
            return None
        text = text.strip()
        return None if text in ("", "/quit", "/exit") else text

    def confirm(question: str) -> bool:
        try:
            return Confirm.ask(question, console=console, default=False)
        except (EOFError, KeyboardInterrupt):
            return False

    async def main() -> None:
        async with AgentClient(url, path=path, headers=headers) as client:
            # Fail before the prompt, not after the first message: the server is there and knows us.
            await client.quota_today()
            await run_chat(client, console, next_message, confirm, agent=agent, thread_id=thread)

    err = Console(stderr=True, highlight=False, soft_wrap=True)
    try:
        asyncio.run(main())
    except AgentHTTPError as exc:
        err.print(f"agora-agent chat: HTTP {exc.status}: {escape(exc.message)}")
        raise typer.Exit(1) from None
    except ChatDisconnectedError as exc:
        err.print(f"agora-agent chat: {escape(str(exc))}")
        raise typer.Exit(1) from None
    except httpx2.TransportError as exc:
        err.print(f"agora-agent chat: cannot reach {url}: {escape(str(exc) or type(exc).__name__)}")
        raise typer.Exit(1) from None


def register(app: typer.Typer) -> None:
    """Add the `chat` command."""
    app.command("chat")(chat)
