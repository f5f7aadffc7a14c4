"""The AG-UI client (`@ag-ui/client` 1.0 HttpAgent: runAgent, interrupts + buildResumeArray, connectAgent)
against `POST /agent/ag-ui` on a live app. The client validates event order itself, so a run it
accepts is a well-formed AG-UI stream."""

from __future__ import annotations

from typing import Any

import httpx2

from tests.frontends.conftest import ALICE, BOB, REFUNDS


def types(snap: dict[str, Any]) -> list[str]:
    return [e["type"] for e in snap["events"]]


def assistant_text(snap: dict[str, Any]) -> str:
    return "".join(
        m.get("content") or "" for m in snap["messages"] if m["role"] == "assistant" and "subagentRunId" not in m
    )


def custom(snap: dict[str, Any], name: str) -> list[Any]:
    return [e["value"] for e in snap["events"] if e["type"] == "CUSTOM" and e["name"] == name]


def finished(snap: dict[str, Any]) -> dict[str, Any]:
    [event] = [e for e in snap["events"] if e["type"] == "RUN_FINISHED"]
    return event


async def test_text_run(agui: Any, app_url: Any) -> None:
    [snap] = await agui([{"send": "hello"}], thread_id="t-text")
    assert snap["error"] is None
    assert types(snap)[:2] == ["RUN_STARTED", "CUSTOM"] and types(snap)[-1] == "RUN_FINISHED"
    assert assistant_text(snap) == "Hello there, friend."
    [usage] = custom(snap, "agora.usage")
    assert usage["status"] == "completed" and usage["costUsd"] == 0.0015
    assert finished(snap)["usage"][0]["outputTokens"] == len("Hello there, friend.")
    assert finished(snap).get("outcome", {"type": "success"})["type"] == "success"
    [ours] = custom(snap, "agora.run")
    run = await app_url[1].get_run(ours["runId"])
    assert run.actor_ref == "alice" and run.thread_id == ours["threadId"] != "t-text"


async def test_read_tool_call_and_result(agui: Any) -> None:
    [snap] = await agui([{"send": "lookup order 7"}], thread_id="t-read")
    assert snap["error"] is None
    [call] = [c for m in snap["messages"] for c in m.get("toolCalls") or []]
    assert call["function"]["name"] == "lookup_order" and call["function"]["arguments"] == '{"order_id":7}'
    [result] = [m for m in snap["messages"] if m["role"] == "tool"]
    assert result["toolCallId"] == call["id"] and result["content"] == '{"order_id":7,"status":"shipped"}'
    assert assistant_text(snap) == "Order 7 has shipped."


async def test_interrupt_then_resume_approves(agui: Any, app_url: Any) -> None:
    parked, resumed = await agui([{"send": "refund order 1"}, {"resume": {"approved": True}}], thread_id="t-ok")
    outcome = finished(parked)["outcome"]
    assert outcome["type"] == "interrupt"
    [interrupt] = outcome["interrupts"]
    assert interrupt["reason"] == "tool_approval" and interrupt["toolCallId"].startswith("refund-")
    assert interrupt["responseSchema"]["required"] == ["approved"]
    assert parked["pendingInterrupts"][0]["id"] == interrupt["id"]
    assert resumed["error"] is None and resumed["pendingInterrupts"] == []
    results = [m for m in resumed["messages"] if m["role"] == "tool"]
    assert [r["content"] for r in results] == ['{"refunded":1,"amount":2.5}']
    assert assistant_text(resumed) == "Checking. Refund done."
    assert REFUNDS == [(1, 2.5, "alice")]
    row = await app_url[1].store.get_tool_call(interrupt["metadata"]["runId"], interrupt["toolCallId"])
    assert row.status == "executed" and row.decided_by == "alice"


async def test_resume_with_denial_and_cancel(agui: Any) -> None:
    _, denied = await agui(
        [{"send": "refund order 1"}, {"resume": {"approved": False, "reason": "no"}}], thread_id="t-deny"
    )
    assert denied["error"] is None
    [result] = [m for m in denied["messages"] if m["role"] == "tool"]
    assert '"rejected":true' in result["content"] and '"reason":"no"' in result["content"]
    assert assistant_text(denied).endswith("Refund not done.")
    _, cancelled = await agui([{"send": "refund order 1"}, {"cancel": True}], thread_id="t-cancel")
    assert cancelled["error"] is None
    [result] = [m for m in cancelled["messages"] if m["role"] == "tool"]
    assert "cancelled by the user" in result["content"]
    assert REFUNDS == []


async def test_component_is_a_custom_event(agui: Any) -> None:
    [snap] = await agui([{"send": "chart of sales"}], thread_id="t-chart")
    assert custom(snap, "agora.component") == [{"name": "chart", "data": {"metric": "sales", "points": [1, 2, 3]}}]


