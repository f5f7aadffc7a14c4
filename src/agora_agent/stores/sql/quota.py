"""`SqlQuotaStore`: budgets by reservation in SQL, with the semantics of `MemoryQuotaStore`.

One counter row per (scope, key, period) holds used and reserved tokens/USD. `reserve` grants while
`used + reserved < limit` with a single conditional UPDATE per scope (after an upsert that makes sure
the row exists), inside one transaction: on PostgreSQL the UPDATE re-checks its WHERE clause against
the latest committed row after waiting for the row lock, on SQLite the transaction is `BEGIN IMMEDIATE`
(one writer at a time). A reservation row records what is open; `settle`/`release` delete it first and
only touch the counters when they did, so settling twice never double-counts.

Crash safety: a reservation carries its run and an expiry, so recovery releases a crashed run's
reservations (`release_run`) and a periodic sweep releases expired ones (`release_expired`); a reserve
retried after a lost commit reply finds its own row and grants nothing twice.
"""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncEngine

from agora_agent.actors import Actor
from agora_agent.errors import QuotaExceededError
from agora_agent.governance.quota import Budget, QuotaUsage, Reservation, budget_scopes, exceeded_message
from agora_agent.stores.sql.tables import budget_counter, budget_reservation
from agora_agent.stores.sql.units import units_for

