"""Inline runner hardening: runs interrupted by a crash are closed honestly; internal errors stay internal."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agora_agent import Actor, AgentConfig, AgentService, ConflictError, ToolContext, tool
from agora_agent.loop import ApprovalDecision
from agora_agent.messages import ModelRequest, ModelTurn
from agora_agent.models.base import TextCallback
from agora_agent.testing import FakeModel, ScriptedTurn, ToolCallRequest, collect_frames, wait_for_tool_status
from agora_agent.testing.helpers import OBSERVER

ALICE = Actor("alice", roles=("support",))
blocked = asyncio.Event()


@tool(kind="action")
def wire_money(amount: int) -> str:
    """Send money."""
    return f"sent {amount}"


@tool
async def slow_lookup(ctx: ToolContext) -> str:
    """Never finishes in this test."""
    blocked.set()
    await asyncio.Event().wait()
    return "never"


def script(request: ModelRequest, turn: int) -> ScriptedTurn:
    wanted = "wire_money" if "wire" in request.messages[0].content else "slow_lookup"
    if turn == 0:
        return ScriptedTurn(tool_calls=[ToolCallRequest(wanted, {"amount": 5} if wanted == "wire_money" else {})])
    return ScriptedTurn(text="done")


@pytest.mark.ref("DUR-09")
async def test_restart_closes_runs_left_running(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'agent.db'}"
    config = AgentConfig(
        model=FakeModel(script),
        tools=[wire_money, slow_lookup],
        store=url,
        run_lease_interval=0.1,
        run_lease_ttl=0.3,
    )
    crashed = AgentService.from_config(config)  # the process that "dies": never closed until the end
    await crashed.start()
    parked = await crashed.chat(ALICE, "wire 5")
    pending = await wait_for_tool_status(crashed, parked.run_id)
    running = await crashed.chat(ALICE, "look it up")
    await asyncio.wait_for(blocked.wait(), 5)
    assert crashed.lease_keeper is not None
    await crashed.lease_keeper.stop(release=False)  # its heartbeat stops, as in a crash
    await asyncio.sleep(0.4)

    async with AgentService.from_config(config) as restarted:  # same SQLite file, new process
        for run_id in (parked.run_id, running.run_id):
            run = await restarted.get_run(OBSERVER, run_id)
            assert run is not None and run.status == "failed" and run.error is not None
            assert run.error.startswith("interrupted")
        approval = await restarted.store.get_approval(parked.run_id, pending.tool_call_id)
        assert approval is not None and approval.status == "expired"
        with pytest.raises(ConflictError) as refused:
            await restarted.approve(ALICE, parked.run_id, pending.tool_call_id)  # never a silent 200
        assert refused.value.code == "already_decided" and refused.value.detail["status"] == "expired"
        assert str(refused.value.detail["reason"]).startswith("interrupted")
        calls = await restarted.store.list_tool_calls(run_id=running.run_id)
        assert [c.status for c in calls] == ["unknown_after_crash"]
    await crashed.close()


async def test_recovery_is_on_by_default_for_url_stores_because_runs_have_owner_leases() -> None:
    config = AgentConfig(model=FakeModel(script), store="postgresql+asyncpg://nowhere/db")
    assert AgentService.from_config(config)._recovers_interrupted_runs() is True
    assert AgentService.from_config(AgentConfig(model=FakeModel(script)))._recovers_interrupted_runs() is False
    explicit = AgentConfig(model=FakeModel(script), recover_interrupted_runs=True)
    assert AgentService.from_config(explicit)._recovers_interrupted_runs() is True


class BrokenModel:
    model_id = "broken"

    async def run_turn(self, request: ModelRequest, on_text: TextCallback) -> ModelTurn:
        raise RuntimeError("connect to postgres://app:s3cret@db.internal failed")


@pytest.mark.parametrize("debug", [False, True])
async def test_internal_errors_reach_the_stream_only_in_debug(debug: bool, caplog: pytest.LogCaptureFixture) -> None:
    async with AgentService.from_config(AgentConfig(model=BrokenModel(), debug=debug)) as service:
        started = await service.chat(ALICE, "hi")
        frames = await collect_frames(service, started.run_id)
        run = await service.wait_for_run(OBSERVER, started.run_id)
    assert run.status == "failed" and "db.internal failed" in (run.error or "")  # the server keeps the detail…
    assert "s3cret" not in (run.error or "")  # …without the credential (the run row feeds the governance view)
    shown = frames.errors[0].message
    assert "s3cret" not in shown
    if debug:
        assert "db.internal failed" in shown
    else:
        assert "db.internal" not in shown and started.run_id in shown  # the user gets a pointer and an error id
        error_id = shown.split("error ")[1].split(";")[0]
        assert error_id in (run.error or "")
    assert any("s3cret" in r.getMessage() or r.exc_info for r in caplog.records)  # the traceback stays in the log


@pytest.mark.ref("ARCH-07")
async def test_runner_signal_with_a_decision(tmp_path: Path) -> None:
    async with AgentService.from_config(AgentConfig(model=FakeModel(script), tools=[wire_money])) as service:
        started = await service.chat(ALICE, "wire 5")
        pending = await wait_for_tool_status(service, started.run_id)
        decision = ApprovalDecision(status="approved", decided_by="ops")
        await service.runner.signal(started.run_id, pending.tool_call_id, decision)
        run = await service.wait_for_run(OBSERVER, started.run_id)
        row = await service.store.get_tool_call(started.run_id, pending.tool_call_id)
    assert run.status == "completed"
    assert row is not None and (row.status, row.decided_by, row.output) == ("executed", "ops", "sent 5")
