"""Current model prices from the offline `genai-prices` data, as our `ModelPrice` values.

`genai-prices` ships its price data inside the package (no network): providers, their models, and
prices that may be conditional (a start date) or tiered (a base rate plus thresholds). We keep the
price that applies now and, for tiered prices, the base rate.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, date, datetime
from typing import Any

from agora_agent.governance.pricing import ModelPrice

__all__ = ["DEFAULT_PROVIDERS", "catalog_prices", "known_providers", "same_price"]

DEFAULT_PROVIDERS = ("openai", "anthropic", "google", "mistral", "deepseek", "x-ai", "groq")


def _snapshot() -> Any:
    from genai_prices.data_snapshot import get_snapshot

    return get_snapshot()


def known_providers() -> list[str]:
    """Every provider id in the bundled data."""
    return [p.id for p in _snapshot().providers]


def _rate(value: Any) -> float | None:
    if value is None:
        return None
    base = getattr(value, "base", value)  # TieredPrices -> base rate
    return float(base)


def _current_price(prices: Any, today: date) -> Any:
    if not isinstance(prices, list):
        return prices
    chosen = None
    for conditional in prices:  # later entries take precedence when their constraint holds
        constraint = conditional.constraint
        start = getattr(constraint, "start_date", None)
        if constraint is None or (start is not None and start <= today):
            chosen = conditional.prices
    return chosen


def catalog_prices(providers: Sequence[str] = DEFAULT_PROVIDERS, *, today: date | None = None) -> list[ModelPrice]:
    """One price per model id (the first provider listed wins a shared id), for models priced per token."""
    day = today or datetime.now(UTC).date()
    by_id = {p.id: p for p in _snapshot().providers}
    unknown = [p for p in providers if p not in by_id]
    if unknown:
        from agora_agent.errors import ConfigurationError

        raise ConfigurationError(
            f"unknown provider(s) {', '.join(unknown)} in genai-prices; known: {', '.join(sorted(by_id))}"
        )
    seen: dict[str, ModelPrice] = {}
    for provider_id in providers:
        for model in by_id[provider_id].models:
            price = _current_price(model.prices, day)
            if price is None or model.id in seen:
                continue
            input_rate = _rate(getattr(price, "input_mtok", None))
            if input_rate is None:
                continue  # priced per request/image/second only: not a token price
            seen[model.id] = ModelPrice(
                model_id=model.id,
                input_price_per_1m=input_rate,
                output_price_per_1m=_rate(getattr(price, "output_mtok", None)) or 0.0,
                cache_read_price_per_1m=_rate(getattr(price, "cache_read_mtok", None)),
                cache_write_price_per_1m=_rate(getattr(price, "cache_write_mtok", None)),
            )
    return sorted(seen.values(), key=lambda p: p.model_id)


def same_price(a: ModelPrice, b: ModelPrice) -> bool:
    """Equal rates (ignoring `effective_from`)."""
    return _rates(a) == _rates(b)


def _rates(p: ModelPrice) -> Iterable[float | None]:
    return (p.input_price_per_1m, p.output_price_per_1m, p.cache_read_price_per_1m, p.cache_write_price_per_1m)
