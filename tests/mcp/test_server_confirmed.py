"""A confirmed tool over MCP with the SDK's own client: preview, commit once, and every refusal."""

from __future__ import annotations

from typing import Any

import pytest

from agora_agent import Actor, AgentConfig
from agora_agent.actors import HeaderActorResolver
from agora_agent.mcp import api_key_auth, mount_mcp
from agora_agent.testing import FakeModel, echo_script
from agora_agent.web import create_app
from tests.mcp.conftest import mcp_client, serve
from tests.tools.test_confirmed import make_tool

pytestmark = pytest.mark.ref("MCP-14", "LATER-CONF-02", "LATER-CONF-03")

KEYS = {"k-alice": Actor("alice", ("support",), "acme"), "k-mallory": Actor("mallory", ("support",), "acme")}


def text(result: Any) -> str:
    return str(result.content[0].text)


async def test_two_steps_over_mcp_with_replay_other_actor_and_changed_arguments_refused() -> None:
    log: list[int] = []
    config = AgentConfig(
        model=FakeModel(echo_script("ok")),
        tools=[make_tool(log)],
        actor_resolver=HeaderActorResolver(),
        dashboard=False,
    )
    app = create_app(config)
    mount_mcp(app, auth=api_key_auth(KEYS))  # actions="refuse": a confirmed tool is still served
    async with serve(app) as base:
        url = f"{base}/agent/mcp"
        async with mcp_client(url, "k-alice") as alice, mcp_client(url, "k-mallory") as mallory:
            listed = {t.name: t for t in (await alice.list_tools()).tools}
            assert "confirmToken" in listed["cancel_order"].input_schema["properties"]
            first = await alice.call_tool("cancel_order", {"order_id": 3})
            assert not first.is_error and first.structured_content is not None
            token = first.structured_content["confirmToken"]
            stolen = await mallory.call_tool("cancel_order", {"order_id": 3, "confirm": True, "confirmToken": token})
            assert stolen.is_error and "another caller" in text(stolen)
            changed = await alice.call_tool("cancel_order", {"order_id": 4, "confirm": True, "confirmToken": token})
            assert changed.is_error and "arguments differ" in text(changed)
            done = await alice.call_tool("cancel_order", {"order_id": 3, "confirm": True, "confirmToken": token})
            assert not done.is_error and done.structured_content["status"] == "committed"  # type: ignore[index]
            replay = await alice.call_tool("cancel_order", {"order_id": 3, "confirm": True, "confirmToken": token})
            assert replay.is_error and "already used" in text(replay)
    assert log == [3]
