"""`SqlQuotaStore`: budgets by reservation in SQL, with the semantics of `MemoryQuotaStore`.

One counter row per (scope, key, period) holds used and reserved tokens/USD. `reserve` grants while
`used + reserved < limit` with a single conditional UPDATE per scope (after an upsert that makes sure
the row exists), inside one transaction: on PostgreSQL the UPDATE re-checks its WHERE clause against
the latest committed row after waiting for the row lock, on SQLite the transaction is `BEGIN IMMEDIATE`
(one writer at a time). A reservation row records what is open; `settle`/`release` delete it first and
only touch the counters when they did, so settling twice never double-counts.

Which limits apply comes from the stored budget rules (`agent_budget_rule`, read again by every `check`)
with the `Budget` as defaults. A counter row a limit meets for the first time in a period is inserted
seeded from the usage ledger (`agent_token_usage`), in the grant's transaction.

Crash safety: a reservation carries its run and an expiry, so recovery releases a crashed run's
reservations (`release_run`) and a periodic sweep releases expired ones (`release_expired`); a reserve
retried after a lost commit reply finds its own row and grants nothing twice.
"""

from __future__ import annotations

import contextlib
import weakref
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncEngine

from agora_agent.actors import Actor
from agora_agent.errors import NotFoundError, QuotaExceededError
from agora_agent.governance.budgets import (
    ALL,
    BudgetRuleStore,
    Limit,
    LimitCache,
    effective_limits,
    period_bounds,
    period_of,
)
from agora_agent.governance.quota import (
    Budget,
    QuotaUsage,
    Reservation,
    ThresholdCrossing,
    crossings,
    refusal,
    unpack_scope,
    watch_rows,
)
from agora_agent.stores.sql import direct
from agora_agent.stores.sql.budgets import (
    RULES_FOR_CONDITION,
    SqlBudgetRuleStore,
    ledger_totals,
    rule_from_row,
    rules_for_in,
    rules_params,
)
from agora_agent.stores.sql.pg_steps import (
    RowShape,
    counters_by_key,
    json_rows,
    quota_check_statement,
    reserve_statement,
    row_update,
)
from agora_agent.stores.sql.tables import budget_alert, budget_counter, budget_reservation, budget_rule
from agora_agent.stores.sql.units import Units, units_for

__all__ = [
    "PlannedReservation",
    "RowUpdate",
    "SqlQuotaStore",
    "claim_won",
    "crossings_to_claim",
    "settle_reservation",
    "settled_counters",
]

_c = budget_counter.c


# Built once (the budget path runs twice per model step): a reused statement object compiles once.
_KEY = (_c.scope == sa.bindparam("_scope"), _c.key == sa.bindparam("_key"), _c.period == sa.bindparam("_period"))
_COUNTER = sa.select(budget_counter).where(*_KEY)
_DELETE_RESERVATION = sa.delete(budget_reservation).where(budget_reservation.c.id == sa.bindparam("_id"))
_INSERT_RESERVATION = sa.insert(budget_reservation)
_SETTLE = (
    sa.update(budget_counter)
    .where(*_KEY)
    .values(
        reserved_tokens=_c.reserved_tokens - sa.bindparam("_reserved_tokens", type_=sa.BigInteger()),
        reserved_usd=_c.reserved_usd - sa.bindparam("_reserved_usd", type_=sa.Float()),
        used_tokens=_c.used_tokens + sa.bindparam("_tokens", type_=sa.BigInteger()),
        used_usd=_c.used_usd + sa.bindparam("_usd", type_=sa.Float()),
    )
    .returning(_c.used_tokens, _c.used_usd)  # the threshold check needs them: no extra statement
)
_SEED_COUNTER = {
    name: insert(budget_counter)
    .values(
        scope=sa.bindparam("_scope"),
        key=sa.bindparam("_key"),
        period=sa.bindparam("_period"),
        used_tokens=sa.bindparam("_seed_tokens", type_=sa.BigInteger()),
        used_usd=sa.bindparam("_seed_usd", type_=sa.Float()),
    )
    .on_conflict_do_nothing()
    for name, insert in (("postgresql", postgresql.insert), ("sqlite", sqlite.insert))
}
_CLAIM_ALERT = {
    name: insert(budget_alert).on_conflict_do_nothing()
    for name, insert in (("postgresql", postgresql.insert), ("sqlite", sqlite.insert))
}


