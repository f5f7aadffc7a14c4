"""Both protocols refuse an exhausted budget with the chat route's 429 JSON body, before any stream opens."""

from __future__ import annotations

from agora_agent.actors import Actor
from agora_agent.governance.quota import Budget
from agora_agent.testing.helpers import OBSERVER
from tests.web.conftest import ALICE, asgi_client, make_config


async def test_over_budget_is_429_json_on_both_protocols_and_stores_nothing() -> None:
    config = make_config(budget=Budget(tokens_per_actor=5, reserve_tokens=1))
    ai_sdk = {"id": "c1", "messages": [{"id": "m1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}]}
    agui = {"threadId": "t1", "runId": "r1", "messages": [{"id": "m1", "role": "user", "content": "hi"}]}
    async with asgi_client(config) as (client, service):
        first = await client.post("/agent/ai-sdk/chat", json=ai_sdk, headers=ALICE)
        assert first.status_code == 200
        await service.wait_for_run(OBSERVER, first.headers["x-agent-run-id"])
        thread_id = first.headers["x-agent-thread-id"]
        before = len(await service.store.list_messages(thread_id))
        for path, body in (("/agent/ai-sdk/chat", ai_sdk), ("/agent/ag-ui", agui)):
            refused = await client.post(path, json=body, headers=ALICE)
            assert refused.status_code == 429, path
            assert refused.headers["content-type"].startswith("application/json")
            assert "budget" in refused.json()["error"].lower() or "quota" in refused.json()["error"].lower()
        assert len(await service.store.list_messages(thread_id)) == before
        assert [t.thread.id for t in await service.list_threads(Actor(id="alice"))] == [thread_id]  # no new thread
