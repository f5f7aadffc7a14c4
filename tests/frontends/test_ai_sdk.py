"""The AI SDK's own client (`ai` 6: DefaultChatTransport, readUIMessageStream, AbstractChat with
addToolApprovalResponse) against `POST /agent/ai-sdk/chat` on a live app.

One Node process plays every scenario in order (each with a fresh client, i.e. a new page); the tests
below read its snapshots and check the server's side through the public thread route."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from tests.frontends.conftest import ALICE, BOB, refunds, run_node, thread_detail

ADMIN_BOB = {**BOB, "x-actor-role": "admin"}
MEMBER = {"x-actor-id": "mallory", "x-actor-role": "member"}


def chat(name: str, steps: list[dict[str, Any]], headers: dict[str, str] = ALICE, chat_id: str | None = None) -> Any:
    return {"name": name, "chatId": chat_id or f"c-{name}", "headers": headers, "steps": steps}


SCENARIOS = [
    chat("text", [{"stream": "hello"}]),
    chat("read", [{"send": "lookup order 7"}]),
    chat("approve", [{"send": "refund order 11"}, {"approve": True}]),
    chat("approve-float", [{"send": "refund order 18 in full"}, {"approve": True}]),
    chat("deny", [{"send": "refund order 12"}, {"approve": False, "reason": "not today"}]),
    chat("forbidden", [{"send": "refund order 19"}], headers=MEMBER),
    chat("chart", [{"send": "chart of sales"}]),
    chat("agent", [{"send": "ask the analyst"}]),
    chat("error", [{"send": "boom"}]),
    chat("park", [{"send": "refund order 13"}]),
    chat("resume", [{"reconnect": True}], chat_id="c-park"),
    chat("resume-bob", [{"reconnect": True}], headers=BOB, chat_id="c-park"),
    chat("resume-none", [{"reconnect": True}]),
    chat("park2", [{"send": "refund order 17"}]),
    chat("reload", [{"load": True}, {"approve": True}], chat_id="c-park2"),
    chat("reload-bob", [{"load": True}], headers=BOB, chat_id="c-park2"),
    chat("victim", [{"send": "refund order 14"}]),
    chat("forge-same-chat", [{"forge_from": {"scenario": "victim", "step": 0}}], headers=BOB, chat_id="c-victim"),
    chat("forge-own-chat", [{"forge_from": {"scenario": "victim", "step": 0}}], headers=BOB),
    chat("forge-admin", [{"forge_from": {"scenario": "victim", "step": 0}}], headers=ADMIN_BOB),
    chat("edit", [{"send": "refund order 15"}, {"edit_input": {"order_id": 15, "amount": 999}}, {"approve": True}]),
    chat("twice", [{"send": "refund order 16"}, {"approve": True}]),
    chat("twice-again", [{"forge_from": {"scenario": "twice", "step": 0}}], chat_id="c-twice"),
]


@pytest.fixture(scope="module")
def runs(node: str, app_url: str) -> dict[str, list[dict[str, Any]]]:
    return run_node(node, "ai_sdk.mjs", {"api": f"{app_url}/agent/ai-sdk/chat", "scenarios": SCENARIOS})


def tool_part(message: dict[str, Any], name: str) -> dict[str, Any]:
    return next(p for p in message["parts"] if p["type"] == f"tool-{name}")


def text_of(message: dict[str, Any]) -> str:
    return "".join(p["text"] for p in message["parts"] if p["type"] == "text")


def assistant(snapshot: dict[str, Any]) -> dict[str, Any]:
    return next(m for m in reversed(snapshot["messages"]) if m["role"] == "assistant")


def call_row(url: str, message: dict[str, Any], name: str) -> dict[str, Any]:
    """The audit row of the message's tool call, from GET /threads/{id}."""
    call_id = tool_part(message, name)["toolCallId"]
    detail = thread_detail(url, message["metadata"]["threadId"])
    return next(t for t in detail["toolCalls"] if t["toolCallId"] == call_id)


def test_text_with_usage_and_cost_in_metadata(runs: Any, app_url: str) -> None:
    [snap] = runs["text"]
    message = snap["message"]
    assert text_of(message) == "Hello there, friend."
    assert [p["state"] for p in message["parts"] if p["type"] == "text"] == ["done"]
    meta = message["metadata"]
    assert meta["status"] == "completed" and meta["costUsd"] == 0.0015
    assert meta["usage"]["outputTokens"] == len("Hello there, friend.")
    assert message["id"] == meta["runId"]
    detail = thread_detail(app_url, meta["threadId"])
    assert [m["content"] for m in detail["messages"]] == ["hello", "Hello there, friend."]


