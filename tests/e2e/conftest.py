"""Browser tests: the real demo server (`agora-agent demo` in a subprocess) driven by Debian's Chromium.

Playwright for Python launches `/usr/bin/chromium` (never a downloaded browser). Screenshots go to
test-artifacts/screenshots/ (not committed). Every wait is bounded.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"
WORD_DELAY = 0.02  # slow enough to reload mid-stream, fast enough for a quick suite

pytestmark = pytest.mark.browser


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class DemoServer:
    """A running demo: its base URL and its two SQLite files."""

    base: str
    db: Path
    shop: Path
    process: subprocess.Popen[bytes]
    output: list[str]

    def order(self, order_id: int) -> dict[str, Any]:
        """The shop's row for an order, read straight from the database file."""
        db = sqlite3.connect(self.shop)
        try:
            db.row_factory = sqlite3.Row
            row = db.execute("SELECT * FROM orders WHERE id = ?", (order_id,)).fetchone()
            return dict(row)
        finally:
            db.close()

    @contextmanager
    def client(self, user: str | None) -> Iterator[httpx.Client]:
        """An HTTP client signed in as a demo user (through the demo login route)."""
        with httpx.Client(base_url=self.base, timeout=10) as client:
            if user:
                client.post("/demo/login", json={"user": user}).raise_for_status()
            yield client


@contextmanager
def launch_demo(workdir: Path, *extra: str) -> Iterator[DemoServer]:
    """`agora-agent demo` in a subprocess on a free port; yields once uvicorn reports startup complete."""
    port = _free_port()
    db = workdir / "demo.db"
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from agora_agent.cli import run; run()",
            "demo",
            "--port",
            str(port),
            "--db",
            str(db),
            "--word-delay",
            str(WORD_DELAY),
            "--log-level",
            "info",
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        cwd=workdir,
        env={**os.environ, "AGORA_MODEL": ""},
    )
    output: list[str] = []
    ready = threading.Event()

    def drain() -> None:  # keeps the pipe empty and signals when uvicorn has started
        assert process.stdout is not None
        for raw in process.stdout:
            line = raw.decode(errors="replace")
            output.append(line)
            if "Application startup complete" in line:
                ready.set()
        ready.set()  # the process ended: stop waiting

    threading.Thread(target=drain, daemon=True).start()
    base = f"http://127.0.0.1:{port}"
    try:
        if not ready.wait(timeout=60) or process.poll() is not None:
            raise RuntimeError("the demo server did not start:\n" + "".join(output))
        yield DemoServer(base=base, db=db, shop=workdir / "demo-shop.db", process=process, output=output)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)
        if process.stdout is not None:
            process.stdout.close()


def _require_chromium() -> None:
    """Skip on a developer machine without Chromium; under CI=true its absence is a failure."""
    if os.path.exists(CHROMIUM):
        return
    message = f"{CHROMIUM} is missing: apt-get install chromium (see .ci/run)"
    if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
        pytest.fail(f"{message} — CI must run the browser tests")
    pytest.skip(message)


@pytest.fixture(scope="session")
def demo_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoServer]:
    _require_chromium()
    with launch_demo(tmp_path_factory.mktemp("demo")) as server:
        yield server


@pytest.fixture(scope="session")
def tight_budget_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoServer]:
    """A second demo whose daily budget (1 token) is spent by the first reply."""
    _require_chromium()
    with launch_demo(tmp_path_factory.mktemp("demo-budget"), "--daily-tokens", "1") as server:
        yield server


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    # Module scope: sync Playwright keeps an event loop running in this thread while it is open, which
    # pytest-asyncio's tests in other modules must not meet.
    _require_chromium()  # before launching: a test that asks for the browser first skips (or fails under CI) too
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def open_as(browser: Any, demo_server: DemoServer) -> Iterator[Any]:
    """`open_as(user, path)` -> a page signed in as `user` (None = signed out), errors collected on `page.errors`."""
    contexts: list[Any] = []

    def opener(
        user: str | None, path: str = "/agent/ui/", *, theme: str = "light", server: DemoServer | None = None
    ) -> Any:
        base = (server or demo_server).base
        context = browser.new_context(viewport={"width": 1280, "height": 860}, base_url=base)
        context.add_init_script(f"localStorage.setItem('agora.theme', '{theme}')")
        contexts.append(context)
        if user:
            context.request.post("/demo/login", data={"user": user})
        page = context.new_page()
        page.set_default_timeout(15_000)
        page.errors = []
        page.on("pageerror", lambda e: page.errors.append(str(e)))
        page.goto(path)
        return page

    yield opener
    for context in contexts:
        context.close()


def shot(page: Any, name: str, *, full_page: bool = True) -> Path:
    """Save a screenshot under test-artifacts/screenshots/."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    return path
