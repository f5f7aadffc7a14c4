"""Budgets enforced by reservation, not check-then-record.

Before each model call the loop reserves an estimate against every budget that applies to the
actor (and its tenant); after the call it settles the reservation to the real usage. A reservation
is granted while the scope still has headroom (`used + reserved < limit`), atomically; since every
grant sees the reservations of the runs in flight, concurrent runs together overshoot a limit by
at most one reservation (as long as a call's real usage stays within its reservation).

Which budgets apply comes from the stored rules (`governance/budgets.py`: per actor and per tenant,
daily or monthly, edited at run time) with `Budget` as the defaults. Each limit is enforced on a counter
row (scope, key, period); a counter a limit meets for the first time in a period is seeded from the usage
ledger, so a budget added mid-day counts what was already spent that day.

`QuotaStore` implementations: `MemoryQuotaStore` here, `SqlQuotaStore` in stores/sql/.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, Protocol, runtime_checkable

from agora_agent._frozen import constructor, fast_init
from agora_agent.actors import Actor
from agora_agent.errors import QuotaExceededError
from agora_agent.governance.budgets import (
    ALL,
    BudgetRuleStore,
    Limit,
    LimitCache,
    MemoryUsageLedger,
    period_bounds,
    period_of,
    resets_at,
)

__all__ = [
    "Budget",
    "MemoryQuotaStore",
    "QuotaStore",
    "QuotaUsage",
    "Reservation",
    "ThresholdCrossing",
    "budget_scopes",
    "crossings",
    "period_key",
    "refusal",
    "unpack_scope",
    "watch_rows",
]


@dataclass(frozen=True, kw_only=True, slots=True)
class Budget:
    """Default limits per actor and per tenant, in tokens and/or USD, per UTC day (or month).

    Stored budget rules (the console, `PUT {prefix}/governance/budgets/{scope}/{key}`) override these per
    actor or tenant. `thresholds`: fractions of a limit whose crossing raises `BudgetThresholdReached`.
    `reserve_tokens` is the estimate reserved before each model call (settled to the real usage
    afterwards); `reserve_usd` likewise for USD budgets. `reservation_ttl`: a reservation older than
    this is released by the periodic sweep (a process that died mid-call cannot hold budget forever);
    keep it longer than your slowest model call. `Budget()` turns budgets on with no default limits.
    """

    tokens_per_actor: int | None = None
    usd_per_actor: float | None = None
    tokens_per_tenant: int | None = None
    usd_per_tenant: float | None = None
    period: Literal["day", "month"] = "day"
    thresholds: tuple[float, ...] = (0.8,)
    reserve_tokens: int = 4096
    reserve_usd: float = 0.05
    reservation_ttl: timedelta = timedelta(minutes=15)


@fast_init
@dataclass(frozen=True, kw_only=True, slots=True)
class Reservation:
    """A granted reservation; settle or release it exactly once.

    `scopes` are the counters it holds: (scope, key, period key) — older reservations hold (scope, key)
    pairs on `period_key`. `watch` are the thresholds to look at after it settles: (scope, key, period key,
    unit, limit, threshold). Plain tuples: a durable run checkpoints reservations as JSON."""

    id: str
    scopes: tuple[tuple[str, ...], ...]
    period_key: str
    tokens: int
    usd: float
    run_id: str | None = None
    expires_at: datetime | None = None
    watch: tuple[tuple[Any, ...], ...] = ()


_reservation = constructor(Reservation)  # a model step reserves once: made without the class call (`_frozen`)


@dataclass(frozen=True, kw_only=True, slots=True)
class QuotaUsage:
    """Where an actor stands in the current period of its own (actor-scope) budget."""

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


@dataclass(frozen=True, kw_only=True, slots=True)
class ThresholdCrossing:
    """A limit's use reached one of its thresholds in a period (raised once per period)."""

    scope: str
    key: str
    period: str
    unit: str  # tokens | usd
    threshold: float
    used: float
    limit: float


