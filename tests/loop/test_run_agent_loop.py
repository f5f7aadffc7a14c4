"""`run_agent_loop` driven directly with recording hooks: every side effect is a named step (TEST-12)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import TypeVar

import pytest

from agora_agent import Actor, AgentDefinition, Budget, DefaultRolesPolicy, ModelPrice, tool
from agora_agent.governance.pricing import MemoryPricingStore
from agora_agent.governance.quota import MemoryQuotaStore
from agora_agent.loop import ApprovalDecision, LoopDeps, PendingApproval, RunInput, run_agent_loop
from agora_agent.records import RunRecord
from agora_agent.stores.memory import MemoryAgentStore
from agora_agent.streaming.frames import StreamEvent
from agora_agent.streaming.sink import MemoryTokenSink, SinkWriter
from agora_agent.testing import FakeModel, ScriptedTurn, ToolCallRequest, sequence_script
from agora_agent.tools.registry import ToolRegistry

T = TypeVar("T")


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(kind="action")
def send_invoice(customer: str) -> str:
    """Email an invoice."""
    return f"sent to {customer}"


class RecordingHooks:
    """Inline-style hooks that record each step name and answer approvals from a fixed decision."""

    def __init__(self, sink: MemoryTokenSink, run_id: str, decision: ApprovalDecision) -> None:
        self.steps: list[str] = []
        self.approvals: list[PendingApproval] = []
        self._sink, self._run_id, self._decision = sink, run_id, decision
        self._writer: SinkWriter | None = None

    async def step(self, name: str, fn: Callable[[], Awaitable[T]]) -> T:
        self.steps.append(name)
        return await fn()

    async def await_approval(self, pending: PendingApproval) -> ApprovalDecision:
        self.approvals.append(pending)
        return self._decision

    async def open_sink(self) -> SinkWriter:
        if self._writer is None:
            self._writer = await self._sink.open(self._run_id)
        return self._writer

    async def run_agent(self, agent_name: str, task: str) -> str:
        return f"{agent_name} did {task}"


async def run_once(decision: ApprovalDecision) -> tuple[RecordingHooks, MemoryAgentStore, list[StreamEvent]]:
    store = MemoryAgentStore()
    registry = ToolRegistry()
    registry.register(add)
    registry.register(send_invoice)
    script = sequence_script(
        ScriptedTurn(text="adding ", tool_calls=[ToolCallRequest("add", {"a": 2, "b": 3})]),
        ScriptedTurn(text="invoicing ", tool_calls=[ToolCallRequest("send_invoice", {"customer": "acme"})]),
        ScriptedTurn(text="all done"),
    )
    pricing = MemoryPricingStore([ModelPrice(model_id="fake-model", input_price_per_1m=1, output_price_per_1m=2)])
    deps = LoopDeps(
        model=FakeModel(script),
        store=store,
        registry=registry,
        policy=DefaultRolesPolicy(),
        agent=AgentDefinition(),
        quota=MemoryQuotaStore(Budget(tokens_per_actor=10_000)),
        pricing=pricing,
    )
    actor = Actor("alice")
    thread = await store.create_thread(actor_ref=actor.id)
    await store.record_run_start(
        RunRecord(id="run-1", thread_id=thread.id, actor_ref=actor.id, started_at=datetime.now(UTC))
    )
    sink = MemoryTokenSink()
    hooks = RecordingHooks(sink, "run-1", decision)
    run = RunInput(run_id="run-1", thread_id=thread.id, actor=actor, user_text="bill acme 5", day="2026-11-30")
    result = await run_agent_loop(deps, run, hooks)
    assert result.text == "all done" and result.steps == 3
    writer = await hooks.open_sink()
    await writer.end()  # the runner ends the sink, not the loop (ARCH-LOOP-17)
    events = [e async for e in sink.subscribe("run-1")]
    return hooks, store, events


@pytest.mark.ref("TEST-12", "ARCH-12", "DUR-04", "ARCH-LOOP-02", "ARCH-LOOP-03", "ARCH-LOOP-05", "ARCH-LOOP-06")
@pytest.mark.ref("ARCH-LOOP-08", "ARCH-LOOP-09", "ARCH-LOOP-11", "ARCH-LOOP-17", "COST-06", "QUOTA-05", "QUOTA-06")
async def test_every_side_effect_is_a_named_step_in_order() -> None:
    hooks, store, _ = await run_once(ApprovalDecision(status="approved", decided_by="alice"))
    assert hooks.steps == [
        "quota:check",
        "persist:user",
        "load:thread",
        "pricing:list",
        "quota:reserve:0",
        "llm:0",
        "persist:assistant:0",  # quota settle + message + usage row: one store transaction
        "persist:toolcall:call-0-add",
        "tool:call-0-add",
        "persist:toolexec:call-0-add",
        "quota:reserve:1",
        "llm:1",
        "persist:assistant:1",  # quota settle + message + usage row: one store transaction
        "persist:toolcall:call-1-send_invoice",
        "persist:toolstart:call-1-send_invoice",  # approved: `started` before the side effect
        "tool:call-1-send_invoice",
        "persist:toolexec:call-1-send_invoice",
        "quota:reserve:2",
        "llm:2",
        "persist:assistant:2",  # quota settle + message + usage row: one store transaction
        "persist:run:end",  # with the derived title of a new thread, in the same transaction
    ]
    assert [p.tool_call_id for p in hooks.approvals] == ["call-1-send_invoice"]
    run = await store.get_run("run-1")
    assert run is not None and (run.status, run.step_count) == ("completed", 3)
    assert run.cost_usd is not None and run.cost_usd > 0  # estimated from the price list fetched once


@pytest.mark.ref("ARCH-15", "TOOL-31", "ARCH-14")
async def test_rejection_by_hooks_is_persisted_and_streamed() -> None:
    hooks, store, events = await run_once(ApprovalDecision(status="rejected", decided_by="bob", reason="no"))
    assert "persist:toolreject:call-1-send_invoice" in hooks.steps
    assert "tool:call-1-send_invoice" not in hooks.steps
    row = await store.get_tool_call("run-1", "call-1-send_invoice")
    assert row is not None and (row.status, row.error, row.decided_by) == ("rejected", "no", "bob")
    statuses = [(e.frame.name, e.frame.status) for e in events if e.frame.type == "tool"]  # type: ignore[union-attr]
    assert statuses == [
        ("add", "started"),
        ("add", "executed"),
        ("send_invoice", "pending_approval"),
        ("send_invoice", "rejected"),
    ]


def test_step_ids_are_uuid5_of_the_run_and_step() -> None:
    """Stored message ids are uuid5(namespace, "<run>/<step>"): a durable replay, and rows written before,
    must keep finding them however the id is computed."""
    import uuid

    from agora_agent.loop.turn import _STEP_IDS, step_id

    names = ["", "a", "x" * 300, "é✓/assistant/0", *(f"{uuid.uuid4().hex}/assistant/{i}" for i in range(200))]
    for name in names:
        assert step_id(name) == str(uuid.uuid5(_STEP_IDS, name))
