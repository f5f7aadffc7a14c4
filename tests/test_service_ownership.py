"""A Python caller of `AgentService` gets the protection an HTTP caller gets: every id-addressed method
decides found / not found / forbidden itself, and nothing changes when it refuses."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from agora_agent import Actor, AgentConfig, AgentService, Caller, ForbiddenError, NotFoundError, tool
from agora_agent.testing import FakeModel, ScriptedTurn, ToolCallRequest, sequence_script, wait_for_tool_status

ALICE = Actor("alice", ("support",), "acme")
BOB = Actor("bob", ("support",), "acme")
ROOT = Actor("root", ("admin",))


@tool(kind="action", roles=["support"])
def refund(order_id: int) -> str:
    """Refund an order."""
    return f"refunded {order_id}"


Ids = dict[str, str]


@pytest.fixture
async def world() -> AsyncIterator[tuple[AgentService, Ids]]:
    """Alice's thread with a run parked on a refund approval."""
    script = sequence_script(
        ScriptedTurn(tool_calls=[ToolCallRequest("refund", {"order_id": 1})]), ScriptedTurn(text="done")
    )
    config = AgentConfig(
        model=FakeModel(script),
        tools=[refund],
        governance_authorize=lambda actor, request: "admin" in actor.roles,
    )
    async with AgentService.from_config(config) as service:
        started = await service.chat(ALICE, "refund order 1")
        pending = await wait_for_tool_status(service, started.run_id, caller=ALICE)
        message = (await service.store.list_messages(started.thread_id))[0].id
        yield (
            service,
            {"run": started.run_id, "thread": started.thread_id, "call": pending.tool_call_id, "msg": message},
        )


async def _wait(service: AgentService, who: Actor | Caller, run_id: str) -> None:
    with contextlib.suppress(TimeoutError):  # allowed, and the run is still parked
        await service.wait_for_run(who, run_id, timeout=0.01)


async def _drain(service: AgentService, who: Actor | Caller, run_id: str) -> None:
    events = await service.subscribe(who, run_id)
    await events.aclose()  # type: ignore[attr-defined]


Operation = Callable[[AgentService, Actor | Caller, Ids], Awaitable[Any]]

OPERATIONS: dict[str, Operation] = {
    "get_thread": lambda s, who, ids: s.get_thread(who, ids["thread"]),
    "thread_record": lambda s, who, ids: s.thread_record(who, ids["thread"]),
    "rename_thread": lambda s, who, ids: s.rename_thread(who, ids["thread"], "mine now"),
    "fork_thread": lambda s, who, ids: s.fork_thread(who, ids["thread"], ids["msg"]),
    "chat_in_thread": lambda s, who, ids: s.chat(who, "hijack", thread_id=ids["thread"]),
    "subscribe": lambda s, who, ids: _drain(s, who, ids["run"]),
    "get_run": lambda s, who, ids: s.get_run(who, ids["run"]),
    "wait_for_run": lambda s, who, ids: _wait(s, who, ids["run"]),
    "reject": lambda s, who, ids: s.reject(who, ids["run"], ids["call"], reason="no"),
    "approve": lambda s, who, ids: s.approve(who, ids["run"], ids["call"]),
    "cancel": lambda s, who, ids: s.cancel(who, ids["run"]),
    "delete_thread": lambda s, who, ids: s.delete_thread(who, ids["thread"]),
}


async def _state(service: AgentService, ids: Ids) -> Any:
    thread = await service.store.get_thread(ids["thread"])
    approval = await service.store.get_approval(ids["run"], ids["call"])
    run = await service.store.get_run(ids["run"])
    return (
        thread and (thread.title, thread.deleted_at),
        len(await service.store.list_messages(ids["thread"])),
        approval and approval.status,
        run and run.status,
        [t.thread.id for t in await service.store.list_threads("bob")],
    )


