"""The web edge (issue #17): no 5xx for anything a client can send, and no cross-site requests riding a cookie.

`application/json` is required on JSON routes; a cookie-carrying POST from another site is a 403
(`trusted_origins` opens it for named origins); deep JSON, a huge cursor, NUL bytes (on PostgreSQL, on
every route) and an over-long `modelId` are 4xx JSON bodies; the demo login reads a capped body.
"""

from __future__ import annotations

from typing import Any

import httpx2

from agora_agent.actors import Actor, CallableActorResolver

from .conftest import ADMIN, ALICE, asgi_client, is_admin, make_config


def cookie_actor(request: Any) -> Actor | None:
    return Actor("alice", roles=("support",)) if request.cookies.get("session") == "alice" else None


COOKIE = {"cookie": "session=alice"}


async def test_json_routes_require_application_json() -> None:
    async with asgi_client(make_config()) as (client, _):
        for content_type, body in (
            ("text/plain", '{"message": "hi"}'),
            ("application/x-www-form-urlencoded", "message=hi"),
        ):
            response = await client.post("/agent/chat", content=body, headers={**ALICE, "content-type": content_type})
            assert response.status_code == 415, response.text
            assert "application/json" in response.json()["error"]


async def test_cookie_requests_from_another_site_are_refused() -> None:
    config = make_config(actor_resolver=CallableActorResolver(cookie_actor), trusted_origins=("https://admin.example",))
    async with asgi_client(config) as (client, _):

        async def post(**headers: str) -> httpx2.Response:
            return await client.post(
                "/agent/tool-call/approve", json={"runId": "r", "toolCallId": "c"}, headers={**COOKIE, **headers}
            )

        assert (await post(origin="https://evil.example")).status_code == 403
        assert (await post(**{"sec-fetch-site": "same-site"})).status_code == 403  # a sibling subdomain
        assert (await post(**{"sec-fetch-site": "cross-site"})).status_code == 403
        assert (await post(origin="null")).status_code == 403
        # same host, a trusted origin, or no browser metadata at all (curl): past the check (404: no such run)
        assert (await post(origin="http://test")).status_code == 404
        assert (await post(origin="https://admin.example")).status_code == 404
        assert (await post(**{"sec-fetch-site": "same-origin"})).status_code == 404
        assert (await post()).status_code == 404
        # header-authenticated callers carry no ambient credential: Origin does not matter
        no_cookie = await client.post(
            "/agent/tool-call/approve", json={"runId": "r", "toolCallId": "c"}, headers={**ALICE, "origin": "https://x"}
        )
        assert no_cookie.status_code in (401, 404)


async def test_deep_json_huge_cursor_and_long_model_id_are_4xx() -> None:
    config = make_config(governance_authorize=is_admin)
    async with asgi_client(config) as (client, _):
        deep = '{"message": "hi", "pageContext": {"a": ' + "[" * 1000 + "]" * 1000 + "}}"
        response = await client.post("/agent/chat", content=deep, headers={**ALICE, "content-type": "application/json"})
        assert response.status_code == 400 and "nested deeper" in response.json()["error"]
        cursor = await client.get("/agent/governance/runs", params={"cursor": "9" * 20}, headers=ADMIN)
        assert cursor.status_code == 422 and "error" in cursor.json()
        price = await client.post(
            "/agent/governance/pricing",
            json={"modelId": "m" * 300, "inputPricePer1m": 1, "outputPricePer1m": 2},
            headers=ADMIN,
        )
        assert price.status_code == 422 and "error" in price.json()


async def test_demo_login_body_is_capped() -> None:
    import tempfile
    from pathlib import Path

    from agora_agent.demo.app import create_demo_app

    with tempfile.TemporaryDirectory() as tmp:
        app = create_demo_app(Path(tmp) / "demo.db")
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app), base_url="http://test") as client:
            huge = await client.post(
                "/demo/login",
                content=b'{"user": "' + b"x" * 2_000_000 + b'"}',
                headers={"content-type": "application/json"},
            )
            assert huge.status_code == 413 and len(huge.content) < 200  # refused, not echoed
            long_name = await client.post("/demo/login", json={"user": "y" * 500})
            assert long_name.status_code == 422 and "y" * 100 not in long_name.text