def _grant_statement(tokens_limited: bool, usd_limited: bool) -> Any:
    conditions = list(_KEY)
    if tokens_limited:
        conditions.append(_c.used_tokens + _c.reserved_tokens < sa.bindparam("_limit_tokens", type_=sa.BigInteger()))
    if usd_limited:
        conditions.append(_c.used_usd + _c.reserved_usd < sa.bindparam("_limit_usd", type_=sa.Float()))
    return (
        sa.update(budget_counter)
        .where(*conditions)
        .values(
            reserved_tokens=_c.reserved_tokens + sa.bindparam("_tokens", type_=sa.BigInteger()),
            reserved_usd=_c.reserved_usd + sa.bindparam("_usd", type_=sa.Float()),
        )
    )


_GRANT = {(t, u): _grant_statement(t, u) for t in (False, True) for u in (False, True)}


def _key(scope: str, key: str, period: str) -> dict[str, Any]:
    return {"_scope": scope, "_key": key, "_period": period}


def _reservation_row(reservation: Reservation, now: datetime) -> dict[str, Any]:
    """The reservation's row (the keyed insert's columns; the one-statement reserve prefixes them `h_`)."""
    return {
        "id": reservation.id,
        "scopes": [list(s) for s in reservation.scopes],
        "period": reservation.period_key,
        "tokens": reservation.tokens,
        "usd": reservation.usd,
        "created_at": now,
        "run_id": reservation.run_id,
        "expires_at": reservation.expires_at,
    }


def _limit_params(limit: Limit) -> dict[str, Any]:
    """The grant statement's limit parameters: only the limits that apply."""
    params: dict[str, Any] = {}
    if limit.tokens is not None:
        params["_limit_tokens"] = limit.tokens
    if limit.usd is not None:
        params["_limit_usd"] = limit.usd
    return params


@dataclass(frozen=True, kw_only=True, slots=True)
class PlannedReservation:
    """A reservation worked out before any write (`SqlQuotaStore.plan`): what a grant would hold, against which
    limits, in the run's `day`, stamped `now`."""

    reservation: Reservation
    limits: tuple[Limit, ...]
    day: str
    now: datetime


@dataclass(frozen=True, kw_only=True, slots=True)
class RowUpdate:
    """A one-row UPDATE a reservation commits with it (`SqlQuotaStore.reserve(first=...)`): the row of `table`
    whose `key` columns have these values gets `values`; no such row raises `NotFoundError(missing)`."""

    table: str
    key: Mapping[str, Any]
    values: Mapping[str, Any]
    missing: str

    @property
    def shape(self) -> RowShape:
        return self.table, tuple(self.key), tuple(sorted(self.values))

    def params(self) -> dict[str, Any]:
        params = {f"k_{name}": value for name, value in self.key.items()}
        params.update({f"w_{name}": value for name, value in self.values.items()})
        return params

    def apply(self, conn: sa.Connection) -> None:
        """The update inside the caller's unit on `conn`."""
        if direct.execute(conn, row_update(self.shape), self.params()).rowcount == 0:
            raise NotFoundError(self.missing)

    async def alone(self, units: Units) -> None:
        """The update as its own one-statement unit."""
        if (await units.one(row_update(self.shape), self.params(), write=True)).rowcount == 0:
            raise NotFoundError(self.missing)


def _counter_row(conn: sa.Connection, scope: str, key: str, period: str) -> dict[str, Any] | None:
    return direct.execute(conn, _COUNTER, _key(scope, key, period)).first()


_Claim = tuple[str, str, str, str, float]


