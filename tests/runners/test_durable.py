"""The durable runner's own guarantees, in process on a SQLite file (issue #11).

Restarts are simulated by closing one service and starting another on the same files (DBOS is a
process-wide singleton, so one durable service runs at a time); the real SIGKILL checks are in
test_durable_kill.py.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sqlite3
import sys
from collections.abc import Iterator
from contextlib import closing
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from agora_agent import Actor, AgentConfig, AgentService, ConfigurationError, ConflictError, ToolContext, tool
from agora_agent.messages import ModelRequest, ModelTurn, Usage
from agora_agent.models.base import TextCallback
from agora_agent.runners.durable import DurableConfig
from agora_agent.streaming.frames import ComponentFrame, StreamEvent, TextFrame
from agora_agent.streaming.sink import MemoryTokenSink
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

ALICE = Actor("alice", roles=("support",))
effects: list[str] = []


@tool(kind="action", roles=["support"])
def pay(amount: int, ctx: ToolContext) -> str:
    """Pay someone."""
    effects.append(f"{ctx.idempotency_key}#{ctx.attempt}")
    return f"paid {amount}"


@tool
def lookup(order: int) -> dict[str, Any]:
    """Look an order up."""
    return {"order": order, "status": "shipped"}


@pytest.fixture(autouse=True)
def _clear() -> Iterator[None]:
    effects.clear()
    yield
    effects.clear()  # other modules import `effects` (tests/observability/test_durable_spans.py)


def config(tmp_path: Path, model: Any, *, approval_recheck: float = 30.0, **kwargs: Any) -> AgentConfig:
    return AgentConfig(
        model=model,
        tools=[pay, lookup],
        store=f"sqlite:///{tmp_path / 'agent.db'}",
        durable=DurableConfig(executor_id="durable-test", approval_recheck=approval_recheck),
        **kwargs,
    )


def pay_script() -> Any:
    return sequence_script(
        ScriptedTurn(text="checking ", tool_calls=[ToolCallRequest("lookup", {"order": 7})]),
        ScriptedTurn(text="paying ", tool_calls=[ToolCallRequest("pay", {"amount": 5})]),
        ScriptedTurn(text="all done"),
    )


async def events_of(service: AgentService, run_id: str, after: int | None = None) -> list[StreamEvent]:
    return [e async for e in await service.subscribe(OBSERVER, run_id, after=after)]


async def test_a_restarted_process_replays_the_journal_and_resumes_after_last_event_id(tmp_path: Path) -> None:
    async with AgentService.from_config(config(tmp_path, FakeModel(pay_script()))) as first:
        started = await first.chat(ALICE, "pay order 7")
        pending = await wait_for_tool_status(first, started.run_id)
        await first.approve(ALICE, started.run_id, pending.tool_call_id)
        await first.wait_for_run(OBSERVER, started.run_id, timeout=20)
        original = await events_of(first, started.run_id)
    async with AgentService.from_config(config(tmp_path, FakeModel(pay_script()))) as second:
        replayed = await events_of(second, started.run_id)
        assert replayed == original  # same ids, same frames: text, tool frames, in order
        assert [e.id for e in replayed] == list(range(1, len(replayed) + 1))
        assert "".join(e.frame.delta for e in replayed if isinstance(e.frame, TextFrame)) == "checking paying all done"
        middle = replayed[4].id
        assert await events_of(second, started.run_id, after=middle) == replayed[5:]
        assert effects == [f"{started.run_id}:call-1-pay#1"]


async def test_the_system_database_holds_json_and_runs_on_wal(tmp_path: Path) -> None:
    async with AgentService.from_config(config(tmp_path, FakeModel(echo_script("hi")))) as service:
        started = await service.chat(ALICE, "hello")
        await service.wait_for_run(OBSERVER, started.run_id, timeout=20)
    with closing(sqlite3.connect(tmp_path / "agent.db.dbos.sqlite")) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        rows = conn.execute(
            "SELECT function_name, serialization, output FROM operation_outputs WHERE workflow_uuid = ?",
            (started.run_id,),
        ).fetchall()
        (version, executor) = conn.execute(
            "SELECT application_version, executor_id FROM workflow_status WHERE workflow_uuid = ?",
            (started.run_id,),
        ).fetchone()
        (inputs,) = conn.execute("SELECT * FROM workflow_input WHERE workflow_uuid = ?", (started.run_id,)).fetchone()[
            1:2
        ]
    names = {name for name, _, _ in rows}
    assert names >= {"load:thread", "llm:0"}
    assert not {n for n in names if n.startswith("persist:")}  # idempotent writes: effects, no checkpoint
    assert {serialization for _, serialization, _ in rows} == {"portable_json"}  # never pickle (notes P9)
    llm = next(json.loads(out) for name, _, out in rows if name == "llm:0")
    assert llm["v"]["$c"] == "ModelTurn" and llm["v"]["f"]["text"] == "hi"
    assert json.loads(inputs)["positionalArgs"][0]["run"]["f"]["run_id"] == started.run_id
    assert (version, executor) == ("agora-2", "durable-test")


async def test_cancel_closes_pending_approvals_so_a_late_decision_is_409(tmp_path: Path) -> None:
    async with AgentService.from_config(config(tmp_path, FakeModel(pay_script()))) as service:
        started = await service.chat(ALICE, "pay")
        pending = await wait_for_tool_status(service, started.run_id)
        assert await service.cancel(OBSERVER, started.run_id) is True
        run = await service.wait_for_run(OBSERVER, started.run_id, timeout=10)
        assert run.status == "cancelled"
        with pytest.raises(ConflictError) as late:
            await service.approve(ALICE, started.run_id, pending.tool_call_id)
        assert late.value.code == "already_decided" and late.value.detail["status"] == "expired"
        assert late.value.detail["reason"] == "the run was cancelled"
        row = await service.store.get_tool_call(started.run_id, pending.tool_call_id)
        assert row is not None and row.status == "expired"
        frames = await collect_frames(service, started.run_id)  # the stream ends; nothing executed
        assert frames.statuses(pending.tool_call_id) == ["pending_approval"]
        assert effects == []


class EndlessModel:
    """Streams until cancelled."""

    model_id = "endless"

    def __init__(self) -> None:
        self.cancelled = asyncio.Event()

    async def run_turn(self, request: ModelRequest, on_text: TextCallback) -> ModelTurn:
        try:
            for i in range(100_000):
                await on_text(f"w{i} ")
                await asyncio.sleep(0.01)
        except asyncio.CancelledError:
            self.cancelled.set()
            raise
        return ModelTurn(text="never", usage=Usage())


async def test_cancel_interrupts_the_model_call_in_flight(tmp_path: Path) -> None:
    model = EndlessModel()
    async with AgentService.from_config(config(tmp_path, model)) as service:
        started = await service.chat(ALICE, "talk forever")
        seen: list[StreamEvent] = []
        async for event in await service.subscribe(OBSERVER, started.run_id):
            seen.append(event)
            if len(seen) == 5:
                assert await service.cancel(OBSERVER, started.run_id) is True
        await asyncio.wait_for(model.cancelled.wait(), 5)
        assert (await service.get_run(OBSERVER, started.run_id)).status == "cancelled"  # type: ignore[union-attr]
        assert len(seen) < 200  # the stream ended soon after the cancel


async def test_an_approval_past_its_deadline_expires_and_the_model_is_told(tmp_path: Path) -> None:
    @tool(kind="action", roles=["support"], approval_ttl=timedelta(milliseconds=300))
    def wire(amount: int) -> str:
        """Wire money."""
        return "wired"

    model = FakeModel(
        sequence_script(ScriptedTurn(tool_calls=[ToolCallRequest("wire", {"amount": 1})]), ScriptedTurn(text="ok"))
    )
    async with AgentService.from_config(
        AgentConfig(
            model=model,
            tools=[wire],
            store=f"sqlite:///{tmp_path / 'agent.db'}",
            durable=DurableConfig(executor_id="ttl-test"),
        )
    ) as service:
        started = await service.chat(ALICE, "wire 1")
        run = await service.wait_for_run(OBSERVER, started.run_id, timeout=10)
        assert run.status == "completed"
        approval = await service.store.get_approval(started.run_id, "call-0-wire")
        assert approval is not None and approval.status == "expired"
        result = model.requests[-1].messages[-1].tool_results[0]
        assert result.is_error and json.loads(result.content)["reason"] == "approval expired"


async def test_delegation_is_a_child_workflow_with_a_deterministic_id(tmp_path: Path) -> None:
    from agora_agent import AgentDefinition

    def script(request: ModelRequest, i: int) -> ScriptedTurn:
        if request.system.startswith("You analyse"):
            return ScriptedTurn(text="Sales are up.")
        if i == 0:
            return ScriptedTurn(tool_calls=[ToolCallRequest(name="ask_analyst", input={"task": "trend?"})])
        return ScriptedTurn(text="Up, says the analyst.")

    analyst = AgentDefinition(name="analyst", system_prompt="You analyse sales.")
    cfg = config(
        tmp_path, FakeModel(script), default_agent=AgentDefinition(delegates_to=("analyst",)), agents=[analyst]
    )
    async with AgentService.from_config(cfg) as service:
        started = await service.chat(ALICE, "sales?")
        await service.wait_for_run(OBSERVER, started.run_id, timeout=20)
        child = await service.get_run(OBSERVER, f"{started.run_id}-agent-0")
        assert child is not None and (child.status, child.parent_run_id) == ("completed", started.run_id)
        frames = await collect_frames(service, started.run_id)
        assert frames.agent_text == "Sales are up."
        assert frames.text == "Up, says the analyst."
    with closing(sqlite3.connect(tmp_path / "agent.db.dbos.sqlite")) as conn:
        (parent,) = conn.execute(
            "SELECT parent_workflow_id FROM workflow_status WHERE workflow_uuid = ?", (f"{started.run_id}-agent-0",)
        ).fetchone()
    assert parent == started.run_id


async def test_durable_is_refused_without_a_persistent_store_or_with_a_custom_sink(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError) as no_store:
        await AgentService.from_config(AgentConfig(model=FakeModel(echo_script()), durable=True)).start()
    assert no_store.value.option == "store" and "persistent store" in str(no_store.value)
    with pytest.raises(ConfigurationError) as custom_sink:
        await AgentService.from_config(
            AgentConfig(
                model=FakeModel(echo_script()),
                store=f"sqlite:///{tmp_path / 'a.db'}",
                sink=MemoryTokenSink(),
                durable=True,
            )
        ).start()
    assert custom_sink.value.option == "sink"


async def test_durable_without_the_extra_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "dbos", None)  # as in a venv without agora-agent[durable]
    monkeypatch.delitem(sys.modules, "agora_agent.runners.durable.runner", raising=False)
    service = AgentService.from_config(
        AgentConfig(model=FakeModel(echo_script()), store=f"sqlite:///{tmp_path / 'a.db'}", durable=True)
    )
    with pytest.raises(ConfigurationError) as missing:
        await service.start()
    assert missing.value.code == "missing_extra" and "pip install 'agora-agent[durable]'" in str(missing.value)
    await service.close()


async def test_a_graceful_shutdown_leaves_runs_running_and_the_next_start_resumes_them(tmp_path: Path) -> None:
    async with AgentService.from_config(config(tmp_path, FakeModel(pay_script()))) as first:
        started = await first.chat(ALICE, "pay order 7")
        pending = await wait_for_tool_status(first, started.run_id)
    async with AgentService.from_config(config(tmp_path, FakeModel(pay_script()))) as second:
        assert (await second.get_run(OBSERVER, started.run_id)).status == "running"  # type: ignore[union-attr]
        await second.approve(ALICE, started.run_id, pending.tool_call_id)
        run = await second.wait_for_run(OBSERVER, started.run_id, timeout=20)
        assert run.status == "completed"
        assert effects == [f"{started.run_id}:call-1-pay#1"]


async def test_a_run_recorded_with_every_write_as_a_step_is_resumed_by_this_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The upgrade path from agora-1 (every `persist:*` write was a DBOS step) to agora-2 (they are effects):
    a run parked by the old step shape is replayed and finished by this code, run with the old version
    (docs/durable.md, "Rolling upgrades")."""
    from agora_agent.runners.durable import runner

    def old(tmp: Path) -> AgentConfig:
        cfg = config(tmp, FakeModel(pay_script()))
        return dataclasses.replace(
            cfg, durable=DurableConfig(executor_id="durable-test", application_version="agora-1")
        )

    with monkeypatch.context() as patched:
        patched.delattr(runner._Hooks, "effect")  # agora-1: effects run as steps
        async with AgentService.from_config(old(tmp_path)) as first:
            started = await first.chat(ALICE, "pay order 7")
            pending = await wait_for_tool_status(first, started.run_id)
    async with AgentService.from_config(old(tmp_path)) as second:
        await second.approve(ALICE, started.run_id, pending.tool_call_id)
        run = await second.wait_for_run(OBSERVER, started.run_id, timeout=20)
        assert run.status == "completed"
        replayed = await events_of(second, started.run_id)
        assert [e.id for e in replayed] == list(range(1, len(replayed) + 1))  # numbered on: no gap, no repeat
        assert "".join(e.frame.delta for e in replayed if isinstance(e.frame, TextFrame)) == "checking paying all done"
    with closing(sqlite3.connect(tmp_path / "agent.db.dbos.sqlite")) as conn:
        names = [
            r[0]
            for r in conn.execute(
                "SELECT function_name FROM operation_outputs WHERE workflow_uuid = ? ORDER BY function_id",
                (started.run_id,),
            )
        ]
    assert "persist:toolcall:call-1-pay" in names  # recorded by the old shape, replayed by the new
    assert "persist:toolexec:call-1-pay" not in names  # written by the new shape: an effect
    assert effects == [f"{started.run_id}:call-1-pay#1"]


