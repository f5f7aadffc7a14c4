"""`GET {prefix}/healthz` and `/readyz`: probes need no identity; readiness names what is not ready."""

from __future__ import annotations

from pathlib import Path

import httpx2

from agora_agent.runners.durable import DurableConfig
from agora_agent.streaming.redis import RedisTokenSink
from agora_agent.web import create_app

from .conftest import make_config, serve


async def test_healthz_and_readyz_answer_without_identity(tmp_path: Path) -> None:
    app = create_app(make_config(store=f"sqlite:///{tmp_path / 'a.db'}"))
    async with serve(app) as url, httpx2.AsyncClient(base_url=url) as client:
        health = await client.get("/agent/healthz")
        assert (health.status_code, health.json()) == (200, {"ok": True})
        ready = await client.get("/agent/readyz")
        assert (ready.status_code, ready.json()) == (200, {"ok": True, "checks": {"store": True}})
        assert (await client.get("/agent/threads")).status_code == 401  # the other routes still need identity


async def test_readyz_checks_the_durable_engine_and_names_a_dead_redis(tmp_path: Path) -> None:
    dead = RedisTokenSink("redis://127.0.0.1:1/0")  # nothing listens on port 1
    config = make_config(
        store=f"sqlite:///{tmp_path / 'a.db'}", sink=dead, durable=DurableConfig(executor_id="readyz-test")
    )
    async with serve(create_app(config)) as url, httpx2.AsyncClient(base_url=url) as client:
        ready = await client.get("/agent/readyz")
        assert ready.status_code == 503
        body = ready.json()
        assert body["checks"] == {"store": True, "redis": False, "durable": True}
        assert body["error"] == "not ready: redis"
        assert (await client.get("/agent/healthz")).status_code == 200  # alive, just not ready
    await dead.aclose()
