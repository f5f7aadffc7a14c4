"""The dashboard's pricing panel in Chromium: a global admin gets the price editor, a tenant admin (whose save
would be refused with 403: prices are every tenant's) gets a read-only note instead."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest

from .conftest import _require_chromium, shot

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
APP = """
import uvicorn
from agora_agent.web import create_app
from tests.governance.test_scenarios import authorize
from tests.web.conftest import make_config

uvicorn.run(create_app(make_config(governance_authorize=authorize, debug=True)), port={port}, log_level="warning")
"""
TINA = {"x-actor-id": "tina", "x-actor-role": "tenant-admin,manager", "x-tenant-ref": "acme"}
ROOT = {"x-actor-id": "root", "x-actor-role": "admin,manager"}


@pytest.fixture(scope="module")
def scoped_server() -> Iterator[str]:
    """A server whose governance gate answers `GovernanceScope(tenants={"acme"})` for a tenant admin."""
    _require_chromium()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    process = subprocess.Popen(
        [sys.executable, "-c", APP.format(port=port)], cwd=REPO, env={**os.environ, "AGORA_MODEL": ""}
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{base}/agent/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the scoped server did not start")
            time.sleep(0.2)
        price = {"modelId": "m1", "inputPricePer1m": 1, "outputPricePer1m": 2}
        httpx.post(f"{base}/agent/governance/pricing", json=price, headers=ROOT, timeout=5).raise_for_status()
        yield base
    finally:
        process.terminate()
        process.wait(timeout=10)


def _pricing(browser: Any, base: str, headers: dict[str, str]) -> Any:
    context = browser.new_context(viewport={"width": 1280, "height": 860}, base_url=base, extra_http_headers=headers)
    page = context.new_page()
    page.set_default_timeout(15_000)
    page.goto("/agent/dashboard/#pricing")
    page.wait_for_selector("#panel[data-loaded=pricing]")
    return page


def test_a_tenant_admin_sees_prices_but_no_editor(browser: Any, scoped_server: str) -> None:
    page = _pricing(browser, scoped_server, TINA)
    try:
        assert page.locator("#panel tbody tr", has_text="m1").count() == 1  # the prices are readable
        assert page.locator("form.price-form").count() == 0
        note = page.locator("#price-readonly")
        assert note.is_visible() and "global governance grant" in note.inner_text() and "acme" in note.inner_text()
        shot(page, "dashboard-pricing-tenant-admin", full_page=False)
    finally:
        page.context.close()


def test_a_global_admin_gets_the_price_editor(browser: Any, scoped_server: str) -> None:
    page = _pricing(browser, scoped_server, ROOT)
    try:
        assert page.locator("form.price-form").is_visible()
        assert page.locator("#price-readonly").count() == 0
    finally:
        page.context.close()
