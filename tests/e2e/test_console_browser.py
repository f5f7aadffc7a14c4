"""The console in Chromium: the run inspector's timeline, and the approvals inbox updating without a reload."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import DemoServer, shot
from .test_demo_browser import ready, send, settled

pytestmark = pytest.mark.browser


def test_the_inbox_updates_without_reload(open_as: Any, demo_server: DemoServer) -> None:
    dash = open_as("carol", "/agent/dashboard/#approvals")
    dash.wait_for_selector("#panel[data-loaded=approvals]")
    dash.wait_for_function("document.body.dataset.live === 'on'")
    before = dash.locator("#panel tbody tr", has_text="refund_order").filter(has_text="1004").count()
    assert before == 0
    chat = open_as("alice")
    ready(chat)
    reply = send(chat, "refund order 1004")
    reply.locator(".tool[data-status=pending_approval]").wait_for()
    row = dash.locator("#panel tbody tr", has_text="refund_order").filter(has_text="1004")
    row.wait_for()  # arrived through the live feed: no reload, no navigation
    badge = dash.locator("#approvals-count")
    assert badge.is_visible() and int(badge.inner_text()) >= 1
    shot(dash, "dashboard-live-inbox", full_page=False)
    row.locator("button.reject").click()
    reply.locator(".tool[data-status=rejected]").wait_for()
    dash.wait_for_function("![...document.querySelectorAll('#panel tbody tr')].some(r => r.innerText.includes('1004'))")


def test_the_inspector_shows_each_step_with_timing_and_approver(open_as: Any, demo_server: DemoServer) -> None:
    chat = open_as("alice")
    ready(chat)
    reply = send(chat, "refund order 1003 and ask the analyst which product sells best")
    reply.locator(".tool[data-status=pending_approval]").wait_for()
    with demo_server.client("carol") as carol:
        pending = [
            a
            for a in carol.get("/agent/governance/approvals/pending").json()
            if a["input"].get("orderId") == 1003 or a["input"].get("order_id") == 1003
        ]
        assert len(pending) == 1
        run_id = pending[0]["runId"]
        r = carol.post("/agent/tool-call/approve", json={"runId": run_id, "toolCallId": pending[0]["toolCallId"]})
        assert r.status_code == 200, r.text
    settled(chat)
    assert demo_server.order(1003)["status"] == "refunded"

    page = open_as("carol", f"/agent/dashboard/#runs/{run_id}")
    page.wait_for_selector(f"#panel[data-loaded='runs/{run_id}']")
    top = page.locator(f".waterfall[data-run='{run_id}'][data-depth='0']")
    steps = top.locator(":scope > details.wf-step")
    kinds = [steps.nth(i).get_attribute("data-kind") for i in range(steps.count())]
    if kinds[0] == "retrieval":  # the demo retrieves help-centre passages first (RAG inject mode)
        kinds = kinds[1:]
    assert kinds[:5] == ["model", "tool", "approval", "tool", "delegation"] and kinds[-1] == "model"
    for i in range(steps.count()):
        assert "+" in steps.nth(i).locator(":scope > summary .wf-time").inner_text()  # offset and duration on every bar
    approval = top.locator(":scope > details.wf-step[data-kind=approval]")
    facts = approval.locator(":scope > .wf-facts").text_content() or ""
    assert "requested by alice" in facts and "decided by carol" in facts and "policy: allowed" in facts
    model = (
        top.locator(":scope > details.wf-step[data-kind=model]").first.locator(":scope > .wf-facts").text_content()
        or ""
    )
    assert " in · " in model and "finish: tool_calls" in model and "latency" in model
    delegation = top.locator(":scope > details.wf-step[data-kind=delegation]")
    nested = delegation.locator(".waterfall[data-depth='1'] details.wf-step")
    assert nested.count() >= 2  # the analyst's own model call and its query_shop
    assert "query_shop" in (delegation.locator(".waterfall[data-depth='1']").text_content() or "")
    approval.locator("summary").click()
    shot(page, "dashboard-run-inspector")


def test_a_non_admin_gets_a_page_that_says_why(open_as: Any) -> None:
    page = open_as("bob", "/agent/dashboard/")
    text = page.inner_text("body")
    assert "for governance admins" in text and "governance_authorize" in text and "{" not in text
    assert page.locator("a", has_text="Back to the chat").count() == 1