@pytest.mark.parametrize("name", list(OPERATIONS))
async def test_another_actor_is_refused_and_nothing_changes(world: tuple[AgentService, Ids], name: str) -> None:
    service, ids = world
    before = await _state(service, ids)
    with pytest.raises(ForbiddenError):
        await OPERATIONS[name](service, BOB, ids)
    # an admin by role but with an explicit empty grant is just another actor
    with pytest.raises(ForbiddenError):
        await OPERATIONS[name](service, Caller(ROOT, grant=False), ids)
    assert await _state(service, ids) == before


@pytest.mark.parametrize("name", list(OPERATIONS))
async def test_unknown_ids_are_not_found_for_everyone(world: tuple[AgentService, Ids], name: str) -> None:
    service, ids = world
    unknown = {k: "zz-" + v for k, v in ids.items()}
    for who in (BOB, ALICE, ROOT):
        with pytest.raises(NotFoundError):
            await OPERATIONS[name](service, who, unknown)


@pytest.mark.parametrize("who", [ALICE, ROOT], ids=["owner", "global-admin"])
@pytest.mark.parametrize("name", list(OPERATIONS))
async def test_the_owner_and_a_global_admin_may(world: tuple[AgentService, Ids], name: str, who: Actor) -> None:
    service, ids = world  # ROOT: the configured governance_authorize admits "admin"
    await OPERATIONS[name](service, who, ids)


async def test_pending_approvals_are_the_callers_own_unless_granted(world: tuple[AgentService, Ids]) -> None:
    service, ids = world
    assert [a.run_id for a in await service.pending_approvals(ALICE)] == [ids["run"]]
    assert await service.pending_approvals(BOB) == []
    with pytest.raises(ForbiddenError):
        await service.pending_approvals(BOB, actor_ref="alice")
    assert [a.run_id for a in await service.pending_approvals(ROOT)] == [ids["run"]]
    assert [a.run_id for a in await service.pending_approvals(ROOT, actor_ref="alice")] == [ids["run"]]


async def test_the_requester_approves_their_own_call(world: tuple[AgentService, Ids]) -> None:
    service, ids = world
    record = await service.approve(ALICE, ids["run"], ids["call"])
    assert (record.status, record.decided_by) == ("approved", "alice")
    assert (await service.wait_for_run(ALICE, ids["run"])).status == "completed"


async def test_the_gate_is_asked_once_per_caller_and_never_for_the_owner() -> None:
    asked: list[str] = []

    def authorize(actor: Actor, request: Any) -> bool:
        asked.append(actor.id)
        return "admin" in actor.roles

    config = AgentConfig(model=FakeModel(lambda request, turn: ScriptedTurn(text="hi")), governance_authorize=authorize)
    async with AgentService.from_config(config) as service:
        started = await service.chat(ALICE, "hello")
        await service.wait_for_run(ALICE, started.run_id)
        await service.get_thread(ALICE, started.thread_id)
        assert asked == []
        root = Caller(ROOT)
        await service.get_thread(root, started.thread_id)
        await service.get_run(root, started.run_id)
        assert asked == ["root"]


async def test_waiting_on_what_chat_returned_checks_its_run_without_reading_it_first() -> None:
    script = sequence_script(
        ScriptedTurn(tool_calls=[ToolCallRequest("refund", {"order_id": 1})]), ScriptedTurn(text="done")
    )
    config = AgentConfig(model=FakeModel(script), tools=[refund])
    async with AgentService.from_config(config) as service:
        started = await service.chat(ALICE, "refund order 1")
        pending = await wait_for_tool_status(service, started.run_id, caller=ALICE)
        reads: list[str] = []
        get_run = service.store.get_run

        async def counted(run_id: str) -> Any:
            reads.append(run_id)
            return await get_run(run_id)

        service.store.get_run = counted  # type: ignore[method-assign]
        with pytest.raises(ForbiddenError):  # refused at once, not after the parked run's 30 s
            await service.wait_for_run(BOB, started)
        assert reads == []
        with pytest.raises(TimeoutError):  # the owner may wait: the run is parked on its approval
            await service.wait_for_run(ALICE, started, timeout=0.01)
        await service.approve(ALICE, started.run_id, pending.tool_call_id)
        run = await service.wait_for_run(ALICE, started)
        assert run.status == "completed" and reads[-1] == started.run_id  # the stored run, read after the wait