def test_read_tool_output(runs: Any) -> None:
    [snap] = runs["read"]
    assert snap["status"] == "ready" and snap["error"] is None
    message = assistant(snap)
    part = tool_part(message, "lookup_order")
    assert part["state"] == "output-available"
    assert part["input"] == {"order_id": 7}
    assert part["output"] == {"order_id": 7, "status": "shipped"}
    assert text_of(message) == "Order 7 has shipped."


def test_action_parks_then_client_approval_executes_it(runs: Any, app_url: str) -> None:
    parked, approved = runs["approve"]
    part = tool_part(assistant(parked), "refund_order")
    assert part["state"] == "approval-requested" and part["input"] == {"order_id": 11, "amount": 2.5}
    assert assistant(parked)["metadata"]["status"] == "awaiting_approval"
    message = assistant(approved)
    assert [m["role"] for m in approved["messages"]] == ["user", "assistant"]  # the same message went on
    part = tool_part(message, "refund_order")
    assert part["state"] == "output-available" and part["output"] == {"refunded": 11, "amount": 2.5}
    assert text_of(message) == "Checking. Refund done."
    assert message["metadata"]["status"] == "completed"
    [decision] = message["metadata"]["decisions"]  # who decided, in the stream itself
    assert decision["toolCallId"] == part["toolCallId"]
    assert decision["status"] == "approved" and decision["decidedBy"] == "alice" and decision["decidedAt"]
    row = call_row(app_url, message, "refund_order")
    assert row["status"] == "executed" and row["decidedBy"] == "alice"
    assert refunds(11) == [(11, 2.5, "alice")]


def test_approval_of_float_arguments_as_a_javascript_client_sends_them_back(runs: Any) -> None:
    parked, approved = runs["approve-float"]
    assert tool_part(assistant(parked), "refund_order")["input"] == {"order_id": 18, "amount": 3}
    assert tool_part(assistant(approved), "refund_order")["state"] == "output-available"
    assert refunds(18) == [(18, 3.0, "alice")]


def test_denial_streams_output_denied_and_nothing_runs(runs: Any, app_url: str) -> None:
    message = assistant(runs["deny"][1])
    assert tool_part(message, "refund_order")["state"] == "output-denied"
    assert text_of(message) == "Checking. Refund not done."
    row = call_row(app_url, message, "refund_order")
    assert row["status"] == "rejected" and row["error"] == "not today" and row["decidedBy"] == "alice"
    assert refunds(12) == []


def test_an_action_the_caller_may_not_run_fails_before_it_parks(runs: Any) -> None:
    message = assistant(runs["forbidden"][0])
    part = tool_part(message, "refund_order")
    assert part["state"] == "output-error" and "approval" not in part
    assert "refund_order" in part["errorText"]
    assert text_of(message) == "Checking. Refund not done."
    assert refunds(19) == []


def test_component_is_a_data_part_replaced_by_id(runs: Any) -> None:
    message = assistant(runs["chart"][0])
    [chart] = [p for p in message["parts"] if p["type"] == "data-chart"]  # the second replaced the first
    assert chart["id"] == "chart-1" and chart["data"] == {"id": "chart-1", "metric": "sales", "points": [1, 2, 3]}
    assert tool_part(message, "show_chart")["state"] == "output-available"
    assert text_of(message) == "Here is the chart."


def test_sub_agent_text_is_one_growing_data_part(runs: Any) -> None:
    message = assistant(runs["agent"][0])
    [agent] = [p for p in message["parts"] if p["type"] == "data-agent"]
    assert agent["data"] == {"agent": "analyst", "text": "Sales are up 12%."}
    assert tool_part(message, "ask_analyst")["output"] == {"text": "Sales are up 12%."}
    nested = tool_part(message, "lookup_order")  # the sub-agent's own call, titled with its name
    assert nested["title"] == "analyst: lookup_order" and nested["output"] == {"order_id": 9, "status": "shipped"}
    assert text_of(message) == "The analyst says sales are up."


def test_failed_run_is_an_error_chunk(runs: Any) -> None:
    [snap] = runs["error"]
    assert snap["status"] == "error"
    assert "server log" in snap["error"]  # a non-agora exception's text stays in the log (not debug)


