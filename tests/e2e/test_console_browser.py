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


def test_budgets_are_edited_in_the_quota_panel_and_refuse_the_next_chat(open_as: Any, demo_server: DemoServer) -> None:
    with demo_server.client("bob") as bob:
        assert bob.post("/agent/chat", json={"message": "hello"}).status_code == 200  # bob has used something today
    page = open_as("carol", "/agent/dashboard/#quota")
    page.wait_for_selector("#panel[data-loaded=quota]")
    usage = page.locator("#panel section", has_text="Use against budgets")
    usage.locator("tbody tr", has_text="bob").first.wait_for()
    form = page.locator("form.budget-form")
    form.locator("[name=key]").fill("bob")
    form.locator("[name=tokens]").fill("1")
    form.locator("[name=thresholds]").fill("150%")
    form.locator("button[type=submit]").click()
    status = page.locator("#budget-status")
    status.locator(".banner.error").wait_for()  # the server's 422, in words
    assert "each threshold is a fraction" in status.inner_text()

    form.locator("[name=thresholds]").fill("80%")
    form.locator("button[type=submit]").click()
    rules = page.locator("#panel section", has_text="Budget rules")
    rules.locator("tbody tr", has_text="bob").wait_for()
    assert "1 token per day" in rules.locator("tbody tr", has_text="bob").inner_text()
    shot(page, "dashboard-quota-budgets")
    try:
        with demo_server.client("bob") as bob:
            refused = bob.post("/agent/chat", json={"message": "hello again"})
            assert refused.status_code == 429 and refused.json()["detail"]["source"] == "rule:actor:bob"
    finally:
        page.on("dialog", lambda dialog: dialog.accept())
        rules.locator("tbody tr", has_text="bob").locator("button.danger").click()
        page.wait_for_function(
            "![...document.querySelectorAll('#panel section')].some(s => s.innerText.includes('Budget rules')"
            " && [...s.querySelectorAll('tbody tr')].some(r => r.innerText.includes('bob')))"
        )
    with demo_server.client("bob") as bob:
        assert bob.post("/agent/chat", json={"message": "and again"}).status_code == 200  # back to the default


def test_admins_get_a_link_from_the_chat_to_the_run_inspector(open_as: Any) -> None:
    chat = open_as("carol")
    ready(chat)
    chat.wait_for_selector("body[data-admin=yes]")
    reply = send(chat, "hello")
    settled(chat)
    run_id = reply.get_attribute("data-run-id")
    assert run_id
    link = reply.locator("a.inspect-run")
    assert link.get_attribute("href") == f"/agent/dashboard/#runs/{run_id}"

    member = open_as("alice")
    ready(member)
    member.wait_for_selector("body[data-admin=no]")
    mine = send(member, "hello")
    settled(member)
    assert mine.get_attribute("data-run-id") and mine.locator("a.inspect-run").count() == 0