class _Crossings:
    """Thresholds found by settles in this process: pending ones until the loop raises them (by reservation id),
    and, per database engine, the ones known to be claimed (so a step past a threshold does not try again)."""

    def __init__(self, limit: int = 10_000) -> None:
        self.limit = limit
        self.pending: OrderedDict[str, tuple[sa.Engine, list[ThresholdCrossing]]] = OrderedDict()
        self._claimed: weakref.WeakKeyDictionary[sa.Engine, set[_Claim]] = weakref.WeakKeyDictionary()

    def claimed(self, engine: sa.Engine) -> set[_Claim]:
        known = self._claimed.setdefault(engine, set())
        if len(known) > self.limit:
            known.clear()
        return known

    def keep(self, engine: sa.Engine, reservation_id: str, won: list[ThresholdCrossing]) -> None:
        self.pending[reservation_id] = (engine, won)
        while len(self.pending) > self.limit:
            self.pending.popitem(last=False)

    def take(self, reservation_id: str) -> list[ThresholdCrossing]:
        """The claims a committed settle won (a settle that rolled back and ran again replaced them)."""
        engine, won = self.pending.pop(reservation_id, (None, []))
        if engine is not None:
            self.claimed(engine).update((c.scope, c.key, c.period, c.unit, c.threshold) for c in won)
        return won


CROSSINGS = _Crossings()


def _claim(conn: sa.Connection, crossing: ThresholdCrossing) -> bool:
    row = {
        "scope": crossing.scope,
        "key": crossing.key,
        "period": crossing.period,
        "unit": crossing.unit,
        "threshold_bp": round(crossing.threshold * 10_000),
        "raised_at": datetime.now(UTC),
    }
    return bool(conn.execute(_CLAIM_ALERT[conn.dialect.name], row).rowcount)


def settle_reservation(
    conn: sa.Connection, reservation: Reservation, tokens: int, usd: float, *, charge_released: bool = False
) -> None:
    """Replace `reservation` by the real usage inside the caller's transaction (the ONE place settle SQL lives).

    The reservation row is deleted first and the counters move only when it was there, so settling twice
    (or a release after a settle) never double-counts. `SqlAgentStore.record_model_step` calls this in the
    transaction that writes the assistant message and its usage row. A threshold the new totals reach is
    claimed in `agent_budget_alert` in the same transaction (once per period, whichever process gets there
    first) and kept for `SqlQuotaStore.crossed`.
    """
    if not reservation.scopes:
        return
    deleted = direct.execute(conn, _DELETE_RESERVATION, {"_id": reservation.id})
    held = deleted.rowcount > 0
    if not held and not charge_released:
        return  # settled or released already: settling twice must not double-count
    # `charge_released` (a model step, written once by its message id): a reservation released meanwhile — an
    # expiry sweep, a process that lost the run — still charges the usage, only its reserved part is gone.
    reserved_tokens, reserved_usd = (reservation.tokens, reservation.usd) if held else (0, 0.0)
    amounts = {"_reserved_tokens": reserved_tokens, "_reserved_usd": reserved_usd, "_tokens": tokens, "_usd": usd}
    used: dict[tuple[str, str, str], tuple[int, float]] = {}
    for counter in settled_counters(reservation):
        row = direct.execute(conn, _SETTLE, {**_key(*counter), **amounts}).first()
        if row is not None:
            used[counter] = (int(row["used_tokens"]), float(row["used_usd"]))
    claim_crossings(conn, reservation, tokens, usd, used)


def settled_counters(reservation: Reservation) -> list[tuple[str, str, str]]:
    """The (scope, key, period key) counters a settle of `reservation` moves."""
    return [unpack_scope(entry, reservation.period_key) for entry in reservation.scopes]


def claim_crossings(
    conn: sa.Connection,
    reservation: Reservation,
    tokens: int,
    usd: float,
    used: dict[tuple[str, str, str], tuple[int, float]],
) -> None:
    """Claim the thresholds the settled counters' `used` values reached (after the settle, on `conn`).

    On PostgreSQL `record_model_step` settles in one autocommit statement and claims right after it, in the
    same store call: a crash in between leaves the threshold unclaimed, and the next settle on that counter
    (which still finds it reached: `used` only grows in a period) claims it.
    """
    reached = crossings_to_claim(conn.engine, reservation, tokens, usd, used)
    if reached:
        claim_won(conn, reservation, reached)