def test_reattach_replays_the_parked_run(runs: Any) -> None:
    [resumed] = runs["resume"]  # a fresh page re-attaches with the AI SDK's reconnectToStream
    assert tool_part(resumed["message"], "refund_order")["state"] == "approval-requested"
    assert text_of(resumed["message"]) == "Checking. "
    assert resumed["message"]["id"] == assistant(runs["park"][0])["id"]
    assert runs["resume-bob"][0]["message"] is None  # bob's "c-park" is his own (empty) chat, never alice's
    assert runs["resume-none"][0]["message"] is None and "thrown" not in runs["resume-none"][0]


def test_reloaded_history_comes_from_our_store_and_its_approval_works(runs: Any, app_url: str) -> None:
    loaded, approved = runs["reload"]
    assert [m["role"] for m in loaded["messages"]] == ["user", "assistant"]
    parked = assistant(runs["park2"][0])
    history = assistant(loaded)
    assert history["id"] == parked["id"] and text_of(history) == "Checking. "
    assert tool_part(history, "refund_order")["state"] == "approval-requested"
    assert tool_part(history, "refund_order")["approval"] == tool_part(parked, "refund_order")["approval"]
    message = assistant(approved)
    assert tool_part(message, "refund_order")["state"] == "output-available"
    assert text_of(message) == "Checking. Refund done."
    assert refunds(17) == [(17, 2.5, "alice")]
    assert runs["reload-bob"][0]["messages"] == []  # bob's "c-park2" is his own, empty


def test_forged_approval_for_another_users_call_is_refused(runs: Any, app_url: str) -> None:
    for name in ("forge-same-chat", "forge-own-chat", "forge-admin"):
        [snap] = runs[name]
        assert snap["status"] == "error", name
        assert '"error"' in snap["error"] and "not found" in snap["error"], snap["error"]
    message = assistant(runs["victim"][0])
    assert call_row(app_url, message, "refund_order")["status"] == "pending_approval"
    assert refunds(14) == []


def test_changed_argument_is_refused(runs: Any, app_url: str) -> None:
    parked, _, refused = runs["edit"]
    assert refused["status"] == "error" and "arguments" in refused["error"]
    assert call_row(app_url, assistant(parked), "refund_order")["status"] == "pending_approval"
    assert refunds(15) == []


def test_second_decision_is_refused(runs: Any) -> None:
    [again] = runs["twice-again"]
    assert again["status"] == "error" and "already approved" in again["error"]
    assert refunds(16) == [(16, 2.5, "alice")]  # executed once


def test_governance_answers_are_json_before_any_stream(app_url: str) -> None:
    url = f"{app_url}/agent/ai-sdk/chat"
    body = {"id": "c-http", "messages": [{"id": "m1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}]}
    with httpx2.Client(timeout=10) as client:
        ok = client.post(url, json=body, headers=ALICE)
        assert ok.status_code == 200 and ok.headers["x-vercel-ai-ui-message-stream"] == "v1"
        assert ok.text.rstrip().endswith("data: [DONE]")
        assert client.post(url, json=body).json() == {"error": "unauthorized"}
        assert client.post(url, json={**body, "agent": "nope"}, headers=ALICE).status_code == 404
        bad = client.post(url, json={"id": "c-http", "messages": []}, headers=ALICE)
        assert bad.status_code == 422 and "error" in bad.json()
        regenerate = client.post(url, json={**body, "trigger": "regenerate-message"}, headers=ALICE)
        assert regenerate.status_code == 422
        theirs = client.post(url, json={**body, "id": ok.headers["x-agent-thread-id"]}, headers=BOB)
        assert theirs.status_code == 403 and theirs.json() == {"error": "forbidden"}
        assert client.get(f"{url}/c-http/stream", headers=ALICE).status_code == 204
        assert client.get(f"{url}/c-http/stream", headers=ALICE | {"Last-Event-ID": "x"}).status_code == 422


def test_reattach_with_last_event_id_resumes_after_that_frame(runs: Any, app_url: str) -> None:
    assert runs["park"]  # "c-park" is parked: frame 1 is its text, frame 2 the call awaiting approval
    response = httpx2.get(f"{app_url}/agent/ai-sdk/chat/c-park/stream", headers=ALICE | {"Last-Event-ID": "1"})
    assert response.status_code == 200
    ids = [line for line in response.text.splitlines() if line.startswith("id: ")]
    assert ids == ["id: 2"]
    assert '"type":"text-delta"' not in response.text
    assert '"type":"tool-approval-request"' in response.text and '"finishReason":"tool-calls"' in response.text