async def test_fifty_concurrent_durable_runs_overshoot_the_budget_by_at_most_one_reservation(tmp_path: Path) -> None:
    from agora_agent import Budget, QuotaExceededError

    per_turn = Usage(input_tokens=40, output_tokens=20)  # 60 tokens per model call
    budget = Budget(tokens_per_actor=1000, reserve_tokens=100)
    model = FakeModel(lambda req, i: ScriptedTurn(text="ok", usage=per_turn))
    async with AgentService.from_config(config(tmp_path, model, budget=budget)) as service:

        async def one() -> str:
            try:
                started = await service.chat(ALICE, "hi")
            except QuotaExceededError:
                return "refused"
            return (await service.wait_for_run(OBSERVER, started.run_id, timeout=60)).status

        outcomes = await asyncio.gather(*(one() for _ in range(50)))
        used = (await service.quota_today(ALICE)).used_tokens
        assert used <= 1000 + budget.reserve_tokens  # overshoot ≤ one reservation
        assert outcomes.count("completed") * 60 == used  # no lost ledger rows
        assert "refused" in outcomes or "failed" in outcomes  # the edge was really reached


async def test_over_the_concurrency_limit_a_run_waits_queued_and_the_dashboard_lists_it(tmp_path: Path) -> None:
    """worker_concurrency=1: the first run parks on its approval (it stays in flight), the second waits in
    the run queue — its stream says `queued` and the governance runs list (what the dashboard shows) says
    `queued` — and runs once the first is decided."""
    import httpx2

    from agora_agent import HeaderActorResolver
    from agora_agent.web import create_app

    settings = AgentConfig(
        model=FakeModel(pay_script()),
        tools=[pay, lookup],
        store=f"sqlite:///{tmp_path / 'agent.db'}",
        durable=DurableConfig(executor_id="durable-test", worker_concurrency=1),
        actor_resolver=HeaderActorResolver(),
        governance_authorize=lambda actor, request: "admin" in actor.roles,
    )
    app = create_app(settings)
    service: AgentService = app.state.agent_service
    admin = {"x-actor-id": "root", "x-actor-role": "admin"}
    async with service, httpx2.AsyncClient(transport=httpx2.ASGITransport(app), base_url="http://test") as client:
        first = await service.chat(ALICE, "pay order 7")
        pending = await wait_for_tool_status(service, first.run_id)
        second = await service.chat(ALICE, "pay order 8")
        stream = await service.subscribe(OBSERVER, second.run_id)
        said = await asyncio.wait_for(anext(aiter(stream)), 10)
        assert (said.id, said.frame) == (0, ComponentFrame(name="agora.status", data={"status": "queued"}))

        listed = (await client.get("/agent/governance/runs", headers=admin)).json()["runs"]
        assert {r["id"]: r["status"] for r in listed} == {first.run_id: "running", second.run_id: "queued"}
        only = (await client.get("/agent/governance/runs", params={"status": "queued"}, headers=admin)).json()
        assert [r["id"] for r in only["runs"]] == [second.run_id]
        detail = (await client.get(f"/agent/governance/runs/{second.run_id}", headers=admin)).json()
        assert detail["run"]["status"] == "queued"

        await service.approve(ALICE, first.run_id, pending.tool_call_id)
        pending2 = await wait_for_tool_status(service, second.run_id)  # dequeued: it runs and parks in turn
        listed = (await client.get("/agent/governance/runs", headers=admin)).json()["runs"]
        assert {r["id"]: r["status"] for r in listed} == {first.run_id: "completed", second.run_id: "running"}
        await service.approve(ALICE, second.run_id, pending2.tool_call_id)
        assert (await service.wait_for_run(OBSERVER, second.run_id, timeout=20)).status == "completed"


