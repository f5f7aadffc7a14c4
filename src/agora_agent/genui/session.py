"""`UiSession`: what one tool call pushes to the client, validated, with loading states and persistence.

The loop makes one per tool call and hands it to the tool through `ctx.emit_ui` / `ctx.emit_component`.
Every push is validated against the registry before a frame is written. A push with an `id` replaces
the earlier push with that id (loading → data). When the tool succeeds, `persisted()` is what the
thread keeps (the final state of each component, in first-push order); when the tool fails, `abort()`
ends every open loading state with an `error` frame and nothing is kept.
"""

from __future__ import annotations

import itertools
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from agora_agent.actors import Actor
from agora_agent.genui.components import Presentation
from agora_agent.genui.registry import ComponentRegistry, ComponentSource, registry_for

__all__ = ["FrameWriter", "UiSession"]

logger = logging.getLogger("agora_agent.genui")

FrameWriter = Callable[[str, dict[str, Any], str | None], Awaitable[None]]
"""`(component, data, id)`: writes one component frame to the run's stream."""

# Channels that cannot draw components at all (text-only messaging); pushes there are dropped.
TEXT_ONLY_CHANNELS = frozenset({"sms", "email", "slack", "whatsapp"})
_counter = itertools.count(1)


@dataclass
class UiSession:
    """The component pushes of one tool call."""

    write: FrameWriter
    registry: ComponentSource | None = None  # a function is asked once, with `actor`, at the first push
    actor: Actor | None = None
    capabilities: frozenset[str] | None = None  # None: the client did not say, so everything registered goes
    channel: str = "chat"
    _pushed: dict[str, dict[str, Any]] = field(default_factory=dict)
    _open: set[str] = field(default_factory=set)

    def can_draw(self, name: str) -> bool:
        """Whether the client can draw `name` (its advertised `ui_capabilities`, and a channel that draws)."""
        if self.channel in TEXT_ONLY_CHANNELS:
            return False
        return self.capabilities is None or name in self.capabilities

    async def push(self, name: str, data: Mapping[str, Any] | BaseModel, *, id: str | None = None) -> str:
        """Validate and stream one component; returns its id (pass it again to replace it).

        Raises `ComponentPropsError` for an unregistered name or invalid props: nothing is written.
        """
        registry = self._registry()
        if registry is not None:
            payload = registry.validate(name, data)
        else:
            payload = data.model_dump(mode="json") if isinstance(data, BaseModel) else dict(data)
        ui_id = id or f"ui-{uuid.uuid4().hex[:12]}-{next(_counter)}"
        if not self.can_draw(name):
            logger.debug("component %s not pushed: the client cannot draw it", name)
            return ui_id
        await self.write(name, payload, ui_id)
        self._pushed.pop(ui_id, None)  # a replacement moves to the end, like the client's redraw
        self._pushed[ui_id] = {"id": ui_id, "name": name, "data": payload}
        if payload.get("state") == "loading":
            self._open.add(ui_id)
        else:
            self._open.discard(ui_id)
        return ui_id

    def _registry(self) -> ComponentRegistry | None:
        if self.registry is None or isinstance(self.registry, ComponentRegistry):
            return self.registry
        if self.actor is None:
            raise TypeError("UiSession needs the actor to choose a per-caller component registry")
        self.registry = registry_for(self.registry, self.actor)  # what it raises fails this push only
        return self.registry

    async def push_unchecked(self, name: str, data: Any) -> None:
        """`ctx.emit_component(name, data)`: the reference's mirror API, passed through as it is (no registry
        check); it is still kept with the thread and dropped when the tool fails. Prefer `push` (`emit_ui`)."""
        if not self.can_draw(name):
            return
        own = data.get("id") if isinstance(data, dict) else None  # a string id in the data replaces, as before
        ui_id = own if isinstance(own, str) and own else f"ui-{uuid.uuid4().hex[:12]}-{next(_counter)}"
        await self.write(name, data, ui_id)
        self._pushed.pop(ui_id, None)
        self._pushed[ui_id] = {"id": ui_id, "name": name, "data": data}

    async def present(self, presentation: Presentation) -> str:
        return await self.push(presentation.component, presentation.props, id=presentation.id)

    async def abort(self, reason: str) -> None:
        """The tool failed: close every open loading state with an error frame; keep nothing."""
        for ui_id in list(self._open):
            name = self._pushed[ui_id]["name"]
            await self.write(name, {"state": "error", "message": reason[:500]}, ui_id)
        self._open.clear()
        self._pushed.clear()

    def touched(self) -> bool:
        """Whether the call pushed anything (else `finish()` has nothing to close and returns [])."""
        return bool(self._pushed or self._open)

    async def finish(self) -> list[dict[str, Any]]:
        """The tool succeeded: a loading state left open becomes `empty`; returns what the thread keeps."""
        for ui_id in list(self._open):
            entry = self._pushed.pop(ui_id)
            entry["data"] = {"state": "empty"}
            await self.write(entry["name"], entry["data"], ui_id)
            self._pushed[ui_id] = entry
        self._open.clear()
        return list(self._pushed.values())
