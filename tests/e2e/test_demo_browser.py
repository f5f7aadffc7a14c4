"""The demo in a real browser: chat, streaming, approvals, components, re-attach, dashboard, screenshots."""

from __future__ import annotations

from typing import Any

import pytest

from agora_agent.demo.model import HELP, LONG_STORY
from tests.e2e.conftest import DemoServer, shot

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def ready(page: Any) -> None:
    page.wait_for_selector("body[data-ready=true]")


def send(page: Any, text: str) -> Any:
    """Send a message; returns the locator of the reply it starts."""
    before = page.locator(".msg.assistant").count()
    page.fill("#input", text)
    page.press("#input", "Enter")
    page.wait_for_function(f"document.querySelectorAll('.msg.assistant').length > {before}")
    return page.locator(".msg.assistant").nth(before)


def settled(page: Any) -> None:
    """Wait until no reply is streaming."""
    page.wait_for_function(
        "!document.querySelector('.msg.assistant.streaming') && !document.getElementById('send').disabled"
    )


def reply_text(reply: Any) -> str:
    return " ".join(t.strip() for t in reply.locator(".body > .text").all_inner_texts())


@pytest.mark.ref("SSE-03", "CLIENT-02")
def test_a_message_streams_its_reply_word_by_word(open_as: Any) -> None:
    page = open_as("alice")
    ready(page)
    assert "Demo model" in page.inner_text("#model-badge")
    reply = send(page, "hello")
    # While streaming, the reply holds a strict prefix of the final text: it arrived in pieces.
    page.wait_for_function(
        "(() => { const m = document.querySelector('.msg.assistant.streaming .text');"
        " return m && m.textContent.length > 0; })()"
    )
    partial = reply.locator(".text").first.inner_text()
    settled(page)
    final = reply_text(reply)
    assert final == HELP
    assert 0 < len(partial) < len(final) and final.startswith(partial.strip())
    assert page.errors == []


@pytest.mark.ref("UI-01", "UI-02", "UI-05")
def test_components_render_a_table_and_a_chart(open_as: Any) -> None:
    page = open_as("alice")
    ready(page)
    reply = send(page, "show my orders")
    settled(page)
    table = reply.locator("figure.data-table")
    assert table.locator("tbody tr").count() == 12  # acme's orders only: tenant-scoped
    assert "globex" not in table.inner_text().lower()
    # the first card is the inject-mode `retrieve` step (help centre), then the tool the model called
    assert reply.locator(".tool[data-status=executed] .tool-name").all_inner_texts() == ["retrieve", "show_orders"]
    reply = send(page, "chart sales")
    settled(page)
    assert reply.locator("figure.chart svg rect.bar").count() == 4  # one bar per acme product
    reply = send(page, "refund order 1009")
    reply.locator(".tool[data-status=pending_approval]").wait_for()
    shot(page, "chat-components", full_page=False)  # a table, a chart and a pending approval (docs/)
    reply.locator("button.reject").click()
    settled(page)


@pytest.mark.ref("HTTP-05", "TOOL-30")
def test_approving_a_refund_runs_it_and_changes_the_row(open_as: Any, demo_server: DemoServer) -> None:
    assert demo_server.order(1002)["status"] == "shipped"
    page = open_as("alice")
    ready(page)
    reply = send(page, "refund order 1002 because it arrived broken")
    card = reply.locator(".tool[data-status=pending_approval]")
    card.wait_for()
    assert "order_id=1002" in card.locator(".tool-args").inner_text()
    assert demo_server.order(1002)["status"] == "shipped"  # nothing happens before the approval
    shot(page, "chat-pending-approval", full_page=False)
    card.locator("button.approve").click()
    reply.locator(".tool[data-status=executed]", has_text="refund_order").wait_for()
    settled(page)
    assert "Done: order 1002 is refunded ($179.0)." in reply_text(reply)
    row = demo_server.order(1002)
    assert row["status"] == "refunded"
    assert row["refunded_by"] == "alice"
    assert row["refund_reason"] == "it arrived broken"
    shot(page, "chat", full_page=False)


@pytest.mark.ref("HTTP-06")
def test_rejecting_a_refund_leaves_the_row_alone(open_as: Any, demo_server: DemoServer) -> None:
    page = open_as("alice")
    ready(page)
    reply = send(page, "refund order 1005")
    card = reply.locator(".tool[data-status=pending_approval]")
    card.locator("button.reject").click()
    reply.locator(".tool[data-status=rejected]").wait_for()
    settled(page)
    assert "was not carried out" in reply_text(reply)
    assert demo_server.order(1005)["status"] == "paid"