@pytest.mark.postgres
async def test_async_checkpoint_commit_only_relaxes_the_system_database_connections(postgres_url: str) -> None:
    from dbos._dbos import _get_dbos_instance

    from agora_agent.stores.sql import open_sql_backend

    await (await open_sql_backend(postgres_url, auto_create_tables=True)).close()
    settings = AgentConfig(
        model=FakeModel(pay_script()),
        tools=[pay, lookup],
        store=postgres_url,
        durable=DurableConfig(executor_id="durable-test", checkpoint_commit="async"),
    )
    async with AgentService.from_config(settings) as service:
        started = await service.chat(ALICE, "pay order 7")
        pending = await wait_for_tool_status(service, started.run_id)
        await service.approve(ALICE, started.run_id, pending.tool_call_id)
        assert (await service.wait_for_run(OBSERVER, started.run_id, timeout=30)).status == "completed"
        with _get_dbos_instance()._sys_db.engine.connect() as conn:  # what DBOS writes checkpoints with
            assert conn.exec_driver_sql("SHOW synchronous_commit").scalar() == "off"
        async with service._backend.engine.connect() as conn:  # the store's own writes stay synchronous
            assert (await conn.exec_driver_sql("SHOW synchronous_commit")).scalar() == "on"
    assert effects == [f"{started.run_id}:call-1-pay#1"]


