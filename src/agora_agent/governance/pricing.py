"""Model prices and cost estimation."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Protocol, runtime_checkable

from agora_agent.messages import Usage

__all__ = ["MemoryPricingStore", "ModelPrice", "PricingStore", "estimate_cost", "prices_for", "seed_model_prices"]


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelPrice:
    """USD per million tokens for one model. Cache rates fall back to the input rate when None.

    `id` is the price row's id once stored; usage rows priced with it keep it (spend is history).
    """

    model_id: str
    input_price_per_1m: float
    output_price_per_1m: float
    cache_write_price_per_1m: float | None = None
    cache_read_price_per_1m: float | None = None
    effective_from: datetime | None = None
    id: str | None = None


def estimate_cost(usage: Usage, price: ModelPrice) -> float:
    """Uncached input + cache writes + cache reads + output, each at its rate.

    >>> estimate_cost(Usage(input_tokens=1_000_000, output_tokens=500_000),
    ...               ModelPrice(model_id="m", input_price_per_1m=3, output_price_per_1m=15))
    10.5
    """
    cache_write = usage.cache_write_tokens or 0
    cache_read = usage.cache_read_tokens or 0
    uncached = usage.input_tokens - cache_write - cache_read
    write_rate = price.cache_write_price_per_1m
    read_rate = price.cache_read_price_per_1m
    return (
        uncached / 1e6 * price.input_price_per_1m
        + cache_write / 1e6 * (write_rate if write_rate is not None else price.input_price_per_1m)
        + cache_read / 1e6 * (read_rate if read_rate is not None else price.input_price_per_1m)
        + usage.output_tokens / 1e6 * price.output_price_per_1m
    )


@runtime_checkable
class PricingStore(Protocol):
    """Current prices by model. `upsert_price` atomically supersedes the model's current price."""

    async def upsert_price(self, price: ModelPrice) -> None: ...

    async def list_current_prices(self) -> list[ModelPrice]: ...


class MemoryPricingStore:
    """In-memory prices: one current row per model, last write wins; superseded rows kept as history."""

    def __init__(self, prices: Iterable[ModelPrice] = ()) -> None:
        self._prices: dict[str, ModelPrice] = {}
        self._history: dict[str, list[ModelPrice]] = {}
        for p in prices:
            self._put(p)

    def _put(self, price: ModelPrice) -> None:
        stored = replace(
            price, effective_from=price.effective_from or datetime.now(UTC), id=price.id or str(uuid.uuid4())
        )
        self._prices[price.model_id] = stored
        self._history.setdefault(price.model_id, []).append(stored)

    async def upsert_price(self, price: ModelPrice) -> None:
        self._put(replace(price, effective_from=None, id=None))

    async def list_current_prices(self) -> list[ModelPrice]:
        return sorted(self._prices.values(), key=lambda p: p.model_id)

    async def current_prices(self, model_ids: Collection[str]) -> list[ModelPrice]:
        """The current prices of these models (those that have one), by model id."""
        return sorted((p for m in set(model_ids) if (p := self._prices.get(m)) is not None), key=lambda p: p.model_id)

    async def price_history(self, model_id: str) -> list[ModelPrice]:
        """Every price the model had, oldest first (the last one is current)."""
        return list(self._history.get(model_id, []))


async def prices_for(store: PricingStore, model_ids: Collection[str]) -> list[ModelPrice]:
    """The current prices of `model_ids` (those that have one): the store's `current_prices` where it has one
    (the memory and SQL stores: a run reads its model's price, not the whole synced catalogue), else its whole
    list, filtered."""
    current = getattr(store, "current_prices", None)
    if current is not None:
        return list(await current(model_ids))
    wanted = set(model_ids)
    return [p for p in await store.list_current_prices() if p.model_id in wanted]


async def seed_model_prices(store: PricingStore, prices: Iterable[ModelPrice]) -> int:
    """Upsert each price in order; returns how many were written."""
    n = 0
    for price in prices:
        await store.upsert_price(price)
        n += 1
    return n