def test_a_member_is_not_offered_the_refund_tool(open_as: Any, demo_server: DemoServer) -> None:
    page = open_as("bob")
    ready(page)
    reply = send(page, "refund order 2001")
    settled(page)
    assert "refund_order is not offered to you" in reply_text(reply)  # `code` rendered as Markdown
    assert reply.locator(".text code", has_text="refund_order").count() == 1
    # only the inject-mode `retrieve` card (the help centre was consulted); no tool was called
    assert reply.locator(".tool .tool-name").all_inner_texts() == ["retrieve"]
    assert demo_server.order(2001)["status"] == "paid"


@pytest.mark.ref("DLG-01")
def test_the_analyst_answers_through_delegation(open_as: Any) -> None:
    page = open_as("alice")
    ready(page)
    reply = send(page, "ask the analyst which product sells best")
    settled(page)
    assert reply.locator(".tool[data-status=executed] .tool-name").nth(1).inner_text() == "ask_analyst"
    assert "The analyst says:" in reply_text(reply)


def test_errors_are_shown(open_as: Any) -> None:
    page = open_as(None)
    ready(page)
    reply = send(page, "hello")
    settled(page)
    assert "not signed in" in reply.locator(".run-error").inner_text()
    page = open_as("alice")
    ready(page)
    reply = send(page, "simulate a failure")
    settled(page)
    assert "The run failed" in reply.locator(".run-error").inner_text()


@pytest.mark.ref("SSE-07", "CLIENT-04", "CLIENT-06")
def test_reload_mid_stream_completes_the_reply_once(open_as: Any) -> None:
    page = open_as("alice")
    ready(page)
    send(page, "tell me a long story")
    page.wait_for_function(
        "(() => { const m = document.querySelector('.msg.assistant.streaming .text');"
        " return m && m.textContent.length > 40; })()"
    )
    page.reload()
    ready(page)
    page.wait_for_selector(".msg.assistant.streaming")  # re-attached to the same run
    settled(page)
    text = page.inner_text("#messages")
    assert text.count("Once upon a time") == 1
    assert text.count("The end.") == 1
    assert reply_text(page.locator(".msg.assistant").last) == LONG_STORY
    assert page.locator(".msg.user").count() == 1


@pytest.mark.ref("DASH-03", "GGATE-02")
def test_a_member_gets_403_and_an_admin_sees_the_dashboard(open_as: Any, demo_server: DemoServer) -> None:
    with demo_server.client("bob") as bob:
        r = bob.get("/agent/dashboard/")
        assert r.status_code == 403 and r.json() == {"error": "forbidden"}
    with demo_server.client(None) as anonymous:
        assert anonymous.get("/agent/dashboard/").status_code == 401
    page = open_as("bob", "/agent/dashboard/")
    assert "for governance admins" in page.content()  # a browser gets a page that says why, not JSON
    page = open_as("carol", "/agent/dashboard/")
    page.wait_for_selector("#panel[data-loaded=overview]")
    assert page.locator("[data-testid=overview-stats]").is_visible()


@pytest.mark.ref("DASH-10", "DASH-14")
def test_overview_shows_the_spend_and_the_inbox_approves(open_as: Any, demo_server: DemoServer) -> None:
    chat = open_as("alice")
    ready(chat)
    reply = send(chat, "refund order 1007")
    reply.locator(".tool[data-status=pending_approval]").wait_for()

    with demo_server.client("carol") as carol:
        spend = {row["actorRef"]: row for row in carol.get("/agent/governance/spend/actor").json()}
    assert spend["alice"]["requests"] > 0

    page = open_as("carol", "/agent/dashboard/#overview")
    page.wait_for_selector("#panel[data-loaded=overview]")
    stats = page.inner_text("[data-testid=overview-stats]")
    total = sum(row["requests"] for row in spend.values())
    assert f"Requests\n{total}" in stats
    assert page.locator("svg.donut path").count() >= 1
    actor_rows = page.locator("section:has(h2:text('Spend by actor')) tbody tr")
    assert "alice" in actor_rows.all_inner_texts()[0] or any("alice" in t for t in actor_rows.all_inner_texts())

    page.goto("/agent/dashboard/#approvals")
    page.wait_for_selector("#panel[data-loaded=approvals]")
    row = page.locator("tbody tr", has_text="refund_order").filter(has_text="1007")
    row.locator("button.approve").click()
    page.wait_for_function("!document.querySelector('#panel').innerText.includes('1007')")
    reply.locator(
        ".tool[data-status=executed]", has_text="refund_order"
    ).wait_for()  # the chat sees the decision through its stream
    assert demo_server.order(1007)["status"] == "refunded"


def test_screenshots_of_every_panel(open_as: Any) -> None:
    for theme in ("light", "dark"):
        page = open_as("carol", "/agent/dashboard/", theme=theme)
        for panel in (
            "overview",
            "runs",
            "threads",
            "tools",
            "approvals",
            "toolstats",
            "reliability",
            "quota",
            "pricing",
            "rag",
        ):
            page.goto(f"/agent/dashboard/#{panel}")
            page.wait_for_selector(f"#panel[data-loaded={panel}]")
            assert page.locator(".banner.error").count() == 0, page.inner_text("#panel")
            shot(page, f"dashboard-{panel}-{theme}")
        assert page.errors == []


