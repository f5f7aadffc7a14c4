"""The AG-UI client (`@ag-ui/client` 1.0 HttpAgent: runAgent, interrupts + buildResumeArray, connectAgent)
against `POST /agent/ag-ui` on a live app. The client validates event order itself, so a run it
accepts is a well-formed AG-UI stream.

One Node process plays every scenario in order (each with a fresh HttpAgent, i.e. a new page); the
tests below read its snapshots and check the server's side through the public thread route."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from tests.frontends.conftest import ALICE, BOB, refunds, run_node, thread_detail


def thread(
    name: str, steps: list[dict[str, Any]], headers: dict[str, str] = ALICE, thread_id: str | None = None
) -> Any:
    return {"name": name, "threadId": thread_id or f"t-{name}", "headers": headers, "steps": steps}


def forge(scenario: str, **payload: Any) -> dict[str, Any]:
    return {"forge_from": {"scenario": scenario, "step": 0, "payload": {"approved": True, **payload}}}


SCENARIOS = [
    thread("text", [{"send": "hello"}]),
    thread("read", [{"send": "lookup order 7"}]),
    thread("approve", [{"send": "refund order 21"}, {"resume": {"approved": True}}]),
    thread("approve-float", [{"send": "refund order 28 in full"}, {"resume": {"approved": True}}]),
    thread("deny", [{"send": "refund order 22"}, {"resume": {"approved": False, "reason": "no"}}]),
    thread("cancel", [{"send": "refund order 23"}, {"cancel": True}]),
    thread("forbidden", [{"send": "refund order 29"}], headers={"x-actor-id": "mallory", "x-actor-role": "member"}),
    thread("chart", [{"send": "chart of sales"}]),
    thread("agent", [{"send": "ask the analyst"}]),
    thread("error", [{"send": "boom"}]),
    thread("park", [{"send": "refund order 24"}]),
    thread("connect", [{"connect": True}], thread_id="t-park"),
    thread("connect-bob", [{"connect": True}], headers=BOB, thread_id="t-park"),
    thread("history", [{"connect": True}], thread_id="t-read"),
    thread("victim", [{"send": "refund order 25"}]),
    thread("forge-same-thread", [forge("victim")], headers=BOB, thread_id="t-victim"),
    thread("forge-own-thread", [forge("victim")], headers=BOB),
    thread("forge-arguments", [forge("victim", arguments={"order_id": 25, "amount": 999})], thread_id="t-victim"),
    thread(
        "edit",
        [{"send": "refund order 26"}, {"edit_args": {"order_id": 26, "amount": 999}}, {"resume": {"approved": True}}],
    ),
    thread("twice", [{"send": "refund order 27"}, {"resume": {"approved": True}}]),
    thread("twice-again", [forge("twice")], thread_id="t-twice"),
]


@pytest.fixture(scope="module")
def runs(node: str, app_url: str) -> dict[str, list[dict[str, Any]]]:
    return run_node(node, "agui.mjs", {"url": f"{app_url}/agent/ag-ui", "scenarios": SCENARIOS})


def types(snap: dict[str, Any]) -> list[str]:
    return [e["type"] for e in snap["events"]]


def assistant_text(snap: dict[str, Any]) -> str:
    mine = [m for m in snap["messages"] if m["role"] == "assistant" and "subagentRunId" not in m]
    return "".join(m.get("content") or "" for m in mine)


def custom(snap: dict[str, Any], name: str) -> list[Any]:
    return [e["value"] for e in snap["events"] if e["type"] == "CUSTOM" and e["name"] == name]


def finished(snap: dict[str, Any]) -> dict[str, Any]:
    [event] = [e for e in snap["events"] if e["type"] == "RUN_FINISHED"]
    return event


def interrupt_of(snap: dict[str, Any]) -> dict[str, Any]:
    outcome = finished(snap)["outcome"]
    assert outcome["type"] == "interrupt"
    [interrupt] = outcome["interrupts"]
    return interrupt


def call_row(url: str, snap: dict[str, Any]) -> dict[str, Any]:
    """The audit row of the run's parked call, from GET /threads/{id}."""
    interrupt = interrupt_of(snap)
    [ours] = custom(snap, "agora.run")
    detail = thread_detail(url, ours["threadId"])
    return next(t for t in detail["toolCalls"] if t["toolCallId"] == interrupt["toolCallId"])


def tool_results(snap: dict[str, Any]) -> list[str]:
    return [m["content"] for m in snap["messages"] if m["role"] == "tool"]


