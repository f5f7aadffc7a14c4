"""SqlPricingStore (PRICE-01..04) and the genai-prices catalogue."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
import sqlalchemy as sa

from agora_agent.governance.pricing import MemoryPricingStore, ModelPrice, PricingStore, prices_for, seed_model_prices
from agora_agent.stores.sql import SqlBackend
from agora_agent.stores.sql.price_catalog import catalog_prices
from agora_agent.stores.sql.tables import model_pricing


def price(model: str, input_rate: float, output_rate: float, **kw: float) -> ModelPrice:
    return ModelPrice(model_id=model, input_price_per_1m=input_rate, output_price_per_1m=output_rate, **kw)


async def _current_rows(backend: SqlBackend, model: str) -> int:
    async with backend.engine.connect() as conn:
        count = await conn.scalar(
            sa.select(sa.func.count()).where(model_pricing.c.model_id == model, model_pricing.c.is_current.is_(True))
        )
    return int(count or 0)


@pytest.mark.ref("PRICE-01", "PRICE-02", "PRICE-03")
async def test_upsert_supersedes_and_keeps_history(sql_backend: SqlBackend) -> None:
    pricing = sql_backend.pricing
    assert await pricing.list_current_prices() == []
    await seed_model_prices(pricing, [price("m1", 3, 15, cache_read_price_per_1m=0.3), price("m2", 1, 2)])
    await pricing.upsert_price(price("m1", 2.5, 10))
    current = {p.model_id: p for p in await pricing.list_current_prices()}
    assert set(current) == {"m1", "m2"}
    assert (current["m1"].input_price_per_1m, current["m1"].output_price_per_1m) == (2.5, 10)
    assert current["m1"].cache_read_price_per_1m is None  # the new row replaces the whole price
    assert current["m1"].effective_from is not None and current["m1"].effective_from.tzinfo is not None
    history = await pricing.price_history("m1")
    assert [p.input_price_per_1m for p in history] == [3, 2.5]
    assert await _current_rows(sql_backend, "m1") == 1


@pytest.mark.slow
@pytest.mark.ref("PRICE-01")
async def test_concurrent_upserts_leave_exactly_one_current_row(sql_backend: SqlBackend) -> None:
    await asyncio.gather(*(sql_backend.pricing.upsert_price(price("race", i, i)) for i in range(1, 21)))
    assert await _current_rows(sql_backend, "race") == 1
    assert len(await sql_backend.pricing.price_history("race")) == 20


async def test_the_database_refuses_a_second_current_row(sql_backend: SqlBackend) -> None:
    await sql_backend.pricing.upsert_price(price("m", 1, 1))
    with pytest.raises(sa.exc.IntegrityError):
        async with sql_backend.engine.begin() as conn:
            await conn.execute(
                sa.insert(model_pricing).values(
                    id="x",
                    model_id="m",
                    input_price_per_1m=1,
                    output_price_per_1m=1,
                    effective_from=datetime.now(UTC),
                    is_current=True,
                )
            )


def test_catalog_has_current_token_prices_of_known_models() -> None:
    prices = {p.model_id: p for p in catalog_prices(["openai", "anthropic"])}
    assert len(prices) > 50
    mini = prices["gpt-4o-mini"]
    assert (mini.input_price_per_1m, mini.output_price_per_1m, mini.cache_read_price_per_1m) == (0.15, 0.6, 0.075)
    assert all(p.input_price_per_1m >= 0 and p.output_price_per_1m >= 0 for p in prices.values())


async def test_current_prices_reads_the_asked_models_only(sql_backend: SqlBackend) -> None:
    await current_prices_of_the_asked_models(sql_backend.pricing)


async def test_current_prices_on_the_memory_store() -> None:
    await current_prices_of_the_asked_models(MemoryPricingStore())


async def current_prices_of_the_asked_models(pricing: PricingStore) -> None:
    """What a run reads (`pricing:list`): the current price of each asked model that has one, superseded rows
    never, the rest of the table not at all; `prices_for` gives the same from a store with only the whole list."""
    await seed_model_prices(pricing, [price("m1", 3, 15), price("m2", 1, 2), price("m3", 5, 5)])
    await pricing.upsert_price(price("m1", 2.5, 10))
    got = await prices_for(pricing, ["m1", "m3", "nope"])
    assert [(p.model_id, p.input_price_per_1m) for p in got] == [("m1", 2.5), ("m3", 5)]
    assert await prices_for(pricing, []) == []

    class WholeListOnly:
        async def upsert_price(self, price: ModelPrice) -> None: ...

        async def list_current_prices(self) -> list[ModelPrice]:
            return await pricing.list_current_prices()

    assert await prices_for(WholeListOnly(), ["m1", "m3", "nope"]) == got
