"""Re-attach to a run this process does not hold replays its stored transcript — never an empty stream."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agora_agent import Actor, AgentConfig, AgentService, ToolContext, tool
from agora_agent.streaming.frames import ErrorFrame, TextFrame, ToolFrame
from agora_agent.testing import FakeModel, ScriptedTurn, ToolCallRequest, sequence_script
from agora_agent.testing.helpers import OBSERVER

ALICE = Actor("alice", roles=("support",))
hang = asyncio.Event()


@tool
def lookup(order: int) -> dict[str, object]:
    """Look an order up."""
    return {"order": order, "status": "shipped"}


@tool
async def stuck(ctx: ToolContext) -> str:
    """Never returns in this test."""
    hang.set()
    await asyncio.Event().wait()
    return "never"


def script(name: str) -> object:
    return sequence_script(
        ScriptedTurn(
            text="Looking it up. ", tool_calls=[ToolCallRequest(name, {"order": 7} if name == "lookup" else {})]
        ),
        ScriptedTurn(text="It has shipped."),
    )


async def test_a_finished_run_replays_text_and_tool_frames_after_a_restart(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'agent.db'}"
    async with AgentService.from_config(AgentConfig(model=FakeModel(script("lookup")), tools=[lookup], store=url)) as a:
        started = await a.chat(ALICE, "where is order 7?")
        await a.wait_for_run(OBSERVER, started.run_id, timeout=10)
    async with AgentService.from_config(AgentConfig(model=FakeModel(script("lookup")), tools=[lookup], store=url)) as b:
        events = [e async for e in await b.subscribe(OBSERVER, started.run_id)]
        frames = [e.frame for e in events]
        assert [e.id for e in events] == [1, 2, 3]
        assert frames[0] == TextFrame(delta="Looking it up. ")
        assert isinstance(frames[1], ToolFrame) and (frames[1].status, frames[1].output) == (
            "executed",
            {"order": 7, "status": "shipped"},
        )
        assert frames[2] == TextFrame(delta="It has shipped.")
        assert [e.id for e in [e async for e in await b.subscribe(OBSERVER, started.run_id, after=2)]] == [3]


async def test_an_interrupted_run_replays_its_error(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'agent.db'}"
    lease = {"run_lease_interval": 0.1, "run_lease_ttl": 0.3}
    crashed = AgentService.from_config(AgentConfig(model=FakeModel(script("stuck")), tools=[stuck], store=url, **lease))
    await crashed.start()
    started = await crashed.chat(ALICE, "do it")
    await asyncio.wait_for(hang.wait(), 5)
    assert crashed.lease_keeper is not None
    await crashed.lease_keeper.stop(release=False)  # its heartbeat stops, as in a crash
    await asyncio.sleep(0.4)
    async with AgentService.from_config(
        AgentConfig(model=FakeModel(script("stuck")), tools=[stuck], store=url, **lease)
    ) as b:
        frames = [e.frame async for e in await b.subscribe(OBSERVER, started.run_id)]
        assert isinstance(frames[1], ToolFrame) and frames[1].status == "failed"
        assert isinstance(frames[-1], ErrorFrame) and frames[-1].message.startswith("interrupted")
    await crashed.close()


async def test_components_come_back_after_a_restart_in_order_with_the_text(tmp_path: Path) -> None:
    from agora_agent.genui import table
    from agora_agent.streaming.frames import ComponentFrame

    @tool(present=lambda output, ctx: table([output], title="Order"))
    def lookup_shown(order: int) -> dict[str, object]:
        """Look an order up and show it."""
        return {"order": order, "status": "shipped"}

    turns = sequence_script(
        ScriptedTurn(text="Looking it up. ", tool_calls=[ToolCallRequest("lookup_shown", {"order": 7})]),
        ScriptedTurn(text="It has shipped."),
    )
    url = f"sqlite:///{tmp_path / 'agent.db'}"
    config = AgentConfig(model=FakeModel(turns), tools=[lookup_shown], store=url)
    async with AgentService.from_config(config) as a:
        started = await a.chat(ALICE, "where is order 7?")
        await a.wait_for_run(OBSERVER, started.run_id, timeout=10)
        live = [e.frame async for e in await a.subscribe(OBSERVER, started.run_id)]
    live_component = next(f for f in live if isinstance(f, ComponentFrame))
    config = AgentConfig(model=FakeModel(turns), tools=[lookup_shown], store=url)
    async with AgentService.from_config(config) as b:  # a new process: only the store remembers
        frames = [e.frame async for e in await b.subscribe(OBSERVER, started.run_id)]
    assert [f.type for f in frames] == ["text", "tool", "component", "text"]
    replayed = frames[2]
    assert isinstance(replayed, ComponentFrame)
    assert (replayed.name, replayed.data, replayed.id) == (live_component.name, live_component.data, live_component.id)
