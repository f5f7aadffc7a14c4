"""The inline runner: each run is an asyncio task in the serving process (REFERENCE ARCH-13, DESIGN §4).

- `start()` returns as soon as the task is scheduled; the run row already exists (the service wrote it).
- Approvals wait on the stored approval row plus an in-process event, so a decision that lands
  before the loop parks is found on the row and never lost.
- `cancel()` records `cancelled` (first terminal state wins) and cancels the task, which cancels the
  in-flight model call or tool; the stream then ends.
- Delegation runs the target agent's loop on a transient sub-thread with its own run row; its text
  reaches the parent stream as `agent` frames and its action tools are auto-declined.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from functools import partial
from typing import TypeVar

from agora_agent.errors import AgoraError, NotFoundError, QuotaExceededError
from agora_agent.loop import (
    ApprovalDecision,
    LoopDeps,
    PendingApproval,
    RunInput,
    run_agent_loop,
)
from agora_agent.stores.base import AgentStore, ApprovalRecord, RunRecord, ToolCallPatch
from agora_agent.streaming.frames import AgentFrame, ErrorFrame, Frame, TextFrame, ToolFrame
from agora_agent.streaming.sink import SinkWriter, TokenSink

__all__ = ["InlineRunner"]

logger = logging.getLogger("agora_agent.runner")
T = TypeVar("T")
NESTED_DECLINE_REASON = "nested sub-agent cannot request human approval"
INTERRUPTED = "interrupted: the server stopped while this run was in flight"

DepsFactory = Callable[[str], LoopDeps]


def _decision_of(record: ApprovalRecord) -> ApprovalDecision:
    assert record.status != "pending"
    return ApprovalDecision(status=record.status, decided_by=record.decided_by, reason=record.reason)


class _ForwardingWriter:
    """A nested run's writer: text becomes `agent` frames in the parent stream; `end()` is a no-op."""

    def __init__(self, parent: SinkWriter, agent: str) -> None:
        self._parent = parent
        self._agent = agent

    async def write(self, frame: Frame) -> int:
        if isinstance(frame, TextFrame):
            return await self._parent.write(AgentFrame(agent=self._agent, delta=frame.delta))
        if isinstance(frame, ToolFrame) and frame.agent is None:
            frame = ToolFrame(
                tool_call_id=frame.tool_call_id,
                name=frame.name,
                kind=frame.kind,
                status=frame.status,
                input=frame.input,
                output=frame.output,
                error=frame.error,
                agent=self._agent,
            )
        return await self._parent.write(frame)

    async def end(self) -> None:
        return None


class _Hooks:
    """Inline hooks for one (possibly nested) run."""

    def __init__(self, runner: InlineRunner, run: RunInput, parent_writer: SinkWriter | None = None) -> None:
        self._runner = runner
        self._run = run
        self._parent_writer = parent_writer
        self._writer: SinkWriter | None = None

    async def step(self, name: str, fn: Callable[[], Awaitable[T]]) -> T:
        return await fn()

    async def open_sink(self) -> SinkWriter:
        if self._writer is None:
            if self._parent_writer is not None:
                self._writer = _ForwardingWriter(self._parent_writer, self._run.agent_name)
            else:
                self._writer = await self._runner.sink.open(self._run.run_id)
        return self._writer

    async def await_approval(self, pending: PendingApproval) -> ApprovalDecision:
        store = self._runner.store
        if self._parent_writer is not None:  # nested: nobody can be asked (DLG-06)
            record, _ = await store.decide_approval(
                pending.run_id, pending.tool_call_id, status="rejected", decided_by=None, reason=NESTED_DECLINE_REASON
            )
            return _decision_of(record)
        return await self._runner.wait_for_decision(pending)

    async def run_agent(self, agent_name: str, task: str) -> str:
        writer = await self.open_sink()
        return await self._runner.run_nested(self._run, agent_name, task, writer)


