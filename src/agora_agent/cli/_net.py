"""Shared by `serve` and `demo`: the port and log-level options, and binding before the app starts.

The socket is bound BEFORE uvicorn runs the app's lifespan: a second server started on a busy port
fails at once with one line, without starting the agent service (so it never touches the store).
"""

from __future__ import annotations

import errno
import socket
from typing import Annotated, Any

import typer

__all__ = ["LOG_LEVELS", "LogLevelOption", "PortOption", "bind", "check_log_level", "run_on"]

LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")

PortOption = Annotated[int, typer.Option(min=1, max=65535, help="Port to listen on (1-65535).")]
LogLevelOption = Annotated[str, typer.Option(help=f"uvicorn log level: {', '.join(LOG_LEVELS)}.")]


def check_log_level(command: str, level: str) -> str:
    """The level in lower case, or a one-line error (exit 2) naming the valid ones."""
    if level.lower() not in LOG_LEVELS:
        typer.echo(f"agora-agent {command}: --log-level {level!r} is not one of {', '.join(LOG_LEVELS)}", err=True)
        raise typer.Exit(2)
    return level.lower()


def bind(command: str, host: str, port: int) -> socket.socket:
    """A listening socket on (host, port), or a one-line error (exit 2) saying why it cannot be had."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        typer.echo(f"agora-agent {command}: cannot resolve host {host!r}: {exc.strerror}", err=True)
        raise typer.Exit(2) from None
    family, _, proto, _, address = infos[0]
    # proto IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY on an accepted connection only when the listening
    # socket says it is TCP; with proto 0 Nagle stays on and every SSE frame written while the previous one is
    # unacknowledged waits for the client's delayed ACK (~40 ms on Linux). Set here too, for other loops.
    sock = socket.socket(family, socket.SOCK_STREAM, proto or socket.IPPROTO_TCP)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            why = f"port {port} on {host} is in use (another server?); pick another with --port {port + 1}"
        elif exc.errno == errno.EACCES:
            why = f"not allowed to listen on port {port} (ports below 1024 need privileges)"
        else:
            why = f"cannot listen on {host}:{port}: {exc.strerror or exc}"
        typer.echo(f"agora-agent {command}: {why}", err=True)
        raise typer.Exit(2) from None
    return sock


def run_on(sock: socket.socket, app: Any, *, log_level: str) -> None:
    """Serve `app` with uvicorn on the already-bound socket (lifespan, i.e. recovery, runs after the bind)."""
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, log_level=log_level))
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
