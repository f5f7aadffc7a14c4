"""The AI SDK's own client (`ai` 6: DefaultChatTransport, readUIMessageStream, AbstractChat with
addToolApprovalResponse) against `POST /agent/ai-sdk/chat` on a live app."""

from __future__ import annotations

from typing import Any

import httpx2

from tests.frontends.conftest import ALICE, BOB, REFUNDS


def tool_part(message: dict[str, Any], name: str) -> dict[str, Any]:
    return next(p for p in message["parts"] if p["type"] == f"tool-{name}")


def text_of(message: dict[str, Any]) -> str:
    return "".join(p["text"] for p in message["parts"] if p["type"] == "text")


def assistant(snapshot: dict[str, Any]) -> dict[str, Any]:
    return next(m for m in reversed(snapshot["messages"]) if m["role"] == "assistant")


async def test_text_with_usage_and_cost_in_metadata(ai_sdk: Any, app_url: Any) -> None:
    [snap] = await ai_sdk([{"stream": "hello"}], chat_id="c-text")
    message = snap["message"]
    assert text_of(message) == "Hello there, friend."
    assert [p["state"] for p in message["parts"] if p["type"] == "text"] == ["done"]
    meta = message["metadata"]
    assert meta["status"] == "completed" and meta["costUsd"] == 0.0015
    assert meta["usage"]["outputTokens"] == len("Hello there, friend.")
    assert message["id"] == meta["runId"]
    service = app_url[1]
    run = await service.get_run(meta["runId"])
    assert run.thread_id == meta["threadId"] and run.actor_ref == "alice"


async def test_read_tool_output(ai_sdk: Any) -> None:
    [snap] = await ai_sdk([{"send": "lookup order 7"}], chat_id="c-read")
    assert snap["status"] == "ready" and snap["error"] is None
    message = assistant(snap)
    part = tool_part(message, "lookup_order")
    assert part["state"] == "output-available"
    assert part["input"] == {"order_id": 7}
    assert part["output"] == {"order_id": 7, "status": "shipped"}
    assert text_of(message) == "Order 7 has shipped."


async def test_action_parks_then_client_approval_executes_it(ai_sdk: Any, app_url: Any) -> None:
    parked, approved = await ai_sdk([{"send": "refund order 1"}, {"approve": True}], chat_id="c-approve")
    part = tool_part(assistant(parked), "refund_order")
    assert part["state"] == "approval-requested" and part["input"] == {"order_id": 1, "amount": 2.5}
    assert assistant(parked)["metadata"]["status"] == "awaiting_approval"
    assert REFUNDS == [(1, 2.5, "alice")]
    message = assistant(approved)
    assert len([m for m in approved["messages"] if m["role"] == "assistant"]) == 1  # the same message goes on
    part = tool_part(message, "refund_order")
    assert part["state"] == "output-available" and part["output"] == {"refunded": 1, "amount": 2.5}
    assert text_of(message) == "Checking. Refund done."
    assert message["metadata"]["status"] == "completed"
    service = app_url[1]
    row = await service.store.get_tool_call(message["id"], part["toolCallId"])
    assert row.status == "executed" and row.decided_by == "alice"


async def test_denial_streams_output_denied_and_nothing_runs(ai_sdk: Any, app_url: Any) -> None:
    _, denied = await ai_sdk([{"send": "refund order 1"}, {"approve": False, "reason": "not today"}], chat_id="c-deny")
    message = assistant(denied)
    part = tool_part(message, "refund_order")
    assert part["state"] == "output-denied"
    assert text_of(message) == "Checking. Refund not done."
    assert REFUNDS == []
    row = await app_url[1].store.get_tool_call(message["id"], part["toolCallId"])
    assert row.status == "rejected" and row.error == "not today" and row.decided_by == "alice"


async def test_component_is_a_data_part(ai_sdk: Any) -> None:
    [snap] = await ai_sdk([{"send": "chart of sales"}], chat_id="c-chart")
    message = assistant(snap)
    [chart] = [p for p in message["parts"] if p["type"] == "data-chart"]
    assert chart["data"] == {"metric": "sales", "points": [1, 2, 3]}
    assert tool_part(message, "show_chart")["state"] == "output-available"
    assert text_of(message) == "Here is the chart."


async def test_sub_agent_text_is_one_growing_data_part(ai_sdk: Any) -> None:
    [snap] = await ai_sdk([{"send": "ask the analyst"}], chat_id="c-agent")
    message = assistant(snap)
    [agent] = [p for p in message["parts"] if p["type"] == "data-agent"]
    assert agent["data"] == {"agent": "analyst", "text": "Sales are up 12%."}
    assert tool_part(message, "ask_analyst")["output"] == {"text": "Sales are up 12%."}
    assert text_of(message) == "The analyst says sales are up."


