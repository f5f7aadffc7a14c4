"""What a run streams: typed frames, each given a monotonically increasing id by its sink.

The SSE encoding (web layer) turns `TextFrame` into the reference's unnamed `data: {"delta": …}`
frame, `ComponentFrame` into `event: component`, and our additions into named events
(`tool`, `agent`, `error`) that text-only clients ignore.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from agora_agent._frozen import fast_init

__all__ = ["AgentFrame", "ComponentFrame", "ErrorFrame", "Frame", "StreamEvent", "TextFrame", "ToolFrame"]

ToolFrameStatus = Literal["started", "pending_approval", "approved", "executed", "rejected", "failed", "expired"]


@fast_init
@dataclass(frozen=True, kw_only=True, slots=True)
class TextFrame:
    """A text delta from the model."""

    delta: str
    type: Literal["text"] = "text"


@fast_init
@dataclass(frozen=True, kw_only=True, slots=True)
class ComponentFrame:
    """A UI component (name + JSON data) pushed by a tool (`ctx.emit_ui`, `present`, `ctx.emit_component`).

    A later frame with the same `id` replaces the earlier one (a loading state, then the data).
    """

    name: str
    data: Any
    id: str | None = None
    type: Literal["component"] = "component"


@fast_init
@dataclass(frozen=True, kw_only=True, slots=True)
class ToolFrame:
    """A tool call changed status; lets a UI show approve/reject buttons without polling."""

    tool_call_id: str
    name: str
    kind: str
    status: ToolFrameStatus
    input: Any = None
    output: Any = None
    error: str | None = None
    agent: str | None = None
    type: Literal["tool"] = "tool"


@fast_init
@dataclass(frozen=True, kw_only=True, slots=True)
class AgentFrame:
    """Text streamed by a delegated sub-agent, forwarded to the parent run's stream."""

    agent: str
    delta: str
    type: Literal["agent"] = "agent"


@fast_init
@dataclass(frozen=True, kw_only=True, slots=True)
class ErrorFrame:
    """The run failed (or was refused mid-run, e.g. over budget); the stream ends after it."""

    message: str
    code: str | None = None
    type: Literal["error"] = "error"


Frame = TextFrame | ComponentFrame | ToolFrame | AgentFrame | ErrorFrame


@fast_init
@dataclass(frozen=True, slots=True)
class StreamEvent:
    """A frame with its id in the run's stream (ids start at 1 and only grow)."""

    id: int
    frame: Frame