def test_text_run(runs: Any, app_url: str) -> None:
    [snap] = runs["text"]
    assert snap["error"] is None
    assert types(snap)[:2] == ["RUN_STARTED", "CUSTOM"] and types(snap)[-1] == "RUN_FINISHED"
    assert assistant_text(snap) == "Hello there, friend."
    [usage] = custom(snap, "agora.usage")
    assert usage["status"] == "completed" and usage["costUsd"] == 0.0015
    assert finished(snap)["usage"][0]["outputTokens"] == len("Hello there, friend.")
    assert finished(snap).get("outcome", {"type": "success"})["type"] == "success"
    [ours] = custom(snap, "agora.run")
    assert ours["threadId"] != "t-text"  # the client's thread id maps onto ours
    assert [m["content"] for m in thread_detail(app_url, ours["threadId"])["messages"]] == [
        "hello",
        "Hello there, friend.",
    ]


def test_read_tool_call_and_result(runs: Any) -> None:
    [snap] = runs["read"]
    assert snap["error"] is None
    [call] = [c for m in snap["messages"] for c in m.get("toolCalls") or []]
    assert call["function"]["name"] == "lookup_order" and call["function"]["arguments"] == '{"order_id":7}'
    [result] = [m for m in snap["messages"] if m["role"] == "tool"]
    assert result["toolCallId"] == call["id"] and result["content"] == '{"order_id":7,"status":"shipped"}'
    assert assistant_text(snap) == "Order 7 has shipped."


def test_interrupt_then_resume_approves(runs: Any, app_url: str) -> None:
    parked, resumed = runs["approve"]
    interrupt = interrupt_of(parked)
    assert interrupt["reason"] == "tool_approval" and interrupt["toolCallId"].startswith("refund-")
    assert interrupt["responseSchema"]["required"] == ["approved"]
    assert interrupt["metadata"]["input"] == {"order_id": 21, "amount": 2.5}
    assert parked["pendingInterrupts"][0]["id"] == interrupt["id"]
    assert resumed["error"] is None and resumed["pendingInterrupts"] == []
    [decision] = custom(resumed, "agora.decision")
    assert decision["toolCallId"] == interrupt["toolCallId"]
    assert decision["status"] == "approved" and decision["decidedBy"] == "alice"
    assert tool_results(resumed) == ['{"refunded":21,"amount":2.5}']
    assert assistant_text(resumed) == "Checking. Refund done."
    row = call_row(app_url, parked)
    assert row["status"] == "executed" and row["decidedBy"] == "alice"
    assert refunds(21) == [(21, 2.5, "alice")]


def test_resume_of_float_arguments_as_a_javascript_client_sends_them_back(runs: Any) -> None:
    _, resumed = runs["approve-float"]
    assert resumed["error"] is None and tool_results(resumed) == ['{"refunded":28,"amount":3.0}']
    assert refunds(28) == [(28, 3.0, "alice")]


def test_resume_with_denial_and_cancel(runs: Any, app_url: str) -> None:
    denied = runs["deny"][1]
    assert denied["error"] is None
    [result] = tool_results(denied)
    assert '"rejected":true' in result and '"reason":"no"' in result
    assert assistant_text(denied).endswith("Refund not done.")
    assert call_row(app_url, runs["deny"][0])["status"] == "rejected"
    cancelled = runs["cancel"][1]
    assert cancelled["error"] is None and "cancelled by the user" in tool_results(cancelled)[0]
    assert refunds(22) == refunds(23) == []


def test_an_action_the_caller_may_not_run_fails_before_it_parks(runs: Any) -> None:
    [snap] = runs["forbidden"]
    assert snap["error"] is None and snap["pendingInterrupts"] == []
    assert finished(snap).get("outcome", {"type": "success"})["type"] == "success"
    [result] = tool_results(snap)
    assert result.startswith('{"error":') and "refund_order" in result
    assert assistant_text(snap) == "Checking. Refund not done."
    assert refunds(29) == []


def test_component_is_a_custom_event(runs: Any) -> None:
    [snap] = runs["chart"]
    assert custom(snap, "agora.component") == [  # the data's own id is the component id: the second replaces
        {"name": "chart", "data": {"id": "chart-1", "loading": True}, "id": "chart-1"},
        {"name": "chart", "data": {"id": "chart-1", "metric": "sales", "points": [1, 2, 3]}, "id": "chart-1"},
    ]


def test_sub_agent_events(runs: Any) -> None:
    [snap] = runs["agent"]
    assert snap["error"] is None
    started = [e for e in snap["events"] if e["type"] == "SUBAGENT_STARTED"]
    assert [e["name"] for e in started] == ["analyst"]
    sub = started[0]["subagentRunId"]
    assert started[0]["parentToolCallId"]
    contents = [e for e in snap["events"] if e["type"] == "TEXT_MESSAGE_CONTENT" and e.get("subagentRunId") == sub]
    assert "".join(e["delta"] for e in contents) == "Sales are up 12%."
    nested = [e for e in snap["events"] if e["type"].startswith("TOOL_CALL") and e.get("subagentRunId") == sub]
    assert [e["type"] for e in nested] == ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT"]
    assert nested[0]["toolCallName"] == "lookup_order"
    assert [e["type"] for e in snap["events"] if e.get("subagentRunId") == sub][-1] == "SUBAGENT_FINISHED"
    assert assistant_text(snap) == "The analyst says sales are up."