def period_key(budget: Budget, day: str) -> str:
    """The budget period a UTC day (`YYYY-MM-DD`) falls in."""
    return period_of(budget.period, day)


def utc_day(now: datetime | None = None) -> str:
    return (now or datetime.now(UTC)).date().isoformat()  # "%Y-%m-%d"; strftime costs ~10x more


def budget_scopes(budget: Budget, actor: Actor) -> list[tuple[str, str, int | None, float | None]]:
    """The (scope, key, token limit, usd limit) rows the config's defaults apply to this actor."""
    scopes: list[tuple[str, str, int | None, float | None]] = []
    if budget.tokens_per_actor is not None or budget.usd_per_actor is not None:
        scopes.append(("actor", actor.id, budget.tokens_per_actor, budget.usd_per_actor))
    if actor.tenant_ref and (budget.tokens_per_tenant is not None or budget.usd_per_tenant is not None):
        scopes.append(("tenant", actor.tenant_ref, budget.tokens_per_tenant, budget.usd_per_tenant))
    return scopes


def unpack_scope(entry: Sequence[str], period: str) -> tuple[str, str, str]:
    """(scope, key, period key) of a reservation's scope entry (a pair means the reservation's period)."""
    if len(entry) >= 3:
        return str(entry[0]), str(entry[1]), str(entry[2])
    return str(entry[0]), str(entry[1]), period


def _fix(limit: Limit, unit: str) -> str:
    if limit.source == "config":
        return f"raise Budget({'tokens' if unit == 'tokens' else 'usd'}_per_{limit.scope}=…)"
    return "raise it in the console's Quota panel (governance/budgets)"


def exceeded_message(limit: Limit, unit: str, used: float, reserved: float) -> str:
    """A message that gives the value, the limit and the fix."""
    per = "daily" if limit.period == "day" else "monthly"
    value = limit.tokens if unit == "tokens" else limit.usd
    if unit == "usd":
        return (
            f"{limit.scope} '{limit.key}' is over the {per} budget of ${float(value or 0):,.2f} "
            f"(spent ${used:,.4f}, ${reserved:,.4f} reserved by runs in flight); {_fix(limit, unit)}"
        )
    return (
        f"{limit.scope} '{limit.key}' is over the {per} token budget of {int(value or 0):,} "
        f"(used {int(used):,}, {int(reserved):,} reserved by runs in flight); {_fix(limit, unit)}"
    )


def refusal(
    limit: Limit, day: str, used_tokens: int, used_usd: float, reserved_tokens: int, reserved_usd: float
) -> QuotaExceededError | None:
    """The error when the limit has no headroom left (`used + reserved >= limit`; a limit of 0 always refuses).

    Its `detail` (Python names; the web layer writes the keys in camelCase in the 429 body): `scope`, `key`,
    `period`, `period_key`, `resets_at`, `source`, and `limit_tokens`/`used_tokens` or `limit_usd`/`used_usd`."""
    tokens_out = limit.tokens is not None and used_tokens + reserved_tokens >= limit.tokens
    usd_out = not tokens_out and limit.usd is not None and used_usd + reserved_usd >= limit.usd
    if not (tokens_out or usd_out):
        return None  # the common case: nothing to build
    period = period_of(limit.period, day)
    base = {
        "scope": limit.scope,
        "key": limit.key,
        "period": limit.period,
        "period_key": period,
        "resets_at": resets_at(period).isoformat(),
        "source": limit.source,
    }
    if tokens_out:
        return QuotaExceededError(
            exceeded_message(limit, "tokens", used_tokens, reserved_tokens),
            detail={**base, "limit_tokens": limit.tokens, "used_tokens": used_tokens},
        )
    return QuotaExceededError(
        exceeded_message(limit, "usd", used_usd, reserved_usd),
        detail={**base, "limit_usd": limit.usd, "used_usd": used_usd},
    )


