"""Budgets enforced by reservation, not check-then-record (DESIGN §3).

Before each model call the loop reserves an estimate against every budget that applies to the
actor (and its tenant); after the call it settles the reservation to the real usage. A reservation
is granted while the scope still has headroom (`used + reserved < limit`), atomically; since every
grant sees the reservations of the runs in flight, concurrent runs together overshoot a limit by
at most one reservation (as long as a call's real usage stays within its reservation).

`QuotaStore` implementations: `MemoryQuotaStore` here, `SqlQuotaStore` in stores/sql/.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal, Protocol, runtime_checkable

from agora_agent.actors import Actor
from agora_agent.errors import QuotaExceededError

__all__ = [
    "Budget",
    "MemoryQuotaStore",
    "QuotaStore",
    "QuotaUsage",
    "Reservation",
    "budget_scopes",
    "period_key",
]


@dataclass(frozen=True, kw_only=True, slots=True)
class Budget:
    """Limits per actor and per tenant, in tokens and/or USD, per UTC day (or month).

    `reserve_tokens` is the estimate reserved before each model call (settled to the real usage
    afterwards); `reserve_usd` likewise for USD budgets. `reservation_ttl`: a reservation older than
    this is released by the periodic sweep (a process that died mid-call cannot hold budget forever);
    keep it longer than your slowest model call.
    """

    tokens_per_actor: int | None = None
    usd_per_actor: float | None = None
    tokens_per_tenant: int | None = None
    usd_per_tenant: float | None = None
    period: Literal["day", "month"] = "day"
    reserve_tokens: int = 4096
    reserve_usd: float = 0.05
    reservation_ttl: timedelta = timedelta(minutes=15)


@dataclass(frozen=True, kw_only=True, slots=True)
class Reservation:
    """A granted reservation; settle or release it exactly once."""

    id: str
    scopes: tuple[tuple[str, str], ...]  # (("actor", "u1"), ("tenant", "acme"))
    period_key: str
    tokens: int
    usd: float
    run_id: str | None = None
    expires_at: datetime | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class QuotaUsage:
    """Where an actor stands in the current period."""

    period_key: str
    used_tokens: int
    used_usd: float
    reserved_tokens: int
    limit_tokens: int | None
    limit_usd: float | None

    @property
    def within_limit(self) -> bool:
        tokens_ok = self.limit_tokens is None or self.used_tokens + self.reserved_tokens < self.limit_tokens
        usd_ok = self.limit_usd is None or self.used_usd < self.limit_usd
        return tokens_ok and usd_ok


def period_key(budget: Budget, day: str) -> str:
    """The budget period a UTC day (`YYYY-MM-DD`) falls in."""
    return day[:7] if budget.period == "month" else day


def utc_day(now: datetime | None = None) -> str:
    return (now or datetime.now(UTC)).strftime("%Y-%m-%d")


def budget_scopes(budget: Budget, actor: Actor) -> list[tuple[str, str, int | None, float | None]]:
    """The (scope, key, token limit, usd limit) rows that apply to this actor."""
    scopes: list[tuple[str, str, int | None, float | None]] = []
    if budget.tokens_per_actor is not None or budget.usd_per_actor is not None:
        scopes.append(("actor", actor.id, budget.tokens_per_actor, budget.usd_per_actor))
    if actor.tenant_ref and (budget.tokens_per_tenant is not None or budget.usd_per_tenant is not None):
        scopes.append(("tenant", actor.tenant_ref, budget.tokens_per_tenant, budget.usd_per_tenant))
    return scopes


def exceeded_message(
    scope: str, key: str, unit: str, limit: float, used: float, reserved: float, budget: Budget
) -> str:
    """A message that gives the value, the limit and the fix."""
    per = "daily" if budget.period == "day" else "monthly"
    field_name = f"{'tokens' if unit == 'tokens' else 'usd'}_per_{scope}"
    if unit == "usd":
        return (
            f"{scope} '{key}' is over the {per} budget of ${limit:,.2f} "
            f"(spent ${used:,.4f}, ${reserved:,.4f} reserved by runs in flight); raise Budget({field_name}=…)"
        )
    return (
        f"{scope} '{key}' is over the {per} token budget of {int(limit):,} "
        f"(used {int(used):,}, {int(reserved):,} reserved by runs in flight); raise Budget({field_name}=…)"
    )


@runtime_checkable
class QuotaStore(Protocol):
    """Atomic budget accounting. `reserve` raises `QuotaExceededError` when a scope has no headroom."""

    budget: Budget

    async def check(self, actor: Actor, period_key: str) -> None: ...

    async def reserve(
        self,
        actor: Actor,
        period_key: str,
        *,
        reservation_id: str,
        tokens: int,
        usd: float,
        run_id: str | None = None,
    ) -> Reservation: ...

    async def settle(self, reservation: Reservation, *, tokens: int, usd: float) -> None: ...

    async def release(self, reservation: Reservation) -> None: ...

    async def release_run(self, run_id: str) -> int:
        """Release every reservation a (crashed) run still holds; returns how many."""
        ...

    async def release_expired(self, now: datetime | None = None) -> int:
        """Release reservations past their expiry (the periodic sweep); returns how many."""
        ...

    async def usage(self, actor: Actor, period_key: str) -> QuotaUsage: ...


@dataclass
class _Counter:
    used_tokens: int = 0
    used_usd: float = 0.0
    reserved_tokens: int = 0
    reserved_usd: float = 0.0


class MemoryQuotaStore:
    """In-process budgets. Atomic because no `await` happens between the check and the grant."""

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self._counters: dict[tuple[str, str, str], _Counter] = {}
        self._open: dict[str, Reservation] = {}

    def _counter(self, scope: str, key: str, period: str) -> _Counter:
        return self._counters.setdefault((scope, key, period), _Counter())

    def _refuse_if_exhausted(self, actor: Actor, period: str) -> None:
        for scope, key, limit_tokens, limit_usd in budget_scopes(self.budget, actor):
            c = self._counter(scope, key, period)
            if limit_tokens is not None and c.used_tokens + c.reserved_tokens >= limit_tokens:
                raise QuotaExceededError(
                    exceeded_message(scope, key, "tokens", limit_tokens, c.used_tokens, c.reserved_tokens, self.budget),
                    detail={"scope": scope, "key": key, "limitTokens": limit_tokens, "usedTokens": c.used_tokens},
                )
            if limit_usd is not None and c.used_usd + c.reserved_usd >= limit_usd:
                raise QuotaExceededError(
                    exceeded_message(scope, key, "usd", limit_usd, c.used_usd, c.reserved_usd, self.budget),
                    detail={"scope": scope, "key": key, "limitUsd": limit_usd, "usedUsd": c.used_usd},
                )

    async def check(self, actor: Actor, period_key: str) -> None:
        self._refuse_if_exhausted(actor, period_key)

    async def reserve(
        self,
        actor: Actor,
        period_key: str,
        *,
        reservation_id: str,
        tokens: int,
        usd: float,
        run_id: str | None = None,
    ) -> Reservation:
        self._refuse_if_exhausted(actor, period_key)
        scopes = tuple((s, k) for s, k, _, _ in budget_scopes(self.budget, actor))
        for scope, key in scopes:
            c = self._counter(scope, key, period_key)
            c.reserved_tokens += tokens
            c.reserved_usd += usd
        reservation = Reservation(
            id=reservation_id,
            scopes=scopes,
            period_key=period_key,
            tokens=tokens,
            usd=usd,
            run_id=run_id,
            expires_at=datetime.now(UTC) + self.budget.reservation_ttl,
        )
        self._open[reservation_id] = reservation
        return reservation

    def _close(self, reservation: Reservation, tokens: int, usd: float) -> None:
        if self._open.pop(reservation.id, None) is None:
            return  # settled or released already: settling twice must not double-count
        for scope, key in reservation.scopes:
            c = self._counter(scope, key, reservation.period_key)
            c.reserved_tokens -= reservation.tokens
            c.reserved_usd -= reservation.usd
            c.used_tokens += tokens
            c.used_usd += usd

    async def settle(self, reservation: Reservation, *, tokens: int, usd: float) -> None:
        self._close(reservation, tokens, usd)

    async def release(self, reservation: Reservation) -> None:
        self._close(reservation, 0, 0.0)

    async def release_run(self, run_id: str) -> int:
        held = [r for r in self._open.values() if r.run_id == run_id]
        for reservation in held:
            self._close(reservation, 0, 0.0)
        return len(held)

    async def release_expired(self, now: datetime | None = None) -> int:
        moment = now or datetime.now(UTC)
        stale = [r for r in self._open.values() if r.expires_at is not None and r.expires_at < moment]
        for reservation in stale:
            self._close(reservation, 0, 0.0)
        return len(stale)

    async def usage(self, actor: Actor, period_key: str) -> QuotaUsage:
        c = self._counter("actor", actor.id, period_key)
        return QuotaUsage(
            period_key=period_key,
            used_tokens=c.used_tokens,
            used_usd=c.used_usd,
            reserved_tokens=c.reserved_tokens,
            limit_tokens=self.budget.tokens_per_actor,
            limit_usd=self.budget.usd_per_actor,
        )
