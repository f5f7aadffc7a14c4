"""`@tool(blocking=False)`: a sync tool declared non-blocking runs on the event loop's thread, a default one
in a worker thread (so a slow sync tool can never stall other chats)."""

from __future__ import annotations

import threading

from agora_agent import Actor, AgentConfig, AgentService, tool
from agora_agent.testing import FakeModel, ScriptedTurn, ToolCallRequest, sequence_script
from agora_agent.testing.helpers import OBSERVER

threads: dict[str, int] = {}


@tool
def default_sync() -> str:
    """Record the thread it ran on."""
    threads["default"] = threading.get_ident()
    return "ok"


@tool(blocking=False)
def inline_sync() -> str:
    """Record the thread it ran on."""
    threads["inline"] = threading.get_ident()
    return "ok"


async def test_non_blocking_sync_tool_runs_on_the_loop_and_the_default_one_off_it() -> None:
    script = sequence_script(
        ScriptedTurn(tool_calls=[ToolCallRequest(name="default_sync"), ToolCallRequest(name="inline_sync")]),
        ScriptedTurn(text="done"),
    )
    config = AgentConfig(model=FakeModel(script), tools=[default_sync, inline_sync])
    async with AgentService.from_config(config) as service:
        started = await service.chat(Actor("alice"), "go")
        run = await service.wait_for_run(OBSERVER, started.run_id)
        calls = await service.store.list_tool_calls(run_id=started.run_id)
    assert run.status == "completed"
    assert [(c.tool_name, c.status, c.output) for c in calls] == [
        ("default_sync", "executed", "ok"),
        ("inline_sync", "executed", "ok"),
    ]
    loop_thread = threading.get_ident()
    assert threads["inline"] == loop_thread
    assert threads["default"] != loop_thread
    assert inline_sync() == "ok"  # still callable as the plain function
