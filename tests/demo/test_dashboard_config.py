"""DashboardConfig (REFERENCE DASH-02, DASH-03, DASH-07, DASH-08): path, shell gate, unauthenticated hook."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi import FastAPI
from starlette.responses import RedirectResponse

from agora_agent import AgentService, ConfigurationError, DashboardConfig
from agora_agent.web.pages import mount_pages
from tests.demo.test_pages import ADMIN, MEMBER, config, serve


@pytest.mark.ref("DASH-02", "DASH-07")
async def test_custom_path_is_normalised_and_served() -> None:
    client, mounted = await serve(config(dashboard=DashboardConfig(path="ops/console/")))
    async with client:
        assert mounted.dashboard_path == "/ops/console"
        r = await client.get("/ops/console", headers=ADMIN)
        assert r.status_code == 200 and '<base href="/ops/console/">' in r.text
        assert (await client.get("/agent/dashboard", headers=ADMIN)).status_code == 404
        ui = await client.get("/agent/ui", headers=ADMIN)
        assert '"dashboard": "/ops/console/"' in ui.text  # the chat page links to the moved dashboard


@pytest.mark.ref("DASH-03", "DASH-07")
async def test_shell_authorize_and_on_unauthenticated() -> None:
    def support_may_look(actor: Any, request: Any) -> bool:
        return "support" in actor.roles or "admin" in actor.roles

    settings = DashboardConfig(
        authorize=support_may_look, on_unauthenticated=lambda request: RedirectResponse("/login", status_code=302)
    )
    client, _ = await serve(config(dashboard=settings))
    async with client:
        r = await client.get("/agent/dashboard")
        assert (r.status_code, r.headers["location"]) == (302, "/login")  # the hook answers before a 401
        support = {"x-actor-id": "sam", "x-actor-role": "support"}
        assert (await client.get("/agent/dashboard", headers=support)).status_code == 200  # shell only…
        data = await client.get("/agent/governance/spend/model", headers=support)
        assert data.status_code == 403  # …the data stays behind governance_authorize
        assert (await client.get("/agent/dashboard", headers=MEMBER)).status_code == 403


@pytest.mark.ref("DASH-01", "DASH-07")
async def test_disabled_dashboard_is_not_mounted_silently(caplog: pytest.LogCaptureFixture) -> None:
    client, mounted = await serve(config(dashboard=DashboardConfig(enabled=False)))
    async with client:
        assert mounted.dashboard_path is None and mounted.warnings == []
        assert (await client.get("/agent/dashboard", headers=ADMIN)).status_code == 404


@pytest.mark.ref("DASH-08")
def test_mounting_twice_is_a_configuration_error() -> None:
    app = FastAPI()
    service = AgentService.from_config(config())
    mount_pages(app, service)
    with pytest.raises(ConfigurationError) as twice:
        mount_pages(app, service)
    assert twice.value.code == "already_mounted" and "/agent/dashboard" in str(twice.value)