def crossings_to_claim(
    engine: sa.Engine,
    reservation: Reservation,
    tokens: int,
    usd: float,
    used: dict[tuple[str, str, str], tuple[int, float]],
) -> list[ThresholdCrossing]:
    """The thresholds the settled counters' `used` values reached that are not known claimed (no database)."""
    if not reservation.watch or (tokens <= 0 and usd <= 0):
        return []
    claimed = CROSSINGS.claimed(engine)
    fresh = [w for w in reservation.watch if (w[0], w[1], w[2], w[3], float(w[5])) not in claimed]
    return crossings(fresh, used)


def claim_won(conn: sa.Connection, reservation: Reservation, reached: Sequence[ThresholdCrossing]) -> None:
    """Claim `reached` on `conn`; the ones won are kept for `SqlQuotaStore.crossed`."""
    claimed = CROSSINGS.claimed(conn.engine)
    won = []
    for crossing in reached:
        if _claim(conn, crossing):
            won.append(crossing)  # known as claimed once the transaction committed (`take`)
        else:  # claimed before, by another process or an earlier step: never again this period
            claimed.add((crossing.scope, crossing.key, crossing.period, crossing.unit, crossing.threshold))
    if won:
        CROSSINGS.keep(conn.engine, reservation.id, won)


def _used(conn: sa.Connection, scope: str, key: str, period: str) -> tuple[int, float, int, float]:
    """(used tokens, used usd, reserved tokens, reserved usd) of a counter; a counter not there yet is what the
    ledger recorded in its period (it is inserted with those values at its first grant)."""
    row = _counter_row(conn, scope, key, period)
    if row is not None:
        return _counter_values(row)
    return _ledger_used(conn, period, scope, key)


def _counter_values(row: Mapping[str, Any]) -> tuple[int, float, int, float]:
    return int(row["used_tokens"]), float(row["used_usd"]), int(row["reserved_tokens"]), float(row["reserved_usd"])


def _ledger_used(conn: sa.Connection, period: str, scope: str, key: str) -> tuple[int, float, int, float]:
    start, end = period_bounds(period)
    tokens, usd = ledger_totals(conn, scope, key, start, end)
    return tokens, usd, 0, 0.0


class _AlreadyGranted(Exception):
    """The reservation row exists: a previous attempt of this very reserve committed."""


