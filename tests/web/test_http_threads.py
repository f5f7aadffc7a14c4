"""Threads, personas and quota routes (HTTP-07..12) over the ASGI transport."""

from __future__ import annotations

import pytest

from agora_agent import AgentDefinition, Persona
from agora_agent.testing.helpers import OBSERVER

from .conftest import ALICE, BOB, asgi_client, make_config


@pytest.mark.ref("HTTP-07", "HTTP-09", "HTTP-10", "HTTP-11", "STORE-15", "STORE-16")
async def test_thread_lifecycle() -> None:
    async with asgi_client(make_config()) as (client, service):
        r = await client.post("/agent/chat", json={"message": "first question"}, headers=ALICE)
        thread_id, run_id = r.headers["x-agent-thread-id"], r.headers["x-agent-run-id"]
        await service.wait_for_run(OBSERVER, run_id)

        listed = (await client.get("/agent/threads", headers=ALICE)).json()
        assert [t["id"] for t in listed] == [thread_id]
        assert set(listed[0]) >= {"id", "title", "persona", "transient", "createdAt", "updatedAt", "lastMessagePreview"}
        assert listed[0]["title"] == "first question" and listed[0]["lastMessagePreview"] == "Hello there"
        assert (await client.get("/agent/threads", headers=BOB)).json() == []

        detail = (await client.get(f"/agent/threads/{thread_id}", headers=ALICE)).json()
        assert [m["role"] for m in detail["messages"]] == ["user", "assistant"]
        assert detail["messages"][0]["content"] == "first question"
        assert detail["messages"][1]["runId"] == run_id
        assert detail["activeStreamId"] == run_id and detail["toolCalls"] == []

        first_message = detail["messages"][0]["id"]
        fork = await client.post(f"/agent/threads/{thread_id}/fork-from/{first_message}", headers=ALICE)
        assert fork.status_code == 200
        forked = fork.json()
        assert forked["id"] != thread_id and forked["title"] == "first question"
        forked_detail = (await client.get(f"/agent/threads/{forked['id']}", headers=ALICE)).json()
        assert [m["content"] for m in forked_detail["messages"]] == ["first question"]

        assert (await client.delete(f"/agent/threads/{thread_id}", headers=ALICE)).json() == {"ok": True}
        gone = await client.get(f"/agent/threads/{thread_id}", headers=ALICE)
        assert (gone.status_code, gone.json()) == (404, {"error": "thread not found"})
        again = await client.delete(f"/agent/threads/{thread_id}", headers=ALICE)
        assert again.status_code == 404
        assert [t["id"] for t in (await client.get("/agent/threads", headers=ALICE)).json()] == [forked["id"]]


async def test_tool_calls_show_on_the_thread() -> None:
    from agora_agent.testing import ScriptedTurn, ToolCallRequest, sequence_script

    script = sequence_script(
        ScriptedTurn(text="Looking. ", tool_calls=[ToolCallRequest(name="lookup_order", input={"order_id": 7})]),
        ScriptedTurn(text="Shipped."),
    )
    async with asgi_client(make_config(script)) as (client, service):
        r = await client.post("/agent/chat", json={"message": "where is 7"}, headers=ALICE)
        await service.wait_for_run(OBSERVER, r.headers["x-agent-run-id"])
        detail = (await client.get(f"/agent/threads/{r.headers['x-agent-thread-id']}", headers=ALICE)).json()
        [call] = detail["toolCalls"]
        assert (call["toolName"], call["status"], call["output"]["status"]) == ("lookup_order", "executed", "shipped")
        assert detail["messages"][1]["toolCalls"][0]["name"] == "lookup_order"
        assert "event: tool\n" in r.text  # the status changes were streamed as named events


@pytest.mark.ref("HTTP-08")
async def test_persona_catalog() -> None:
    default = AgentDefinition(personas=(Persona(id="formal", label="Formal"), Persona(id="casual", label="Casual")))
    other = AgentDefinition(name="sales", personas=(Persona(id="pushy", label="Pushy"),))
    async with asgi_client(make_config(default_agent=default, agents=[other])) as (client, _):
        r = await client.get("/agent/threads/personas/catalog", headers=ALICE)
        assert r.json() == [{"id": "formal", "label": "Formal"}, {"id": "casual", "label": "Casual"}]
        r = await client.get("/agent/threads/personas/catalog", params={"agent": "sales"}, headers=ALICE)
        assert r.json() == [{"id": "pushy", "label": "Pushy"}]
        assert (
            await client.get("/agent/threads/personas/catalog", params={"agent": "x"}, headers=ALICE)
        ).status_code == 404
        assert (await client.get("/agent/threads/personas/catalog")).status_code == 401


@pytest.mark.ref("HTTP-12", "QUOTA-09")
async def test_quota_today_counts_the_callers_tokens() -> None:
    async with asgi_client(make_config()) as (client, service):
        zero = (await client.get("/agent/quota/today", headers=ALICE)).json()
        assert zero["usedTokens"] == 0 and zero["limitTokens"] is None
        r = await client.post("/agent/chat", json={"message": "hi"}, headers=ALICE)
        run = await service.wait_for_run(OBSERVER, r.headers["x-agent-run-id"])
        used = (await client.get("/agent/quota/today", headers=ALICE)).json()
        assert used["usedTokens"] == run.input_tokens + run.output_tokens > 0
        assert (await client.get("/agent/quota/today", headers=BOB)).json()["usedTokens"] == 0
