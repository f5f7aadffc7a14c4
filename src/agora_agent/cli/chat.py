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
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

__all__ = ["chat", "register", "run_chat", "split_url"]

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
    url: Annotated[
        str, typer.Option(help="The server (http://127.0.0.1:8000) or the agent (http://127.0.0.1:8000/agent)")
    ],
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
    base_url, path = split_url(url, path)
    pending = [message] if message is not None else None
    interrupted = False

    def next_message() -> str | None:
        nonlocal interrupted
        if pending is not None:
            return pending.pop() if pending else None
        while not interrupted:
            try:
                with _interruptible():
                    text = console.input("[bold]you>[/bold] ").strip()
            except (EOFError, KeyboardInterrupt):
                console.print()
                return None
            if text in ("/quit", "/exit"):
                return None
            if text == "/help":
                console.print(HELP)
            elif text:  # an empty line asks again instead of quitting silently
                return text
        return None

    def confirm(question: str) -> bool:
        nonlocal interrupted
        try:
            with _interruptible():
                return Confirm.ask(question, console=console, default=False)
        except (EOFError, KeyboardInterrupt):
            # Ctrl+C at the prompt: decide (reject), never leave the approval pending, then leave.
            interrupted = True
            console.print("\n[red]interrupted: rejected[/red]")
            return False

    async def main() -> None:
        async with AgentClient(base_url, path=path, headers=headers) as client:
            # Fail before the prompt, not after the first message: the server is there and knows us.
            await client.quota_today()
            if message is None:
                console.print(f"[dim]{HELP}[/dim]")
            if thread is not None:
                await _show_pending(client, console, thread, confirm)
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


HELP = "Type a message and press Enter. /help shows this, /quit (or Ctrl+D) leaves."


def split_url(url: str, path: str = "/agent") -> tuple[str, str]:
    """`--url` as the server (`http://host:8000`) or as the agent's base (`http://host:8000/agent`):
    the second form's path becomes the agent path."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.path.strip("/"):
        return urlunsplit(parts._replace(path="", query="", fragment="")), parts.path.rstrip("/")
    return url.rstrip("/"), path


@contextmanager
def _interruptible() -> Iterator[None]:
    """Ctrl+C raises KeyboardInterrupt inside a blocking prompt. (asyncio's runner otherwise only
    cancels the main task and the prompt keeps waiting for Enter.)"""
    previous = signal.getsignal(signal.SIGINT)
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


async def _show_pending(client: Any, console: Console, thread_id: str, confirm: Callable[[str], bool]) -> None:
    """`--thread`: show that thread's pending approvals and decide them (a chat left waiting)."""
    for row in await client.my_approvals():
        if row.get("threadId") != thread_id or not row.get("runId"):
            continue
        name = row.get("toolName", "?")
        console.print(
            f"  [yellow]⚙ {escape(name)} · pending_approval[/yellow] [dim]{escape(_short(row.get('input')))}[/dim]"
        )
        if confirm(f"Approve {name}({_short(row.get('input'), 80)})?"):
            await client.approve(row["runId"], row["toolCallId"])
        else:
            await client.reject(row["runId"], row["toolCallId"], reason="rejected in the terminal")
        from agora_agent.client import TextFrame, ToolFrame

        async for frame in client.resume(row["runId"]):  # follow the run to its end before the next prompt
            if isinstance(frame, TextFrame):
                console.print(escape(frame.delta), end="", highlight=False, soft_wrap=True)
            elif isinstance(frame, ToolFrame) and frame.status != "pending_approval":
                style = _STYLE.get(frame.status, "white")
                console.print(f"\n  [{style}]⚙ {escape(frame.name)} · {frame.status}[/{style}]", highlight=False)
        console.print()


def register(app: typer.Typer) -> None:
    """Add the `chat` command."""
    app.command("chat")(chat)
