"""A run's stream rebuilt from what the store kept: the fallback when no sink holds its frames.

A process that restarted, a process that never ran the run, or a Redis that lost (or trimmed) the
stream: re-attaching then replays the stored transcript — each assistant message's text, each tool
call's latest status with its input, output or error, and the run's error — instead of an empty
stream, and follows the run by polling the store while it is still running elsewhere.

The frames are renumbered from 1 (a message's text is one frame, not its original deltas), so a
`Last-Event-ID` from the lost stream cannot be mapped onto them. The components a successful tool call
drew are stored with it and replayed right after its tool frame, in order, with their ids. Durable runs
do better still: their journal keeps every frame with its id (docs/durable.md).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from agora_agent.records import ToolCallRecord
from agora_agent.stores.base import AgentStore
from agora_agent.streaming.frames import (
    ComponentFrame,
    ErrorFrame,
    Frame,
    StreamEvent,
    TextFrame,
    ToolFrame,
    ToolFrameStatus,
)

__all__ = ["follow_transcript", "tool_frame", "transcript_frames"]

_STATUS: dict[str, ToolFrameStatus] = {
    "started": "started",
    "pending_approval": "pending_approval",
    "executed": "executed",
    "rejected": "rejected",
    "failed": "failed",
    "expired": "expired",
    "unknown_after_crash": "failed",
}


def tool_frame(row: ToolCallRecord) -> ToolFrame:
    """The stream frame of a stored tool call (its latest status; `unknown_after_crash` shows as failed)."""
    error = row.error
    if row.status == "unknown_after_crash" and not error:
        error = "interrupted: the outcome of this call is unknown"
    return ToolFrame(
        tool_call_id=row.id,
        name=row.tool_name,
        kind=row.tool_type,
        status=_STATUS.get(row.status, "failed"),
        input=row.input,
        output=row.output,
        error=error,
    )


async def transcript_frames(store: AgentStore, run_id: str) -> tuple[list[Frame], bool]:
    """(frames, still running) of the run as stored; ([], False) for an unknown run."""
    run = await store.get_run(run_id)
    if run is None:
        return [], False
    messages = [m for m in await store.list_messages(run.thread_id, run_id=run_id) if m.role == "assistant"]
    rows = {c.id: c for c in await store.list_tool_calls(run_id=run_id)}
    frames: list[Frame] = []
    for message in messages:
        if message.content:
            frames.append(TextFrame(delta=message.content))
        for call in message.tool_calls or ():
            row = rows.get(call.id)
            if row is not None:
                frames.append(tool_frame(row))
                frames.extend(
                    ComponentFrame(name=c["name"], data=c.get("data"), id=c.get("id")) for c in row.components or ()
                )
    if run.status == "failed" and run.error:
        frames.append(ErrorFrame(message=run.error, code="run_failed"))
    return frames, run.status == "running"


async def follow_transcript(
    store: AgentStore, run_id: str, *, after: int | None = None, poll: float = 0.5
) -> AsyncIterator[StreamEvent]:
    """The stored transcript (ids > `after`), then what changes while the run is still running."""
    sent: list[Frame] = []
    next_id = 0
    after = after or 0
    while True:
        frames, running = await transcript_frames(store, run_id)
        for index, frame in enumerate(frames):
            if index < len(sent) and sent[index] == frame:
                continue
            next_id += 1
            if next_id > after:
                yield StreamEvent(next_id, frame)
        sent = frames
        if not running:
            return
        await asyncio.sleep(poll)
