"""`agora-agent serve MODULE:ATTR`: serve an `AgentConfig` (or a ready FastAPI/ASGI app) with uvicorn.

    agora-agent serve agent_config:config --reload

A config gets `create_app(config)` plus the chat page and the dashboard (`mount_pages`). A bad
target is a one-line error naming what was not found, exit code 2.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from typing import Annotated, Any

import typer

from agora_agent.cli._net import LogLevelOption, PortOption, bind, check_log_level, run_on
from agora_agent.errors import AgoraError

__all__ = ["TargetError", "app_from_env", "build_app", "load_target", "register"]

TARGET_ENV = "AGORA_SERVE_TARGET"


class TargetError(Exception):
    """The MODULE:ATTR target cannot be loaded; the message says what was not found."""


def load_target(spec: str) -> Any:
    """Import `MODULE:ATTR` (ATTR may be dotted) from the current directory; raise `TargetError` if impossible."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise TargetError(f'expected MODULE:ATTR (e.g. agent_config:config), got "{spec}"')
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = exc.name or module_name
        raise TargetError(f'cannot import "{module_name}": no module named "{missing}"') from exc
    except Exception as exc:  # a syntax or runtime error in the user's module: one line, not a traceback
        raise TargetError(f'importing "{module_name}" failed: {type(exc).__name__}: {exc}') from exc
    target: Any = module
    for part in attr.split("."):
        if not hasattr(target, part):
            raise TargetError(f'module "{module_name}" has no attribute "{attr}"')
        target = getattr(target, part)
    return target


def build_app(target: Any, spec: str = "target") -> Any:
    """An ASGI app from a loaded target: AgentConfig/AgentService -> `create_app` (with the pages); an app as is."""
    from starlette.applications import Starlette

    from agora_agent.config import AgentConfig
    from agora_agent.service import AgentService

    if isinstance(target, AgentConfig | AgentService):
        from agora_agent.web import create_app

        return create_app(target)  # the agent routes, the chat page and the dashboard
    if isinstance(target, Starlette) or _is_asgi(target):
        return target  # a FastAPI/Starlette app, or any ASGI callable
    raise TargetError(f'"{spec}" is a {type(target).__name__}, expected an AgentConfig, an AgentService or an ASGI app')


def _is_asgi(target: Any) -> bool:
    """An ASGI callable: `async (scope, receive, send)`, as a function or an object's `__call__`."""
    if isinstance(target, type) or not callable(target):
        return False
    call = target if inspect.isfunction(target) else type(target).__call__
    if not inspect.iscoroutinefunction(call):
        return False
    params = list(inspect.signature(call).parameters)
    return len(params) - (0 if inspect.isfunction(target) else 1) == 3


def app_from_env() -> Any:
    """uvicorn factory used with --reload (it re-imports the target in the worker process)."""
    spec = os.environ[TARGET_ENV]
    return build_app(load_target(spec), spec)


def serve(
    target: Annotated[str, typer.Argument(help="MODULE:ATTR of an AgentConfig, an AgentService or a FastAPI app.")],
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: PortOption = 8000,
    reload: Annotated[bool, typer.Option(help="Restart when Python files in the current directory change.")] = False,
    log_level: LogLevelOption = "info",
) -> None:
    """Serve your agent: the API under its path, the chat page at <path>/ui, the dashboard at <path>/dashboard."""
    log_level = check_log_level("serve", log_level)
    try:
        app = build_app(load_target(target), target)
    except (TargetError, AgoraError) as exc:  # a bad target or a bad config: one line, exit 2
        typer.echo(f"agora-agent serve: {exc}", err=True)
        raise typer.Exit(2) from None
    typer.echo(f"agora-agent serve {target} on http://{host}:{port}  (Ctrl+C to stop)")
    sock = bind("serve", host, port)  # bound before start-up touches the store
    if reload:
        _serve_reloading(target, sock, log_level=log_level)
    else:
        run_on(sock, app, log_level=log_level)


def _serve_reloading(target: str, sock: Any, *, log_level: str) -> None:
    """`uvicorn.run(..., reload=True)` on OUR socket: uvicorn's own `bind_socket` makes a proto-0 socket without
    TCP_NODELAY, on which every SSE frame waits for the client's delayed ACK (see `_net.bind`)."""
    import uvicorn
    from uvicorn.supervisors import ChangeReload

    os.environ[TARGET_ENV] = target
    config = uvicorn.Config(
        "agora_agent.cli.serve:app_from_env",
        factory=True,
        reload=True,
        reload_dirs=[os.getcwd()],
        log_level=log_level,
    )
    sock.set_inheritable(True)  # the reloader hands it to each worker process it starts
    try:
        ChangeReload(config, target=uvicorn.Server(config).run, sockets=[sock]).run()
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()


def register(app: typer.Typer) -> None:
    """Add the `serve` command."""
    app.command("serve")(serve)
