"""The governed loop end to end through AgentService on the memory store (issue 2 checks)."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from typing import Any

import pytest
from pydantic import BaseModel

from agora_agent import (
    ActionTool,
    Actor,
    AgentConfig,
    AgentDefinition,
    AgentService,
    Budget,
    ConflictError,
    Delegation,
    ForbiddenError,
    InvalidRequestError,
    ModelPrice,
    NotFoundError,
    Persona,
    PromptContext,
    QuotaExceededError,
    ToolContext,
    TransientRetry,
    tool,
)
from agora_agent.governance.gate import Caller
from agora_agent.messages import ModelRequest, Usage
from agora_agent.streaming.frames import ToolFrame
from agora_agent.streaming.sink import MemoryTokenSink, SinkWriter
from agora_agent.testing import (
    FakeModel,
    ScriptedTurn,
    ToolCallRequest,
    collect_frames,
    echo_script,
    sequence_script,
    wait_for_tool_status,
)
from agora_agent.testing.helpers import OBSERVER

ALICE = Actor("alice", roles=("support",), tenant_ref="acme")
BOB = Actor("bob", roles=("member",), tenant_ref="acme")
ADMIN = Actor("root", roles=("admin",))


@tool
async def lookup_order(order_id: int, ctx: ToolContext) -> dict[str, Any]:
    """Look up an order by id."""
    return {"order_id": order_id, "status": "shipped", "actor": ctx.actor.id}


class RefundInput(BaseModel):
    order_id: int
    amount: float


class RefundOrder(ActionTool):
    """Refund an order (writes)."""

    name = "refund_order"
    description = "Refund an order."
    Input = RefundInput
    roles = ("support", "admin")
    executed: list[tuple[int, str | None]] = []

    async def execute(self, input: RefundInput, ctx: ToolContext) -> dict[str, Any]:
        RefundOrder.executed.append((input.order_id, ctx.idempotency_key))
        return {"refunded": input.order_id, "amount": input.amount}


def calls_then_text(*calls: ToolCallRequest, text: str = "done") -> Callable[[ModelRequest, int], ScriptedTurn]:
    return sequence_script(ScriptedTurn(text="working ", tool_calls=calls), ScriptedTurn(text=text))


async def make_service(script: Any, **kwargs: Any) -> AgentService:
    tools = kwargs.pop("tools", [lookup_order, RefundOrder])
    config = AgentConfig(model=FakeModel(script), tools=tools, **kwargs)
    service = AgentService.from_config(config)
    await service.start()
    return service


@pytest.fixture(autouse=True)
def _reset_refunds() -> None:
    RefundOrder.executed = []


@pytest.fixture
async def svc_factory() -> AsyncIterator[Callable[..., Any]]:
    made: list[AgentService] = []

    async def factory(script: Any, **kwargs: Any) -> AgentService:
        service = await make_service(script, **kwargs)
        made.append(service)
        return service

    yield factory
    for s in made:
        await s.close()


@pytest.mark.ref("ARCH-LOOP-04", "ARCH-LOOP-12", "ARCH-LOOP-15", "ARCH-LOOP-16", "SINK-02", "ARCH-16", "QUOTA-01")
@pytest.mark.ref("PERS-03", "TEST-01", "TEST-02", "TEST-03", "HTTP-02", "STORE-21")
async def test_plain_turn_streams_persists_and_titles(svc_factory: Any) -> None:
    service = await svc_factory(echo_script("Hello there, friend"))
    started = await service.chat(ALICE, "  Where is my parcel?\nIt is late. ")
    frames = await collect_frames(service, started.run_id)
    assert frames.text == "Hello there, friend"
    assert len([f for f in frames.frames if f.type == "text"]) == 3  # streamed as word chunks
    run = await service.wait_for_run(OBSERVER, started.run_id)
    assert (run.status, run.step_count, run.actor_ref, run.tenant_ref) == ("completed", 1, "alice", "acme")
    detail = await service.get_thread(OBSERVER, started.thread_id)
    assert detail is not None
    assert [m.role for m in detail.messages] == ["user", "assistant"]
    assert detail.thread.title == "Where is my parcel? It is late."
    assert detail.thread.active_stream_id == started.run_id
    assert (await service.quota_today(ALICE)).used_tokens == run.input_tokens + run.output_tokens > 0
    model: FakeModel = service.model  # type: ignore[assignment]
    assert model.requests[0].system == "You are a helpful assistant."


@pytest.mark.ref("TOOL-30", "ARCH-LOOP-14", "STORE-G1", "TOOL-34", "GAP-01", "TOOL-35")
async def test_read_tool_result_is_persisted_audited_and_replayed(svc_factory: Any) -> None:
    model_script = calls_then_text(ToolCallRequest(name="lookup_order", input={"order_id": 7}), text="It shipped.")
    service = await svc_factory(model_script)
    started = await service.chat(ALICE, "status of 7?")
    frames = await collect_frames(service, started.run_id)
    assert frames.text == "working It shipped."
    assert frames.statuses("call-0-lookup_order") == ["started", "executed"]
    calls = await service.store.list_tool_calls(run_id=started.run_id)
    assert len(calls) == 1
    row = calls[0]
    assert (row.status, row.tool_type, row.actor_ref, row.tenant_ref) == ("executed", "read", "alice", "acme")
    assert row.output == {"order_id": 7, "status": "shipped", "actor": "alice"}
    assert row.idempotency_key == f"{started.run_id}:call-0-lookup_order"
    assert row.execution_ms is not None and row.executed_at is not None

    # A second turn on the same thread replays the persisted result to the model.
    model: FakeModel = service.model  # type: ignore[assignment]
    second = await service.chat(ALICE, "thanks", thread_id=started.thread_id)
    await service.wait_for_run(OBSERVER, second.run_id)
    replayed = [r for m in model.requests[-1].messages for r in m.tool_results]
    assert [json.loads(r.content)["status"] for r in replayed] == ["shipped"]


@pytest.mark.ref("TOOL-26", "TOOL-29", "TOOL-32", "POL-01", "TOOL-33", "GAP-03", "TOOL-21")
async def test_forbidden_and_unknown_tools_fail_and_run_goes_on(svc_factory: Any) -> None:
    model_script = calls_then_text(
        ToolCallRequest(name="refund_order", input={"order_id": 1, "amount": 5}),
        ToolCallRequest(name="no_such_tool", input={}),
    )
    service = await svc_factory(model_script)
    started = await service.chat(BOB, "refund it")  # bob is a member: refund_order needs support/admin
    frames = await collect_frames(service, started.run_id)
    model: FakeModel = service.model  # type: ignore[assignment]
    assert [t.name for t in model.requests[0].tools] == ["lookup_order"]  # not offered either
    assert frames.statuses("call-0-refund_order") == ["failed"]  # never parked (DESIGN §3)
    assert "not allowed" in (frames.tools[0].error or "")
    assert frames.statuses("call-0-no_such_tool") == ["failed"]
    assert await service.store.get_approval(started.run_id, "call-0-refund_order") is None
    assert (await service.wait_for_run(OBSERVER, started.run_id)).status == "completed"
    assert RefundOrder.executed == []


@pytest.mark.ref("TOOL-31", "LATER-06", "GAP-02", "GAP-04")
async def test_approve_executes_once_with_decider_recorded(svc_factory: Any) -> None:
    service = await svc_factory(
        calls_then_text(ToolCallRequest(name="refund_order", input={"order_id": 1001, "amount": 12.5}))
    )
    started = await service.chat(ALICE, "refund order 1001")
    pending = await wait_for_tool_status(service, started.run_id)
    assert pending.input == {"order_id": 1001, "amount": 12.5}
    record = await service.approve(ALICE, started.run_id, pending.tool_call_id)
    assert (record.status, record.decided_by) == ("approved", "alice")
    frames = await collect_frames(service, started.run_id)
    assert frames.statuses(pending.tool_call_id) == ["pending_approval", "approved", "executed"]
    assert RefundOrder.executed == [(1001, f"{started.run_id}:{pending.tool_call_id}")]
    row = await service.store.get_tool_call(started.run_id, pending.tool_call_id)
    assert row is not None and (row.status, row.decided_by, row.executed_by_ref) == ("executed", "alice", "alice")
    with pytest.raises(ConflictError) as conflict:
        await service.approve(ALICE, started.run_id, pending.tool_call_id)
    assert conflict.value.detail["status"] == "approved"
    with pytest.raises(ConflictError):
        await service.reject(ALICE, started.run_id, pending.tool_call_id)


@pytest.mark.ref("TOOL-31")
async def test_reject_feeds_reason_to_model(svc_factory: Any) -> None:
    service = await svc_factory(
        calls_then_text(ToolCallRequest(name="refund_order", input={"order_id": 3, "amount": 1}))
    )
    started = await service.chat(ALICE, "refund 3")
    pending = await wait_for_tool_status(service, started.run_id)
    await service.reject(ALICE, started.run_id, pending.tool_call_id, reason="customer changed their mind")
    await service.wait_for_run(OBSERVER, started.run_id)
    model: FakeModel = service.model  # type: ignore[assignment]
    result = model.requests[-1].messages[-1].tool_results[0]
    assert result.is_error and json.loads(result.content) == {"rejected": True, "reason": "customer changed their mind"}
    row = await service.store.get_tool_call(started.run_id, pending.tool_call_id)
    assert row is not None and (row.status, row.error) == ("rejected", "customer changed their mind")
    assert RefundOrder.executed == []


async def test_approval_expires_after_ttl(svc_factory: Any) -> None:
    @tool(kind="action", roles=["support"], approval_ttl=timedelta(milliseconds=50))
    async def wipe_cache(region: str) -> str:
        """Wipe a cache region."""
        raise AssertionError("must not run")

    service = await svc_factory(
        calls_then_text(ToolCallRequest(name="wipe_cache", input={"region": "eu"})), tools=[wipe_cache]
    )
    started = await service.chat(ALICE, "wipe eu")
    frames = await collect_frames(service, started.run_id)
    assert frames.statuses("call-0-wipe_cache") == ["pending_approval", "expired"]
    approval = await service.store.get_approval(started.run_id, "call-0-wipe_cache")
    assert approval is not None and approval.status == "expired"
    with pytest.raises(ConflictError):
        await service.approve(ALICE, started.run_id, "call-0-wipe_cache")


class _ApproveOnPendingSink(MemoryTokenSink):
    """Decides the approval row the moment its `pending_approval` frame is written — before the loop parks."""

    def __init__(self) -> None:
        super().__init__()
        self.service: AgentService | None = None

    async def open(self, run_id: str) -> SinkWriter:
        inner = await super().open(run_id)
        outer = self

        class Writer:
            async def write(self, frame: Any) -> int:
                event_id = await inner.write(frame)
                if isinstance(frame, ToolFrame) and frame.status == "pending_approval" and outer.service:
                    # Straight to the store: no runner signal, so only the row can carry the decision.
                    await outer.service.store.decide_approval(
                        run_id, frame.tool_call_id, status="approved", decided_by="alice"
                    )
                return event_id

            async def end(self) -> None:
                await inner.end()

        return Writer()


@pytest.mark.ref("GAP-02")
async def test_decision_before_park_is_kept(svc_factory: Any) -> None:
    sink = _ApproveOnPendingSink()
    service = await svc_factory(
        calls_then_text(ToolCallRequest(name="refund_order", input={"order_id": 9, "amount": 2})), sink=sink
    )
    sink.service = service
    started = await service.chat(ALICE, "refund 9")
    run = await service.wait_for_run(OBSERVER, started.run_id, timeout=5)
    assert run.status == "completed"
    assert RefundOrder.executed == [(9, f"{started.run_id}:call-0-refund_order")]


async def test_approver_roles_and_privilege(svc_factory: Any) -> None:
    @tool(kind="action", roles=["support"], approver_roles=["manager"])
    async def issue_credit(amount: float) -> str:
        """Issue store credit."""
        return f"credited {amount}"

    service = await svc_factory(
        calls_then_text(ToolCallRequest(name="issue_credit", input={"amount": 50})), tools=[issue_credit]
    )
    started = await service.chat(ALICE, "credit 50")
    pending = await wait_for_tool_status(service, started.run_id)
    with pytest.raises(ForbiddenError) as no_role:
        await service.approve(ALICE, started.run_id, pending.tool_call_id)  # four eyes: requester lacks the role
    assert no_role.value.code == "approver_role" and "manager" in str(no_role.value)
    manager = Actor("mgr", roles=("manager",))
    with pytest.raises(ForbiddenError):
        await service.approve(manager, started.run_id, pending.tool_call_id)  # not privileged
    with pytest.raises(NotFoundError):
        await service.approve(Caller(manager, grant=True), started.run_id, "call-9-nope")
    record = await service.approve(Caller(manager, grant=True), started.run_id, pending.tool_call_id)
    assert record.decided_by == "mgr"
    assert (await service.wait_for_run(OBSERVER, started.run_id)).status == "completed"
    row = await service.store.get_tool_call(started.run_id, pending.tool_call_id)
    assert row is not None and (row.status, row.decided_by) == ("executed", "mgr")


@pytest.mark.ref("RETRY-01", "RETRY-02", "RETRY-03", "RETRY-05", "RETRY-06", "LATER-07", "TOOL-13")
async def test_transient_failure_retried_with_the_same_idempotency_key(
    svc_factory: Any, caplog: pytest.LogCaptureFixture
) -> None:
    keys: list[str | None] = []

    @tool
    async def flaky_write(ctx: ToolContext) -> str:
        """Writes something, and hits a lock the first time."""
        keys.append(ctx.idempotency_key)
        if len(keys) == 1:
            raise sqlite3.OperationalError("database is locked")
        return "written"

    service = await svc_factory(
        calls_then_text(ToolCallRequest(name="flaky_write")),
        tools=[flaky_write],
        tool_transient_retry=TransientRetry(attempts=2, backoff_ms=1),
    )
    with caplog.at_level("WARNING", logger="agora_agent.loop"):
        started = await service.chat(ALICE, "write")
        await service.wait_for_run(OBSERVER, started.run_id)
    assert keys == [f"{started.run_id}:call-0-flaky_write"] * 2
    assert [r.getMessage() for r in caplog.records if "tool.retry" in r.getMessage()] == [
        f"tool.retry run={started.run_id} tool=flaky_write call=call-0-flaky_write attempt=1: database is locked"
    ]
    row = await service.store.get_tool_call(started.run_id, "call-0-flaky_write")
    assert row is not None and (row.status, row.output) == ("executed", "written")


@pytest.mark.ref("RETRY-07")
async def test_non_transient_failure_is_not_retried(svc_factory: Any) -> None:
    attempts: list[int] = []

    @tool
    def explode() -> str:
        """Always fails."""
        attempts.append(1)
        raise ValueError("order 1001 does not exist")

    service = await svc_factory(calls_then_text(ToolCallRequest(name="explode")), tools=[explode])
    started = await service.chat(ALICE, "go")
    frames = await collect_frames(service, started.run_id)
    assert attempts == [1]
    assert frames.statuses("call-0-explode") == ["started", "failed"]
    assert "order 1001 does not exist" in (frames.tools[-1].error or "")
    assert (await service.wait_for_run(OBSERVER, started.run_id)).status == "completed"


@pytest.mark.ref("TOOL-23", "QUOTA-04", "GAP-10", "QUOTA-07")
async def test_budget_reservation_bounds_overshoot_under_50_concurrent_runs(svc_factory: Any) -> None:
    per_turn = Usage(input_tokens=40, output_tokens=20)  # 60 tokens per model call
    budget = Budget(tokens_per_actor=1000, reserve_tokens=100)
    service = await svc_factory(lambda req, i: ScriptedTurn(text="ok", usage=per_turn), budget=budget, tools=[])

    async def one() -> str:
        try:
            started = await service.chat(ALICE, "hi")
        except QuotaExceededError:
            return "refused"
        return (await service.wait_for_run(OBSERVER, started.run_id)).status

    outcomes = await asyncio.gather(*(one() for _ in range(50)))
    used = (await service.quota_today(ALICE)).used_tokens
    assert used <= 1000 + budget.reserve_tokens  # overshoot ≤ one reservation
    assert outcomes.count("completed") * 60 == used  # no lost ledger rows
    assert "refused" in outcomes or "failed" in outcomes  # the edge was really reached
    with pytest.raises(QuotaExceededError) as refused:
        await service.chat(ALICE, "one more")  # 429 at chat start
    assert (refused.value.detail["scope"], refused.value.detail["limit_tokens"]) == ("actor", 1000)
    assert "token budget of 1,000" in str(refused.value)  # the figure a user reads in the 429
    assert (await service.quota_today(BOB)).used_tokens == 0


async def test_over_budget_mid_run_fails_with_error_frame(svc_factory: Any) -> None:
    budget = Budget(tokens_per_actor=100, reserve_tokens=10)
    heavy = Usage(input_tokens=90, output_tokens=30)
    service = await svc_factory(
        calls_then_text(ToolCallRequest(name="lookup_order", input={"order_id": 1})),
        budget=budget,
    )
    model: FakeModel = service.model  # type: ignore[assignment]
    model._script = lambda req, i: ScriptedTurn(
        text="x", tool_calls=[ToolCallRequest(name="lookup_order", input={"order_id": 1})], usage=heavy
    )
    started = await service.chat(ALICE, "go")
    frames = await collect_frames(service, started.run_id)
    assert frames.errors and frames.errors[0].code == "quota_exceeded"
    run = await service.wait_for_run(OBSERVER, started.run_id)
    assert run.status == "failed" and "budget" in (run.error or "")


@pytest.mark.ref("DLG-04", "DLG-05", "DLG-06", "GAP-09", "AGENT-03", "DLG-02", "DLG-03", "AGENT-01")
async def test_delegation_runs_sub_agent_and_forwards_its_text(svc_factory: Any) -> None:
    def script(request: ModelRequest, i: int) -> ScriptedTurn:
        if request.system.startswith("You analyse"):
            return ScriptedTurn(text="Sales are up 12%.")
        if i == 0:
            return ScriptedTurn(tool_calls=[ToolCallRequest(name="ask_analyst", input={"task": "sales trend?"})])
        return ScriptedTurn(text="The analyst says sales are up.")

    analyst = AgentDefinition(name="analyst", system_prompt="You analyse sales.")
    service = await svc_factory(
        script, default_agent=AgentDefinition(delegates_to=("analyst",)), agents=[analyst], tools=[]
    )
    started = await service.chat(ALICE, "how are sales?")
    frames = await collect_frames(service, started.run_id)
    assert frames.agent_text == "Sales are up 12%."
    assert frames.statuses("call-0-ask_analyst") == ["started", "executed"]
    assert frames.text == "The analyst says sales are up."
    row = await service.store.get_tool_call(started.run_id, "call-0-ask_analyst")
    assert row is not None and row.output == {"text": "Sales are up 12%."}
    subs = [r for r in await service.store.list_runs_by_status("completed") if r.parent_run_id == started.run_id]
    assert len(subs) == 1 and subs[0].agent_name == "analyst"
    assert [t.thread.id for t in await service.list_threads(ALICE)] == [started.thread_id]  # sub-thread is transient
    model: FakeModel = service.model  # type: ignore[assignment]
    analyst_request = next(r for r in model.requests if r.system.startswith("You analyse"))
    assert "ask_analyst" not in [t.name for t in analyst_request.tools]  # no foreign delegation tools


@pytest.mark.ref("DLG-04", "DLG-01")
async def test_denied_delegation_is_recorded_failed_and_run_continues(svc_factory: Any) -> None:
    script = calls_then_text(ToolCallRequest(name="ask_analyst", input={"task": "x"}), text="fine, myself")
    service = await svc_factory(
        script,
        default_agent=AgentDefinition(delegates_to=(Delegation(agent="analyst", roles=("analysts",)),)),
        agents=[AgentDefinition(name="analyst")],
        tools=[],
    )
    started = await service.chat(ALICE, "go")
    frames = await collect_frames(service, started.run_id)
    assert frames.statuses("call-0-ask_analyst") == ["failed"]
    assert frames.agent_text == ""
    assert frames.text.endswith("fine, myself")


@pytest.mark.ref("DLG-06")
async def test_nested_action_is_auto_declined(svc_factory: Any) -> None:
    def script(request: ModelRequest, i: int) -> ScriptedTurn:
        if request.system == "Refunds specialist.":
            if i == 0:
                return ScriptedTurn(
                    tool_calls=[ToolCallRequest(name="refund_order", input={"order_id": 5, "amount": 1})]
                )
            return ScriptedTurn(text="could not refund")
        if i == 0:
            return ScriptedTurn(tool_calls=[ToolCallRequest(name="ask_refunds", input={"task": "refund 5"})])
        return ScriptedTurn(text="ok")

    service = await svc_factory(
        script,
        default_agent=AgentDefinition(delegates_to=("refunds",)),
        agents=[AgentDefinition(name="refunds", system_prompt="Refunds specialist.")],
    )
    started = await service.chat(ALICE, "refund 5 via specialist")
    frames = await collect_frames(service, started.run_id)
    nested = [f for f in frames.tools if f.agent == "refunds"]
    assert [f.status for f in nested] == ["pending_approval", "rejected"]
    assert nested[-1].error == "nested sub-agent cannot request human approval"
    assert RefundOrder.executed == []
    assert (await service.wait_for_run(OBSERVER, started.run_id)).status == "completed"


@pytest.mark.ref("PERS-01", "PERS-02", "ARCH-LOOP-01", "TOOL-28", "PERS-04")
async def test_persona_wraps_agent_prompt_and_narrows_tools(svc_factory: Any) -> None:
    def pirate(ctx: PromptContext) -> str:
        return f"[pirate for {ctx.actor.id}] {ctx.base_prompt}"

    agent = AgentDefinition(
        system_prompt="You help shoppers.",
        personas=(
            Persona(id="default", label="Default"),
            Persona(id="pirate", label="Pirate", system_prompt=pirate, allowed_tools=("lookup_order",)),
        ),
    )
    service = await svc_factory(echo_script("arr"), default_agent=agent)
    started = await service.chat(ALICE, "hi", persona="pirate")
    await service.wait_for_run(OBSERVER, started.run_id)
    model: FakeModel = service.model  # type: ignore[assignment]
    assert model.requests[0].system == "[pirate for alice] You help shoppers."
    assert [t.name for t in model.requests[0].tools] == ["lookup_order"]
    assert [p.id for p in service.persona_catalog()] == ["default", "pirate"]
    with pytest.raises(InvalidRequestError) as unknown:
        await service.chat(ALICE, "hi", persona="ninja")
    assert unknown.value.code == "unknown_persona" and '"ninja"' in str(unknown.value)


@pytest.mark.ref("GAP-06", "AGENT-02")
async def test_chat_input_validation(svc_factory: Any) -> None:
    service = await svc_factory(echo_script())
    with pytest.raises(InvalidRequestError):
        await service.chat(ALICE, "   ")
    with pytest.raises(NotFoundError) as no_agent:
        await service.chat(ALICE, "hi", agent="ghost")
    assert no_agent.value.code == "unknown_agent"
    with pytest.raises(NotFoundError) as no_thread:
        await service.chat(ALICE, "hi", thread_id="nope")
    assert no_thread.value.code == "not_found"
    with pytest.raises(NotFoundError):
        await service.subscribe(OBSERVER, "no-such-run")


@pytest.mark.ref("CANCEL-01", "GAP-05")
async def test_cancel_mid_tool_really_cancels(svc_factory: Any) -> None:
    entered = asyncio.Event()
    cancelled = asyncio.Event()

    @tool
    async def slow_report() -> str:
        """A report that takes forever."""
        entered.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    service = await svc_factory(calls_then_text(ToolCallRequest(name="slow_report")), tools=[slow_report])
    started = await service.chat(ALICE, "report")
    await asyncio.wait_for(entered.wait(), 5)
    assert await service.cancel(OBSERVER, started.run_id) is True
    assert cancelled.is_set()
    frames = await collect_frames(service, started.run_id)  # the stream has ended
    assert frames.statuses("call-0-slow_report") == ["started"]
    run = await service.wait_for_run(OBSERVER, started.run_id)
    assert run.status == "cancelled"
    row = await service.store.get_tool_call(started.run_id, "call-0-slow_report")
    assert row is not None and row.status == "failed"
    assert await service.cancel(OBSERVER, started.run_id) is False  # first terminal state wins


@pytest.mark.ref("ARCH-LOOP-18", "AGENT-04", "GAP-07", "CFG-17")
async def test_max_steps_per_agent_ends_run_quietly(svc_factory: Any) -> None:
    forever = lambda req, i: ScriptedTurn(  # noqa: E731
        text=f"step{i} ", tool_calls=[ToolCallRequest(name="lookup_order", input={"order_id": i})]
    )
    service = await svc_factory(forever, default_agent=AgentDefinition(max_steps=3))
    started = await service.chat(ALICE, "loop")
    run = await service.wait_for_run(OBSERVER, started.run_id)
    assert (run.status, run.step_count) == ("completed", 3)


@pytest.mark.ref("COST-01", "COST-02", "COST-05", "ARCH-LOOP-10")
async def test_cost_estimated_from_prices_or_reported(svc_factory: Any) -> None:
    usage = Usage(input_tokens=1_000_000, output_tokens=500_000)
    turns = sequence_script(
        ScriptedTurn(text="a", usage=usage, tool_calls=[ToolCallRequest(name="lookup_order", input={"order_id": 1})]),
        ScriptedTurn(text="b", usage=usage, cost_usd=0.25, model_id="gateway-model"),
    )
    service = await svc_factory(turns)
    assert service.pricing is not None
    await service.pricing.upsert_price(ModelPrice(model_id="fake-model", input_price_per_1m=3, output_price_per_1m=15))
    started = await service.chat(ALICE, "price it")
    run = await service.wait_for_run(OBSERVER, started.run_id)
    assert run.cost_usd == pytest.approx(10.5 + 0.25)
    ledger = await service.store.list_messages(started.thread_id)
    assert [m.usage["cost_usd"] for m in ledger if m.usage] == [pytest.approx(10.5), 0.25]


@pytest.mark.ref("UI-01", "SSE-07")
async def test_components_in_order_and_resume_after_event_id(svc_factory: Any) -> None:
    @tool
    async def sales_chart(ctx: ToolContext) -> str:
        """Chart sales."""
        await ctx.emit_component("Chart", {"points": [1, 2, 3]})
        return "charted"

    service = await svc_factory(calls_then_text(ToolCallRequest(name="sales_chart"), text="Here."), tools=[sales_chart])
    started = await service.chat(ALICE, "chart")
    frames = await collect_frames(service, started.run_id)
    kinds = [f.type for f in frames.frames]
    assert kinds.index("component") > kinds.index("tool")
    assert frames.components[0].data == {"points": [1, 2, 3]}
    ids = [e.id for e in frames.events]
    assert ids == list(range(1, len(ids) + 1))
    tail = await collect_frames(service, started.run_id, after=ids[2])
    assert [e.id for e in tail.events] == ids[3:]
    assert [e.id async for e in await service.subscribe(OBSERVER, started.run_id, after=ids[-2])] == ids[-1:]
    with pytest.raises(NotFoundError):
        await service.subscribe(OBSERVER, "nope")