@pytest.mark.ref("DASH-20")
def test_formatters(open_as: Any) -> None:
    page = open_as("carol", "/agent/dashboard/")
    result = page.evaluate(
        """async () => {
      const f = await import('./common/format.js');
      return {
        usd: [f.formatUsd(0.004), f.formatUsd(1.234), f.formatUsd(1500), f.formatUsd(2e6), f.formatUsd(NaN)],
        count: [f.formatCount(950), f.formatCount(1500), f.formatCount(2e6), f.formatCount(3.1e9)],
        pct: [f.formatPercent(0.456), f.formatPercent(1)],
        dur: [f.formatDuration(850), f.formatDuration(1200), f.formatDuration(90000), f.formatDuration(null)],
        model: f.formatModelLabel('arn:aws:bedrock:us-east-1:1:inference-profile/us.anthropic.claude-3'),
        ts: [f.formatTimestamp('2026-01-05T09:03:00Z'), f.formatTimestamp('nope')],
      };
    }"""
    )
    assert result == {
        "usd": ["<$0.01", "$1.23", "$1.50k", "$2.00M", "$0.00"],
        "count": ["950", "1.5k", "2.0M", "3.1B"],
        "pct": ["46%", "100%"],
        "dur": ["850ms", "1.2s", "1.5m", "—"],
        "model": "us.anthropic.claude-3",
        "ts": ["Jan 5, 09:03", "—"],
    }


@pytest.mark.ref("QUOTA-03")
def test_an_exhausted_budget_is_shown(open_as: Any, tight_budget_server: DemoServer) -> None:
    page = open_as("alice", server=tight_budget_server)
    ready(page)
    send(page, "hello")
    settled(page)
    reply = send(page, "hello again")
    settled(page)
    said = reply.locator(".run-error").inner_text()  # end-user words: what ran out and when it comes back
    assert "used today's assistant budget" in said and "resets at 00:00 UTC" in said
    assert "/ 1 tokens today" in page.inner_text("#quota")


@pytest.mark.ref("PERS-01", "TOOL-28", "HTTP-08")
def test_the_read_only_persona_cannot_refund_and_threads_reopen(open_as: Any) -> None:
    page = open_as("alice")
    ready(page)
    assert page.locator("#persona option").all_inner_texts() == ["Support assistant", "Read-only viewer"]
    page.select_option("#persona", "readonly")
    reply = send(page, "refund order 1001")
    settled(page)
    assert "refund_order is not offered to you" in reply_text(reply)  # `code` rendered as Markdown
    assert reply.locator(".text code", has_text="refund_order").count() == 1
    active = page.locator(".thread.active")
    assert active.locator(".t-title").inner_text() == "refund order 1001"
    thread_id = active.get_attribute("data-thread-id")
    page.click("#new-chat")
    assert page.locator(".msg").count() == 0
    page.click(f".thread[data-thread-id='{thread_id}']")
    page.wait_for_selector(".msg.assistant")
    assert "is not offered to you" in page.inner_text("#messages")


@pytest.mark.ref("DATA-08", "DATA-09")
def test_the_governed_sql_tool_is_scoped_and_refuses_tables(open_as: Any) -> None:
    page = open_as("bob")
    ready(page)
    reply = send(page, "sql: SELECT * FROM customers")
    settled(page)
    assert reply.locator(".tool[data-status=failed]").count() == 1
    assert "customers" in reply.locator(".tool-error").inner_text()
    reply = send(page, "sql: SELECT COUNT(*) AS n FROM orders")
    settled(page)
    assert "n 8" in reply_text(reply)  # globex has 8 orders; acme's 12 are invisible to bob


@pytest.mark.ref("CLIENT-04")
def test_a_dropped_connection_reattaches_without_duplicates(open_as: Any, demo_server: DemoServer) -> None:
    page = open_as("alice")
    ready(page)
    reply = send(page, "tell me a long story")
    page.wait_for_function(
        "(() => { const m = document.querySelector('.msg.assistant.streaming .text');"
        " return m && m.textContent.length > 40; })()"
    )
    page.evaluate("window.__AGENT_CHAT__.active.stream.drop()")  # the connection dies mid-reply
    reply.locator(".reconnect").wait_for()  # the page says it is re-attaching (with Last-Event-ID)
    settled(page)
    assert reply_text(reply) == LONG_STORY  # every word once: the re-attach resumed after the last frame seen
    assert reply.locator(".run-error").count() == 0
    run_id = reply.get_attribute("data-run-id")
    assert any(f"GET /agent/chat/{run_id}/stream" in line for line in demo_server.output)
