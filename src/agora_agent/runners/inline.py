"""The inline runner: each run is an asyncio task in the serving process.

- `start()` returns as soon as the task is scheduled; the run row already exists (the service wrote it).
- Approvals wait on the stored approval row plus an in-process event, so a decision that lands
  before the loop parks is found on the row and never lost.
- `cancel()` records `cancelled` (first terminal state wins) and cancels the task, which cancels the
  in-flight model call or tool; the stream then ends.
- Delegation runs the target agent's loop on a transient sub-thread with its own run row; its text
  reaches the parent stream as `agent` frames and its action tools are auto-declined.
- Crash truthfulness (`recover_run`): a run whose process died is closed `failed`; a call that had
  started (or an approved action) becomes `unknown_after_crash` and its approval stays `approved`;
  a still-pending approval `expired`; the run's budget reservations are released; its stream gets an
  `error` frame and ends. With a `LeaseStore`, each run records its owner process and any live
  process recovers runs whose owner's lease lapsed (stores/leases.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING, Literal, TypeVar

from agora_agent.actors import Actor
from agora_agent.errors import AgoraError, ModelError, NotFoundError, QuotaExceededError
from agora_agent.loop import (
    ApprovalDecision,
    LoopDeps,
    PendingApproval,
    RunInput,
    run_agent_loop,
)
from agora_agent.records import ApprovalRecord, RunRecord, ToolCallPatch
from agora_agent.runners.transcript import tool_frame
from agora_agent.secrets import scrub_secrets
from agora_agent.stores.base import AgentStore
from agora_agent.streaming.frames import AgentFrame, ErrorFrame, Frame, TextFrame, ToolFrame
from agora_agent.streaming.sink import MemoryTokenSink, SinkWriter, TokenSink

if TYPE_CHECKING:
    from agora_agent.governance.quota import QuotaStore
    from agora_agent.stores.leases import LeaseStore, ProcessIdentity

__all__ = ["InlineRunner"]

logger = logging.getLogger("agora_agent.runner")
T = TypeVar("T")
NESTED_DECLINE_REASON = "nested sub-agent cannot request human approval"
INTERRUPTED = "interrupted: the server stopped while this run was in flight"
CANCELLED = "the run was cancelled"  # the durable runner's words too
UNKNOWN_AFTER_CRASH = (
    "outcome unknown: the server stopped while this call was executing; it may or may not have taken effect"
)

DepsFactory = Callable[[str], LoopDeps]


def _decision_of(record: ApprovalRecord, requester: Actor | None = None) -> ApprovalDecision:
    assert record.status != "pending"
    return ApprovalDecision(
        status=record.status, decided_by=record.decided_by, reason=record.reason, requester=requester
    )


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

    def step(self, name: str, fn: Callable[[], Awaitable[T]]) -> Awaitable[T]:
        # In-process a step is its body: hand back its awaitable, no coroutine of the hooks' own around it
        # (a tool step goes through here six times).
        return fn()

    def effect(self, name: str, fn: Callable[[], Awaitable[object]]) -> Awaitable[object]:
        return fn()

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

    def __init__(
        self,
        *,
        deps_for: DepsFactory,
        store: AgentStore,
        sink: TokenSink,
        debug: bool = False,
        quota: QuotaStore | None = None,
        leases: LeaseStore | None = None,
        identity: ProcessIdentity | None = None,
        lease_ttl: float = 30.0,
    ) -> None:
        self.deps_for = deps_for
        self.store = store
        self.sink = sink
        self.debug = debug
        self.quota = quota
        self.leases = leases
        self.identity = identity
        self.lease_ttl = lease_ttl
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._events: dict[tuple[str, str], asyncio.Event] = {}
        self._requesters: dict[tuple[str, str], Actor] = {}  # fresh identity of a requester who decided

    @property
    def owner_id(self) -> str | None:
        """This process's lease id when the runs it starts are claimed (leases configured), else None."""
        identity = self.identity
        return identity.id if self.leases is not None and identity is not None else None

    async def claim(self, run_id: str) -> None:
        """Record this process as the run's owner (before its run row exists, so no crash leaves it unowned)."""
        if self.leases is not None and self.identity is not None:
            await self.leases.claim_run(run_id, self.identity.id)

    async def start(self, run: RunInput) -> str:
        """Schedule the run and return its id at once (the caller claimed it with `claim`)."""
        if isinstance(self.sink, MemoryTokenSink):  # a shared sink's stream appears with its first frame
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
            await self._end_run(run.run_id, "cancelled", None)
        except QuotaExceededError as exc:
            await self._end_run(run.run_id, "failed", str(exc))
            error = ErrorFrame(message=str(exc), code="quota_exceeded")
        except Exception as exc:
            error_id = uuid.uuid4().hex[:12]
            message = scrub_secrets(str(exc) or type(exc).__name__)
            if isinstance(exc, ModelError):  # the scrubbed text only: the vendor's chained error may echo the key
                logger.error("run %s failed: model provider error %s: %s", run.run_id, error_id, message)
            else:
                logger.exception("run %s failed (error %s)", run.run_id, error_id)
            await self._end_run(run.run_id, "failed", f"{message} (error {error_id})")
            error = ErrorFrame(message=self._public_message(exc, run.run_id, error_id), code=type(exc).__name__)
        finally:
            writer = await hooks.open_sink()
            if error is not None:
                await writer.write(error)
            await writer.end()

    async def _end_run(
        self, run_id: str, status: Literal["failed", "cancelled"], error: str | None, *, attempts: int = 8
    ) -> None:
        """Record the run's end, retrying through a database outage: a run that cannot finish ends
        `failed`, never stuck `running` (if every attempt fails, lease recovery closes it later)."""
        delay = 0.1
        for attempt in range(1, attempts + 1):
            try:
                await self.store.record_run_end(run_id, status=status, error=error)
                return
            except Exception:
                if attempt == attempts:
                    logger.exception("could not record the end of run %s; recovery will close it", run_id)
                    return
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)

    def _public_message(self, exc: Exception, run_id: str, error_id: str) -> str:
        """What the end user's stream shows. Our own errors are written for people (a budget, a missing
        tool); a provider's text and anything else may carry internals or key fragments, so outside
        `debug` they become a generic message with the error id the server log carries."""
        if self.debug:
            return scrub_secrets(str(exc) or type(exc).__name__)
        if isinstance(exc, ModelError):
            return f"the model provider failed (error {error_id}); the server log has the details"
        if isinstance(exc, AgoraError):
            return scrub_secrets(str(exc) or type(exc).__name__)
        return f"the run failed with an internal error (error {error_id}; see the server log for run {run_id})"

    async def recover_run(self, record: RunRecord, reason: str = INTERRUPTED) -> bool:
        """Close a run whose process died, truthfully (the rules in the module docstring).

        Idempotent and safe to repeat after a crash half-way: every write is a compare-and-set or
        moves a row to the same final state. Returns whether this call ended the run.
        """
        store = self.store
        calls = await store.list_tool_calls(run_id=record.id)
        for call in calls:
            if call.status == "started":
                await store.update_tool_call(
                    record.id, call.id, ToolCallPatch(status="unknown_after_crash", error=UNKNOWN_AFTER_CRASH)
                )
            elif call.status == "pending_approval":
                approval = await store.get_approval(record.id, call.id)
                if approval is not None and approval.status == "pending":
                    approval, _ = await store.decide_approval(
                        record.id, call.id, status="expired", decided_by=None, reason=reason
                    )
                if approval is not None and approval.status == "approved":
                    # Approved, so the action may have started: its outcome is unknown, never "expired".
                    await store.update_tool_call(
                        record.id,
                        call.id,
                        ToolCallPatch(
                            status="unknown_after_crash", error=UNKNOWN_AFTER_CRASH, decided_by=approval.decided_by
                        ),
                    )
                else:
                    status = "rejected" if approval is not None and approval.status == "rejected" else "expired"
                    await store.update_tool_call(record.id, call.id, ToolCallPatch(status=status, error=reason))
        if self.quota is not None:
            await self.quota.release_run(record.id)
        ended = await store.record_run_end(record.id, status="failed", error=reason)
        # A shared sink (Redis), or this process's own buffer of the run, gets the error frame and its end;
        # a re-attach elsewhere replays the stored transcript, which ends with the same error.
        if not isinstance(self.sink, MemoryTokenSink) or await self.sink.has_stream(record.id):
            writer = await self.sink.open(record.id)
            open_calls = {c.id for c in calls if c.status in ("started", "pending_approval")}
            for row in await store.list_tool_calls(run_id=record.id):  # each call closed here: its final word
                if row.id in open_calls:
                    await writer.write(tool_frame(row))
            await writer.write(ErrorFrame(message=reason, code="run_interrupted"))
            await writer.end()
        return ended

    async def recover_interrupted(self, *, limit: int = 1000) -> int:
        """Close what dead processes left open. With leases: runs whose owner's lease lapsed (safe with
        several processes on one store); without: every `running` run this runner does not hold (only
        safe when no other process runs agents on this store). Returns how many runs were closed."""
        closed = 0
        if self.leases is not None and self.identity is not None:
            closed = await self.recover_lapsed(limit=limit)
        else:
            for record in await self.store.list_runs_by_status("running", limit=limit):
                # A durable run is recovered by DBOS (replay from its last checkpoint), never failed here.
                if not record.durable and record.id not in self._tasks and await self.recover_run(record):
                    closed += 1
        if closed:
            logger.warning("closed %d run(s) interrupted by a previous shutdown or crash", closed)
        return closed

    async def recover_lapsed(self, *, run_id: str | None = None, limit: int = 100) -> int:
        """Take over and close runs whose owner's lease lapsed (all, or only `run_id`); returns how many."""
        if self.leases is None or self.identity is None:
            return 0
        from agora_agent.stores.leases import pid_alive

        lapsed = await self.leases.lapsed_runs(
            now=datetime.now(UTC),
            ttl=self.lease_ttl,
            host=self.identity.host,
            alive=pid_alive,
            limit=limit,
            run_id=run_id,
        )
        closed = 0
        for lapsed_id, previous in lapsed:
            if lapsed_id in self._tasks:
                continue
            if not await self.leases.take_over(lapsed_id, self.identity.id, previous):
                continue  # another live process took it over first
            record = await self.store.get_run(lapsed_id)
            if record is not None and record.status == "running" and not record.durable:
                logger.warning("recovering run %s: its owner %s stopped", lapsed_id, previous or "(none)")
                if await self.recover_run(record):
                    closed += 1
        return closed

    async def sweep(self) -> None:
        """The lease tick: recover lapsed runs, release expired budget reservations."""
        await self.recover_lapsed()
        if self.quota is not None:
            released = await self.quota.release_expired()
            if released:
                logger.warning("released %d expired budget reservation(s)", released)

    async def run_nested(self, parent: RunInput, agent_name: str, task: str, parent_writer: SinkWriter) -> str:
        """The target agent on a transient sub-thread, own run row, same actor and day."""
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
        if self.leases is not None and self.identity is not None:
            await self.leases.claim_run(child.run_id, self.identity.id)
        try:
            result = await run_agent_loop(deps, child, _Hooks(self, child, parent_writer))
        except asyncio.CancelledError:
            await self.store.record_run_end(child.run_id, status="cancelled")
            raise
        except Exception as exc:
            await self.store.record_run_end(
                child.run_id, status="failed", error=scrub_secrets(str(exc) or type(exc).__name__)
            )
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
                    return _decision_of(record, self._requesters.pop(key, None))
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
            self._requesters.pop(key, None)

    async def signal(
        self,
        run_id: str,
        tool_call_id: str,
        decision: ApprovalDecision | None = None,
        *,
        requester: Actor | None = None,
    ) -> None:
        """Wake the run parked on this tool call.

        The decision lives on the approval row (server-authoritative): `AgentService.approve/reject`
        write it and then signal. Passing `decision` writes it here first (compare-and-set, so a
        decided approval keeps its standing decision) — for callers that drive the runner directly.
        """
        if decision is not None:
            await self.store.decide_approval(
                run_id, tool_call_id, status=decision.status, decided_by=decision.decided_by, reason=decision.reason
            )
        if requester is not None and self.is_active(run_id):
            # The parked run re-authorizes with the roles the requester has now (kept even when the
            # decision lands before the loop parks; the wait pops it).
            self._requesters[(run_id, tool_call_id)] = requester
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
        if changed:
            await self._close_pending_approvals(run_id, CANCELLED)
        return changed

    async def _close_pending_approvals(self, run_id: str, reason: str) -> None:
        """A cancelled run's parked calls are closed: the approval is `expired` (a late approve is a 409)
        and leaves `approvals/mine`; the audit row says why."""
        for call in await self.store.list_tool_calls(run_id=run_id):
            if call.status != "pending_approval":
                continue
            approval, _ = await self.store.decide_approval(
                run_id, call.id, status="expired", decided_by=None, reason=reason
            )
            if approval.status != "approved":  # an approval that won the race keeps its word in the audit
                await self.store.update_tool_call(run_id, call.id, ToolCallPatch(status="expired", error=reason))

    async def wait(self, run_id: str, timeout: float | None = None) -> None:
        """Wait until the run's task has finished (no-op for unknown or finished runs)."""
        task = self._tasks.get(run_id)
        if task is None:
            return
        if not task.done():
            # What `asyncio.wait((task,), timeout=timeout)` does for one task, without its sets: never cancels it.
            loop = asyncio.get_running_loop()
            waiter: asyncio.Future[None] = loop.create_future()

            def wake(_: object = None) -> None:
                if not waiter.done():
                    waiter.set_result(None)

            task.add_done_callback(wake)
            timer = loop.call_later(timeout, wake) if timeout is not None else None
            try:
                await waiter
            finally:
                task.remove_done_callback(wake)
                if timer is not None:
                    timer.cancel()
            if not task.done():
                raise TimeoutError(f"run {run_id} did not finish within {timeout} s")
        task.result()  # what the task raised, as awaiting it would

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
