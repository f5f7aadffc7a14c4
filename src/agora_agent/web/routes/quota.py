"""Where the caller stands against today's budget."""

from __future__ import annotations

from fastapi import APIRouter

from agora_agent.web.deps import CallerDep, ServiceDep, error_responses
from agora_agent.web.schemas import QuotaTodayOut

__all__ = ["add_routes", "quota_today"]


async def quota_today(service: ServiceDep, caller: CallerDep) -> QuotaTodayOut:
    """Tokens the caller used today (UTC), with the budget's limits when one applies."""
    q = await service.quota_today(caller)
    return QuotaTodayOut(
        day=q.day,
        used_tokens=q.used_tokens,
        limit_tokens=q.limit_tokens,
        used_usd=q.used_usd,
        limit_usd=q.limit_usd,
        period=q.period,
        period_used_tokens=q.period_used_tokens,
    )


def add_routes(router: APIRouter) -> None:
    """Add `GET /quota/today`."""
    router.get("/quota/today", response_model=QuotaTodayOut, responses=error_responses())(quota_today)
