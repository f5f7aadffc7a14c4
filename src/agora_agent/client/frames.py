"""What a client reads from a chat stream: typed frames decoded from SSE events.

The inverse of `agora_agent.web.sse`: `meta` -> `MetaFrame`, unnamed -> `TextFrame`, `component`,
`tool`, `agent`, `error` -> the runtime's own frame types, `done` -> `DoneFrame`. Unknown events and
malformed payloads decode to None (a newer server may add events; keep-alives carry no data).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from agora_agent.streaming.frames import AgentFrame, ComponentFrame, ErrorFrame, Frame, TextFrame, ToolFrame

__all__ = ["ClientFrame", "DoneFrame", "MetaFrame", "decode_frame", "parse_sse_text"]


@dataclass(frozen=True, slots=True)
class MetaFrame:
    """The first event of every stream; `thread_id` is None on re-attach."""

    run_id: str
    thread_id: str | None = None
    type: Literal["meta"] = "meta"


@dataclass(frozen=True, slots=True)
class DoneFrame:
    """The last event: the run ended (completed, failed or cancelled)."""

    type: Literal["done"] = "done"


ClientFrame = Frame | MetaFrame | DoneFrame


def decode_frame(event: str, data: str) -> ClientFrame | None:
    """An SSE event name + data -> a typed frame, or None (see the module docstring)."""
    if not data:
        return None
    try:
        payload = json.loads(data)
    except ValueError:
        return None
    if not isinstance(payload, dict):
        return None
    if event == "done":
        return DoneFrame()
    if event == "meta":
        run_id, thread_id = payload.get("runId"), payload.get("threadId")
        if not isinstance(run_id, str):
            return None
        return MetaFrame(run_id, thread_id if isinstance(thread_id, str) else None)
    if event in ("message", ""):
        delta = payload.get("delta")
        return TextFrame(delta=delta) if isinstance(delta, str) and delta else None
    if event == "component":
        name = payload.get("name")
        ui_id = payload.get("id")
        if not isinstance(name, str):
            return None
        return ComponentFrame(name=name, data=payload.get("data"), id=ui_id if isinstance(ui_id, str) else None)
    if event == "tool":
        return _decode_tool(payload)
    if event == "agent":
        agent, text = payload.get("agent"), payload.get("text")
        return AgentFrame(agent=agent, delta=text) if isinstance(agent, str) and isinstance(text, str) else None
    if event == "error":
        message, code = payload.get("message"), payload.get("code")
        if not isinstance(message, str):
            return None
        return ErrorFrame(message=message, code=code if isinstance(code, str) else None)
    return None


def _decode_tool(payload: dict[str, Any]) -> ToolFrame | None:
    call_id, name, kind, status = (payload.get(k) for k in ("toolCallId", "name", "kind", "status"))
    if not (isinstance(call_id, str) and isinstance(name, str) and isinstance(kind, str) and isinstance(status, str)):
        return None
    error, agent = payload.get("error"), payload.get("agent")
    return ToolFrame(
        tool_call_id=call_id,
        name=name,
        kind=kind,
        status=status,  # type: ignore[arg-type]  # a newer server may add statuses: pass them through
        input=payload.get("input"),
        output=payload.get("output"),
        error=error if isinstance(error, str) else None,
        agent=agent if isinstance(agent, str) else None,
    )


def parse_sse_text(text: str) -> list[tuple[str, str, str]]:
    """`(event, data, id)` of each data-bearing event of a complete SSE body (comments skipped).

    For tests and debugging; streaming clients use httpx2's incremental parser.
    """
    out: list[tuple[str, str, str]] = []
    last_id = ""
    for block in text.replace("\r\n", "\n").split("\n\n"):
        event, data, has_data = "message", [], False
        for line in block.split("\n"):
            if not line or line.startswith(":"):
                continue
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "event":
                event = value
            elif field == "data":
                data.append(value)
                has_data = True
            elif field == "id":
                last_id = value
        if has_data:
            out.append((event, "\n".join(data), last_id))
    return out
