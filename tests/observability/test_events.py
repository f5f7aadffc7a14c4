"""Typed lifecycle events (`AgentConfig(on_event=…)`): each kind fires once with its fields; handlers are isolated."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from typing import Any

import pytest
from pydantic import BaseModel

from agora_agent import ActionTool, Actor, AgentConfig, AgentDefinition, AgentService, Budget, QuotaExceededError, tool
from agora_agent.errors import ModelError
from agora_agent.governance.gate import Caller
from agora_agent.messages import ModelRequest
from agora_agent.observability import (
    AgentEvent,
    ApprovalDecided,
    ApprovalExpired,
    ApprovalRequested,
    Delegated,
    QuotaExceeded,
    RunCancelled,
    RunFailed,
    RunFinished,
    RunStarted,
    ToolCallStatusChanged,
)
from agora_agent.testing import FakeModel, ScriptedTurn, ToolCallRequest, collect_frames, wait_for_tool_status
from agora_agent.testing.helpers import OBSERVER
from agora_agent.tools.context import ToolContext

ALICE = Actor("alice", roles=("support",), tenant_ref="acme")
ADMIN = Actor("root", roles=("admin",))


@tool
async def lookup(order_id: int) -> dict[str, Any]:
    """Look up an order."""
    return {"order_id": order_id, "status": "shipped"}


class RefundInput(BaseModel):
    order_id: int


class Refund(ActionTool):
    """Refund an order."""

    name = "refund"
    description = "Refund an order."
    Input = RefundInput
    roles = ("support",)

    async def execute(self, input: RefundInput, ctx: ToolContext) -> dict[str, Any]:
        return {"refunded": input.order_id}


class QuickRefund(Refund):
    """Refund that must be decided within a few milliseconds."""

    name = "quick_refund"
    approval_ttl = timedelta(milliseconds=50)


def script(request: ModelRequest, i: int) -> ScriptedTurn:
    if request.system == "You answer billing questions.":
        return ScriptedTurn(text="billing says hi")
    last = request.messages[-1]
    if last.role == "user":
        text = last.content
        if text == "full":
            return ScriptedTurn(
                tool_calls=[
                    ToolCallRequest(name="lookup", input={"order_id": 1}, id="c-read"),
                    ToolCallRequest(name="refund", input={"order_id": 1}, id="c-act"),
                    ToolCallRequest(name="ask_billing", input={"task": "explain"}, id="c-dlg"),
                ]
            )
        if text == "reject":
            return ScriptedTurn(tool_calls=[ToolCallRequest(name="refund", input={"order_id": 2}, id="c-rej")])
        if text == "expire":
            return ScriptedTurn(tool_calls=[ToolCallRequest(name="quick_refund", input={"order_id": 3}, id="c-exp")])
        if text == "boom":
            raise ModelError("provider down")
        if text == "slow":
            return ScriptedTurn(tool_calls=[ToolCallRequest(name="refund", input={"order_id": 4}, id="c-slow")])
    return ScriptedTurn(text="done")


@pytest.fixture
async def make() -> AsyncIterator[Callable[..., Any]]:
    made: list[AgentService] = []

    async def factory(on_event: Any, **kwargs: Any) -> AgentService:
        config = AgentConfig(
            model=FakeModel(script),
            tools=[lookup, Refund, QuickRefund],
            default_agent=AgentDefinition(delegates_to=("billing",)),
            agents=[AgentDefinition(name="billing", system_prompt="You answer billing questions.")],
            on_event=on_event,
            governance_authorize=lambda actor, request: "admin" in actor.roles,
            **kwargs,
        )
        service = AgentService.from_config(config)
        await service.start()
        made.append(service)
        return service

    yield factory
    for s in made:
        await s.close()


def of(events: list[AgentEvent], kind: type[AgentEvent]) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


async def test_each_kind_fires_once_with_its_fields(make: Any) -> None:
    events: list[AgentEvent] = []
    service = await make(events.append)
    started = await service.chat(ALICE, "full")
    await wait_for_tool_status(service, started.run_id)
    await service.approve(Caller(ADMIN, grant=True), started.run_id, "c-act")
    await collect_frames(service, started.run_id)
    run = await service.wait_for_run(OBSERVER, started.run_id)
    assert run.status == "completed"

    runs = of(events, RunStarted)
    parent = next(e for e in runs if e.run_id == started.run_id)
    child = next(e for e in runs if e.run_id != started.run_id)
    assert (parent.thread_id, parent.actor_id, parent.tenant_ref, parent.agent) == (
        started.thread_id,
        "alice",
        "acme",
        "default",
    )
    assert (child.agent, child.parent_run_id) == ("billing", started.run_id)
    assert len(runs) == 2

    finished = of(events, RunFinished)
    assert sorted(e.agent for e in finished) == ["billing", "default"]
    top = next(e for e in finished if e.run_id == started.run_id)
    assert (top.steps, top.input_tokens, top.output_tokens) == (run.step_count, run.input_tokens, run.output_tokens)
    assert top.duration_ms >= 0

    statuses = [(e.tool_call_id, e.status) for e in of(events, ToolCallStatusChanged)]
    assert statuses == [
        ("c-read", "started"),
        ("c-read", "executed"),
        ("c-act", "pending_approval"),
        ("c-act", "approved"),
        ("c-act", "executed"),
        ("c-dlg", "started"),
        ("c-dlg", "executed"),
    ]
    kinds = {e.tool_call_id: e.tool_kind for e in of(events, ToolCallStatusChanged)}
    assert kinds == {"c-read": "read", "c-act": "action", "c-dlg": "agent"}

    [requested] = of(events, ApprovalRequested)
    assert (requested.tool_call_id, requested.tool_name, requested.requested_by) == ("c-act", "refund", "alice")
    [decided] = of(events, ApprovalDecided)
    assert (decided.decision, decided.decided_by, decided.tool_name) == ("approved", "root", "refund")
    assert decided.wait_ms >= 0
    [delegated] = of(events, Delegated)
    assert (delegated.agent, delegated.to_agent, delegated.tool_call_id, delegated.task_length) == (
        "default",
        "billing",
        "c-dlg",
        len("explain"),
    )
    assert of(events, RunFailed) == of(events, RunCancelled) == of(events, ApprovalExpired) == []
    # events carry no content: no field holds the task, the tool's output or the reply
    assert all("explain" not in repr(e) and "billing says hi" not in repr(e) for e in events)


async def test_rejected_expired_failed_cancelled_and_quota(make: Any) -> None:
    events: list[AgentEvent] = []

    async def handler(event: AgentEvent) -> None:  # a coroutine handler is awaited
        await asyncio.sleep(0)
        events.append(event)

    service = await make(handler)
    rejected = await service.chat(ALICE, "reject")
    await wait_for_tool_status(service, rejected.run_id)
    await service.reject(ALICE, rejected.run_id, "c-rej", reason="not this one")
    await service.wait_for_run(OBSERVER, rejected.run_id)
    [decided] = of(events, ApprovalDecided)
    assert (decided.decision, decided.decided_by, decided.reason) == ("rejected", "alice", "not this one")

    expired = await service.chat(ALICE, "expire")
    await service.wait_for_run(OBSERVER, expired.run_id)
    [gone] = of(events, ApprovalExpired)
    assert (gone.run_id, gone.tool_call_id, gone.tool_name) == (expired.run_id, "c-exp", "quick_refund")

    failed = await service.chat(ALICE, "boom")
    await service.wait_for_run(OBSERVER, failed.run_id)
    [fail] = of(events, RunFailed)
    assert (fail.run_id, fail.error_type, fail.error) == (failed.run_id, "ModelError", "provider down")

    slow = await service.chat(ALICE, "slow")
    await wait_for_tool_status(service, slow.run_id)
    assert await service.cancel(OBSERVER, slow.run_id)
    [cancelled] = of(events, RunCancelled)
    assert (cancelled.run_id, cancelled.actor_id) == (slow.run_id, "alice")


async def test_quota_exceeded_fires_when_a_budget_refuses_a_chat(make: Any) -> None:
    events: list[AgentEvent] = []
    service = await make(events.append, budget=Budget(tokens_per_actor=0))
    with pytest.raises(QuotaExceededError):
        await service.chat(ALICE, "hello")
    [refused] = of(events, QuotaExceeded)
    assert (refused.run_id, refused.actor_id, refused.tenant_ref, refused.scope, refused.key) == (
        None,
        "alice",
        "acme",
        "actor",
        "alice",
    )
    assert "budget" in refused.message
    assert of(events, RunStarted) == []


async def test_a_raising_handler_does_not_break_the_run(make: Any, caplog: pytest.LogCaptureFixture) -> None:
    calls: list[str] = []

    def bad(event: AgentEvent) -> None:
        calls.append(event.kind)
        raise RuntimeError("handler bug")

    service = await make(bad)
    started = await service.chat(ALICE, "hello")
    with caplog.at_level(logging.INFO, logger="agora_agent.events"):
        frames = await collect_frames(service, started.run_id)
        run = await service.wait_for_run(OBSERVER, started.run_id)
    assert frames.text == "done" and run.status == "completed"
    assert calls == ["run.started", "run.finished"]
    assert "on_event handler raised for run.finished" in caplog.text


async def test_events_are_logged_with_ids_as_extra_fields(make: Any, caplog: pytest.LogCaptureFixture) -> None:
    service = await make(None)
    with caplog.at_level(logging.INFO, logger="agora_agent.events"):
        started = await service.chat(ALICE, "hello")
        await service.wait_for_run(OBSERVER, started.run_id)
    records = [r for r in caplog.records if r.name == "agora_agent.events"]
    assert [r.agora_event for r in records] == ["run.started", "run.finished"]  # type: ignore[attr-defined]
    for r in records:
        assert (r.run_id, r.thread_id, r.actor_id) == (  # type: ignore[attr-defined]
            started.run_id,
            started.thread_id,
            "alice",
        )
