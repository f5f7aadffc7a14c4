"""PostgreSQL cannot store a NUL character in text; what a model, a tool or an MCP client says may hold one.

The HTTP edge refuses NUL bytes in what a client sends (tests/web/test_edge.py); everything else that
reaches the store — a model's reply, a tool's error, an MCP tool name — is stored with each NUL replaced by
U+FFFD on PostgreSQL, so a run never dies of it there (SQLite stores NUL as is).
"""

from __future__ import annotations

from typing import Any

from agora_agent import Actor, AgentConfig, AgentService, HeaderActorResolver, tool
from agora_agent.mcp import api_key_auth, mount_mcp
from agora_agent.stores.sql import open_sql_backend
from agora_agent.testing import FakeModel, ScriptedTurn, ToolCallRequest, collect_frames, echo_script, sequence_script
from agora_agent.web import create_app
from tests.mcp.conftest import mcp_client, serve

ALICE = Actor("alice", roles=("support",))


@tool
def fussy(text: str) -> str:
    """Refuses its input, quoting it."""
    raise ValueError(f"cannot use {text!s}")


async def test_a_reply_and_a_tool_error_holding_nul_are_stored_on_postgresql(postgres_url: str) -> None:
    await (await open_sql_backend(postgres_url, auto_create_tables=True)).close()
    script = sequence_script(
        ScriptedTurn(text="one\u0000two ", tool_calls=[ToolCallRequest("fussy", {"text": "x\u0000y"})]),
        ScriptedTurn(text="done"),
    )
    async with AgentService.from_config(AgentConfig(model=FakeModel(script), tools=[fussy], store=postgres_url)) as s:
        started = await s.chat(ALICE, "go")
        frames = await collect_frames(s, started.run_id)
        run = await s.wait_for_run(ALICE, started.run_id)
        assert run.status == "completed", (run.error, [e.message for e in frames.errors])
        messages = await s.store.list_messages(started.thread_id)
        assert messages[1].content == "one\ufffdtwo "
        call = (await s.store.list_tool_calls(run_id=started.run_id))[0]
        assert call.status == "failed" and "x\ufffdy" in (call.error or "")


async def test_an_mcp_tool_name_holding_nul_is_an_unknown_tool(postgres_url: str) -> None:
    await (await open_sql_backend(postgres_url, auto_create_tables=True)).close()
    config = AgentConfig(
        model=FakeModel(echo_script("ok")), tools=[fussy], store=postgres_url, actor_resolver=HeaderActorResolver()
    )
    app = create_app(config)
    mount_mcp(app, auth=api_key_auth({"k": ALICE}))
    async with serve(app) as base, mcp_client(f"{base}/agent/mcp", "k") as client:
        result: Any = await client.call_tool("fus\u0000sy", {"text": "x"})
        assert result.is_error and "not registered" in result.content[0].text  # was "Internal server error"
