"""The governance gate: what may this caller see and decide beyond their own threads and runs?

One predicate, `AgentConfig.governance_authorize(actor, request)`, answers with a grant:

- `True` — a global admin: every tenant's runs, threads and approvals, and the global operations (prices);
- `False` (or anything falsy, or a raise) — no privilege: the caller's own threads and runs only;
- `GovernanceScope(tenants={...})` — a tenant admin: the governance routes and the dashboard are open, but
  every query, inbox and decision is limited to rows of those tenants.

`evaluate_governance_gate` is the one place that calls the predicate; `AgentService.grant` asks it (once
per `Caller`) and everything else — the governance routes, the dashboard, ownership — uses that answer.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agora_agent.actors import Actor

if TYPE_CHECKING:
    from starlette.requests import Request

__all__ = [
    "Caller",
    "GateDecision",
    "GovernanceAuthorize",
    "GovernanceScope",
    "Grant",
    "evaluate_governance_gate",
    "scope_of",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class GovernanceScope:
    """Privilege limited to some tenants: `governance_authorize` returns it for a tenant admin.

        governance_authorize=lambda actor, request: (
            GovernanceScope(tenants={actor.tenant_ref}) if "tenant-admin" in actor.roles else "admin" in actor.roles
        )

    A row belongs to a tenant through the `tenant_ref` stored with it when it was written (the actor's
    tenant at that time); rows without a tenant are outside every scope (only a global admin sees them).
    """

    tenants: frozenset[str] = field(default_factory=frozenset)

    def __init__(self, tenants: Iterable[str | None] = ()) -> None:
        object.__setattr__(self, "tenants", frozenset(t for t in tenants if isinstance(t, str) and t))

    def covers(self, tenant_ref: str | None) -> bool:
        """Whether a row of `tenant_ref` is inside this scope."""
        return tenant_ref is not None and tenant_ref in self.tenants


Grant = bool | GovernanceScope
"""What the gate granted: True (global), False (nothing beyond one's own), or a tenant scope."""

GovernanceAuthorize = Callable[[Actor, "Request | None"], "bool | GovernanceScope | Awaitable[bool | GovernanceScope]"]


def scope_of(grant: Grant) -> GovernanceScope | None:
    """The tenant filter a governance query applies for `grant`: None for a global grant (no filter).

    False never reaches a query (the gate refused), but maps to an empty scope (no rows) to fail closed.
    """
    if isinstance(grant, GovernanceScope):
        return grant
    return None if grant is True else GovernanceScope()


@dataclass(frozen=True, slots=True)
class GateDecision:
    """The gate's verdict: `ok` (the governance views are open), the grant, why it refused when the
    predicate raised (`reason`, the exception's message; the web layer shows it only with `debug`), and the
    Starlette `Response` the predicate answered with (`response`, e.g. a redirect to a login page: the
    dashboard sends it as is; it is a refusal everywhere else)."""

    ok: bool
    grant: Grant = False
    reason: str | None = None
    response: Any = None


async def evaluate_governance_gate(
    actor: Actor, request: Request | None, authorize: GovernanceAuthorize | None
) -> GateDecision:
    """Ask the predicate. No predicate -> refused (no privilege exists without one; the governance routes
    and the dashboard are not even mounted); a `GovernanceScope` -> ok within it; truthy -> global; falsy
    -> refused; a raise -> refused with its message as `reason` (logged). Cancellation propagates."""
    if authorize is None:
        return GateDecision(ok=False)
    try:
        verdict: Any = authorize(actor, request)
        if inspect.isawaitable(verdict):
            verdict = await verdict
    except Exception as exc:
        logger.warning("governance_authorize raised for actor %r: %r", actor.id, exc)
        return GateDecision(ok=False, reason=str(exc) or None)
    if isinstance(verdict, GovernanceScope):
        return GateDecision(ok=True, grant=verdict)
    if _is_response(verdict):  # a truthy object that grants nothing: never read it as "admin"
        return GateDecision(ok=False, response=verdict)
    if verdict:
        return GateDecision(ok=True, grant=True)
    return GateDecision(ok=False)


def _is_response(value: Any) -> bool:
    """An ASGI response object (Starlette's `Response`), recognised without importing Starlette here."""
    return callable(value) and isinstance(getattr(value, "status_code", None), int)


@dataclass(frozen=True, slots=True, eq=False)
class Caller:
    """Who calls an `AgentService` method: the actor, and where their privilege comes from.

    - `Caller(actor, request)` — the service asks `governance_authorize(actor, request)` the first time
      privilege matters (someone else's run, a governance query) and keeps the answer for this caller;
    - `Caller(actor, grant=True | False | GovernanceScope(...))` — an explicit grant, for trusted code
      (an operator CLI, a job) that decided privilege itself; the predicate is not asked.

    A bare `Actor` passed to the service means `Caller(actor)`: the predicate is asked with no request.
    """

    actor: Actor
    request: Request | None = None
    grant: Grant | None = None
    _decision: list[GateDecision] = field(default_factory=list, init=False, repr=False)

    @classmethod
    def of(cls, who: Actor | Caller) -> Caller:
        """`who` as a Caller (an Actor becomes `Caller(actor)`)."""
        return who if isinstance(who, Caller) else cls(who)

    async def decision(self, authorize: GovernanceAuthorize | None) -> GateDecision:
        """The gate's answer for this caller, asked at most once (an explicit grant answers itself)."""
        if self.grant is not None:
            return GateDecision(ok=self.grant is not False, grant=self.grant)
        if not self._decision:
            self._decision.append(await evaluate_governance_gate(self.actor, self.request, authorize))
        return self._decision[0]
