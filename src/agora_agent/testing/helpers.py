"""Helpers for tests of agents: collect a run's frames, wait for a pending approval."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field

from agora_agent.actors import Actor
from agora_agent.governance.gate import Caller
from agora_agent.service import AgentService
from agora_agent.streaming.frames import (
    AgentFrame,
    ComponentFrame,
    ErrorFrame,
    Frame,
    StreamEvent,
    TextFrame,
    ToolFrame,
)

__all__ = ["OBSERVER", "RunFrames", "collect_frames", "wait_for_tool_status"]

OBSERVER = Caller(Actor("agora-testing-observer"), grant=True)
"""The caller the helpers read as when a test passes none: an explicit global grant (a test observes
every run; the service's ownership rules are exercised by passing the actor instead)."""


@dataclass
class RunFrames:
    """A run's frames, with the views tests usually want."""

    events: list[StreamEvent] = field(default_factory=list)

    @property
    def frames(self) -> list[Frame]:
        return [e.frame for e in self.events]

    @property
    def text(self) -> str:
        return "".join(f.delta for f in self.frames if isinstance(f, TextFrame))

    @property
    def agent_text(self) -> str:
        return "".join(f.delta for f in self.frames if isinstance(f, AgentFrame))

    @property
    def tools(self) -> list[ToolFrame]:
        return [f for f in self.frames if isinstance(f, ToolFrame)]

    @property
    def components(self) -> list[ComponentFrame]:
        return [f for f in self.frames if isinstance(f, ComponentFrame)]

    @property
    def errors(self) -> list[ErrorFrame]:
        return [f for f in self.frames if isinstance(f, ErrorFrame)]

    def statuses(self, tool_call_id: str) -> list[str]:
        return [f.status for f in self.tools if f.tool_call_id == tool_call_id]


async def collect_frames(
    service: AgentService,
    run_id: str,
    *,
    after: int | None = None,
    timeout: float = 10,
    caller: Actor | Caller = OBSERVER,
) -> RunFrames:
    """Read the run's stream to its end (bounded by `timeout` seconds), as `caller`."""
    out = RunFrames()

    async def read() -> None:
        async for event in await service.subscribe(caller, run_id, after=after):
            out.events.append(event)

    await asyncio.wait_for(read(), timeout)
    return out


async def wait_for_tool_status(
    service: AgentService,
    run_id: str,
    statuses: Sequence[str] = ("pending_approval",),
    *,
    timeout: float = 10,
    caller: Actor | Caller = OBSERVER,
) -> ToolFrame:
    """Follow the stream until a tool frame reaches one of `statuses` (as `caller`); returns that frame."""

    async def find() -> ToolFrame:
        async for event in await service.subscribe(caller, run_id):
            frame = event.frame
            if isinstance(frame, ToolFrame) and frame.status in statuses:
                return frame
        raise AssertionError(f"run {run_id} ended without a tool frame in {list(statuses)}")

    return await asyncio.wait_for(find(), timeout)
