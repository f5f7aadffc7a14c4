"""The governance gate: may this actor see the governance queries and act on others' runs? (GGATE-01..02).

One predicate, `AgentConfig.governance_authorize(actor, request)`, decides four things: whether the
governance routes are mounted, their 403, the ownership privilege (approve someone else's call) and
whether the dashboard is mounted.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agora_agent.actors import Actor

if TYPE_CHECKING:
    from starlette.requests import Request

__all__ = ["GateDecision", "GovernanceAuthorize", "evaluate_governance_gate"]

logger = logging.getLogger(__name__)

GovernanceAuthorize = Callable[[Actor, "Request | None"], "bool | Awaitable[bool]"]


@dataclass(frozen=True, slots=True)
class GateDecision:
    """The verdict and the HTTP status/error body when it is not ok."""

    ok: bool
    status: int
    error: str | None = None


async def evaluate_governance_gate(
    actor: Actor, request: Request | None, authorize: GovernanceAuthorize | None, *, debug: bool = False
) -> GateDecision:
    """GGATE-01: no predicate -> ok; truthy -> ok; falsy -> 403 "forbidden"; raises -> 403.

    The error of a raising predicate is shown only when `debug` (outside production); otherwise "forbidden".
    Cancellation propagates.
    """
    if authorize is None:
        return GateDecision(ok=True, status=200)
    try:
        verdict: Any = authorize(actor, request)
        if inspect.isawaitable(verdict):
            verdict = await verdict
    except Exception as exc:
        logger.warning("governance_authorize raised for actor %r: %r", actor.id, exc)
        message = str(exc) if debug and str(exc) else "forbidden"
        return GateDecision(ok=False, status=403, error=message)
    if verdict:
        return GateDecision(ok=True, status=200)
    return GateDecision(ok=False, status=403, error="forbidden")
