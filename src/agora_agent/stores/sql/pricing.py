"""`SqlPricingStore`: model prices with an atomic supersede.

`upsert_price` runs one transaction: mark the model's current row not current, insert the new one as
current. A partial unique index (`model_id WHERE is_current`) makes "exactly one current row per model"
a database invariant. Writers of one model are serialised (PostgreSQL: a transaction-scoped advisory
lock on the model id; SQLite: `BEGIN IMMEDIATE`); a collision on the index is retried as a backstop.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping
from datetime import UTC, datetime
from functools import cache
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from agora_agent.governance.pricing import ModelPrice
from agora_agent.stores.sql.engine import WRITE, retry_transient
from agora_agent.stores.sql.tables import model_pricing
from agora_agent.stores.sql.units import units_for

__all__ = ["SqlPricingStore", "price_from_row"]


def price_from_row(r: Mapping[Any, Any]) -> ModelPrice:
    """An `agent_model_pricing` row as a `ModelPrice`."""
    return ModelPrice(
        model_id=r["model_id"],
        input_price_per_1m=r["input_price_per_1m"],
        output_price_per_1m=r["output_price_per_1m"],
        cache_write_price_per_1m=r["cache_write_price_per_1m"],
        cache_read_price_per_1m=r["cache_read_price_per_1m"],
        effective_from=r["effective_from"],
        id=r["id"],
    )


_ATTEMPTS = 5


_CURRENT_PRICES = (
    sa.select(model_pricing).where(model_pricing.c.is_current.is_(True)).order_by(model_pricing.c.model_id)
)


@cache
def _current_prices_of(count: int) -> sa.Select[Any]:
    """The current rows of `count` models (`m0`, `m1` …): plain parameters, which the driver path takes."""
    ids = [sa.bindparam(f"m{i}", type_=model_pricing.c.model_id.type) for i in range(count)]
    return _CURRENT_PRICES.where(model_pricing.c.model_id.in_(ids))


class SqlPricingStore:
    """Current prices by model in `agent_model_pricing`; superseded rows are kept as history."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self._writer = engine.execution_options(**{WRITE: True})

    async def upsert_price(self, price: ModelPrice) -> None:
        """Make `price` the model's current price (effective now); the previous one stays as history."""

        async def supersede(conn: AsyncConnection) -> None:
            if conn.dialect.name == "postgresql":
                # Serialise writers of one model: without it, N concurrent first prices of a model would take
                # N rounds of unique-index collisions. (SQLite's BEGIN IMMEDIATE already serialises writers.)
                await conn.execute(sa.select(sa.func.pg_advisory_xact_lock(sa.func.hashtext(price.model_id))))
            await conn.execute(
                sa.update(model_pricing)
                .where(model_pricing.c.model_id == price.model_id, model_pricing.c.is_current.is_(True))
                .values(is_current=False)
            )
            await conn.execute(
                sa.insert(model_pricing).values(
                    id=str(uuid.uuid4()),
                    model_id=price.model_id,
                    input_price_per_1m=price.input_price_per_1m,
                    output_price_per_1m=price.output_price_per_1m,
                    cache_write_price_per_1m=price.cache_write_price_per_1m,
                    cache_read_price_per_1m=price.cache_read_price_per_1m,
                    effective_from=datetime.now(UTC),
                    is_current=True,
                )
            )

        async def attempt() -> None:
            async with self._writer.begin() as conn:
                await supersede(conn)

        for remaining in range(_ATTEMPTS - 1, -1, -1):
            try:
                await retry_transient(attempt)
                return
            except sa.exc.IntegrityError:
                # A concurrent first price for the same model won the unique index; supersede it instead.
                if remaining == 0:
                    raise

    async def list_current_prices(self) -> list[ModelPrice]:
        """Every model's current price, by model id."""
        rows = (await units_for(self.engine).one(_CURRENT_PRICES, {}, write=False)).rows
        return [price_from_row(r) for r in rows]

    async def current_prices(self, model_ids: Collection[str]) -> list[ModelPrice]:
        """The current prices of these models (those that have one), by model id: what a run reads once
        (`pricing:list`, one statement on the driver) — its model's row, not a synced catalogue's hundreds."""
        ids = sorted(set(model_ids))
        if not ids:
            return []
        params = {f"m{i}": model_id for i, model_id in enumerate(ids)}
        rows = (await units_for(self.engine).one(_current_prices_of(len(ids)), params, write=False)).rows
        return [price_from_row(r) for r in rows]

    async def price_history(self, model_id: str) -> list[ModelPrice]:
        """Every price the model ever had, oldest first (the last one is current)."""
        stmt = (
            sa.select(model_pricing)
            .where(model_pricing.c.model_id == model_id)
            .order_by(model_pricing.c.effective_from, model_pricing.c.is_current)
        )
        async with self.engine.connect() as conn:
            rows = (await conn.execute(stmt)).mappings().all()
        return [price_from_row(r) for r in rows]