def watch_rows(limits: Sequence[Limit], day: str) -> tuple[tuple[Any, ...], ...]:
    """The (scope, key, period key, unit, limit, threshold) rows a reservation watches after it settles."""
    rows: list[tuple[Any, ...]] = []
    for limit in limits:
        period = period_of(limit.period, day)
        for unit, value in (("tokens", limit.tokens), ("usd", limit.usd)):
            if value is None or value <= 0:
                continue  # a blocked scope (0) has nothing to warn about
            rows.extend((limit.scope, limit.key, period, unit, value, t) for t in limit.thresholds)
    return tuple(rows)


def crossings(
    watch: Sequence[Sequence[Any]], used: dict[tuple[str, str, str], tuple[int, float]]
) -> list[ThresholdCrossing]:
    """The watched thresholds the counters' `used` values have reached."""
    found: list[ThresholdCrossing] = []
    for scope, key, period, unit, limit, threshold in watch:
        counter = used.get((scope, key, period))
        if counter is None:
            continue
        value = counter[0] if unit == "tokens" else counter[1]
        if value >= float(threshold) * float(limit):
            found.append(
                ThresholdCrossing(
                    scope=scope, key=key, period=period, unit=unit, threshold=float(threshold), used=value, limit=limit
                )
            )
    return found


