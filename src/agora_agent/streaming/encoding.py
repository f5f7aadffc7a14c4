"""The encoder seam: one run's frames -> one wire protocol (AI SDK UI message stream, AG-UI, …).

The runner and the sinks know nothing of protocols: they write `Frame`s. A `StreamEncoder` turns the
`StreamEvent`s a subscriber reads into the bytes of one protocol, and `encode_run` drives it:

    start()            once, before any frame
    event(e)           each frame, in order (an encoder keeps its own state: open text part, …)
    parked(p)          the run waits for a human decision and the encoder `stops_at_parks`:
                       the response ends here, and the answer arrives as a new request
    finish(summary)    the run's stream ended (summary: status, tokens, cost from the store)
    interrupted()      reading the stream failed; the run goes on, the client may re-attach

Request/response protocols (the AI SDK's `useChat`, AG-UI) end a response at a parked approval and
carry the decision in the next request; our native SSE envelope keeps streaming through the park.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from agora_agent.streaming.frames import StreamEvent, ToolFrame

__all__ = ["Parked", "RunSummary", "StreamEncoder", "approval_id", "encode_run", "is_park", "parse_approval_id"]


@dataclass(frozen=True, kw_only=True, slots=True)
class RunSummary:
    """What the end of a stream knows about its run (read from the store, not from the frames)."""

    run_id: str
    thread_id: str
    status: str  # running | completed | failed | cancelled
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    model_id: str | None = None
    error: str | None = None

    def usage(self) -> dict[str, Any]:
        """`{inputTokens, outputTokens, totalTokens}` as both protocols spell it."""
        return {
            "inputTokens": self.input_tokens,
            "outputTokens": self.output_tokens,
            "totalTokens": self.input_tokens + self.output_tokens,
        }


@dataclass(frozen=True, kw_only=True, slots=True)
class Parked:
    """A top-level action waits for a decision: its frame, and the approval's terms from the store."""

    frame: ToolFrame
    event_id: int
    approval_id: str
    approver_roles: tuple[str, ...] | None = None
    deadline: datetime | None = None


class StreamEncoder(Protocol):
    """One protocol's view of a run's stream. Each method returns the bytes to send (maybe none)."""

    media_type: str
    headers: Mapping[str, str]
    stops_at_parks: bool

    def start(self) -> list[bytes]: ...

    def event(self, event: StreamEvent) -> list[bytes]: ...

    def parked(self, parked: Parked, summary: RunSummary | None) -> list[bytes]: ...

    def finish(self, summary: RunSummary | None) -> list[bytes]: ...

    def interrupted(self) -> list[bytes]: ...


def approval_id(run_id: str, tool_call_id: str) -> str:
    """The id a client sees for a pending approval: names the run and the call; decides nothing."""
    return f"{run_id}:{tool_call_id}"


def parse_approval_id(value: str) -> tuple[str, str] | None:
    """`(run_id, tool_call_id)` from `approval_id`, or None when it is not one (run ids have no ':')."""
    run_id, sep, tool_call_id = value.partition(":")
    if not sep or not run_id or not tool_call_id:
        return None
    return run_id, tool_call_id


def is_park(event: StreamEvent) -> bool:
    """A top-level action's `pending_approval` frame (a nested sub-agent's actions are auto-declined)."""
    frame = event.frame
    return isinstance(frame, ToolFrame) and frame.status == "pending_approval" and frame.agent is None


async def encode_run(
    encoder: StreamEncoder,
    events: AsyncIterator[StreamEvent],
    *,
    still_parked: Callable[[StreamEvent], Awaitable[Parked | None]],
    summary: Callable[[], Awaitable[RunSummary | None]],
    on_error: Callable[[BaseException], None] | None = None,
    started: bool = False,
) -> AsyncIterator[bytes]:
    """Drive `encoder` over `events`. `still_parked` is asked at each park (the approval may already
    be decided — e.g. on a replay — and then the stream goes on); `summary` at the end. `started`: the
    caller sent `encoder.start()` itself (with the response's head)."""
    if not started:
        for chunk in encoder.start():
            yield chunk
    try:
        async for event in events:
            for chunk in encoder.event(event):
                yield chunk
            if encoder.stops_at_parks and is_park(event):
                parked = await still_parked(event)
                if parked is not None:
                    # Stop reading: the run waits; this response is complete.
                    with contextlib.suppress(Exception):
                        await events.aclose()  # type: ignore[attr-defined]
                    for chunk in encoder.parked(parked, await summary()):
                        yield chunk
                    return
    except Exception as exc:
        if on_error is not None:
            on_error(exc)
        for chunk in encoder.interrupted():
            yield chunk
        return
    for chunk in encoder.finish(await summary()):
        yield chunk
