"""The web edge (issue #17): no 5xx for anything a client can send, and no cross-site requests riding a cookie.

`application/json` is required on JSON routes; a cookie-carrying POST from another site is a 403
(`trusted_origins` opens it for named origins); deep JSON, a huge cursor, NUL bytes (on PostgreSQL, on
every route) and an over-long `modelId` are 4xx JSON bodies; the demo login reads a capped body.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx2
import pytest
from fastapi.routing import APIRoute

from agora_agent.actors import Actor, CallableActorResolver
from agora_agent.governance.quota import Budget
from agora_agent.stores.attachments import FilesystemAttachmentStore
from agora_agent.stores.sql import open_sql_backend
from agora_agent.web import create_app

from .conftest import ADMIN, ALICE, asgi_client, is_admin, make_config, serve


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
        # behind a proxy that rewrites Host (nginx's default), the browser's own verdict decides
        assert (await post(origin="https://app.example", **{"sec-fetch-site": "same-origin"})).status_code == 404
        assert (await post(origin="https://admin.example", **{"sec-fetch-site": "cross-site"})).status_code == 404
        assert (await post(origin="https://evil.example", **{"sec-fetch-site": "cross-site"})).status_code == 403
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


NUL = "a\u0000b"


def _resolve(schema: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        node: Any = spec
        for part in schema["$ref"].removeprefix("#/").split("/"):
            node = node[part]
        schema = node
    return schema


def _with_nul(schema: dict[str, Any], spec: dict[str, Any], depth: int = 0) -> Any:
    """A value the schema accepts, with a NUL in every string (so only the NUL can make it a 4xx)."""
    schema = _resolve(schema, spec)
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            options = [o for o in schema[key] if _resolve(o, spec).get("type") != "null"]
            return _with_nul(options[0], spec, depth) if options else None
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        props = schema.get("properties", {}) if depth < 4 else {}
        return {name: _with_nul(sub, spec, depth + 1) for name, sub in props.items()}
    if kind == "array":
        return [_with_nul(schema.get("items", {"type": "string"}), spec, depth + 1)]
    if kind in ("integer", "number"):
        return 1
    if kind == "boolean":
        return True
    return NUL


def nul_requests(spec: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(method, url, httpx keyword arguments) for every operation of the OpenAPI document: a NUL in each
    path parameter, in each query parameter it declares (and in an undeclared one), and in every string
    of its JSON body or multipart upload."""
    requests: list[tuple[str, str, dict[str, Any]]] = []
    for path, item in spec["paths"].items():
        for method, operation in item.items():
            params = operation.get("parameters", [])
            in_path = {p["name"]: quote(NUL) for p in params if p["in"] == "path"}
            concrete = path.format(**{name: "a" for name in in_path})
            content = operation.get("requestBody", {}).get("content", {})
            body: dict[str, Any] = {}
            if "application/json" in content:
                body = {"json": _with_nul(content["application/json"]["schema"], spec)}
            elif "multipart/form-data" in content:
                body = {"files": {"file": ("a\u0000b.txt", b"hello", "text/plain")}, "data": {"note": NUL}}
            if in_path:
                requests.append((method, path.format(**in_path), body))
            queries = [p["name"] for p in params if p["in"] == "query"] + ["unknown"]
            requests.extend((method, f"{concrete}?{name}={quote(NUL)}", body) for name in queries)
            if body:
                requests.append((method, concrete, body))
    return requests


@pytest.mark.ref("HTTP-01")
async def test_nul_bytes_are_4xx_on_every_route_on_postgresql(postgres_url: str, tmp_path: Path) -> None:
    """Every operation of the OpenAPI document (so a new route is swept without editing this test).

    On a real uvicorn, reading each answer only up to its first bytes: the withdrawn version of this
    sweep hung on `GET governance/live` — the console's change feed, an SSE stream that never ends by
    design — because httpx's ASGI transport buffers a whole response before returning it. Nothing in
    the server was stuck (every other route answered; the feed ends at shutdown)."""
    await (await open_sql_backend(postgres_url, auto_create_tables=True)).close()
    config = make_config(  # every route mounted: governance, pricing, budgets, uploads
        store=postgres_url,
        governance_authorize=is_admin,
        attachment_staging=FilesystemAttachmentStore(tmp_path),
        budget=Budget(tokens_per_actor=10**9),
    )
    app = create_app(config)
    spec = app.openapi()
    requests = nul_requests(spec)
    for route in app.routes:  # the pages outside the schema (chat page, dashboard files)
        if isinstance(route, APIRoute) and not route.include_in_schema and "{" in route.path:
            requests.append(("get", re.sub(r"\{[^}]+\}", quote(NUL), route.path), {}))
    failures: list[str] = []
    async with serve(app) as base, httpx2.AsyncClient(base_url=base, headers=ADMIN, timeout=10) as client:
        for method, url, body in requests:
            try:
                async with client.stream(method.upper(), url, **body) as response:
                    head = await asyncio.wait_for(anext(response.aiter_bytes(), b""), 10)
            except TimeoutError:
                failures.append(f"{method.upper()} {url}: no answer within 10 s")
                continue
            if response.status_code >= 500 or (response.status_code < 400 and NUL in head.decode(errors="replace")):
                failures.append(f"{method.upper()} {url}: {response.status_code} {head[:200]!r}")
            elif response.status_code >= 400:
                assert "error" in httpx2.Response(200, content=head).json(), (method, url, head[:200])
    assert not failures, "\n".join(failures)
    assert len(spec["paths"]) >= 30 and len(requests) >= 80  # the sweep really covered the app


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