async def test_sub_agent_events(agui: Any) -> None:
    [snap] = await agui([{"send": "ask the analyst"}], thread_id="t-agent")
    assert snap["error"] is None
    started = [e for e in snap["events"] if e["type"] == "SUBAGENT_STARTED"]
    assert [e["name"] for e in started] == ["analyst"]
    sub = started[0]["subagentRunId"]
    assert started[0]["parentToolCallId"]
    text = "".join(
        e["delta"] for e in snap["events"] if e["type"] == "TEXT_MESSAGE_CONTENT" and e.get("subagentRunId") == sub
    )
    assert text == "Sales are up 12%."
    assert [e["type"] for e in snap["events"] if e.get("subagentRunId") == sub][-1] == "SUBAGENT_FINISHED"
    assert assistant_text(snap) == "The analyst says sales are up."


async def test_failed_run_is_run_error(agui: Any) -> None:
    [snap] = await agui([{"send": "boom"}], thread_id="t-error")
    assert types(snap)[-1] == "RUN_ERROR" and "server log" in snap["events"][-1]["message"]


async def test_connect_reattaches_to_the_parked_run(agui: Any) -> None:
    await agui([{"send": "refund order 1"}], thread_id="t-connect")
    [snap] = await agui([{"connect": True}], thread_id="t-connect")  # a new client process
    assert snap["error"] is None
    assert finished(snap)["outcome"]["type"] == "interrupt"
    assert snap["pendingInterrupts"][0]["toolCallId"].startswith("refund-")
    assert assistant_text(snap) == "Checking. "
    [empty] = await agui([{"connect": True}], thread_id="t-connect", headers=BOB)
    assert types(empty) == ["RUN_STARTED", "RUN_FINISHED"]  # bob's t-connect is his own, empty


async def test_forged_resumes_are_refused_and_nothing_runs(agui: Any, app_url: Any) -> None:
    [parked] = await agui([{"send": "refund order 1"}], thread_id="t-victim")
    interrupt = finished(parked)["outcome"]["interrupts"][0]
    forge = {"interruptId": interrupt["id"], "payload": {"approved": True}}
    for headers, thread in ((BOB, "t-victim"), (BOB, "t-bob")):
        [snap] = await agui([{"forge": forge}], thread_id=thread, headers=headers)
        assert snap["error"] is not None and "not found" in snap["error"]
    changed = {**forge, "payload": {"approved": True, "arguments": {"order_id": 1, "amount": 999}}}
    [snap] = await agui([{"forge": changed}], thread_id="t-victim")
    assert "arguments" in snap["error"]
    approval = await app_url[1].store.get_approval(interrupt["metadata"]["runId"], interrupt["toolCallId"])
    assert approval.status == "pending" and REFUNDS == []


async def test_edited_history_arguments_are_refused(agui: Any) -> None:
    _, _, edited = await agui(
        [{"send": "refund order 1"}, {"edit_args": {"order_id": 1, "amount": 999}}, {"resume": {"approved": True}}],
        thread_id="t-edit",
    )
    assert edited["error"] is not None and "arguments" in edited["error"]
    assert REFUNDS == []


async def test_second_decision_is_refused(agui: Any) -> None:
    parked, _ = await agui([{"send": "refund order 1"}, {"resume": {"approved": True}}], thread_id="t-twice")
    interrupt = finished(parked)["outcome"]["interrupts"][0]
    [again] = await agui(
        [{"forge": {"interruptId": interrupt["id"], "payload": {"approved": True}}}], thread_id="t-twice"
    )
    assert again["error"] is not None and "already approved" in again["error"]
    assert REFUNDS == [(1, 2.5, "alice")]


async def test_governance_answers_are_json(app_url: Any) -> None:
    url = f"{app_url[0]}/agent/ag-ui"
    body = {
        "threadId": "t-http",
        "runId": "r1",
        "messages": [{"id": "m1", "role": "user", "content": "hi"}],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }
    async with httpx2.AsyncClient(timeout=10) as client:
        ok = await client.post(url, json=body, headers=ALICE)
        assert ok.status_code == 200 and ok.headers["content-type"].startswith("text/event-stream")
        assert (await client.post(url, json=body)).json() == {"error": "unauthorized"}
        assert (
            await client.post(url, json={**body, "forwardedProps": {"agent": "x"}}, headers=ALICE)
        ).status_code == 404
        bad = await client.post(url, json={"threadId": "t-http"}, headers=ALICE)
        assert bad.status_code == 422 and "error" in bad.json()
        last_is_assistant = {**body, "messages": [{"id": "a1", "role": "assistant", "content": "x"}]}
        assert (await client.post(url, json=last_is_assistant, headers=ALICE)).status_code == 422
        theirs = await client.post(url, json={**body, "threadId": ok.headers["x-agent-thread-id"]}, headers=BOB)
        assert theirs.status_code == 403 and theirs.json() == {"error": "forbidden"}
