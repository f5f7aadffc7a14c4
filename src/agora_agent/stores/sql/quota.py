"""`SqlQuotaStore`: budgets by reservation in SQL, with the semantics of `MemoryQuotaStore`.

One counter row per (scope, key, period) holds used and reserved tokens/USD. `reserve` grants while
`used + reserved < limit` with a single conditional UPDATE per scope (after an upsert that makes sure
the row exists), inside one transaction: on PostgreSQL the UPDATE re-checks its WHERE clause against
the latest committed row after waiting for the row lock, on SQLite the transaction is `BEGIN IMMEDIATE`
(one writer at a time). A reservation row records what is open; `settle`/`release` delete it first and
only touch the counters when they did, so settling twice never double-counts.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from agora_agent.actors import Actor
from agora_agent.errors import QuotaExceededError
from agora_agent.governance.quota import Budget, QuotaUsage, Reservation, budget_scopes, exceeded_message
from agora_agent.stores.sql.engine import WRITE, retry_transient
from agora_agent.stores.sql.tables import budget_counter, budget_reservation

__all__ = ["SqlQuotaStore"]

_c = budget_counter.c


def _key(scope: str, key: str, period: str) -> tuple[Any, ...]:
    return (_c.scope == scope, _c.key == key, _c.period == period)


class SqlQuotaStore:
    """Atomic budget accounting shared by every process on the database. `reserve` raises `QuotaExceededError`."""

    def __init__(self, engine: AsyncEngine, budget: Budget) -> None:
        self.engine = engine
        self.budget = budget
        self._writer = engine.execution_options(**{WRITE: True})

    def _upsert_counter(self, scope: str, key: str, period: str) -> Any:
        values = {"scope": scope, "key": key, "period": period}
        if self.engine.dialect.name == "postgresql":
            return postgresql.insert(budget_counter).values(values).on_conflict_do_nothing()
        return sqlite.insert(budget_counter).values(values).on_conflict_do_nothing()

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
        async with self.engine.connect() as conn:
            for scope, key, limit_tokens, limit_usd in budget_scopes(self.budget, actor):
                row = (
                    (await conn.execute(sa.select(budget_counter).where(*_key(scope, key, period_key))))
                    .mappings()
                    .first()
                )
                refusal = self._refusal(scope, key, limit_tokens, limit_usd, row)
                if refusal is not None:
                    raise refusal

    async def reserve(
        self, actor: Actor, period_key: str, *, reservation_id: str, tokens: int, usd: float
    ) -> Reservation:
        """Reserve `tokens`/`usd` against every budget that applies, all or nothing."""
        applicable = budget_scopes(self.budget, actor)
        reservation = Reservation(
            id=reservation_id,
            scopes=tuple((s, k) for s, k, _, _ in applicable),
            period_key=period_key,
            tokens=tokens,
            usd=usd,
        )
        if not applicable:
            return reservation

        async def grant(conn: AsyncConnection) -> None:
            for scope, key, limit_tokens, limit_usd in applicable:
                await conn.execute(self._upsert_counter(scope, key, period_key))
                conditions = list(_key(scope, key, period_key))
                if limit_tokens is not None:
                    conditions.append(_c.used_tokens + _c.reserved_tokens < limit_tokens)
                if limit_usd is not None:
                    conditions.append(_c.used_usd + _c.reserved_usd < limit_usd)
                granted = await conn.execute(
                    sa.update(budget_counter)
                    .where(*conditions)
                    .values(reserved_tokens=_c.reserved_tokens + tokens, reserved_usd=_c.reserved_usd + usd)
                )
                if granted.rowcount == 0:
                    row = (
                        (await conn.execute(sa.select(budget_counter).where(*_key(scope, key, period_key))))
                        .mappings()
                        .first()
                    )
                    refusal = self._refusal(scope, key, limit_tokens, limit_usd, row)
                    raise refusal or QuotaExceededError(f"{scope} '{key}' has no budget headroom left")
            await conn.execute(
                sa.insert(budget_reservation).values(
                    id=reservation_id,
                    scopes=[list(s) for s in reservation.scopes],
                    period=period_key,
                    tokens=tokens,
                    usd=usd,
                    created_at=datetime.now(UTC),
                )
            )

        async def attempt() -> None:
            async with self._writer.begin() as conn:
                await grant(conn)

        await retry_transient(attempt)
        return reservation

    async def _close(self, reservation: Reservation, tokens: int, usd: float) -> None:
        if not reservation.scopes:
            return

        async def close(conn: AsyncConnection) -> None:
            deleted = await conn.execute(sa.delete(budget_reservation).where(budget_reservation.c.id == reservation.id))
            if deleted.rowcount == 0:
                return  # settled or released already: settling twice must not double-count
            for scope, key in reservation.scopes:
                await conn.execute(
                    sa.update(budget_counter)
                    .where(*_key(scope, key, reservation.period_key))
                    .values(
                        reserved_tokens=_c.reserved_tokens - reservation.tokens,
                        reserved_usd=_c.reserved_usd - reservation.usd,
                        used_tokens=_c.used_tokens + tokens,
                        used_usd=_c.used_usd + usd,
                    )
                )

        async def attempt() -> None:
            async with self._writer.begin() as conn:
                await close(conn)

        await retry_transient(attempt)

    async def settle(self, reservation: Reservation, *, tokens: int, usd: float) -> None:
        """Replace the reservation by the real usage; a second settle (or a release after it) does nothing."""
        await self._close(reservation, tokens, usd)

    async def release(self, reservation: Reservation) -> None:
        """Give the reservation back unused (the model call did not happen)."""
        await self._close(reservation, 0, 0.0)

    async def usage(self, actor: Actor, period_key: str) -> QuotaUsage:
        """The actor's own counter for the period (zeros when it never reserved)."""
        async with self.engine.connect() as conn:
            row = (
                (await conn.execute(sa.select(budget_counter).where(*_key("actor", actor.id, period_key))))
                .mappings()
                .first()
            )
        return QuotaUsage(
            period_key=period_key,
            used_tokens=int(row["used_tokens"]) if row else 0,
            used_usd=float(row["used_usd"]) if row else 0.0,
            reserved_tokens=int(row["reserved_tokens"]) if row else 0,
            limit_tokens=self.budget.tokens_per_actor,
            limit_usd=self.budget.usd_per_actor,
        )