class SqlQuotaStore:
    """Atomic budget accounting shared by every process on the database. `reserve` raises `QuotaExceededError`.

    `rules`: the stored budget rules (None: the `budget` alone applies)."""

    def __init__(self, engine: AsyncEngine, budget: Budget, *, rules: BudgetRuleStore | None = None) -> None:
        self.engine = engine
        self.budget = budget
        self.rules = rules
        self.limits = LimitCache(budget, rules)
        self._units = units_for(engine)
        self._postgres = engine.dialect.name == "postgresql"
        self._seed = _SEED_COUNTER["postgresql" if self._postgres else "sqlite"]

    def shares_transactions_with(self, engine: AsyncEngine) -> bool:
        """Whether a store on `engine` can settle this quota's reservations inside its own transactions."""
        return engine is self.engine or engine.sync_engine is self.engine.sync_engine

    async def check(self, actor: Actor, day: str) -> None:
        """Raise `QuotaExceededError` when any budget of the actor (or its tenant) has no headroom left.

        Reads the rules again (an edit is effective at the next chat, whichever process made it); rules on
        this database are read in the same unit as the counters (one round trip)."""
        if self._postgres and self._rules_here():  # rules and counters in ONE statement
            limits, error = await self._check_statement(actor, day)
        elif self._rules_here():

            def read(conn: sa.Connection) -> tuple[tuple[Limit, ...], QuotaExceededError | None]:
                limits = effective_limits(self.budget, rules_for_in(conn, actor), actor)
                return limits, self._first_refusal(conn, limits, day)

            limits, error = await self._units.run(read, write=False)
            self.limits.remember(actor, limits)
        else:
            limits = await self.limits.fresh(actor)
            if not limits:
                return
            error = await self._units.run(lambda conn: self._first_refusal(conn, limits, day), write=False)
        if error is not None:
            raise error

    def _rules_here(self) -> bool:
        return isinstance(self.rules, SqlBudgetRuleStore) and self.shares_transactions_with(self.rules.engine)

    async def _check_statement(self, actor: Actor, day: str) -> tuple[tuple[Limit, ...], QuotaExceededError | None]:
        """PostgreSQL: the rules and the counters they may use read in ONE statement
        (`pg_steps.quota_check_statement`); a counter not there yet is read from the ledger, as `_used` does."""
        params = {**rules_params(actor), "_day": period_of("day", day), "_month": period_of("month", day)}
        found = (await self._units.one(quota_check_statement(RULES_FOR_CONDITION), params, write=False)).one()
        rules = [rule_from_row(r) for r in json_rows(budget_rule, found["rules"])]
        limits = self.limits.remember(actor, effective_limits(self.budget, rules, actor))
        counters = counters_by_key(found["counters"])
        for limit in limits:
            scope, key, period = limit.counter(day)
            row = counters.get((scope, key, period))
            if row is not None:
                used = _counter_values(row)
            else:
                used = await self._units.run(partial(_ledger_used, period=period, scope=scope, key=key), write=False)
            error = refusal(limit, day, *used)
            if error is not None:
                return limits, error
        return limits, None

    @staticmethod
    def _first_refusal(conn: sa.Connection, limits: Sequence[Limit], day: str) -> QuotaExceededError | None:
        for limit in limits:
            error = refusal(limit, day, *_used(conn, *limit.counter(day)))
            if error is not None:
                return error
        return None

    def _grant_one(self, conn: sa.Connection, limit: Limit, day: str, tokens: int, usd: float) -> None:
        counter = _key(*limit.counter(day))
        grant = _GRANT[(limit.tokens is not None, limit.usd is not None)]
        params = {**counter, "_tokens": tokens, "_usd": usd, **_limit_params(limit)}
        if direct.execute(conn, grant, params).rowcount:
            return  # the common case: one statement per scope
        if _counter_row(conn, *limit.counter(day)) is None:
            # First grant on this counter in its period: insert it with what the ledger already recorded.
            start, end = period_bounds(counter["_period"])
            seed_tokens, seed_usd = ledger_totals(conn, limit.scope, limit.key, start, end)
            conn.execute(self._seed, {**counter, "_seed_tokens": seed_tokens, "_seed_usd": seed_usd})
        # Grant again whether the row was seeded here or appeared meanwhile: on PostgreSQL another process's
        # first grant may commit the row between the UPDATE above and the read (READ COMMITTED).
        if conn.execute(grant, params).rowcount:
            return
        error = refusal(limit, day, *_used(conn, *limit.counter(day)))
        raise error or QuotaExceededError(f"{limit.scope} '{limit.key}' has no budget headroom left")

    async def reserve(
        self,
        actor: Actor,
        day: str,
        *,
        reservation_id: str,
        tokens: int,
        usd: float,
        run_id: str | None = None,
        first: RowUpdate | None = None,
    ) -> Reservation:
        """Reserve `tokens`/`usd` against every budget that applies, all or nothing.

        The row carries `run_id` (recovery releases a crashed run's reservations) and an expiry (the
        periodic sweep releases what outlived `Budget.reservation_ttl`). `first`: a row update committed in
        the same transaction, before the grant (a tool's result before the next model call's reservation); it
        is committed whatever the grant decides (a refusal commits it on its own), and a missing row grants
        nothing (`NotFoundError`)."""
        planned = await self.plan(actor, day, reservation_id=reservation_id, tokens=tokens, usd=usd, run_id=run_id)
        reservation, limits = planned.reservation, planned.limits
        if not limits:
            if first is not None:
                await first.alone(self._units)
            return reservation

        def grant(conn: sa.Connection) -> None:
            if first is not None:
                first.apply(conn)
            self._grant(conn, planned)

        if self._postgres and len(limits) == 1:
            if await self._reserve_one_statement(planned, first):
                return reservation
            first = None  # committed by that statement: the full unit below only decides the grant
        try:
            with contextlib.suppress(_AlreadyGranted):
                await self._units.run(grant, write=True)
        except QuotaExceededError:
            if first is not None:  # rolled back with the refused grant: committed on its own
                await first.alone(self._units)
            raise
        return reservation

    async def plan(
        self, actor: Actor, day: str, *, reservation_id: str, tokens: int, usd: float, run_id: str | None = None
    ) -> PlannedReservation:
        """The reservation `reserve` would grant, with the limits it is held against, before anything is written:
        for a store that grants it inside its own transaction (`grant_within`, `grant_params`)."""
        limits = await self.limits.current(actor)
        usd = usd if any(limit.usd is not None for limit in limits) else 0.0
        now = datetime.now(UTC)
        reservation = Reservation(
            id=reservation_id,
            scopes=tuple(limit.counter(day) for limit in limits),
            period_key=day,
            tokens=tokens,
            usd=usd,
            run_id=run_id,
            expires_at=now + self.budget.reservation_ttl,
            watch=watch_rows(limits, day),
        )
        return PlannedReservation(reservation=reservation, limits=limits, day=day, now=now)

    def _grant(self, conn: sa.Connection, planned: PlannedReservation) -> None:
        """The grant inside the caller's unit; `_AlreadyGranted` when an earlier attempt committed it."""
        reservation = planned.reservation
        # The reservation row first: if an earlier attempt committed (its reply lost to a dropped
        # connection), the insert conflicts before any counter moved, and the grant stands (and whatever the
        # caller's unit wrote before it, written by that attempt too).
        try:
            direct.execute(conn, _INSERT_RESERVATION, _reservation_row(reservation, planned.now), keyed=True)
        except sa.exc.IntegrityError:
            raise _AlreadyGranted from None
        for limit in planned.limits:
            self._grant_one(conn, limit, planned.day, reservation.tokens, reservation.usd)

    def grant_within(self, conn: sa.Connection, planned: PlannedReservation) -> None:
        """Grant `planned` inside the caller's write unit on this quota's database (its writes and the grant commit
        together); raises `QuotaExceededError` — the caller's unit then rolls back — when a limit has no headroom."""
        with contextlib.suppress(_AlreadyGranted):
            self._grant(conn, planned)

    @staticmethod
    def grant_params(planned: PlannedReservation) -> dict[str, Any]:
        """The parameters of `pg_steps.grant_ctes` for a one-limit `planned` reservation (PostgreSQL)."""
        reservation = planned.reservation
        scope, key, period = reservation.scopes[0]
        return {
            **_key(scope, key, period),
            "_id": reservation.id,
            "_tokens": reservation.tokens,
            "_usd": reservation.usd,
            **{f"h_{name}": value for name, value in _reservation_row(reservation, planned.now).items()},
            **_limit_params(planned.limits[0]),
        }

    async def _reserve_one_statement(self, planned: PlannedReservation, first: RowUpdate | None) -> bool:
        """PostgreSQL, one limit, its counter there with headroom: the reservation (after `first`) as ONE
        statement in autocommit (`pg_steps.reserve_statement`). False when it granted nothing and the full unit
        must decide (`first` is committed then all the same)."""
        limit = planned.limits[0]
        params = self.grant_params(planned)
        if first is not None:
            params.update(first.params())
        stmt = reserve_statement(
            limit.tokens is not None,
            limit.usd is not None,
            None if first is None else first.shape,
            self._units.defer_flush,
        )
        outcome = (await self._units.one(stmt, params, write=True)).one()
        self._units.deferred(planned.reservation.run_id, outcome)
        if first is not None and not outcome["written"]:
            raise NotFoundError(first.missing)  # nothing written: the grant depends on the row
        return bool(outcome["granted"] or outcome["held"])  # granted now, or by an earlier attempt whose reply was lost

    async def _close(self, reservation: Reservation, tokens: int, usd: float) -> None:
        if not reservation.scopes:
            return
        await self._units.run(lambda conn: settle_reservation(conn, reservation, tokens, usd), write=True)

    async def settle(self, reservation: Reservation, *, tokens: int, usd: float) -> None:
        """Replace the reservation by the real usage; a second settle (or a release after it) does nothing."""
        await self._close(reservation, tokens, usd)

    async def release(self, reservation: Reservation) -> None:
        """Give the reservation back unused (the model call did not happen)."""
        await self._close(reservation, 0, 0.0)

    async def _release_where(self, condition: Any) -> int:
        stmt = sa.select(budget_reservation).where(condition)
        rows = await self._units.run(lambda conn: conn.execute(stmt).mappings().all(), write=False)
        for row in rows:
            held = Reservation(
                id=row["id"],
                scopes=tuple(tuple(str(part) for part in entry) for entry in row["scopes"]),
                period_key=row["period"],
                tokens=int(row["tokens"]),
                usd=float(row["usd"]),
            )
            await self.release(held)
        return len(rows)

    async def release_run(self, run_id: str) -> int:
        """Release every reservation `run_id` still holds (recovery of a crashed run)."""
        return await self._release_where(budget_reservation.c.run_id == run_id)

    async def release_expired(self, now: datetime | None = None) -> int:
        """Release every reservation past its expiry (the periodic sweep)."""
        moment = now or datetime.now(UTC)
        return await self._release_where(
            sa.and_(budget_reservation.c.expires_at.is_not(None), budget_reservation.c.expires_at < moment)
        )

    async def crossed(self, reservation: Reservation) -> list[ThresholdCrossing]:
        """The thresholds this reservation's settle reached and claimed (once per period; none on a replay)."""
        return self.crossed_now(reservation)

    def crossed_now(self, reservation: Reservation) -> list[ThresholdCrossing]:
        """`crossed` without an await (the loop asks after every settled step)."""
        return CROSSINGS.take(reservation.id)

    async def reseed(self, scope: str, key: str) -> None:
        """After a rule change: lift the scope's current counters to the ledger (a counter no limit used for a
        while missed that usage). `key` "*" reseeds every counter of the scope in the current periods."""
        today = datetime.now(UTC).strftime("%Y-%m-%d")
        periods = (period_of("day", today), period_of("month", today))

        def unit(conn: sa.Connection) -> None:
            stmt = sa.select(_c.scope, _c.key, _c.period).where(_c.scope == scope, _c.period.in_(periods))
            if key != ALL:
                stmt = stmt.where(_c.key == key)
            for s, k, period in conn.execute(stmt).all():
                start, end = period_bounds(period)
                tokens, usd = ledger_totals(conn, s, k, start, end)
                conn.execute(
                    sa.update(budget_counter)
                    .where(_c.scope == s, _c.key == k, _c.period == period)
                    .values(
                        used_tokens=sa.case((_c.used_tokens < tokens, tokens), else_=_c.used_tokens),
                        used_usd=sa.case((_c.used_usd < usd, usd), else_=_c.used_usd),
                    )
                )

        await self._units.run(unit, write=True)

    async def usage(self, actor: Actor, day: str) -> QuotaUsage:
        """The actor's own counter for the period of its actor-scope limit (the ledger when it never reserved)."""
        limits = await self.limits.current(actor)
        own = next((limit for limit in limits if limit.scope == "actor"), None)
        period = period_of(own.period if own is not None else self.budget.period, day)
        used_tokens, used_usd, reserved_tokens, _ = await self._units.run(
            lambda conn: _used(conn, "actor", actor.id, period), write=False
        )
        return QuotaUsage(
            period_key=period,
            used_tokens=used_tokens,
            used_usd=used_usd,
            reserved_tokens=reserved_tokens,
            limit_tokens=own.tokens if own is not None else None,
            limit_usd=own.usd if own is not None else None,
        )
