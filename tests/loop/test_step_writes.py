"""Where a tool call's rows are written: its start with the assistant step that asked for it, its result with
the next model call's budget reservation — and every `tool` frame streamed after the row it reports (issue #18).

The loop runs on the memory store with hooks that can stop a step before it runs (a cancel, a hand-over).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import TypeVar

import pytest

from agora_agent import Actor, AgentDefinition, Budget, DefaultRolesPolicy, QuotaExceededError, tool
from agora_agent.governance.quota import MemoryQuotaStore
from agora_agent.loop import ApprovalDecision, LoopDeps, PendingApproval, RunInput, run_agent_loop
from agora_agent.loop.interface import HANDED_OVER
from agora_agent.messages import Usage
from agora_agent.records import RunRecord
from agora_agent.stores.memory import MemoryAgentStore
from agora_agent.streaming.frames import Frame, ToolFrame
from agora_agent.testing import FakeModel, ScriptedTurn, ToolCallRequest, sequence_script
from agora_agent.tools.registry import ToolRegistry

T = TypeVar("T")


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def fail(a: int) -> int:
    """Always fails."""
    raise ValueError("no")


class Writer:
    """A sink writer that notes, for each `tool` frame, the status of the row it reports at that moment."""

    def __init__(self, store: MemoryAgentStore) -> None:
        self.store = store
        self.seen: list[tuple[str, str, str | None]] = []  # (call id, frame status, row status)

    async def write(self, frame: Frame) -> int:
        if isinstance(frame, ToolFrame):
            row = await self.store.get_tool_call("run-1", frame.tool_call_id)
            self.seen.append((frame.tool_call_id, frame.status, None if row is None else row.status))
        return len(self.seen)

    async def end(self) -> None:
        return None


class Hooks:
    """Inline hooks; `stop` raises `stop_with` at the start of the step of that name, before its body runs."""

    def __init__(self, writer: Writer, stop: str | None = None, stop_with: BaseException | None = None) -> None:
        self.writer, self.stop, self.stop_with = writer, stop, stop_with
        self.steps: list[str] = []

    async def step(self, name: str, fn: Callable[[], Awaitable[T]]) -> T:
        self.steps.append(name)
        if name == self.stop and self.stop_with is not None:
            raise self.stop_with
        return await fn()

    async def await_approval(self, pending: PendingApproval) -> ApprovalDecision:
        return ApprovalDecision(status="approved", decided_by="alice")

    async def open_sink(self) -> Writer:
        return self.writer

    async def run_agent(self, agent_name: str, task: str) -> str:
        return task


async def run(
    *turns: ScriptedTurn, budget: Budget | None = None, stop: str | None = None, stop_with: BaseException | None = None
) -> tuple[MemoryAgentStore, Hooks, BaseException | None]:
    store = MemoryAgentStore()
    registry = ToolRegistry()
    registry.register(add)
    registry.register(fail)
    deps = LoopDeps(
        model=FakeModel(sequence_script(*turns)),
        store=store,
        registry=registry,
        policy=DefaultRolesPolicy(),
        agent=AgentDefinition(),
        quota=MemoryQuotaStore(budget or Budget(tokens_per_actor=10**6)),
    )
    thread = await store.create_thread(actor_ref="alice")
    await store.record_run_start(
        RunRecord(id="run-1", thread_id=thread.id, actor_ref="alice", started_at=datetime.now(UTC))
    )
    hooks = Hooks(Writer(store), stop, stop_with)
    run_input = RunInput(run_id="run-1", thread_id=thread.id, actor=Actor("alice"), user_text="go", day="2026-12-01")
    try:
        await run_agent_loop(deps, run_input, hooks)
    except BaseException as exc:  # the test looks at what the loop let through
        return store, hooks, exc
    return store, hooks, None


def adds(*pairs: tuple[int, int]) -> ScriptedTurn:
    return ScriptedTurn(tool_calls=[ToolCallRequest("add", {"a": a, "b": b}, id=f"c{a}") for a, b in pairs])


async def test_every_tool_frame_follows_its_row() -> None:
    store, hooks, error = await run(
        adds((1, 2)),
        adds((3, 4), (5, 6)),
        ScriptedTurn(tool_calls=[ToolCallRequest("fail", {"a": 1}, id="f")]),
        ScriptedTurn(text="done"),
    )
    assert error is None
    assert [(call, frame) for call, frame, _ in hooks.writer.seen] == [
        ("c1", "started"),
        ("c1", "executed"),
        ("c3", "started"),
        ("c3", "executed"),
        ("c5", "started"),
        ("c5", "executed"),
        ("f", "started"),
        ("f", "failed"),
    ]
    assert all(frame == row for _, frame, row in hooks.writer.seen), hooks.writer.seen
    assert [c.status for c in await store.list_tool_calls(run_id="run-1")] == ["executed"] * 3 + ["failed"]
    # The step names keep their places (a recorded durable run replays): the folded writes are no-ops there.
    assert hooks.steps[hooks.steps.index("llm:0") :] == [
        "llm:0",
        "persist:assistant:0",
        "persist:toolcall:c1",
        "tool:c1",
        "persist:toolexec:c1",
        "quota:reserve:1",
        "llm:1",
        "persist:assistant:1",
        "persist:toolcall:c3",
        "tool:c3",
        "persist:toolexec:c3",
        "persist:toolcall:c5",
        "tool:c5",
        "persist:toolexec:c5",
        "quota:reserve:2",
        "llm:2",
        "persist:assistant:2",
        "persist:toolcall:f",
        "tool:f",
        "persist:toolfail:f",
        "quota:reserve:3",
        "llm:3",
        "persist:assistant:3",
        "persist:run:end",
    ]


async def test_a_refused_reservation_leaves_the_tool_result_written_and_streamed() -> None:
    heavy = Usage(input_tokens=150, output_tokens=50)  # the first step spends the whole budget
    _, hooks, error = await run(
        ScriptedTurn(tool_calls=[ToolCallRequest("add", {"a": 1, "b": 2}, id="c1")], usage=heavy),
        ScriptedTurn(text="never"),
        budget=Budget(tokens_per_actor=100, reserve_tokens=10),
    )
    assert isinstance(error, QuotaExceededError)
    assert hooks.writer.seen == [("c1", "started", "started"), ("c1", "executed", "executed")]


@pytest.mark.parametrize("handed", [False, True], ids=["cancelled", "handed over"])
async def test_a_run_stopped_before_the_next_reservation_still_writes_the_result(handed: bool) -> None:
    """Stopped before `quota:reserve:1` ran: the result is written on its own (and streamed) — unless another
    process runs the run now, whose replay writes it."""
    stop = asyncio.CancelledError(HANDED_OVER) if handed else asyncio.CancelledError()
    store, hooks, error = await run(adds((1, 2)), ScriptedTurn(text="done"), stop="quota:reserve:1", stop_with=stop)
    assert isinstance(error, asyncio.CancelledError)
    row = await store.get_tool_call("run-1", "c1")
    assert row is not None
    if handed:
        assert row.status == "started" and hooks.writer.seen == [("c1", "started", "started")]
    else:
        assert (row.status, row.output) == ("executed", 3)
        assert hooks.writer.seen == [("c1", "started", "started"), ("c1", "executed", "executed")]


async def test_without_a_budget_the_result_is_written_at_once() -> None:
    store = MemoryAgentStore()
    registry = ToolRegistry()
    registry.register(add)
    deps = LoopDeps(
        model=FakeModel(sequence_script(adds((1, 2)), ScriptedTurn(text="done"))),
        store=store,
        registry=registry,
        policy=DefaultRolesPolicy(),
        agent=AgentDefinition(),
    )
    thread = await store.create_thread(actor_ref="alice")
    await store.record_run_start(
        RunRecord(id="run-1", thread_id=thread.id, actor_ref="alice", started_at=datetime.now(UTC))
    )
    hooks = Hooks(Writer(store))
    run_input = RunInput(run_id="run-1", thread_id=thread.id, actor=Actor("alice"), user_text="go", day="2026-12-01")
    await run_agent_loop(deps, run_input, hooks)
    assert hooks.writer.seen == [("c1", "started", "started"), ("c1", "executed", "executed")]
