"""`DurableRunner`: every run is a DBOS workflow, so it survives a kill -9 and resumes where it stopped.

How a run maps onto DBOS (async APIs only, launched inside the app's event loop):

- one workflow per run, workflow id == run id; `hooks.step(name, fn)` → `DBOS.run_step_async` with the
  loop's stable step names. A step's result is checkpointed as JSON (codec.py); replay returns it.
- tokens are never checkpointed one by one: the model step publishes deltas to the live stream as they
  come; only the finished turn is the step's result.
- frames are numbered deterministically across executions, and every step's checkpoint also carries the
  frames written since the previous step — the *journal*. A re-attach from any process, after any
  restart, replays the journal (text, tool frames, components, errors) and then follows the run live.
  The journal costs no extra write: it rides on the step checkpoint.
- an approval = the store row (compare-and-set, server-authoritative, as inline) plus `recv` on the
  per-call topic `approval:<tool_call_id>` with the approval's deadline; approve/reject from any
  process writes the row and `send`s a wake-up with an idempotency key.
- delegation = a child workflow with the deterministic id `<run_id>-agent-<n>`.
- cancel = cancel the workflow and its children, end the run `cancelled`, close its pending approvals.
- tool steps are at-least-once: the attempt number is kept in the workflow's events (written from
  inside the step, so an interrupted attempt counts), `ctx.attempt` > 1 after a recovery, and the audit
  row says an earlier attempt was interrupted.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import logging
import random
import sqlite3
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

from agora_agent.errors import (
    AgoraError,
    ConfigurationError,
    ConflictError,
    NotFoundError,
    QuotaExceededError,
    RunError,
)
from agora_agent.loop import ApprovalDecision, LoopDeps, PendingApproval, RunInput, run_agent_loop
from agora_agent.loop.interface import HANDED_OVER
from agora_agent.records import ApprovalRecord, RunRecord, ToolCallPatch
from agora_agent.runners.durable.codec import decode, encode
from agora_agent.runners.durable.events import ReplayAwareTelemetry
from agora_agent.runners.durable.live import LiveFrames
from agora_agent.runners.durable.settings import DurableConfig
from agora_agent.stores.base import AgentStore
from agora_agent.streaming.frames import (
    AgentFrame,
    ComponentFrame,
    ErrorFrame,
    Frame,
    StreamEvent,
    TextFrame,
    ToolFrame,
)
from agora_agent.streaming.sink import StreamGap, StreamUnavailable

try:
    from dbos import DBOS, DBOSConfig, SetEnqueueOptions, SetWorkflowID, StepOptions
    from dbos._error import DBOSWorkflowCancelledError, DBOSWorkflowConflictIDError
    from dbos._serialization import DBOSPortableJSONSerializer
except ImportError as exc:  # pragma: no cover - exercised by the config test in a venv without the extra
    raise ConfigurationError(
        "durable runs need the `durable` extra: pip install 'agora-agent[durable]' (it brings dbos)",
        code="missing_extra",
    ) from exc

__all__ = ["DurableRunner"]

logger = logging.getLogger("agora_agent.durable")
T = TypeVar("T")
DepsFactory = Callable[[str], LoopDeps]

NESTED_DECLINE_REASON = "nested sub-agent cannot request human approval"
CANCELLED_REASON = "the run was cancelled"
TERMINAL = frozenset({"SUCCESS", "ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"})
NO_DEADLINE_WAIT = 24 * 3600.0  # an approval without a deadline: its row is re-checked once a day
PREEMPTIBLE_PREFIXES = ("llm:", "tool:")  # a cancel interrupts these in flight (notes exp g)
QUEUE = "agora-runs"
QUEUED = ComponentFrame(name="agora.status", data={"status": "queued"})
"""Said once to a subscriber while the run waits in the queue (id 0: not part of the run's journal)."""
QUEUED_AFTER = 1.5  # seconds ENQUEUED before a subscriber is told: a free queue dequeues in ~0.1 s

_active: DurableRunner | None = None


def _runner() -> DurableRunner:
    if _active is None:
        raise ConfigurationError("a durable workflow ran in a process whose DurableRunner is not started")
    return _active


async def _detached(coro: Coroutine[Any, Any, T]) -> T:
    """Run outside any workflow context: a read made from a workflow body would otherwise be checkpointed
    as a step and replayed stale after a recovery."""
    task: asyncio.Task[T] = contextvars.Context().run(asyncio.create_task, coro)
    return await task


def _entry(seq: int, frame: Frame) -> list[Any]:
    """One journal entry: text as a bare string (most entries), anything else tagged."""
    return [seq, frame.delta if isinstance(frame, TextFrame) else encode(frame)]


def _event(entry: list[Any]) -> StreamEvent:
    seq, data = entry
    frame = TextFrame(delta=data) if isinstance(data, str) else decode(data)
    return StreamEvent(int(seq), frame)


def _error_data(exc: Exception) -> dict[str, Any]:
    return {"type": type(exc).__name__, "message": str(exc) or type(exc).__name__}


def _rebuild_error(data: dict[str, Any]) -> Exception:
    """A step failure read back from its checkpoint (replay): our own errors keep their class."""
    message = str(data.get("message", ""))
    if data.get("type") == "QuotaExceededError":
        return QuotaExceededError(message)
    return RunError(message)


@dataclass
class _Execution:
    """One execution of one run's workflow (a recovery is a new execution of the same workflow)."""

    run: RunInput
    names: list[str]  # our steps this workflow had checkpointed when this execution began, in order
    ops: frozenset[int] = frozenset()  # the function ids of every operation recorded by then (DBOS's too)
    nested: bool = False
    calls: int = 0
    seq: int = 0
    pending: list[list[Any]] = field(default_factory=list)  # frames not yet in a checkpoint
    capture: list[list[Any]] | None = None  # frames written inside the step now running
    delegations: int = 0
    rewoken: set[str] = field(default_factory=set)  # approvals this execution re-sent its wake-up for
    handed_over: bool = False  # stopped here: another process owns the run now (see `_stop_handed_over`)

    @property
    def recorded(self) -> int:
        return len(self.names)

    @property
    def replaying(self) -> bool:
        return self.calls < self.recorded


class _Writer:
    """The run's `SinkWriter`: numbers frames, journals them, publishes them live (never while replaying)."""

    def __init__(self, runner: DurableRunner, ex: _Execution) -> None:
        self._runner = runner
        self._ex = ex

    async def write(self, frame: Frame) -> int:
        ex = self._ex
        if ex.nested:
            frame = _forwarded(frame, ex.run.agent_name)
        ex.seq += 1
        if ex.replaying and ex.capture is None:
            return ex.seq  # already in the journal, and its subscribers saw it the first time
        entry = _entry(ex.seq, frame)
        (ex.capture if ex.capture is not None else ex.pending).append(entry)
        if not ex.nested:
            self._runner.publish(ex.run.run_id, StreamEvent(ex.seq, frame))
        return ex.seq

    async def end(self) -> None:
        return None  # the workflow's end ends the stream (see DurableRunner._execute)


def _forwarded(frame: Frame, agent: str) -> Frame:
    """A sub-agent's frame as the parent stream shows it (as inline: text becomes `agent` frames)."""
    if isinstance(frame, TextFrame):
        return AgentFrame(agent=agent, delta=frame.delta)
    if isinstance(frame, ToolFrame) and frame.agent is None:
        return ToolFrame(
            tool_call_id=frame.tool_call_id,
            name=frame.name,
            kind=frame.kind,
            status=frame.status,
            input=frame.input,
            output=frame.output,
            error=frame.error,
            agent=agent,
        )
    return frame


class _Hooks:
    """`LoopHooks` of one workflow execution."""

    def __init__(self, runner: DurableRunner, ex: _Execution) -> None:
        self._runner = runner
        self._ex = ex
        self.writer = _Writer(runner, ex)

    async def step(self, name: str, fn: Callable[[], Awaitable[T]]) -> T:
        ex = self._ex
        ex.calls += 1
        invoked = False
        failure: Exception | None = None

        async def body() -> dict[str, Any]:
            nonlocal invoked, failure
            invoked = True
            ex.capture = []
            try:
                try:
                    result: dict[str, Any] = {"v": encode(await fn())}
                except Exception as exc:  # a failure is checkpointed too, so a replay fails the same way
                    failure = exc
                    result = {"e": _error_data(exc)}
                result["f"] = ex.pending + ex.capture
                return result
            finally:
                ex.capture = None

        options: StepOptions = {"name": name}
        if name.startswith(PREEMPTIBLE_PREFIXES):
            options["preemptible"] = True
        out = await DBOS.run_step_async(options, body)
        if invoked:
            ex.pending = []
        elif out.get("f"):
            ex.seq = max(ex.seq, int(out["f"][-1][0]))
        if "e" in out:
            raise failure if failure is not None else _rebuild_error(out["e"])
        return decode(out.get("v"))  # type: ignore[no-any-return]

    async def effect(self, name: str, fn: Callable[[], Awaitable[object]]) -> None:
        """A write that is safe to run twice and whose result the loop does not need (`loop.effect`).

        No checkpoint of its own — a DBOS step costs two system-database transactions, the write one
        statement. While replaying (a later step of ours is recorded) it committed before that step began:
        skipped. Otherwise it runs, and again after a recovery that resumes before the next step — which
        is why it must be idempotent. A failed write IS checkpointed, under its name, so a replay fails
        the same way instead of taking another path."""
        ex = self._ex
        if ex.replaying:
            if ex.names[ex.calls] == name:  # it failed the first time: replay its recorded failure
                await self.step(name, fn)
            return
        try:
            await fn()
        except Exception as exc:
            failure = exc

            async def fail() -> None:
                raise failure

            await self.step(name, fail)

    async def open_sink(self) -> _Writer:
        return self.writer

    async def tool_attempt(self, tool_call_id: str) -> int:
        """Called inside the tool's step: which attempt this is (steps are at-least-once).

        Only a step that every earlier operation of the workflow was recorded before this execution began
        can have run before — any later one follows an operation this execution did (a step, an approval
        wait that ended here) — so only there is anything read or written: attempt N+1 after N recorded
        ones (the first attempt leaves no record: it costs nothing when all goes well). A recovery that
        resumes right at the tool counts as a re-run even when the kill came just before the tool began:
        at-least-once, never less."""
        ex = self._ex
        step_id = DBOS.step_id
        if not ex.ops or step_id is None or any(i not in ex.ops for i in range(1, step_id)):
            return 1
        run_id = ex.run.run_id
        key = f"attempt:{tool_call_id}"
        previous = await DBOS.get_event_async(run_id, key, timeout_seconds=0)
        attempt = int(previous or 1) + 1
        await DBOS.set_event_async(key, attempt)
        if attempt > 1:
            logger.warning(
                "run %s: tool call %s re-runs (attempt %d) after an interruption", run_id, tool_call_id, attempt
            )
            await self._runner.store.update_tool_call(
                run_id,
                tool_call_id,
                ToolCallPatch(
                    policy_decision=f"allowed; attempt {attempt - 1} was interrupted (unknown_after_crash), "
                    f"re-run as attempt {attempt} with the same idempotency key"
                ),
            )
        return attempt

    async def await_approval(self, pending: PendingApproval) -> ApprovalDecision:
        store = self._runner.store
        run_id, call_id = pending.run_id, pending.tool_call_id
        if self._ex.nested:  # nobody can be asked inside a delegated run (DLG-06)

            async def decline() -> ApprovalRecord:
                record, _ = await store.decide_approval(
                    run_id, call_id, status="rejected", decided_by=None, reason=NESTED_DECLINE_REASON
                )
                return record

            record = await self.step(f"approval:decline:{call_id}", decline)
            return ApprovalDecision(status="rejected", decided_by=record.decided_by, reason=record.reason)

        async def check() -> dict[str, Any]:
            record = await store.get_approval(run_id, call_id)
            if record is None:
                raise NotFoundError(f"approval for tool call {call_id} disappeared")
            if record.status == "pending" and record.deadline is not None and datetime.now(UTC) >= record.deadline:
                record, _ = await store.decide_approval(
                    run_id, call_id, status="expired", decided_by=None, reason="approval expired"
                )
            if record.status != "pending":
                return {"status": record.status, "by": record.decided_by, "reason": record.reason}
            if record.deadline is None:
                return {"wait": NO_DEADLINE_WAIT}
            return {"wait": max((record.deadline - datetime.now(UTC)).total_seconds(), 0.0) + 0.05}

        decision = await self._wait_for_decision(run_id, call_id, check)
        if await self._runner._is_cancelled(run_id):
            # Closed by a cancel (it cancels the workflow, then closes the approval and sends the wake-up):
            # stop here, before the writes that follow, which are no checkpoints and would not notice it.
            raise DBOSWorkflowCancelledError(f"Workflow {run_id} was cancelled while parked")
        return decision

    async def _wait_for_decision(
        self, run_id: str, call_id: str, check: Callable[[], Awaitable[dict[str, Any]]]
    ) -> ApprovalDecision:
        n = 0
        while True:
            # The row is the authority; the message is only a wake-up. Both reads are checkpoints, so a
            # replay takes the same path, and a decision made while no process ran is found on the row.
            state = await self.step(f"approval:check:{call_id}:{n}", check)
            if "status" in state:
                return ApprovalDecision(status=state["status"], decided_by=state["by"], reason=state["reason"])
            if self._ex.recorded and call_id not in self._ex.rewoken:
                # A recovered execution: the decision may have been written by a process that died before
                # sending its wake-up. Sending it again is harmless (same idempotency key: DBOS keeps one).
                self._ex.rewoken.add(call_id)
                await _detached(self._runner.rewake(run_id, call_id))
            # One wait to the deadline: no checkpoint while parked. A wake-up lost with a process that died
            # between deciding and sending is re-sent by this process's sweep of the approvals parked here
            # (`DurableConfig.approval_recheck`, ~30 s); a dropped NOTIFY is caught by DBOS's own re-read of
            # the message table (60 s).
            parked = (run_id, call_id)
            self._runner.parked.add(parked)
            try:
                woken = await DBOS.recv_async(topic=f"approval:{call_id}", timeout_seconds=float(state["wait"]))
            finally:
                self._runner.parked.discard(parked)
            if isinstance(woken, dict) and woken.get("status") in ("approved", "rejected", "expired"):
                return ApprovalDecision(status=woken["status"], decided_by=woken.get("by"), reason=woken.get("reason"))
            n += 1

    async def run_agent(self, agent_name: str, task: str) -> str:
        ex = self._ex
        n = ex.delegations
        ex.delegations += 1
        return await self._runner.run_child(self, ex.run, agent_name, task, n)


class DurableRunner:
    """Runs agent loops as DBOS workflows (one process-wide engine; see the module docstring)."""

    def __init__(
        self,
        *,
        deps_for: DepsFactory,
        store: AgentStore,
        config: DurableConfig,
        store_setting: object,
        debug: bool = False,
        redis: Any = None,
    ) -> None:
        self.deps_for = deps_for
        self.redis = redis  # a RedisTokenSink: frames reach every process, token by token
        self.store = store
        self.config = config
        self.debug = debug
        self.system_database_url = config.resolved_system_database_url(store_setting)
        self.executor_id = config.resolved_executor_id()
        self.live = LiveFrames()
        self.leases: Any = None  # harden's LeaseStore (SQL stores): run owners + process heartbeats
        self.identity: Any = None
        self.lease_ttl = config.failover_after
        self._tasks: dict[str, asyncio.Task[Any]] = {}
        self._executions: dict[str, _Execution] = {}
        self.parked: set[tuple[str, str]] = set()  # (run id, tool call id) waiting for a decision here
        self._sweeper: asyncio.Task[None] | None = None
        self._began: dict[str, asyncio.Event] = {}  # `wait` callers of runs not (yet) executing here
        self._recorded: set[str] = set()  # run rows start_recorded wrote whose workflow has not begun here
        self._workflow: Callable[[dict[str, Any]], Coroutine[Any, Any, dict[str, Any]]] | None = None
        self._launched = False
        self._closing = False

    # -- lifecycle ---------------------------------------------------------------------------------

    async def launch(self) -> None:
        """Start the process-wide DBOS engine on this event loop and recover this executor's runs."""
        global _active
        if _active is not None and _active is not self:
            raise ConfigurationError("only one durable AgentService can run per process (DBOS is a singleton)")
        url = self.system_database_url
        if url.startswith("sqlite"):
            _enable_wal(url)
        _active = self
        self._workflow = _register_workflow(self.config.max_recovery_attempts)
        dbos_config: DBOSConfig = {
            "name": self.config.name,
            "system_database_url": url,
            "executor_id": self.executor_id,
            "application_version": self.config.application_version,
            "notification_listener_polling_interval_sec": self.config.polling_interval,
            "serializer": DBOSPortableJSONSerializer(),
            "log_level": "WARNING",  # notes P16: cancellations and ownership checks log tracebacks
        }
        if self.config.checkpoint_commit == "async" and url.startswith("postgresql"):
            # Only DBOS's own connections: the store's writes stay synchronous (see DurableConfig).
            dbos_config["db_engine_kwargs"] = {"connect_args": {"options": "-c synchronous_commit=off"}}
        DBOS(config=dbos_config)
        try:
            DBOS.launch()  # inside the running loop: recovered workflows run on this loop (notes P6)
        except BaseException:
            DBOS.destroy(destroy_registry=True)
            _active = None
            raise
        self._launched = True
        partitioned = self.config.tenant_concurrency is not None
        await DBOS.register_queue_async(
            QUEUE,
            worker_concurrency=self.config.worker_concurrency,
            partition_concurrency=self.config.tenant_concurrency if partitioned else None,
            polling_interval_sec=max(self.config.polling_interval, 0.05),
            on_conflict="always_update",
        )
        await self._close_exhausted_runs()
        self._sweeper = asyncio.create_task(self._sweep_parked())

    async def ready(self) -> bool:
        """Launched, and the system database answers (readiness)."""
        if not self._launched:
            return False
        try:
            await _detached(DBOS.get_workflow_status_async("readyz-probe"))
        except Exception:
            logger.warning("readiness: the DBOS system database does not answer", exc_info=True)
            return False
        return True

    async def close(self) -> None:
        """Stop the engine. Runs in flight stay PENDING in the system database and resume on restart."""
        global _active
        self._closing = True  # runs stopped by a shutdown stay `running`: the next launch resumes them
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None
        # Handed over, not cancelled: the run goes on in the next launch (DBOS resumes it from its checkpoints),
        # so the loop writes nothing on its way out — above all it releases no budget reservation the resumed
        # step will settle, and marks no interrupted tool `failed` (the same as a lease lost while alive).
        for ex in self._executions.values():
            ex.handed_over = True
        for task in list(self._tasks.values()):
            task.cancel(HANDED_OVER)
        if self._launched:
            DBOS.destroy(destroy_registry=True)
            self._launched = False
        if _active is self:
            _active = None

    async def _close_exhausted_runs(self) -> None:
        """Notes P15: a run that kept crashing its process is parked by DBOS; say so on the run row."""
        stuck = await DBOS.list_workflows_async(status="MAX_RECOVERY_ATTEMPTS_EXCEEDED", name="agora.run")
        for status in stuck:
            message = (
                f"the run was recovered {self.config.max_recovery_attempts} times (crashes or restarts) and stopped "
                "(MAX_RECOVERY_ATTEMPTS_EXCEEDED); see the server log"
            )
            if await self.store.record_run_end(status.workflow_id, status="failed", error=message):
                logger.error("run %s: %s", status.workflow_id, message)

    def publish(self, run_id: str, event: StreamEvent) -> None:
        self.live.publish(run_id, event)
        if self.redis is not None:
            self.redis.publish(run_id, event)

    async def _end_stream(self, run_id: str) -> None:
        self.live.end(run_id)
        if self.redis is not None:
            await self.redis.end_stream(run_id)

    # -- failover ----------------------------------------------------------------------------------

    def attach_leases(self, leases: Any, identity: Any, ttl: float) -> None:
        """Reuse the service's process heartbeat (runners/leases.py) for failover: call `failover` per tick.

        `identity.id` must start with `<executor id>|` (see `owner_identity`): that is how a process tells
        whether the executor a workflow is PENDING on still has a live process."""
        self.leases = leases
        self.identity = identity
        self.lease_ttl = ttl

    def owner_identity(self) -> Any:
        """This process as a lease owner: `<executor id>|<host>:<pid>:<random>` (a fresh one per start)."""
        from agora_agent.stores.leases import ProcessIdentity  # type: ignore[import-not-found,unused-ignore]

        base = ProcessIdentity()
        return ProcessIdentity(host=base.host, pid=base.pid, id=f"{self.executor_id}|{base.id}")

    async def _claim(self, run_id: str) -> None:
        if self.leases is not None and self.identity is not None:
            await self.leases.claim_run(run_id, self.identity.id)

    async def failover(self) -> int:
        """Resume the runs of processes whose heartbeat stopped (OSS DBOS does not, notes P3).

        Called on every lease tick. A run is resumed when its workflow is PENDING on an executor with no
        live process at all (no unexpired heartbeat; a dead pid on this host does not count) — a
        restarted process with the same executor id recovers its own runs, and two executions of one
        run must never overlap. Found through DBOS, not the run row: a run killed after its last step
        has its row ended but its workflow's outcome (and last frames) still to record. The owner row
        is moved by compare-and-set, so one live process wins; the workflow and its PENDING children
        are then resumed from their last checkpoint (`resume_workflow`: any process of this application
        version dequeues them, and that process claims the run). Returns how many runs were resumed.
        """
        if self.leases is None or self.identity is None or not self._launched:
            return 0
        await self._stop_handed_over()
        from agora_agent.stores.leases import pid_alive  # type: ignore[import-not-found,unused-ignore]

        pending = await _detached(
            DBOS.list_workflows_async(
                status="PENDING",
                name="agora.run",
                app_version=self.config.application_version,
                has_parent=False,
                load_input=False,
                load_output=False,
            )
        )
        if not pending:
            return 0
        now = datetime.now(UTC)
        live = {self.executor_id}  # DBOS recovers this executor's own runs at launch
        live.update(
            owner.split("|", 1)[0]
            for owner in await self.leases.live_owners(now=now, host=self.identity.host, alive=pid_alive)
            if "|" in owner
        )
        orphaned = [w for w in pending if w.executor_id not in live and not self.is_active(w.workflow_id)]
        if not orphaned:
            return 0
        owners = await self.leases.owners([w.workflow_id for w in orphaned])
        resumed = 0
        for status in orphaned:
            run_id = status.workflow_id
            owner = owners.get(run_id)
            if owner is not None and owner.split("|", 1)[0] in live:
                continue  # just taken over (or dequeued and claimed) by a live process
            if not await self.leases.take_over(run_id, self.identity.id, owner):
                continue  # another live process won
            logger.warning(
                "run %s: its process (%s, executor %s) stopped; resuming it", run_id, owner or "?", status.executor_id
            )
            await self._resume_tree(run_id, live)
            resumed += 1
        return resumed

    async def _stop_handed_over(self) -> None:
        """Stop here the runs another process owns now — split brain: this process's lease lapsed while it
        was alive (a blocked event loop, a network partition, SIGSTOP) and a live process took its runs
        over. Called on every heartbeat tick, so the overlap lasts at most one tick after this process
        runs again (DBOS also refuses the stale execution's next checkpoint). Locally only: the task is
        cancelled with `HANDED_OVER`, so the loop writes nothing on its way out (no audit row, no release
        of a reservation, no run end, no event) — the new owner goes on from the same rows. Sub-agent
        runs follow their top-level run's owner (their ids are `<run id>-agent-<n>`)."""
        executing = {run_id: ex for run_id, ex in self._executions.items() if not ex.handed_over}
        if not executing:
            return
        roots = {run_id: run_id.split("-agent-", 1)[0] for run_id in executing}
        owners = await self.leases.owners(sorted(set(roots.values())))
        for run_id, ex in executing.items():
            owner = owners.get(roots[run_id])
            task = self._tasks.get(run_id)
            if owner is None or owner == self.identity.id or task is None or task.done():
                continue
            logger.warning(
                "run %s: process %s owns it now (this process's lease lapsed); stopping it here", run_id, owner
            )
            ex.handed_over = True
            task.cancel(HANDED_OVER)

    async def _resume_tree(self, run_id: str, live: set[str]) -> None:
        """Resume a workflow and its children that are PENDING on dead executors (a resumed parent waits
        for its children, which DBOS would otherwise leave PENDING on the dead executor)."""
        children = await _detached(
            DBOS.list_workflows_async(parent_workflow_id=run_id, status="PENDING", load_input=False, load_output=False)
        )
        for child in children:
            if child.executor_id not in live:
                await self._resume_tree(child.workflow_id, live)
        await _detached(DBOS.resume_workflow_async(run_id))

    # -- runs --------------------------------------------------------------------------------------

    async def start(self, run: RunInput) -> str:
        """Enqueue the run's workflow (so approvals can be sent to it at once) and return its id.

        Runs start through the `agora-runs` queue: at most `worker_concurrency` execute in one process
        and, with `tenant_concurrency`, at most that many per tenant across all processes; the others
        wait `queued`. Any process of this application version may dequeue it.
        """
        await self._enqueue({"run": encode(run)}, run)
        return run.run_id

    async def start_recorded(self, run: RunInput, record: RunRecord) -> str:
        """Enqueue the workflow, then write the run row. The workflow carries the row and writes it
        itself when it finds none — the process died between the two writes — so no crash leaves a
        run row without a run, nor a run without its row."""
        await self._enqueue({"run": encode(run), "row": encode(record)}, run)
        try:
            await self.store.record_run_start(record, active_stream=True)
        except ConflictError:
            if await self.store.get_run(run.run_id) is None:
                raise  # not our row (its thread went away)
            # else: dequeued at once (maybe elsewhere) and its workflow wrote the row first
        self._recorded.add(run.run_id)
        return run.run_id

    async def _enqueue(self, payload: dict[str, Any], run: RunInput) -> None:
        assert self._workflow is not None, "DurableRunner.launch() was not called"
        options: dict[str, Any] = {}
        if self.config.tenant_concurrency is not None:
            options["queue_partition_key"] = run.actor.tenant_ref or "-"
        with SetWorkflowID(run.run_id), SetEnqueueOptions(**options):
            await DBOS.enqueue_workflow_async(QUEUE, self._workflow, payload)

    async def _ensure_row(self, run_id: str, row: Any) -> None:
        """The run row exists before the loop's first step (see `start_recorded`)."""
        if run_id in self._recorded:
            self._recorded.discard(run_id)  # written by this process's start_recorded
            return
        if await _detached(self.store.get_run(run_id)) is not None:
            return
        logger.warning("run %s: its process stopped before writing the run row; writing it now", run_id)
        with contextlib.suppress(ConflictError):  # written meanwhile by start_recorded
            await _detached(self.store.record_run_start(decode(row), active_stream=True))

    async def _execute(self, payload: dict[str, Any]) -> dict[str, Any]:
        """The workflow body: one execution of one run (first run, or a replay after a recovery)."""
        run: RunInput = decode(payload["run"])
        nested = bool(payload.get("nested"))
        run_id = run.run_id
        recorded, ops = await self._recorded_steps(run_id)
        if "row" in payload:
            await self._ensure_row(run_id, payload["row"])
        if not nested:  # a first execution here sees every frame from frame 1
            self.live.open(run_id, whole=not recorded)
            await self._claim(run_id)
        ex = _Execution(run=run, names=recorded, ops=ops, nested=nested)
        hooks = _Hooks(self, ex)
        task = asyncio.current_task()
        if task is not None:
            self._tasks[run_id] = task
            self._executions[run_id] = ex
            began = self._began.get(run_id)
            if began is not None:
                began.set()
        status = "completed"
        text = ""
        try:
            try:
                deps = self.deps_for(run.agent_name)
                # A recovery does not emit again what the earlier execution emitted; a stale one, nothing.
                quiet = ReplayAwareTelemetry(deps.telemetry, lambda: ex.replaying or ex.handed_over)
                result = await run_agent_loop(dataclasses.replace(deps, telemetry=quiet), run, hooks)
                text = result.text
            except QuotaExceededError as exc:
                status = "failed"
                await self._fail(hooks, run_id, str(exc), ErrorFrame(message=str(exc), code="quota_exceeded"))
            except Exception as exc:
                status = "failed"
                logger.exception("run %s failed", run_id)
                message = str(exc) or type(exc).__name__
                await self._fail(hooks, run_id, message, ErrorFrame(message=self._public(exc), code=type(exc).__name__))
        except (asyncio.CancelledError, DBOSWorkflowCancelledError, DBOSWorkflowConflictIDError):
            # Cancelled here or in another process (a parked run is woken by the cancel's message and its
            # next checkpoint finds it cancelled — DBOS reports that as a lost ownership), or a shutdown,
            # or handed over (another process owns the run now: nothing is written, its stream is theirs).
            if ex.handed_over:
                if not nested:
                    self.live.end(run_id)
            elif not self._closing:
                if await self._is_cancelled(run_id):
                    with contextlib.suppress(Exception):
                        await self.store.record_run_end(run_id, status="cancelled")
                    if not nested:
                        await self._end_stream(run_id)
                elif not nested:
                    self.live.end(run_id)  # another execution owns the run now: it ends the shared stream
            raise
        finally:
            self._tasks.pop(run_id, None)
            self._executions.pop(run_id, None)
        frames = ex.pending
        if nested:  # the parent copies a child's frames into its own stream, from its journal
            frames = [e for e in await self._journal_entries(run_id) if int(e[0]) <= ex.seq] + ex.pending
        else:
            await self._end_stream(run_id)
        return {"status": status, "text": text, "f": frames}

    async def _is_cancelled(self, run_id: str) -> bool:
        with contextlib.suppress(Exception):
            status = await _detached(DBOS.get_workflow_status_async(run_id))
            return status is not None and status.status == "CANCELLED"
        return False  # the system database does not answer: leave the run row as it is

    async def _fail(self, hooks: _Hooks, run_id: str, message: str, frame: ErrorFrame) -> None:
        await hooks.step(
            "persist:run:failed", lambda: self.store.record_run_end(run_id, status="failed", error=message)
        )
        await hooks.writer.write(frame)

    def _public(self, exc: Exception) -> str:
        """As inline: our own errors are written for people; anything else may carry internals."""
        if self.debug or isinstance(exc, AgoraError):
            return str(exc) or type(exc).__name__
        return "the run failed with an internal error (see the server log)"

    async def run_child(self, hooks: _Hooks, parent: RunInput, agent_name: str, task: str, n: int) -> str:
        """As a child workflow with a deterministic id; its frames join the parent's stream."""
        store = self.store

        async def setup() -> RunInput | str:
            try:
                self.deps_for(agent_name)
            except NotFoundError:
                return f'(no agent named "{agent_name}" is configured)'
            child_id = f"{parent.run_id}-agent-{n}"
            existing = await store.get_run(child_id)  # an earlier attempt of this step committed (a replay)
            if existing is not None:
                thread_id = existing.thread_id
            else:
                thread_id = (
                    await store.create_thread(
                        actor_ref=parent.actor.id, tenant_ref=parent.actor.tenant_ref, persona="default", transient=True
                    )
                ).id
            child = RunInput(
                run_id=child_id,
                thread_id=thread_id,
                actor=parent.actor,
                user_text=task,
                day=parent.day,
                agent_name=agent_name,
                parent_run_id=parent.run_id,
                depth=parent.depth + 1,
            )
            if existing is not None:
                return child
            await store.record_run_start(
                RunRecord(
                    id=child.run_id,
                    thread_id=thread_id,
                    agent_name=agent_name,
                    actor_ref=parent.actor.id,
                    tenant_ref=parent.actor.tenant_ref,
                    started_at=datetime.now(UTC),
                    durable=True,
                    parent_run_id=parent.run_id,
                )
            )
            return child

        child = await hooks.step(f"agent:setup:{n}", setup)
        if isinstance(child, str):
            return child
        assert self._workflow is not None
        with SetWorkflowID(child.run_id):
            handle = await DBOS.start_workflow_async(self._workflow, {"run": encode(child), "nested": True})
        out: dict[str, Any] = await handle.get_result()
        for entry in out.get("f") or []:
            await hooks.writer.write(_event(entry).frame)
        if out.get("status") != "completed":
            raise RunError(f'the "{agent_name}" sub-agent failed')
        return str(out.get("text", ""))

    # -- approvals, cancel -------------------------------------------------------------------------

    async def signal(self, run_id: str, tool_call_id: str, decision: ApprovalDecision | None = None) -> None:
        """Wake the run parked on this tool call, in whichever process it is parked (or later)."""
        if decision is not None:
            await self.store.decide_approval(
                run_id, tool_call_id, status=decision.status, decided_by=decision.decided_by, reason=decision.reason
            )
        await self._wake(run_id, tool_call_id, await self.store.get_approval(run_id, tool_call_id))

    async def _wake(self, run_id: str, tool_call_id: str, record: ApprovalRecord | None) -> None:
        message: dict[str, Any] = {"decided": True}
        if record is not None and record.status != "pending":
            # The decision rides on the wake-up (the row stays the authority: it was decided first, by
            # compare-and-set, and never changes again), so the run needs no step to read it back.
            message.update(status=record.status, by=record.decided_by, reason=record.reason)
        with contextlib.suppress(Exception):  # the row is decided either way; a lost wake-up waits for the deadline
            await DBOS.send_async(
                run_id,
                message,
                topic=f"approval:{tool_call_id}",
                idempotency_key=f"{run_id}:{tool_call_id}:decided",
            )

    async def rewake(self, run_id: str, tool_call_id: str) -> None:
        """Send the wake-up again when the approval is decided (an idempotent repeat of `signal`'s send)."""
        with contextlib.suppress(Exception):
            record = await self.store.get_approval(run_id, tool_call_id)
            if record is not None and record.status != "pending":
                await self._wake(run_id, tool_call_id, record)

    async def _sweep_parked(self) -> None:
        """Every `approval_recheck` seconds (±20 %), re-send the wake-up of the approvals parked in this
        process whose row is decided: the process that decided one may have died before sending it. One
        row read per parked run per sweep, no checkpoint; a lost wake-up costs at most one interval."""
        interval = self.config.approval_recheck
        while True:
            await asyncio.sleep(interval * random.uniform(0.8, 1.2))
            for run_id, call_id in list(self.parked):
                await self.rewake(run_id, call_id)

    async def cancel(self, run_id: str) -> bool:
        """End the run `cancelled`, close its pending approvals (a late decision is a 409), and cancel its
        workflow and its children wherever they execute."""
        changed = await self.store.record_run_end(run_id, status="cancelled")
        # The workflow first: a parked run that finds its approval closed then also finds the workflow
        # cancelled, and stops before its next write (writes between steps are no checkpoints).
        with contextlib.suppress(Exception):
            await DBOS.cancel_workflow_async(run_id, cancel_children=True)
        parked: list[str] = []
        for call in await self.store.list_tool_calls(run_id=run_id):
            if call.status == "pending_approval":
                _, closed = await self.store.decide_approval(
                    run_id, call.id, status="expired", decided_by=None, reason=CANCELLED_REASON
                )
                if closed:
                    parked.append(call.id)
                    await self.store.update_tool_call(
                        run_id, call.id, ToolCallPatch(status="expired", error=CANCELLED_REASON)
                    )
        for call_id in parked:
            # A run parked in another process waits in `recv`, where DBOS does not look at the status:
            # the wake-up makes it look, find the workflow cancelled and end.
            await self.signal(run_id, call_id)
        task = self._tasks.get(run_id)
        if task is not None and not task.done():
            task.cancel()  # do not wait for DBOS's poll to notice: stop the model call or tool now
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(task), 5)
        await self._end_stream(run_id)
        return changed

    async def wait(self, run_id: str, timeout: float | None = None) -> None:
        """Wait until the run's workflow is terminal (in any process)."""

        async def poll() -> None:
            while True:
                task = self._tasks.get(run_id)
                if task is not None:  # executing here: no need to poll for its end
                    await asyncio.wait([task])
                status = await DBOS.get_workflow_status_async(run_id)
                if status is None or status.status in TERMINAL:
                    return
                # Queued, or executing elsewhere: poll, but wake at once when it begins here.
                began = self._began.setdefault(run_id, asyncio.Event())
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(began.wait(), 0.05)
                if began.is_set():
                    self._began.pop(run_id, None)

        await asyncio.wait_for(_detached(poll()), timeout)

    async def queued(self, run_ids: list[str]) -> set[str]:
        """Which of these runs wait in the run queue (over a concurrency limit), in any process."""
        if not run_ids:
            return set()
        waiting = await _detached(
            DBOS.list_workflows_async(workflow_ids=run_ids, status="ENQUEUED", load_input=False, load_output=False)
        )
        return {w.workflow_id for w in waiting}

    def is_active(self, run_id: str) -> bool:
        task = self._tasks.get(run_id)
        return task is not None and not task.done()

    # -- streams -----------------------------------------------------------------------------------

    async def stream(self, run_id: str, *, after: int | None = None) -> AsyncIterator[StreamEvent]:
        """Replay the journal after `after`, then follow live (here) or by polling the journal (elsewhere)."""
        return self._stream(run_id, after or 0)

    async def _stream(self, run_id: str, last: int) -> AsyncIterator[StreamEvent]:
        queued_since = 0.0
        said_queued = False
        while True:
            if self.live.is_whole(run_id):  # started here: every frame is in this process
                async for event in self.live.subscribe(run_id, after=last):
                    yield event
                return
            if self.redis is not None:
                try:
                    if await self.redis.has_stream(run_id):
                        async for event in self.redis.subscribe(run_id, after=last):
                            last = event.id
                            yield event
                        return
                except StreamGap:
                    pass  # trimmed: the journal below has every frame, then Redis again
                except StreamUnavailable:
                    logger.warning("run %s: Redis unavailable, streaming from the journal", run_id)
            status, entries = await self._journal(run_id)
            for entry in entries:
                if int(entry[0]) > last:
                    event = _event(entry)
                    last = event.id
                    yield event
            if status in TERMINAL or status is None:
                return
            if status == "ENQUEUED":
                now = time.monotonic()
                queued_since = queued_since or now
                if not said_queued and now - queued_since >= QUEUED_AFTER:  # waiting for capacity: say so once
                    said_queued = True
                    yield StreamEvent(0, QUEUED)
            if self.live.holds(run_id):  # executing here (since a recovery, or just dequeued)
                async for event in self.live.subscribe(run_id, after=last):
                    yield event
                return
            await self.live.wait_opened(run_id, max(self.config.polling_interval, 0.1) * 3)

    async def _journal(self, run_id: str) -> tuple[str | None, list[list[Any]]]:
        """(workflow status, entries): the frames checkpointed so far, in order. Status first: once it
        is terminal every step is recorded, so the read that follows is complete."""
        status = await _detached(DBOS.get_workflow_status_async(run_id))
        if status is None:
            return None, []
        entries = await self._journal_entries(run_id) if status.status != "ENQUEUED" else []
        if status.status == "SUCCESS" and isinstance(status.output, dict):
            entries.extend(status.output.get("f") or [])
        seen: set[int] = set()
        unique = []
        for entry in sorted(entries, key=lambda e: int(e[0])):
            if int(entry[0]) not in seen:
                seen.add(int(entry[0]))
                unique.append(entry)
        return status.status, unique

    async def _journal_entries(self, run_id: str) -> list[list[Any]]:
        steps = await _detached(DBOS.list_workflow_steps_async(run_id))
        entries: list[list[Any]] = []
        for step in steps:
            output: Any = step.get("output")
            if _is_ours(output, step.get("child_workflow_id")):
                entries.extend(output["f"])
        return entries

    async def _recorded_steps(self, run_id: str) -> tuple[list[str], frozenset[int]]:
        """(our recorded steps' names in order, the function ids of all recorded operations)."""
        steps = await _detached(DBOS.list_workflow_steps_async(run_id))
        ours = [str(s["function_name"]) for s in steps if _is_ours(s.get("output"), s.get("child_workflow_id"))]
        return ours, frozenset(int(s["function_id"]) for s in steps)


def _is_ours(output: Any, child_workflow_id: str | None) -> bool:
    """One of the loop's steps (DBOS's own recv/sleep/child steps are not)."""
    return isinstance(output, dict) and "f" in output and child_workflow_id is None


def _register_workflow(max_recovery_attempts: int) -> Callable[[dict[str, Any]], Coroutine[Any, Any, dict[str, Any]]]:
    """Register the one workflow function (DBOS's registry is process-global and rebuilt per launch)."""

    async def agora_run(payload: dict[str, Any]) -> dict[str, Any]:
        return await _runner()._execute(payload)

    wrapped: Callable[[dict[str, Any]], Coroutine[Any, Any, dict[str, Any]]] = DBOS.workflow(
        name="agora.run", max_recovery_attempts=max_recovery_attempts
    )(agora_run)
    return wrapped


def _enable_wal(url: str) -> None:
    """Notes P4: DBOS opens SQLite with the rollback journal; WAL is persistent once set on the file."""
    path = url.split("///", 1)[1] if "///" in url else ""
    if not path or path.startswith(":memory:"):
        return
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
    finally:
        conn.close()


def new_run_id() -> str:
    """A run id (== its workflow id)."""
    return uuid.uuid4().hex