__all__ = ["SqlQuotaStore", "settle_reservation"]

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
)
_UPSERT_COUNTER = {
    name: insert(budget_counter)
    .values(scope=sa.bindparam("_scope"), key=sa.bindparam("_key"), period=sa.bindparam("_period"))
    .on_conflict_do_nothing()
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


def _counter_row(conn: sa.Connection, scope: str, key: str, period: str) -> sa.RowMapping | None:
    return conn.execute(_COUNTER, _key(scope, key, period)).mappings().first()


def settle_reservation(conn: sa.Connection, reservation: Reservation, tokens: int, usd: float) -> None:
    """Replace `reservation` by the real usage inside the caller's transaction (the ONE place settle SQL lives).

    The reservation row is deleted first and the counters move only when it was there, so settling twice
    (or a release after a settle) never double-counts. `SqlAgentStore.record_model_step` calls this in the
    transaction that writes the assistant message and its usage row.
    """
    if not reservation.scopes:
        return
    deleted = conn.execute(_DELETE_RESERVATION, {"_id": reservation.id})
    if deleted.rowcount == 0:
        return  # settled or released already: settling twice must not double-count
    amounts = {"_reserved_tokens": reservation.tokens, "_reserved_usd": reservation.usd, "_tokens": tokens, "_usd": usd}
    for scope, key in reservation.scopes:
        conn.execute(_SETTLE, {**_key(scope, key, reservation.period_key), **amounts})


class _AlreadyGranted(Exception):
    """The reservation row exists: a previous attempt of this very reserve committed."""


class SqlQuotaStore:
    """Atomic budget accounting shared by every process on the database. `reserve` raises `QuotaExceededError`."""

    def __init__(self, engine: AsyncEngine, budget: Budget) -> None:
        self.engine = engine
        self.budget = budget
        self._units = units_for(engine)
        self._upsert = _UPSERT_COUNTER["postgresql" if engine.dialect.name == "postgresql" else "sqlite"]

    def shares_transactions_with(self, engine: AsyncEngine) -> bool:
        """Whether a store on `engine` can settle this quota's reservations inside its own transactions."""
        return engine is self.engine or engine.sync_engine is self.engine.sync_engine

    def _refusal(
        self, scope: str, key: str, limit_tokens: int | None, limit_usd: float | None, row: Any
    ) -> QuotaExceededError | None:
        used_tokens = int(row["used_tokens"]) if row else 0
        reserved_tokens = int(row["reserved_tokens"]) if row else 0
        used_usd = float(row["used_usd"]) if row else 0.0
        reserved_usd = float(row["reserved_usd"]) if row else 0.0
        if limit_tokens is not None and used_tokens + reserved_tokens >= limit_tokens:
            return QuotaExceededError(
                exceeded_message(scope, key, "tokens", limit_tokens, used_tokens, reserved_tokens, self.budget),
                detail={"scope": scope, "key": key, "limitTokens": limit_tokens, "usedTokens": used_tokens},
            )
        if limit_usd is not None and used_usd + reserved_usd >= limit_usd:
            return QuotaExceededError(
                exceeded_message(scope, key, "usd", limit_usd, used_usd, reserved_usd, self.budget),
                detail={"scope": scope, "key": key, "limitUsd": limit_usd, "usedUsd": used_usd},
            )
        return None

    async def check(self, actor: Actor, period_key: str) -> None:
        """Raise `QuotaExceededError` when any budget of the actor (or its tenant) has no headroom left."""
        scopes = budget_scopes(self.budget, actor)
        if not scopes:
            return

        def unit(conn: sa.Connection) -> QuotaExceededError | None:
            for scope, key, limit_tokens, limit_usd in scopes:
                refusal = self._refusal(scope, key, limit_tokens, limit_usd, _counter_row(conn, scope, key, period_key))
                if refusal is not None:
                    return refusal
            return None

        refusal = await self._units.run(unit, write=False)
        if refusal is not None:
            raise refusal

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
        """Reserve `tokens`/`usd` against every budget that applies, all or nothing.

        The row carries `run_id` (recovery releases a crashed run's reservations) and an expiry (the
        periodic sweep releases what outlived `Budget.reservation_ttl`)."""
        applicable = budget_scopes(self.budget, actor)
        now = datetime.now(UTC)
        reservation = Reservation(
            id=reservation_id,
            scopes=tuple((s, k) for s, k, _, _ in applicable),
            period_key=period_key,
            tokens=tokens,
            usd=usd,
            run_id=run_id,
            expires_at=now + self.budget.reservation_ttl,
        )
        if not applicable:
            return reservation

        def grant(conn: sa.Connection) -> None:
            # The reservation row first: if an earlier attempt committed (its reply lost to a dropped
            # connection), the insert conflicts before any counter moved, and the grant stands.
            try:
                conn.execute(
                    _INSERT_RESERVATION,
                    {
                        "id": reservation_id,
                        "scopes": [list(s) for s in reservation.scopes],
                        "period": period_key,
                        "tokens": tokens,
                        "usd": usd,
                        "created_at": now,
                        "run_id": run_id,
                        "expires_at": reservation.expires_at,
                    },
                )
            except sa.exc.IntegrityError:
                raise _AlreadyGranted from None
            for scope, key, limit_tokens, limit_usd in applicable:
                counter = _key(scope, key, period_key)
                conn.execute(self._upsert, counter)
                grant = _GRANT[(limit_tokens is not None, limit_usd is not None)]
                params = {**counter, "_tokens": tokens, "_usd": usd}
                if limit_tokens is not None:
                    params["_limit_tokens"] = limit_tokens
                if limit_usd is not None:
                    params["_limit_usd"] = limit_usd
                granted = conn.execute(grant, params)
                if granted.rowcount == 0:
                    row = _counter_row(conn, scope, key, period_key)
                    refusal = self._refusal(scope, key, limit_tokens, limit_usd, row)
                    raise refusal or QuotaExceededError(f"{scope} '{key}' has no budget headroom left")

        with contextlib.suppress(_AlreadyGranted):
            await self._units.run(grant, write=True)
        return reservation

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
                scopes=tuple((str(s), str(k)) for s, k in row["scopes"]),
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

    async def usage(self, actor: Actor, period_key: str) -> QuotaUsage:
        """The actor's own counter for the period (zeros when it never reserved)."""
        row = await self._units.run(lambda conn: _counter_row(conn, "actor", actor.id, period_key), write=False)
        return QuotaUsage(
            period_key=period_key,
            used_tokens=int(row["used_tokens"]) if row else 0,
            used_usd=float(row["used_usd"]) if row else 0.0,
            reserved_tokens=int(row["reserved_tokens"]) if row else 0,
            limit_tokens=self.budget.tokens_per_actor,
            limit_usd=self.budget.usd_per_actor,
        )
