"""`ToolContext`: what a tool knows about the call it is serving."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from agora_agent.actors import Actor

__all__ = ["ComponentEmitter", "RetrievalReporter", "ToolContext", "UiPusher"]

ComponentEmitter = Callable[[str, Any], Awaitable[None]]
RetrievalReporter = Callable[..., Awaitable[None]]
"""`(query_length=, count=, source=, ids=, scores=)`: the run's `Retrieved` event (set by the loop)."""


class UiPusher(Protocol):
    """Where a tool's components go during a streamed run (`agora_agent.genui.UiSession`)."""

    async def push(self, name: str, data: Any, *, id: str | None = None) -> str: ...

    async def push_unchecked(self, name: str, data: Any) -> None: ...


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
    ui_capabilities: frozenset[str] | None = None
    _emitter: ComponentEmitter = field(default=_no_emitter, repr=False)
    _ui: UiPusher | None = field(default=None, repr=False)
    _retrieved: RetrievalReporter | None = field(default=None, repr=False)

    @property
    def idempotency_key(self) -> str | None:
        """`f"{run_id}:{tool_call_id}"`, or None outside a run."""
        if self.run_id is None or self.tool_call_id is None:
            return None
        return f"{self.run_id}:{self.tool_call_id}"

    async def emit_component(self, name: str, data: Any) -> None:
        """Send a UI component (name + JSON-serialisable data) to the run's stream at this point.

        The data is sent as it is (no validation — use `emit_ui` for a registered, validated component).
        From a sync tool (which runs in a worker thread) call it through `anyio.from_thread.run`.
        """
        if self._ui is not None:
            await self._ui.push_unchecked(name, data)
        else:
            await self._emitter(name, data)

    async def emit_ui(self, name: str, data: Any, *, id: str | None = None) -> str:
        """Push a registered component, validated against the app's `ComponentRegistry`; returns its id.

        Push `{"state": "loading"}` first and the data later with the returned `id` to show a loading
        state; if the tool then raises, the client is told the component failed and nothing is kept.
        A component outside the client's `ui_capabilities` is not pushed. Raises `ComponentPropsError`.
        Outside a streamed run (direct invoke, MCP) nothing is drawn and the id is still returned.
        """
        if self._ui is None:
            return id or ""
        return await self._ui.push(name, data, id=id)

    async def report_retrieval(
        self, *, query: str, ids: Sequence[str], scores: Sequence[float], source: str | None = None
    ) -> None:
        """A retrieval tool tells the run what it found: a `Retrieved` lifecycle event with the query's length,
        the chunk ids and scores (never the text). Outside a run (direct invoke, MCP) it does nothing."""
        if self._retrieved is not None:
            await self._retrieved(query_length=len(query), count=len(ids), source=source, ids=ids, scores=scores)