def test_failed_run_is_run_error(runs: Any) -> None:
    [snap] = runs["error"]
    assert types(snap)[-1] == "RUN_ERROR" and "server log" in snap["events"][-1]["message"]


def test_connect_reattaches_to_the_parked_run(runs: Any) -> None:
    [snap] = runs["connect"]  # a new client process, connectAgent
    assert snap["error"] is None
    assert interrupt_of(snap)["id"] == interrupt_of(runs["park"][0])["id"]
    assert snap["pendingInterrupts"][0]["toolCallId"].startswith("refund-")
    assert assistant_text(snap) == "Checking. "
    # The history comes from our store (MESSAGES_SNAPSHOT), the run in flight from its replay.
    assert [(m["role"], m.get("content")) for m in snap["messages"]] == [
        ("user", "refund order 24"),
        ("assistant", "Checking. "),
    ]
    bob = runs["connect-bob"][0]  # bob's t-park is his own, empty
    assert types(bob) == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"] and bob["messages"] == []


def test_connect_without_a_run_in_flight_sends_the_stored_history(runs: Any) -> None:
    [snap] = runs["history"]  # a new page for the finished "lookup" thread
    assert snap["error"] is None
    assert types(snap) == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    assert [m["role"] for m in snap["messages"]] == ["user", "assistant", "tool", "assistant"]
    [call] = snap["messages"][1]["toolCalls"]
    assert call["function"] == {"name": "lookup_order", "arguments": '{"order_id":7}'}
    assert snap["messages"][2]["content"] == '{"order_id":7,"status":"shipped"}'
    assert snap["messages"][3]["content"] == "Order 7 has shipped."


def test_forged_resumes_are_refused_and_nothing_runs(runs: Any, app_url: str) -> None:
    for name in ("forge-same-thread", "forge-own-thread"):
        [snap] = runs[name]
        assert snap["error"] is not None and "not found" in snap["error"], name
    [changed] = runs["forge-arguments"]
    assert changed["error"] is not None and "arguments" in changed["error"]
    assert call_row(app_url, runs["victim"][0])["status"] == "pending_approval"
    assert refunds(25) == []


def test_edited_history_arguments_are_refused(runs: Any, app_url: str) -> None:
    refused = runs["edit"][2]
    assert refused["error"] is not None and "arguments" in refused["error"]
    assert call_row(app_url, runs["edit"][0])["status"] == "pending_approval"
    assert refunds(26) == []


def test_second_decision_is_refused(runs: Any) -> None:
    [again] = runs["twice-again"]
    assert again["error"] is not None and "already approved" in again["error"]
    assert refunds(27) == [(27, 2.5, "alice")]


def test_governance_answers_are_json(app_url: str) -> None:
    url = f"{app_url}/agent/ag-ui"
    body = {
        "threadId": "t-http",
        "runId": "r1",
        "messages": [{"id": "m1", "role": "user", "content": "hi"}],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }
    with httpx2.Client(timeout=10) as client:
        ok = client.post(url, json=body, headers=ALICE)
        assert ok.status_code == 200 and ok.headers["content-type"].startswith("text/event-stream")
        assert client.post(url, json=body).json() == {"error": "unauthorized"}
        unknown_agent = {**body, "forwardedProps": {"agent": "x"}}
        assert client.post(url, json=unknown_agent, headers=ALICE).status_code == 404
        bad = client.post(url, json={"threadId": "t-http"}, headers=ALICE)
        assert bad.status_code == 422 and "error" in bad.json()
        last_is_assistant = {**body, "messages": [{"id": "a1", "role": "assistant", "content": "x"}]}
        assert client.post(url, json=last_is_assistant, headers=ALICE).status_code == 422
        theirs = client.post(url, json={**body, "threadId": ok.headers["x-agent-thread-id"]}, headers=BOB)
        assert theirs.status_code == 403 and theirs.json() == {"error": "forbidden"}
        bad_resume = {**body, "resume": [{"interruptId": "nope", "status": "resolved", "payload": {}}]}
        assert client.post(url, json=bad_resume, headers=ALICE).status_code == 422


def test_connect_with_last_event_id_resumes_after_that_frame(runs: Any, app_url: str) -> None:
    assert runs["park"]  # "t-park" is parked: frame 1 is its text, frame 2 the call awaiting approval
    body = {"threadId": "t-park", "runId": "r-again", "messages": []}
    response = httpx2.post(f"{app_url}/agent/ag-ui/connect", json=body, headers=ALICE | {"Last-Event-ID": "1"})
    assert response.status_code == 200
    assert [line for line in response.text.splitlines() if line.startswith("id: ")] == ["id: 2"]
    assert "TEXT_MESSAGE_CONTENT" not in response.text
    assert '"type":"TOOL_CALL_START"' in response.text and '"type":"interrupt"' in response.text