async def test_a_decision_whose_wake_up_was_lost_is_found_on_the_row(tmp_path: Path) -> None:
    """The approver's process died between deciding the row and sending the wake-up (the chaos test saw
    it): the process the run is parked in re-reads the rows of its parked approvals every
    `approval_recheck` seconds and sends the wake-up itself; after a restart it re-sends it at once."""
    recheck = 0.5
    async with AgentService.from_config(config(tmp_path, FakeModel(pay_script()), approval_recheck=recheck)) as service:
        started = await service.chat(ALICE, "pay order 7")
        pending = await wait_for_tool_status(service, started.run_id)
        await asyncio.sleep(1.5)  # parked a while
        await service.store.decide_approval(started.run_id, pending.tool_call_id, status="approved", decided_by="bob")
        t0 = asyncio.get_running_loop().time()
        run = await service.wait_for_run(OBSERVER, started.run_id, timeout=15)
        assert run.status == "completed"
        assert asyncio.get_running_loop().time() - t0 < recheck * 1.2 + 2  # one sweep (±20 %), plus the poll
        second = await service.chat(ALICE, "pay order 8")
        pending = await wait_for_tool_status(service, second.run_id)
    from agora_agent.stores.sql import open_sql_backend

    backend = await open_sql_backend(f"sqlite:///{tmp_path / 'agent.db'}")
    try:  # decided while no process runs, and nobody sends anything
        await backend.store.decide_approval(second.run_id, pending.tool_call_id, status="approved", decided_by="bob")
    finally:
        await backend.close()
    async with AgentService.from_config(config(tmp_path, FakeModel(pay_script()))) as restarted:
        run = await restarted.wait_for_run(OBSERVER, second.run_id, timeout=15)
        assert run.status == "completed"
    assert effects == [f"{started.run_id}:call-1-pay#1", f"{second.run_id}:call-1-pay#1"]
