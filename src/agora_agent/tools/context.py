"""`ToolContext`: what a tool knows about the call it is serving."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agora_agent.actors import Actor

__all__ = ["ComponentEmitter", "ToolContext"]

ComponentEmitter = Callable[[str, Any], Awaitable[None]]


async def _no_emitter(name: str, data: Any) -> None:
    """Outside a streamed run (direct invoke, MCP) components have nowhere to go."""


@dataclass(kw_only=True)
class ToolContext:
    """The call's context, injected into a tool that declares a `ctx: ToolContext` parameter.

    Identity is `actor` and nothing else: scope every query to it, never to ids the model supplies.
    `idempotency_key` is identical on every execution of one call (retries, crash recovery), so a
    tool that writes can pass it downstream to dedupe.
    """

    actor: Actor
    thread_id: str | None = None
    run_id: str | None = None
    tool_call_id: str | None = None
    agent: str | None = None
    persona: str | None = None
    page_context: Mapping[str, Any] | None = None
    channel: str = "chat"
    attempt: int = 1
    """Which execution of this call this is: > 1 when a durable run re-runs a tool whose earlier attempt
    was interrupted by a crash (same `idempotency_key`; dedupe on it)."""
    _emitter: ComponentEmitter = field(default=_no_emitter, repr=False)

    @property
    def idempotency_key(self) -> str | None:
        """`f"{run_id}:{tool_call_id}"`, or None outside a run."""
        if self.run_id is None or self.tool_call_id is None:
            return None
        return f"{self.run_id}:{self.tool_call_id}"

    async def emit_component(self, name: str, data: Any) -> None:
        """Send a UI component (name + JSON-serialisable data) to the run's stream at this point.

        From a sync tool (which runs in a worker thread) call it through `anyio.from_thread.run`.
        """
        await self._emitter(name, data)
