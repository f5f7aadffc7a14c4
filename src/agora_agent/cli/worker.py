"""`agora-agent worker MODULE:ATTR`: run durable workflows without serving HTTP.

    AGORA_EXECUTOR_ID=worker-1 agora-agent worker agent_config:config

The worker starts the service of an `AgentConfig` with `durable` on, resumes this executor's runs,
takes runs from the queue (up to `DurableConfig.worker_concurrency` at once) and takes over the runs of
processes whose heartbeat stopped. It serves no HTTP: the web processes start runs, it executes them.
SIGTERM/SIGINT stop it; runs in flight stay `running` and resume on the next start (docs/durable.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from typing import Annotated, Any

import typer

from agora_agent.cli.serve import TargetError, load_target
from agora_agent.errors import AgoraError

__all__ = ["register", "worker"]


def _config_of(target: Any, spec: str) -> Any:
    from agora_agent.config import AgentConfig
    from agora_agent.service import AgentService

    if callable(target) and not isinstance(target, AgentConfig | AgentService):
        target = target()
    if isinstance(target, AgentService):
        target = target.config
    if not isinstance(target, AgentConfig):
        raise TargetError(
            f'"{spec}" is a {type(target).__name__}, expected an AgentConfig (or a function returning one)'
        )
    if not target.durable:
        raise TargetError(f'"{spec}" does not turn durable runs on: set AgentConfig(durable=True) for a worker')
    return target


async def _run(config: Any, stop: asyncio.Event) -> None:
    from agora_agent.service import AgentService

    async with AgentService.from_config(config) as service:
        typer.echo(f"agora-agent worker: executor {getattr(service.runner, 'executor_id', '?')} ready (Ctrl+C to stop)")
        await stop.wait()


def worker(
    target: Annotated[str, typer.Argument(help="MODULE:ATTR of an AgentConfig with durable=True.")],
) -> None:
    """Execute durable runs (queued, recovered, taken over) without serving HTTP."""
    try:
        config = _config_of(load_target(target), target)
    except (TargetError, AgoraError) as exc:
        typer.echo(f"agora-agent worker: {exc}", err=True)
        raise typer.Exit(2) from None

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(sig, stop.set)
        await _run(config, stop)

    try:
        asyncio.run(main())
    except AgoraError as exc:  # e.g. the durable extra is missing: one line, exit 2
        typer.echo(f"agora-agent worker: {exc}", err=True)
        raise typer.Exit(2) from None
    typer.echo("agora-agent worker: stopped; runs in flight resume on the next start")


def register(app: typer.Typer) -> None:
    """Add the `worker` command."""
    app.command("worker")(worker)
