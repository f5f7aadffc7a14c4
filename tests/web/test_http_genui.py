"""Generative UI and thread care over HTTP: component frames with ids, components on the stored thread,
`uiCapabilities` in the chat body, run statuses on the thread, renaming a thread."""

from __future__ import annotations

from typing import Any

from agora_agent import ToolContext, tool
from agora_agent.genui import table
from agora_agent.testing import ScriptedTurn, ToolCallRequest, sequence_script
from agora_agent.testing.helpers import OBSERVER

from .conftest import ALICE, BOB, asgi_client, make_config


@tool(present=lambda output, ctx: table(output["rows"], title="Rows"))
async def rows_tool(ctx: ToolContext) -> dict[str, Any]:
    """Some rows."""
    ui_id = await ctx.emit_ui("Chart", {"state": "loading"})
    await ctx.emit_ui("Chart", {"labels": ["a"], "series": [{"name": "n", "values": [2]}]}, id=ui_id)
    return {"rows": [{"a": 1}]}


def script() -> Any:
    return sequence_script(
        ScriptedTurn(text="Here. ", tool_calls=[ToolCallRequest("rows_tool", {})]), ScriptedTurn(text="Done.")
    )


def components_of(body: str) -> list[str]:
    return [block for block in body.split("\n\n") if block.startswith("id:") and "event: component" in block]


async def test_component_frames_carry_ids_and_the_thread_keeps_them() -> None:
    async with asgi_client(make_config(script(), tools=[rows_tool])) as (client, service):
        r = await client.post("/agent/chat", json={"message": "rows"}, headers=ALICE)
        blocks = components_of(r.text)
        assert len(blocks) == 3  # loading chart, chart data (same id), table
        assert '"state":"loading"' in blocks[0] and '"id":"ui-' in blocks[0]
        first_id = blocks[0].split('"id":"', 1)[1].split('"', 1)[0]
        assert f'"id":"{first_id}"' in blocks[1]
        thread_id = r.headers["x-agent-thread-id"]
        await service.wait_for_run(OBSERVER, r.headers["x-agent-run-id"])
        detail = (await client.get(f"/agent/threads/{thread_id}", headers=ALICE)).json()
        stored = detail["toolCalls"][0]["components"]
        assert [c["name"] for c in stored] == ["Chart", "DataTable"]
        assert stored[0]["id"] == first_id and stored[0]["data"]["series"][0]["values"] == [2.0]
        assert detail["runs"][0]["status"] == "completed"


async def test_ui_capabilities_from_the_chat_body() -> None:
    async with asgi_client(make_config(script(), tools=[rows_tool])) as (client, _):
        body = {"message": "rows", "uiCapabilities": ["DataTable"]}
        r = await client.post("/agent/chat", json=body, headers=ALICE)
        blocks = components_of(r.text)
        assert len(blocks) == 1 and '"name":"DataTable"' in blocks[0]
        bad = await client.post("/agent/chat", json={"message": "x", "uiCapabilities": "DataTable"}, headers=ALICE)
        assert bad.status_code == 422


async def test_rename_a_thread() -> None:
    async with asgi_client(make_config()) as (client, service):
        r = await client.post("/agent/chat", json={"message": "first question"}, headers=ALICE)
        thread_id = r.headers["x-agent-thread-id"]
        await service.wait_for_run(OBSERVER, r.headers["x-agent-run-id"])
        ok = await client.patch(f"/agent/threads/{thread_id}", json={"title": "  Refunds for ACME "}, headers=ALICE)
        assert ok.json() == {"ok": True}
        assert (await client.get("/agent/threads", headers=ALICE)).json()[0]["title"] == "Refunds for ACME"
        for bad in ({"title": ""}, {"title": "x" * 201}, {}):
            assert (await client.patch(f"/agent/threads/{thread_id}", json=bad, headers=ALICE)).status_code == 422
        foreign = await client.patch(f"/agent/threads/{thread_id}", json={"title": "mine now"}, headers=BOB)
        assert foreign.status_code in (403, 404)
        missing = await client.patch("/agent/threads/nope", json={"title": "x"}, headers=ALICE)
        assert missing.status_code == 404
        assert (await client.get("/agent/threads", headers=ALICE)).json()[0]["title"] == "Refunds for ACME"
