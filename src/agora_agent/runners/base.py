"""`Runner`: what the service needs from whatever executes runs (inline asyncio tasks, or DBOS workflows).

The loop never sees a runner: it talks to `LoopHooks`. A runner owns everything around the loop —
starting a run, waking it when an approval is decided, cancelling it, and shutting down.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol, runtime_checkable

from agora_agent.loop import ApprovalDecision, RunInput
from agora_agent.records import RunRecord
from agora_agent.streaming.frames import StreamEvent

__all__ = ["RecordingRunner", "Runner", "StreamingRunner"]


@runtime_checkable
class Runner(Protocol):
    """Executes runs. The run row exists before `start()` is called (the service wrote it)."""

    async def start(self, run: RunInput) -> str:
        """Schedule the run and return its id at once."""
        ...

    async def signal(self, run_id: str, tool_call_id: str, decision: ApprovalDecision | None = None) -> None:
        """Wake the run parked on this tool call; its approval row has been decided."""
        ...

    async def cancel(self, run_id: str) -> bool:
        """End the run `cancelled` (and stop it); returns whether this call ended it."""
        ...

    async def wait(self, run_id: str, timeout: float | None = None) -> None:
        """Wait until the run has finished (no-op when it is unknown or finished)."""
        ...

    def is_active(self, run_id: str) -> bool:
        """Whether this process is executing the run right now."""
        ...

    async def close(self) -> None:
        """Stop executing (service shutdown)."""
        ...


@runtime_checkable
class StreamingRunner(Runner, Protocol):
    """A runner that serves run streams itself (the durable runner: frames outlive the process)."""

    async def stream(self, run_id: str, *, after: int | None = None) -> AsyncIterator[StreamEvent]:
        """The run's frames with id > `after`, then live ones until the run ends."""
        ...

    async def queued(self, run_ids: list[str]) -> set[str]:
        """Which of these `running` runs have not begun: they wait for capacity in the run queue."""
        ...


@runtime_checkable
class RecordingRunner(Runner, Protocol):
    """A runner that writes the run row itself, after it has made the run durable (the durable runner:
    a process that dies between the two writes leaves a workflow that writes the row, never a row
    without a run)."""

    async def start_recorded(self, run: RunInput, record: RunRecord) -> str:
        """Schedule the run, then write `record` (as the thread's active stream); return the run id."""
        ...
