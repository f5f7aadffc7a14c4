"""The chat page people keep open all day, in Chromium against the real demo: Markdown that cannot run
scripts, attachments dropped on the page reaching the model, presented tables and charts, a loading state
that resolves, components after a reload, and the phone layout at 360 px."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from tests.e2e.conftest import shot
from tests.e2e.test_demo_browser import ready, reply_text, send, settled

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_markdown_renders_tables_and_code_but_never_runs_a_script(open_as: Any) -> None:
    page = open_as("alice")
    ready(page)
    reply = send(page, "show me markdown")
    settled(page)
    assert reply.locator(".text table th").count() >= 2  # a GFM table
    assert reply.locator(".text .codeblock pre code").count() == 1 and reply.locator(".copy-code").count() == 1
    assert reply.locator(".text strong").count() >= 1
    assert page.evaluate("window.__pwned === undefined")  # <script> and onerror= were sanitised away
    assert reply.locator("script, img, iframe").count() == 0
    link = reply.locator(".text a[href^='https://']").first
    assert link.get_attribute("target") == "_blank" and "noopener" in (link.get_attribute("rel") or "")
    assert page.errors == []


def _drop(page: Any, name: str, mime: str, data: bytes) -> None:
    page.evaluate(
        """([name, mime, b64]) => {
            const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
            const dt = new DataTransfer();
            dt.items.add(new File([bytes], name, { type: mime }));
            const zone = document.querySelector('.main');
            for (const type of ['dragenter', 'dragover', 'drop']) {
                zone.dispatchEvent(new DragEvent(type, { dataTransfer: dt, bubbles: true, cancelable: true }));
            }
        }""",
        [name, mime, base64.b64encode(data).decode()],
    )


def test_a_dropped_file_reaches_the_model(open_as: Any) -> None:
    page = open_as("alice")
    ready(page)
    _drop(page, "delivery-note.txt", "text/plain", b"Parcel for order 1001 arrived with a cracked wheel.")
    page.wait_for_selector(".upload[data-status=ready]")
    reply = send(page, "what did I attach?")
    settled(page)
    text = reply_text(reply)
    assert "delivery-note.txt" in text and "cracked wheel" in text  # the model read the file's text
    user = page.locator(".msg.user").last
    assert user.locator(".attachment .att-name").inner_text() == "delivery-note.txt"

    _drop(page, "fake.txt", "text/plain", b"\x89PNG\r\n\x1a\n" + b"\x00" * 20)  # a PNG posing as text
    page.wait_for_selector(".upload[data-status=failed]")
    assert "kind of file" in page.locator(".upload-error").inner_text()


def test_presented_table_and_chart_with_a_loading_state_survive_a_reload(open_as: Any) -> None:
    page = open_as("alice")
    ready(page)
    reply = send(page, "show my orders")
    settled(page)
    assert reply.locator("figure.data-table tbody tr").count() == 12
    reply = send(page, "chart sales")
    reply.locator(".component.skeleton").wait_for()  # the loading state first …
    settled(page)
    assert reply.locator(".component.skeleton").count() == 0  # … replaced in place by the chart
    bars = reply.locator("figure.chart svg rect.bar").count()
    assert bars >= 3  # one per acme product with sales left (other tests on this server refund orders)
    page.reload()
    ready(page)
    page.wait_for_selector("figure.chart svg rect.bar")
    assert page.locator("figure.data-table tbody tr").count() == 12  # the stored thread drew them again
    assert page.locator("figure.chart").count() == 1
    assert page.locator("figure.chart svg rect.bar").count() == bars


def test_the_phone_layout_keeps_everything_on_screen(browser: Any, demo_server: Any) -> None:
    context = browser.new_context(viewport={"width": 360, "height": 740}, base_url=demo_server.base)
    try:
        context.add_init_script("localStorage.setItem('agora.theme', 'light')")
        context.request.post("/demo/login", data={"user": "alice"})
        page = context.new_page()
        page.set_default_timeout(15_000)
        page.goto("/agent/ui/")
        page.add_style_tag(content="* { transition: none !important; }")  # stable screenshots
        ready(page)
        send(page, "show my orders")
        settled(page)
        assert page.evaluate("document.documentElement.scrollWidth") <= 360  # nothing off-screen
        assert page.locator("#drawer-pickers #persona").count() == 1  # pickers live in the drawer on a phone
        box = page.locator("#persona").bounding_box()
        assert box is not None and box["x"] + box["width"] <= 0  # … which is closed: off the screen
        page.click("#menu")
        page.wait_for_selector(".layout.drawer-open")
        page.wait_for_function("document.getElementById('persona').getBoundingClientRect().left >= 0")
        assert page.locator("#new-chat").is_visible()
        shot(page, "chat-mobile-360-drawer", full_page=False)
        page.click("#new-chat")  # closes the drawer and starts over
        assert page.locator(".layout.drawer-open").count() == 0 and page.locator(".msg").count() == 0
        page.click("#menu")
        page.click(".thread >> nth=0")  # reopening a thread from the drawer closes it too
        page.wait_for_selector("figure.data-table")
        assert page.locator(".layout.drawer-open").count() == 0
        assert page.evaluate("document.documentElement.scrollWidth") <= 360
        shot(page, "chat-mobile-360", full_page=False)  # docs/screenshot-mobile.png is a copy of it
    finally:
        context.close()
