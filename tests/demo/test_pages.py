"""mount_pages: the chat page and the dashboard shell (REFERENCE DASH-01..06) over the in-process ASGI transport."""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx2
import pytest
from fastapi import FastAPI
from starlette.responses import RedirectResponse

from agora_agent import AgentConfig, AgentService
from agora_agent.actors import Actor, HeaderActorResolver
from agora_agent.testing import FakeModel, echo_script
from agora_agent.web import agent_router
from agora_agent.web.pages import DASHBOARD_GATE_WARNING, PagesMount, mount_pages

ADMIN = {"x-actor-id": "carol", "x-actor-role": "admin"}
MEMBER = {"x-actor-id": "bob", "x-actor-role": "member"}


def admin_only(actor: Actor, request: Any) -> bool:
    return "admin" in actor.roles


def config(**overrides: Any) -> AgentConfig:
    options: dict[str, Any] = {
        "model": FakeModel(echo_script()),
        "actor_resolver": HeaderActorResolver(),
        "governance_authorize": admin_only,
    }
    options.update(overrides)
    return AgentConfig(**options)


Client = Callable[..., Any]


async def serve(cfg: AgentConfig, **mount_options: Any) -> tuple[httpx2.AsyncClient, PagesMount]:
    app = FastAPI()
    service = AgentService.from_config(cfg)
    app.include_router(agent_router(service))
    mounted = mount_pages(app, service, **mount_options)
    client = httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://test")
    return client, mounted


@pytest.fixture
async def pages() -> AsyncIterator[httpx2.AsyncClient]:
    client, _ = await serve(config())
    async with client:
        yield client


@pytest.mark.ref("DASH-05", "DASH-02")
async def test_the_dashboard_index_has_base_href_and_api_base(pages: httpx2.AsyncClient) -> None:
    r = await pages.get("/agent/dashboard", headers=ADMIN)
    assert r.status_code == 200
    assert r.headers["content-type"] == "text/html; charset=utf-8"
    assert r.headers["cache-control"] == "no-store, must-revalidate"
    head = r.text.split("<head>", 1)[1]
    assert head.lstrip().startswith('<base href="/agent/dashboard/">')  # first child of <head>
    assert '<script>window.__AGENT_DASHBOARD_BASE__="/agent"</script>\n</head>' in r.text


@pytest.mark.ref("DASH-03")
async def test_the_gate_answers_401_then_403(pages: httpx2.AsyncClient) -> None:
    r = await pages.get("/agent/dashboard/")
    assert (r.status_code, r.json()) == (401, {"error": "unauthorized"})
    r = await pages.get("/agent/dashboard/app.js", headers=MEMBER)
    assert (r.status_code, r.json()) == (403, {"error": "forbidden"})
    r = await pages.get("/agent/dashboard/app.js", headers=ADMIN)
    assert r.status_code == 200 and r.headers["content-type"] == "text/javascript; charset=utf-8"


@pytest.mark.ref("DASH-03")
async def test_debug_shows_the_resolver_and_predicate_messages() -> None:
    def explode(actor: Actor, request: Any) -> bool:
        raise PermissionError("only the ops team may look")

    client, _ = await serve(config(debug=True, governance_authorize=explode))
    async with client:
        r = await client.get("/agent/dashboard/")
        assert r.status_code == 401 and "x-actor-id" in r.json()["error"]
        r = await client.get("/agent/dashboard/", headers=ADMIN)
        assert (r.status_code, r.json()) == (403, {"error": "only the ops team may look"})
    client, _ = await serve(config(debug=False, governance_authorize=explode))
    async with client:
        r = await client.get("/agent/dashboard/", headers=ADMIN)
        assert (r.status_code, r.json()) == (403, {"error": "forbidden"})


@pytest.mark.ref("DASH-04")
async def test_a_redirect_from_the_predicate_stands() -> None:
    def to_login(actor: Actor, request: Any) -> Any:
        return RedirectResponse("/login?next=/agent/dashboard", status_code=302)

    client, _ = await serve(config(governance_authorize=to_login))
    async with client:
        r = await client.get("/agent/dashboard/", headers=MEMBER)
        assert r.status_code == 302 and r.headers["location"] == "/login?next=/agent/dashboard"


