"""The first model call's reservation rides on the thread's read (`load:thread`) where the store can take it there
(`append_load_and_reserve`, the SQL stores): `quota:reserve:0` hands it on, it is taken once, and a durable replay
of a run recorded before the fold (`load:thread` checkpointed as two values) takes it itself."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

from agora_agent import Actor, AgentDefinition, Budget, DefaultRolesPolicy
from agora_agent.governance.quota import MemoryQuotaStore, Reservation
from agora_agent.loop import ApprovalDecision, LoopDeps, PendingApproval, RunInput, run_agent_loop
from agora_agent.loop.history import load_history
from agora_agent.messages import Usage
from agora_agent.records import RunRecord, ThreadHistory
from agora_agent.stores.base import NewMessage, QuotaReserve
from agora_agent.stores.memory import MemoryAgentStore
from agora_agent.streaming.frames import Frame
from agora_agent.testing import FakeModel, ScriptedTurn, sequence_script
from agora_agent.tools.registry import ToolRegistry

T = TypeVar("T")
DAY = "2026-12-01"


class FoldingStore(MemoryAgentStore):
    """The memory store with the SQL stores' fold: the message, the history and the reservation in one call."""

    def __init__(self) -> None:
        super().__init__()
        self.folded = 0

    async def append_load_and_reserve(
        self, message: NewMessage, reserve: QuotaReserve, *, after: str | None = None
    ) -> tuple[ThreadHistory, Reservation | None]:
        self.folded += 1
        return await self.append_and_load(message, after=after), await reserve.take()


class Sink:
    async def write(self, frame: Frame) -> int:
        return 0

    async def end(self) -> None:
        return None


class Hooks:
    """Inline hooks; `recorded` maps a step name to the value a durable replay hands back without running it."""

    def __init__(self, recorded: dict[str, Any] | None = None) -> None:
        self.recorded = recorded or {}
        self.results: dict[str, Any] = {}

    async def step(self, name: str, fn: Callable[[], Awaitable[T]]) -> T:
        result: T = self.recorded[name] if name in self.recorded else await fn()
        self.results[name] = result
        return result

    async def await_approval(self, pending: PendingApproval) -> ApprovalDecision:
        return ApprovalDecision(status="approved", decided_by="alice")

    async def open_sink(self) -> Sink:
        return Sink()

    async def run_agent(self, agent_name: str, task: str) -> str:
        return task


async def run(store: MemoryAgentStore, hooks: Hooks, thread_id: str) -> MemoryQuotaStore:
    quota = MemoryQuotaStore(Budget(tokens_per_actor=10**6, reserve_tokens=500))
    deps = LoopDeps(
        model=FakeModel(sequence_script(ScriptedTurn(text="done", usage=Usage(input_tokens=30, output_tokens=12)))),
        store=store,
        registry=ToolRegistry(),
        policy=DefaultRolesPolicy(),
        agent=AgentDefinition(),
        quota=quota,
    )
    await store.record_run_start(
        RunRecord(id="run-1", thread_id=thread_id, actor_ref="alice", started_at=datetime.now(UTC))
    )
    await run_agent_loop(
        deps, RunInput(run_id="run-1", thread_id=thread_id, actor=Actor("alice"), user_text="go", day=DAY), hooks
    )
    return quota


async def test_the_reservation_granted_with_the_read_is_the_first_model_calls_and_is_taken_once() -> None:
    store = FoldingStore()
    thread = await store.create_thread(actor_ref="alice")
    hooks = Hooks()
    quota = await run(store, hooks, thread.id)
    assert store.folded == 1
    assert hooks.results["quota:reserve:0"] is hooks.results["load:thread"][2]  # handed on, not taken again
    usage = await quota.usage(Actor("alice"), DAY)
    assert (usage.used_tokens, usage.reserved_tokens) == (42, 0)  # settled by the step, nothing left held


async def test_a_replay_of_a_run_recorded_before_the_fold_takes_the_reservation_itself() -> None:
    store = FoldingStore()
    thread = await store.create_thread(actor_ref="alice")
    user = NewMessage(thread_id=thread.id, role="user", content="go", run_id="run-1")
    title, history, _ = await load_history(store, thread.id, append=user)  # what the older version checkpointed
    hooks = Hooks(recorded={"load:thread": [title, history]})
    quota = await run(store, hooks, thread.id)
    assert store.folded == 0
    reservation = hooks.results["quota:reserve:0"]
    assert isinstance(reservation, Reservation) and reservation.id == "run-1:0"
    usage = await quota.usage(Actor("alice"), DAY)
    assert (usage.used_tokens, usage.reserved_tokens) == (42, 0)
