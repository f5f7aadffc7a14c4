"""Probes for load balancers and orchestrators: `GET {prefix}/healthz` and `GET {prefix}/readyz`.

Neither needs an identity (a probe has none) and neither reveals data:
- `healthz`: the process is up and answering (liveness) — always 200 `{"ok": true}`.
- `readyz`: it can serve runs (readiness) — the store answers a query, Redis answers a PING when a Redis
  sink is configured, and the durable engine is launched when `durable` is on. 200 with each check, or 503
  with the same body naming what failed.
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from agora_agent.web.deps import ServiceDep
from agora_agent.web.route_class import resolves_own_identity

__all__ = ["add_routes", "healthz", "readyz"]


@resolves_own_identity
async def healthz() -> dict[str, bool]:
    """Liveness: the process is up."""
    return {"ok": True}


@resolves_own_identity
async def readyz(service: ServiceDep) -> JSONResponse:
    """Readiness: store, Redis (when configured) and the durable engine (when on) all answer."""
    checks = await service.readiness()
    ok = all(checks.values())
    body = {"ok": ok, "checks": checks}
    if not ok:
        body["error"] = "not ready: " + ", ".join(name for name, passed in checks.items() if not passed)
    mcp = service.mcp_status()
    if mcp:  # a detail, not a gate: a down server's tools are simply not offered (no reasons: this route is public)
        body["mcp"] = {status.name: status.state for status in mcp}
    return JSONResponse(body, status_code=200 if ok else 503)


def add_routes(router: APIRouter) -> None:
    """Add `GET /healthz` and `GET /readyz` (no identity needed)."""
    router.get("/healthz", include_in_schema=True, summary="Liveness probe")(healthz)
    router.get("/readyz", include_in_schema=True, summary="Readiness probe")(readyz)