@pytest.mark.ref("DASH-06")
@pytest.mark.parametrize("path", ["%2e%2e/%2e%2e/pyproject.toml", "app.js%00", "..%5capp.js", "x/..%2fapp.js"])
async def test_unsafe_asset_paths_are_refused(pages: httpx2.AsyncClient, path: str) -> None:
    r = await pages.get(f"/agent/dashboard/{path}", headers=ADMIN)
    assert (r.status_code, r.json()) == (400, {"error": "bad asset path"})


@pytest.mark.ref("DASH-06")
async def test_assets_content_types_and_spa_fallback(pages: httpx2.AsyncClient) -> None:
    css = await pages.get("/agent/dashboard/common/base.css", headers=ADMIN)
    assert css.status_code == 200 and css.headers["content-type"] == "text/css; charset=utf-8"
    assert css.headers["cache-control"] == "no-cache"
    fallback = await pages.get("/agent/dashboard/runs/abc", headers=ADMIN)
    assert fallback.status_code == 200 and '<base href="/agent/dashboard/">' in fallback.text


@pytest.mark.ref("DASH-01", "HTTP-15")
async def test_no_gate_means_no_dashboard_and_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="agora_agent.web.pages"):
        client, mounted = await serve(config(governance_authorize=None))
    assert mounted.dashboard_path is None
    assert mounted.warnings == [DASHBOARD_GATE_WARNING.format(prefix="/agent")]
    assert "governance_authorize" in caplog.text and "dashboard=False" in caplog.text
    async with client:
        assert (await client.get("/agent/dashboard/", headers=ADMIN)).status_code == 404
        ui = await client.get("/agent/ui")
        assert '"dashboard": null' in ui.text  # the chat page does not link to a dashboard that is not there


@pytest.mark.ref("DASH-01")
async def test_switched_off_is_silent_and_no_queries_warns_distinctly(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="agora_agent.web.pages"):
        _, off = await serve(config(dashboard=False))
        pages_warnings = [r for r in caplog.records if r.name == "agora_agent.web.pages"]
        assert off.dashboard_path is None and off.warnings == [] and pages_warnings == []
        _, no_queries = await serve(config(governance_queries=False))
    assert no_queries.dashboard_path is None
    assert "governance_queries=False" in no_queries.warnings[0]


async def test_the_chat_page_is_served_with_its_settings(pages: httpx2.AsyncClient) -> None:
    r = await pages.get("/agent/ui")
    assert r.status_code == 200 and '<base href="/agent/ui/">' in r.text
    settings = re.search(r"window.__AGENT_UI__=(\{.*?\})</script>", r.text)
    assert settings is not None and '"base": "/agent"' in settings.group(1)
    js = await pages.get("/agent/ui/app.js")
    assert js.headers["content-type"] == "text/javascript; charset=utf-8"
    shared = await pages.get("/agent/ui/common/sse.js")
    assert shared.status_code == 200 and "Last-Event-ID" in shared.text


async def test_mounting_on_the_agent_router_bypasses_its_identity_check() -> None:
    service = AgentService.from_config(config(path="/api/agent"))
    router = agent_router(service)
    mounted = mount_pages(router, service)
    app = FastAPI()
    app.include_router(router)
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://test") as client:
        assert (await client.get("/api/agent/ui")).status_code == 200  # no identity needed for the shell
        assert (await client.get("/api/agent/dashboard/")).status_code == 401
        r = await client.get("/api/agent/dashboard/", headers=ADMIN)
        assert 'window.__AGENT_DASHBOARD_BASE__="/api/agent"' in r.text
    assert mounted.chat_path == "/api/agent/ui" and mounted.dashboard_path == "/api/agent/dashboard"


async def test_a_value_cannot_close_the_settings_script() -> None:
    client, _ = await serve(config(), ui_settings={"title": "</script><script>alert(1)</script>"})
    async with client:
        r = await client.get("/agent/ui")
    assert "<script>alert(1)" not in r.text and "\\u003c/script>" in r.text
