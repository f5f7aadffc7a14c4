"""`agora-agent chat --url URL --actor ID --roles A,B`: a terminal chat against a running agent server.

Text streams as it arrives, drawn as Markdown on a terminal (headings, lists, tables, code blocks;
`--plain` or a pipe prints it as it comes); each tool call prints a line whenever its status changes; a pending
approval asks y/n and sends the decision; dropped streams re-attach on their own. Identity goes in
the `x-actor-id` / `x-actor-role` / `x-tenant-ref` headers, so the server must use
`HeaderActorResolver` (development, or behind a gateway that sets them). Errors are one line on
stderr with a non-zero exit code. `--message` sends one message and exits (scripts, tests).
"""

from __future__ import annotations

import asyncio
import json
import re
import signal
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

if TYPE_CHECKING:  # imported when a reply is drawn (rich.markdown brings markdown-it and pygments: ~80 ms)
    from rich.live import Live
    from rich.markdown import Markdown

__all__ = ["ReplyText", "chat", "printable", "register", "run_chat", "split_url"]

_STYLE = {
    "started": "cyan",
    "pending_approval": "yellow",
    "approved": "green",
    "executed": "green",
    "rejected": "red",
    "failed": "red",
    "expired": "red",
}


# Control characters other than newline and tab: a model (or a tool's output) that sends ESC sequences
# must not retitle, clear or rewrite the user's terminal (rich passes them through).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_FENCE = re.compile(r"^\s{0,3}(```|~~~)")


def printable(text: str) -> str:
    """`text` without terminal control characters (newlines and tabs kept)."""
    return _CONTROL.sub("", text)


def _short(value: Any, limit: int = 160) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = printable(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _settled(text: str) -> int:
    """Where the finished Markdown blocks of `text` end: after its last blank line outside a code fence."""
    end, offset, fenced = 0, 0, False
    for line in text.splitlines(keepends=True):
        offset += len(line)
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced and not line.strip() and line.endswith("\n"):
            end = offset
    return end


class ReplyText:
    """One stretch of reply text: Markdown redrawn as it grows on a terminal, or plain text as it comes.

    Finished blocks (up to the last blank line outside a code fence) are printed for good; only the
    block still being written is live, so a long answer never redraws the whole screen.
    """

    def __init__(self, console: Console, *, markdown: bool, style: str | None = None) -> None:
        self._console, self._markdown, self._style = console, markdown, style
        self._pending = ""
        self._live: Live | None = None
        self.at_line_start = True

    def add(self, delta: str) -> None:
        delta = printable(delta)
        if not delta:
            return
        self.at_line_start = delta.endswith("\n")
        if not self._markdown:
            self._console.print(delta, end="", markup=False, highlight=False, soft_wrap=True, style=self._style)
            return
        self._pending += delta
        cut = _settled(self._pending)
        if cut:
            done, self._pending = self._pending[:cut], self._pending[cut:]
            if self._live is not None:
                self._live.update(self._render(done), refresh=True)  # the finished block stays where it was drawn
                self._live.stop()
                self._live = None
            else:
                self._console.print(self._render(done))
        if self._pending.strip():
            if self._live is None:
                from rich.live import Live

                self._live = Live(console=self._console, auto_refresh=False, transient=False)
                self._live.start()
            self._live.update(self._render(self._pending), refresh=True)

    def close(self) -> None:
        """The stretch ended (a tool line, an error or the end of the reply follows)."""
        if self._live is not None:
            self._live.update(self._render(self._pending), refresh=True)
            self._live.stop()
            self._live = None
        elif self._markdown and self._pending.strip():
            self._console.print(self._render(self._pending))
        elif not self._markdown and not self.at_line_start:
            self._console.print()
        self._pending = ""
        self.at_line_start = True

    def _render(self, text: str) -> Markdown:
        from rich.markdown import Markdown

        return Markdown(text, style=self._style or "none", hyperlinks=False)


async def run_chat(
    client: Any,
    console: Console,
    messages: Callable[[], str | None],
    confirm: Callable[[str], bool],
    *,
    agent: str | None = None,
    thread_id: str | None = None,
    markdown: bool | None = None,
) -> None:
    """Send each message `messages()` returns (None ends) and render the stream.

    `confirm(question)` answers each pending approval. `markdown` draws the reply as Markdown (default:
    when the console is a terminal). Raises the client's errors (the command turns them into one line).
    """
    from agora_agent.client import (
        AgentFrame,
        ComponentFrame,
        ErrorFrame,
        MetaFrame,
        TextFrame,
        ToolFrame,
    )

    rich_text = console.is_terminal if markdown is None else markdown
    while (message := messages()) is not None:
        run_id = ""
        reply = ReplyText(console, markdown=rich_text)
        delegated = ReplyText(console, markdown=False, style="dim")  # a sub-agent's text, plain and dim
        async for frame in client.chat(message, thread_id=thread_id, agent=agent):
            if isinstance(frame, MetaFrame):
                run_id, thread_id = frame.run_id, frame.thread_id or thread_id
            elif isinstance(frame, TextFrame):
                delegated.close()
                reply.add(frame.delta)
            elif isinstance(frame, AgentFrame):
                reply.close()
                delegated.add(frame.delta)
            else:
                reply.close()
                delegated.close()
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
                    console.print(f"[red][error] {escape(printable(frame.message))}[/red]")
        reply.close()
        delegated.close()


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
    markdown: Annotated[
        bool | None,
        typer.Option("--markdown/--plain", help="Draw replies as Markdown (default: when output is a terminal)."),
    ] = None,
) -> None:
    """Chat with an agent in the terminal; approve or reject its actions as they come."""
    from rich.prompt import Confirm

    from agora_agent.client import AgentClient

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
                await _show_pending(client, console, thread, confirm, markdown=markdown)
            await run_chat(client, console, next_message, confirm, agent=agent, thread_id=thread, markdown=markdown)

    _run_or_exit(main, url)


def _run_or_exit(main: Callable[[], Coroutine[Any, Any, None]], url: str) -> None:
    """Run the chat; a refusal, a dropped stream or an unreachable server is one line on stderr and exit 1."""
    import httpx2

    from agora_agent.client import AgentHTTPError, ChatDisconnectedError

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


async def _show_pending(
    client: Any, console: Console, thread_id: str, confirm: Callable[[str], bool], *, markdown: bool | None
) -> None:
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

        reply = ReplyText(console, markdown=console.is_terminal if markdown is None else markdown)
        async for frame in client.resume(row["runId"]):  # follow the run to its end before the next prompt
            if isinstance(frame, TextFrame):
                reply.add(frame.delta)
            elif isinstance(frame, ToolFrame) and frame.status != "pending_approval":
                reply.close()
                style = _STYLE.get(frame.status, "white")
                console.print(f"  [{style}]⚙ {escape(frame.name)} · {frame.status}[/{style}]", highlight=False)
        reply.close()


def register(app: typer.Typer) -> None:
    """Add the `chat` command."""
    app.command("chat")(chat)