@runtime_checkable
class QuotaStore(Protocol):
    """Atomic budget accounting. `reserve` raises `QuotaExceededError` when a scope has no headroom.

    `day` is the run's UTC day (`YYYY-MM-DD`); each limit maps it to its own period."""

    budget: Budget

    async def check(self, actor: Actor, day: str) -> None: ...

    async def reserve(
        self,
        actor: Actor,
        day: str,
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

    async def usage(self, actor: Actor, day: str) -> QuotaUsage: ...


@dataclass
class _Counter:
    used_tokens: int = 0
    used_usd: float = 0.0
    reserved_tokens: int = 0
    reserved_usd: float = 0.0


@dataclass(frozen=True, slots=True)
class _Plan:
    """What reserving under one limits tuple on one day needs, worked out once: the counters (kept: a counter
    is never replaced once made), each limit's token and USD cap, whether a USD limit applies, the thresholds
    to watch, and each watched row's trigger: (index of its counter, by tokens?, threshold x limit, claim
    key, the row)."""

    limits: tuple[Limit, ...]
    day: str
    scopes: tuple[tuple[str, str, str], ...]
    cells: tuple[_Counter, ...]
    usd: bool
    watch: tuple[tuple[Any, ...], ...]
    triggers: tuple[tuple[int, bool, float, tuple[str, str, str, str, float], tuple[Any, ...]], ...]
    checks: tuple[tuple[_Counter, int | None, float | None], ...]  # each counter with its caps, for the grant's test
    floor: tuple[float, float]  # the lowest token and USD trigger: counters below both cross nothing (a settle's test)


def _floor(
    triggers: Sequence[tuple[int, bool, float, tuple[str, str, str, str, float], tuple[Any, ...]]],
) -> tuple[float, float]:
    """`_Plan.floor`: the lowest token trigger and the lowest USD trigger (infinity where there is none)."""
    tokens = [t[2] for t in triggers if t[1]]
    usd = [t[2] for t in triggers if not t[1]]
    return min(tokens, default=math.inf), min(usd, default=math.inf)


def _triggers(
    scopes: Sequence[tuple[str, str, str]], watch: Sequence[tuple[Any, ...]]
) -> tuple[tuple[int, bool, float, tuple[str, str, str, str, float], tuple[Any, ...]], ...]:
    """`_Plan.triggers`: each watched row against the counter it reads (the last scope entry of that counter,
    as `crossings` reads the `used` map; a row whose counter the plan does not hold never triggers)."""
    index = {scope: i for i, scope in enumerate(scopes)}
    out = []
    for row in watch:
        scope, key, period, unit, limit, threshold = row
        i = index.get((scope, key, period))
        if i is not None:
            claim = (scope, key, period, unit, float(threshold))
            out.append((i, unit == "tokens", float(threshold) * float(limit), claim, row))
    return tuple(out)


@dataclass
class _Claims:
    """Thresholds already raised (scope, key, period, unit, threshold): once per period crossing."""

    raised: set[tuple[str, str, str, str, float]] = field(default_factory=set)


class MemoryQuotaStore:
    """In-process budgets. Atomic because no `await` happens between the check and the grant.

    `rules`: stored budget rules (None: the `budget` alone applies). `ledger`: where a counter met for the
    first time in a period is seeded from (None: it starts at zero)."""

    def __init__(
        self, budget: Budget, *, rules: BudgetRuleStore | None = None, ledger: MemoryUsageLedger | None = None
    ) -> None:
        self.budget = budget
        self.rules = rules
        self.limits = LimitCache(budget, rules)
        self._ledger = ledger
        self._counters: dict[tuple[str, str, str], _Counter] = {}
        self._open: dict[str, tuple[Reservation, _Plan]] = {}  # with the plan each was granted under
        self._claims = _Claims()
        self._pending: dict[str, list[ThresholdCrossing]] = {}
        self._plans: dict[tuple[tuple[Limit, ...], str], _Plan] = {}  # by value: limits are read anew per chat
        self._last: _Plan | None = None  # the last plan used: the same limits tuple again skips hashing it

    def _plan(self, limits: tuple[Limit, ...], day: str) -> _Plan:
        last = self._last
        if last is not None and last.limits is limits and last.day == day:
            return last
        plan = self._plans.get((limits, day))
        if plan is None:
            scopes = tuple(limit.counter(day) for limit in limits)
            watch = watch_rows(limits, day)
            cells = tuple(self._counter(*scope) for scope in scopes)
            triggers = _triggers(scopes, watch)
            plan = _Plan(
                limits=limits,
                day=day,
                scopes=scopes,
                cells=cells,
                usd=any(limit.usd is not None for limit in limits),
                watch=watch,
                triggers=triggers,
                checks=tuple((c, limit.tokens, limit.usd) for c, limit in zip(cells, limits, strict=True)),
                floor=_floor(triggers),
            )
            if len(self._plans) >= 1024:  # bounded: limits tuples are remembered per actor for a while only
                self._plans.clear()
            self._plans[(limits, day)] = plan
        self._last = plan
        return plan

    def _counter(self, scope: str, key: str, period: str) -> _Counter:
        counter = self._counters.get((scope, key, period))
        if counter is None:
            counter = self._counters[(scope, key, period)] = _Counter()
            if self._ledger is not None:  # first sight of this counter in the period: count what was spent
                start, end = period_bounds(period)
                counter.used_tokens, counter.used_usd = self._ledger.totals_now(scope, key, start, end)
        return counter

    def _refuse_if_exhausted(self, limits: Sequence[Limit], day: str) -> None:
        for limit in limits:
            c = self._counter(*limit.counter(day))
            error = refusal(limit, day, c.used_tokens, c.used_usd, c.reserved_tokens, c.reserved_usd)
            if error is not None:
                raise error

    async def check(self, actor: Actor, day: str) -> None:
        self._refuse_if_exhausted(await self.limits.fresh(actor), day)

    async def reserve(
        self,
        actor: Actor,
        day: str,
        *,
        reservation_id: str,
        tokens: int,
        usd: float,
        run_id: str | None = None,
    ) -> Reservation:
        limits = self.limits.cached(actor)
        if limits is None:
            limits = await self.limits.fresh(actor)
        return self._grant(limits, day, reservation_id, tokens, usd, run_id)

    def reserve_cached(
        self, actor: Actor, day: str, *, reservation_id: str, tokens: int, usd: float, run_id: str | None = None
    ) -> Reservation | None:
        """`reserve` without an await, when the actor's limits are cached (a run's every model step after the
        first); None when they must be read (then `reserve`). The memory agent store takes a tool result's
        next reservation this way."""
        limits = self.limits.cached(actor)
        return None if limits is None else self._grant(limits, day, reservation_id, tokens, usd, run_id)

    def _grant(
        self, limits: tuple[Limit, ...], day: str, reservation_id: str, tokens: int, usd: float, run_id: str | None
    ) -> Reservation:
        plan = self._last  # `_plan`'s first test, inline: a run's steps reserve under the same limits
        if plan is None or plan.limits is not limits or plan.day != day:
            plan = self._plan(limits, day)
        # no await from here to the grant
        for c, cap_tokens, cap_usd in plan.checks:
            # `refusal`'s test, inline: the error is built only for a scope without headroom
            if (cap_tokens is not None and c.used_tokens + c.reserved_tokens >= cap_tokens) or (
                cap_usd is not None and c.used_usd + c.reserved_usd >= cap_usd
            ):
                for limit, cell in zip(limits, plan.cells, strict=True):  # the first refusing limit, as before
                    error = refusal(
                        limit, day, cell.used_tokens, cell.used_usd, cell.reserved_tokens, cell.reserved_usd
                    )
                    if error is not None:
                        raise error
        usd = usd if plan.usd else 0.0  # no USD limit applies: nothing in USD is reserved
        for c in plan.cells:
            c.reserved_tokens += tokens
            c.reserved_usd += usd
        reservation = _reservation(
            id=reservation_id,
            scopes=plan.scopes,
            period_key=day,
            tokens=tokens,
            usd=usd,
            run_id=run_id,
            expires_at=datetime.now(UTC) + self.budget.reservation_ttl,
            watch=plan.watch,
        )
        if plan.scopes:
            self._open[reservation_id] = (reservation, plan)
        return reservation

    def _close(self, reservation: Reservation, tokens: int, usd: float) -> None:
        held = self._open.pop(reservation.id, None)
        if held is None:
            return  # settled or released already: settling twice must not double-count
        plan = held[1]
        if (plan.scopes is not reservation.scopes or plan.watch is not reservation.watch) and (
            # not the reservation granted here (the same tuples) but one read back, e.g. from a checkpoint
            plan.scopes != reservation.scopes or plan.watch != reservation.watch
        ):
            self._close_by_scope(reservation, tokens, usd)
            return
        held_tokens, held_usd = reservation.tokens, reservation.usd
        for c in plan.cells:
            c.reserved_tokens -= held_tokens
            c.reserved_usd -= held_usd
            c.used_tokens += tokens
            c.used_usd += usd
        if plan.triggers and (tokens > 0 or usd > 0):
            floor_tokens, floor_usd = plan.floor
            for c in plan.cells:
                if c.used_tokens >= floor_tokens or c.used_usd >= floor_usd:  # some trigger may be reached
                    self._claim_triggers(reservation.id, plan)
                    return

    def _claim_triggers(self, reservation_id: str, plan: _Plan) -> None:
        """`_claim_crossings` on the plan's precomputed triggers (the same crossings, in watch order)."""
        raised = self._claims.raised
        won: list[ThresholdCrossing] = []
        cells = plan.cells
        for i, by_tokens, trigger, claim, row in plan.triggers:
            c = cells[i]
            value = c.used_tokens if by_tokens else c.used_usd
            if value >= trigger and claim not in raised:
                scope, key, period, unit, limit, _ = row
                won.append(
                    ThresholdCrossing(
                        scope=scope, key=key, period=period, unit=unit, threshold=claim[4], used=value, limit=limit
                    )
                )
        for crossing in won:
            raised.add((crossing.scope, crossing.key, crossing.period, crossing.unit, crossing.threshold))
        if won:
            self._pending[reservation_id] = won

    def _close_by_scope(self, reservation: Reservation, tokens: int, usd: float, *, held: bool = True) -> None:
        """Close a reservation by its own scope entries (one not granted here as it is, e.g. a checkpoint's);
        `held=False`: released already, only the usage is charged."""
        used: dict[tuple[str, str, str], tuple[int, float]] = {}
        for entry in reservation.scopes:
            counter = unpack_scope(entry, reservation.period_key)
            c = self._counter(*counter)  # a counter is never replaced
            if held:
                c.reserved_tokens -= reservation.tokens
                c.reserved_usd -= reservation.usd
            c.used_tokens += tokens
            c.used_usd += usd
            used[counter] = (c.used_tokens, c.used_usd)
        if reservation.watch and (tokens > 0 or usd > 0):
            self._claim_crossings(reservation, used)

    def _claim_crossings(self, reservation: Reservation, used: dict[tuple[str, str, str], tuple[int, float]]) -> None:
        raised = self._claims.raised
        fresh = [w for w in reservation.watch if (w[0], w[1], w[2], w[3], float(w[5])) not in raised]
        won = crossings(fresh, used)
        for crossing in won:
            raised.add((crossing.scope, crossing.key, crossing.period, crossing.unit, crossing.threshold))
        if won:
            self._pending[reservation.id] = won

    async def settle(self, reservation: Reservation, *, tokens: int, usd: float) -> None:
        self._close(reservation, tokens, usd)

    async def settle_step(self, reservation: Reservation, *, tokens: int, usd: float) -> None:
        """`settle` for a model step, called once per step (when its message is new): a reservation released
        meanwhile — the expiry sweep under a slow model call — still charges the usage, as the step's usage row
        is written all the same; only its reserved part is gone already (the SQL stores' rule)."""
        self.settle_step_now(reservation, tokens, usd)

    def settle_step_now(self, reservation: Reservation, tokens: int, usd: float) -> None:
        """`settle_step` without an await (the memory agent store settles a model step this way)."""
        if reservation.id in self._open:
            self._close(reservation, tokens, usd)
        else:
            self._close_by_scope(reservation, tokens, usd, held=False)

    async def release(self, reservation: Reservation) -> None:
        self._close(reservation, 0, 0.0)

    async def release_run(self, run_id: str) -> int:
        held = [r for r, _ in self._open.values() if r.run_id == run_id]
        for reservation in held:
            self._close(reservation, 0, 0.0)
        return len(held)

    async def release_expired(self, now: datetime | None = None) -> int:
        moment = now or datetime.now(UTC)
        stale = [r for r, _ in self._open.values() if r.expires_at is not None and r.expires_at < moment]
        for reservation in stale:
            self._close(reservation, 0, 0.0)
        return len(stale)

    async def crossed(self, reservation: Reservation) -> list[ThresholdCrossing]:
        """The thresholds this reservation's settle reached first in their period (each raised once)."""
        return self.crossed_now(reservation)

    def crossed_now(self, reservation: Reservation) -> list[ThresholdCrossing]:
        """`crossed` without an await (the loop asks after every settled step)."""
        return self._pending.pop(reservation.id, [])

    async def reseed(self, scope: str, key: str) -> None:
        """After a rule change: lift the scope's current counters to the ledger (a counter a rule did not
        use meanwhile missed that usage). `key` "*" reseeds every counter of the scope."""
        if self._ledger is None:
            return
        for (s, k, period), counter in list(self._counters.items()):
            if s == scope and (key == ALL or k == key):
                start, end = period_bounds(period)
                tokens, usd = self._ledger.totals_now(s, k, start, end)
                counter.used_tokens = max(counter.used_tokens, tokens)
                counter.used_usd = max(counter.used_usd, usd)

    async def usage(self, actor: Actor, day: str) -> QuotaUsage:
        limits = await self.limits.current(actor)
        own = next((limit for limit in limits if limit.scope == "actor"), None)
        period = period_of(own.period if own is not None else self.budget.period, day)
        c = self._counter("actor", actor.id, period)
        return QuotaUsage(
            period_key=period,
            used_tokens=c.used_tokens,
            used_usd=c.used_usd,
            reserved_tokens=c.reserved_tokens,
            limit_tokens=own.tokens if own is not None else None,
            limit_usd=own.usd if own is not None else None,
        )