async def test_failed_run_is_an_error_chunk(ai_sdk: Any) -> None:
    [snap] = await ai_sdk([{"send": "boom"}], chat_id="c-error")
    assert snap["status"] == "error"
    assert "server log" in snap["error"]  # a non-agora exception's text stays in the log (not debug)


async def test_reattach_replays_the_parked_run_then_204_when_done(ai_sdk: Any) -> None:
    await ai_sdk([{"send": "refund order 1"}], chat_id="c-resume")
    # A fresh page (a new client process) re-attaches with the AI SDK's reconnectToStream.
    [resumed] = await ai_sdk([{"reconnect": True}], chat_id="c-resume")
    part = tool_part(resumed["message"], "refund_order")
    assert part["state"] == "approval-requested"
    assert text_of(resumed["message"]) == "Checking. "
    [other] = await ai_sdk([{"reconnect": True}], chat_id="c-resume", headers=BOB)
    assert other["message"] is None  # bob's "c-resume" is his own (empty) chat, never alice's
    [nothing] = await ai_sdk([{"reconnect": True}], chat_id="c-never-used")
    assert nothing["message"] is None and nothing.get("thrown") is None


async def test_forged_approval_for_another_users_call_is_refused(ai_sdk: Any, app_url: Any) -> None:
    [parked] = await ai_sdk([{"send": "refund order 1"}], chat_id="c-victim")
    part = tool_part(assistant(parked), "refund_order")
    forge = {
        "approvalId": part["approval"]["id"],
        "toolCallId": part["toolCallId"],
        "toolName": "refund_order",
        "input": part["input"],
    }
    for headers, chat in ((BOB, "c-victim"), (BOB, "c-bob"), ({**BOB, "x-actor-role": "admin"}, "c-bob")):
        [snap] = await ai_sdk([{"forge": forge}], chat_id=chat, headers=headers)
        assert snap["status"] == "error" and '"error"' in snap["error"] and "not found" in snap["error"]
    approval = await app_url[1].store.get_approval(assistant(parked)["id"], part["toolCallId"])
    assert approval.status == "pending" and REFUNDS == []


async def test_changed_argument_is_refused(ai_sdk: Any, app_url: Any) -> None:
    parked, _, snap = await ai_sdk(
        [{"send": "refund order 1"}, {"edit_input": {"order_id": 1, "amount": 999}}, {"approve": True}],
        chat_id="c-edit",
    )
    assert snap["status"] == "error" and "arguments" in snap["error"]
    message = assistant(parked)
    approval = await app_url[1].store.get_approval(message["id"], tool_part(message, "refund_order")["toolCallId"])
    assert approval.status == "pending" and REFUNDS == []


async def test_second_decision_is_refused(ai_sdk: Any, app_url: Any) -> None:
    parked, _ = await ai_sdk([{"send": "refund order 1"}, {"approve": True}], chat_id="c-twice")
    part = tool_part(assistant(parked), "refund_order")
    forge = {
        "approvalId": part["approval"]["id"],
        "toolCallId": part["toolCallId"],
        "toolName": "refund_order",
        "input": part["input"],
    }
    [again] = await ai_sdk([{"forge": forge}], chat_id="c-twice")
    assert again["status"] == "error" and "already approved" in again["error"]
    assert REFUNDS == [(1, 2.5, "alice")]  # executed once


async def test_governance_answers_are_json_before_any_stream(app_url: Any) -> None:
    url = f"{app_url[0]}/agent/ai-sdk/chat"
    body = {"id": "c-http", "messages": [{"id": "m1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}]}
    async with httpx2.AsyncClient(timeout=10) as client:
        ok = await client.post(url, json=body, headers=ALICE)
        assert ok.status_code == 200 and ok.headers["x-vercel-ai-ui-message-stream"] == "v1"
        assert ok.text.rstrip().endswith("data: [DONE]")
        assert (await client.post(url, json=body)).json() == {"error": "unauthorized"}
        assert (await client.post(url, json={**body, "agent": "nope"}, headers=ALICE)).status_code == 404
        bad = await client.post(url, json={"id": "c-http", "messages": []}, headers=ALICE)
        assert bad.status_code == 422 and "error" in bad.json()
        thread_id = ok.headers["x-agent-thread-id"]
        theirs = await client.post(url, json={**body, "id": thread_id}, headers=BOB)
        assert theirs.status_code == 403 and theirs.json() == {"error": "forbidden"}
        resumed = await client.get(f"{url}/c-http/stream", headers=ALICE)
        assert resumed.status_code == 204