class InlineRunner:
    """Runs agent loops as asyncio tasks in this process."""

    def __init__(self, *, deps_for: DepsFactory, store: AgentStore, sink: TokenSink, debug: bool = False) -> None:
        self.deps_for = deps_for
        self.store = store
        self.sink = sink
        self.debug = debug
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._events: dict[tuple[str, str], asyncio.Event] = {}

    async def start(self, run: RunInput) -> str:
        """Schedule the run and return its id at once."""
        await self.sink.open(run.run_id)  # create the buffer now so an early subscriber replays from frame 1
        task = asyncio.create_task(self._execute(run), name=f"agora-run-{run.run_id}")
        self._tasks[run.run_id] = task
        task.add_done_callback(partial(self._forget, run.run_id))
        return run.run_id

    def _forget(self, run_id: str, _task: object) -> None:
        self._tasks.pop(run_id, None)

    async def _execute(self, run: RunInput) -> None:
        hooks = _Hooks(self, run)
        error: ErrorFrame | None = None
        try:
            deps = self.deps_for(run.agent_name)
            await run_agent_loop(deps, run, hooks)
        except asyncio.CancelledError:
            await self.store.record_run_end(run.run_id, status="cancelled")
        except QuotaExceededError as exc:
            await self.store.record_run_end(run.run_id, status="failed", error=str(exc))
            error = ErrorFrame(message=str(exc), code="quota_exceeded")
        except Exception as exc:
            logger.exception("run %s failed", run.run_id)
            message = str(exc) or type(exc).__name__
            await self.store.record_run_end(run.run_id, status="failed", error=message)
            error = ErrorFrame(message=self._public_message(exc, run.run_id), code=type(exc).__name__)
        finally:
            writer = await hooks.open_sink()
            if error is not None:
                await writer.write(error)
            await writer.end()

    def _public_message(self, exc: Exception, run_id: str) -> str:
        """What the end user's stream shows. Our own errors are written for people (a provider's
        message, a budget, a missing tool); anything else may carry internals, so outside `debug`
        it is replaced by a pointer to the server log, where the whole exception was written."""
        if self.debug or isinstance(exc, AgoraError):
            return str(exc) or type(exc).__name__
        return f"the run failed with an internal error (see the server log for run {run_id})"

    async def recover_interrupted(self, *, limit: int = 1000) -> int:
        """Close what a previous process left open: runs still `running` become `failed`, their
        `started` tool calls `unknown_after_crash`, their pending approvals `expired` (nobody can
        act on them any more). Only safe when no other process runs agents on this store.
        Returns how many runs were closed."""
        closed = 0
        for record in await self.store.list_runs_by_status("running", limit=limit):
            if record.id in self._tasks:
                continue
            for call in await self.store.list_tool_calls(run_id=record.id):
                if call.status == "started":
                    await self.store.update_tool_call(
                        record.id, call.id, ToolCallPatch(status="unknown_after_crash", error=INTERRUPTED)
                    )
                elif call.status == "pending_approval":
                    await self.store.decide_approval(
                        record.id, call.id, status="expired", decided_by=None, reason=INTERRUPTED
                    )
                    await self.store.update_tool_call(
                        record.id, call.id, ToolCallPatch(status="expired", error=INTERRUPTED)
                    )
            if await self.store.record_run_end(record.id, status="failed", error=INTERRUPTED):
                closed += 1
        if closed:
            logger.warning("closed %d run(s) interrupted by a previous shutdown or crash", closed)
        return closed

    async def run_nested(self, parent: RunInput, agent_name: str, task: str, parent_writer: SinkWriter) -> str:
        """DLG-06: the target agent on a transient sub-thread, own run row, same actor and day."""
        try:
            deps = self.deps_for(agent_name)
        except NotFoundError:
            return f'(no agent named "{agent_name}" is configured)'
        thread = await self.store.create_thread(
            actor_ref=parent.actor.id, tenant_ref=parent.actor.tenant_ref, persona="default", transient=True
        )
        child = RunInput(
            run_id=uuid.uuid4().hex,
            thread_id=thread.id,
            actor=parent.actor,
            user_text=task,
            day=parent.day,
            agent_name=agent_name,
            parent_run_id=parent.run_id,
            depth=parent.depth + 1,
        )
        await self.store.record_run_start(
            RunRecord(
                id=child.run_id,
                thread_id=thread.id,
                agent_name=agent_name,
                actor_ref=parent.actor.id,
                tenant_ref=parent.actor.tenant_ref,
                started_at=datetime.now(UTC),
                parent_run_id=parent.run_id,
            )
        )
        try:
            result = await run_agent_loop(deps, child, _Hooks(self, child, parent_writer))
        except asyncio.CancelledError:
            await self.store.record_run_end(child.run_id, status="cancelled")
            raise
        except Exception as exc:
            await self.store.record_run_end(child.run_id, status="failed", error=str(exc) or type(exc).__name__)
            raise
        return result.text

    def _event(self, run_id: str, tool_call_id: str) -> asyncio.Event:
        return self._events.setdefault((run_id, tool_call_id), asyncio.Event())

    async def wait_for_decision(self, pending: PendingApproval) -> ApprovalDecision:
        """Park until the approval row is decided (or its deadline passes)."""
        key = (pending.run_id, pending.tool_call_id)
        event = self._event(*key)  # armed BEFORE reading the row: no decision can slip between the two
        try:
            while True:
                record = await self.store.get_approval(pending.run_id, pending.tool_call_id)
                if record is None:
                    raise NotFoundError(f"approval for tool call {pending.tool_call_id} disappeared")
                if record.status != "pending":
                    return _decision_of(record)
                if record.expired():
                    expired, _ = await self.store.decide_approval(
                        pending.run_id,
                        pending.tool_call_id,
                        status="expired",
                        decided_by=None,
                        reason="approval expired",
                    )
                    return _decision_of(expired)
                timeout = None
                if record.deadline is not None:
                    timeout = max((record.deadline - datetime.now(UTC)).total_seconds(), 0.0)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(event.wait(), timeout)
                event.clear()
        finally:
            self._events.pop(key, None)

    async def signal(self, run_id: str, tool_call_id: str, decision: ApprovalDecision | None = None) -> None:
        """Wake the run parked on this tool call (ARCH-07).

        The decision lives on the approval row (server-authoritative): `AgentService.approve/reject`
        write it and then signal. Passing `decision` writes it here first (compare-and-set, so a
        decided approval keeps its standing decision) — for callers that drive the runner directly.
        """
        if decision is not None:
            await self.store.decide_approval(
                run_id, tool_call_id, status=decision.status, decided_by=decision.decided_by, reason=decision.reason
            )
        event = self._events.get((run_id, tool_call_id))
        if event is not None:
            event.set()

    async def cancel(self, run_id: str) -> bool:
        """Record `cancelled` (if still running) and stop the run's task; returns whether this call ended it."""
        changed = await self.store.record_run_end(run_id, status="cancelled")
        task = self._tasks.get(run_id)
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        elif changed:
            writer = await self.sink.open(run_id)
            await writer.end()
        return changed

    async def wait(self, run_id: str, timeout: float | None = None) -> None:
        """Wait until the run's task has finished (no-op for unknown or finished runs)."""
        task = self._tasks.get(run_id)
        if task is not None:
            await asyncio.wait_for(asyncio.shield(task), timeout)

    def is_active(self, run_id: str) -> bool:
        task = self._tasks.get(run_id)
        return task is not None and not task.done()

    async def close(self) -> None:
        """Cancel every run still in flight (service shutdown)."""
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