async def test_the_text_backslash_u0000_is_not_a_nul() -> None:
    """Only a real NUL is refused: a message that quotes the escape (`\\u0000` as text) is ordinary text."""
    import json

    quoted = "what does \\u0000 mean in JSON?"
    async with asgi_client(make_config()) as (client, _):
        for text, status in ((quoted, 200), ("a\u0000b", 400), ("\\\u0000", 400)):
            body = json.dumps({"message": text})
            response = await client.post(
                "/agent/chat", content=body, headers={**ALICE, "content-type": "application/json"}
            )
            assert response.status_code == status, (text, response.text[:200])
            if status == 200:
                thread_id = json.loads(response.text.split("data: ", 1)[1].split("\n", 1)[0])["threadId"]
        thread = await client.get(f"/agent/threads/{thread_id}", headers=ALICE)
        assert thread.json()["messages"][0]["content"] == quoted


async def test_an_identity_longer_than_the_store_keeps_is_a_400_on_postgresql(postgres_url: str) -> None:
    """An actor id or tenant ref the resolver accepted but no store column can hold (255 characters):
    a 400 that says so, on every route (it was a 500 on PostgreSQL for `POST /chat`)."""
    from .conftest import hdr

    await (await open_sql_backend(postgres_url, auto_create_tables=True)).close()
    async with asgi_client(make_config(store=postgres_url)) as (client, _):
        for headers in (hdr("a" * 256), hdr("alice", tenant="t" * 256)):
            chat = await client.post("/agent/chat", json={"message": "hi"}, headers=headers)
            assert chat.status_code == 400 and "255 characters" in chat.json()["error"], chat.text[:200]
            threads = await client.get("/agent/threads", headers=headers)
            assert threads.status_code == 400 and "255 characters" in threads.json()["error"]
        assert (await client.post("/agent/chat", json={"message": "hi"}, headers=hdr("a" * 255))).status_code == 200


async def test_the_last_day_of_the_calendar_is_a_day_like_any_other() -> None:
    config = make_config(governance_authorize=is_admin)
    async with asgi_client(config) as (client, _):
        for fmt in ("json", "csv"):
            params = {"from": "9999-12-31", "to": "9999-12-31", "format": fmt}
            audit = await client.get("/agent/governance/audit", params=params, headers=ADMIN)
            assert audit.status_code == 200, audit.text[:200]  # was a 500 (the day after it overflowed)


async def test_a_price_jump_too_large_to_measure_is_a_422_not_a_500() -> None:
    """Found by schemathesis: the sanity bound's ratio overflowed to inf, and the 422 body carrying it could
    not be written as JSON — the error response itself became a 500."""
    async with asgi_client(make_config(governance_authorize=is_admin)) as (client, _):

        async def price(value: float) -> httpx2.Response:
            body = {"modelId": "m", "inputPricePer1m": value, "outputPricePer1m": 1}
            return await client.post("/agent/governance/pricing", json=body, headers=ADMIN)

        assert (await price(0.1)).status_code == 200
        jump = await price(6.69e307)
        assert jump.status_code == 422 and "sanity bound" in jump.json()["error"], jump.text[:200]


def test_an_error_whose_detail_json_cannot_carry_still_answers_its_own_status() -> None:
    import json

    from agora_agent.errors import InvalidRequestError
    from agora_agent.web.errors import error_response

    response = error_response(InvalidRequestError("bad price", detail={"ratio": float("inf")}))
    assert response.status_code == 422 and json.loads(bytes(response.body)) == {"error": "bad price"}
