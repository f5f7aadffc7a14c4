"""Changing a price on purpose: a sanity bound, and an audit row for every change.

A price more than `SANITY_FACTOR` times the model's current rate (or less than 1/`SANITY_FACTOR` of it) is
far more often a typo (per 1K instead of per 1M, a missing decimal point) than a real change, so it is
refused unless the caller confirms it (`confirm: true` in the API; the console asks).
"""

from __future__ import annotations

from math import inf

from agora_agent.errors import InvalidRequestError
from agora_agent.governance.audit import AuditEntry, AuditLog
from agora_agent.governance.pricing import ModelPrice, PricingStore

__all__ = ["SANITY_FACTOR", "check_price_change", "set_price"]

SANITY_FACTOR = 10.0

_RATES = (
    ("input", "input_price_per_1m"),
    ("output", "output_price_per_1m"),
    ("cache write", "cache_write_price_per_1m"),
    ("cache read", "cache_read_price_per_1m"),
)


def check_price_change(current: ModelPrice | None, new: ModelPrice, *, confirm: bool) -> None:
    """Raise `InvalidRequestError` (HTTP 422) when a rate moves beyond the sanity bound without `confirm`."""
    if current is None or confirm:
        return
    for label, attr in _RATES:
        old, value = getattr(current, attr), getattr(new, attr)
        if old is None or value is None or old <= 0:
            continue
        ratio = value / old
        if ratio > SANITY_FACTOR or (value > 0 and ratio < 1 / SANITY_FACTOR) or value == 0:
            raise InvalidRequestError(
                f'the {label} price of "{new.model_id}" would change from ${old:g} to ${value:g} per 1M tokens '
                f"({ratio:.3g}× the current price, beyond the {SANITY_FACTOR:g}× sanity bound); "
                'if that is right, send it again with "confirm": true',
                # an overflowed ratio (a price near the float limit) is inf, which JSON cannot carry
                detail={"field": attr, "current": old, "requested": value, "ratio": ratio if ratio < inf else None},
            )


async def set_price(
    pricing: PricingStore, audit: AuditLog, price: ModelPrice, *, actor_ref: str, confirm: bool = False
) -> None:
    """Check the bound, supersede the current price, and record `price.set` with before/after."""
    current = next((p for p in await pricing.list_current_prices() if p.model_id == price.model_id), None)
    check_price_change(current, price, confirm=confirm)
    await pricing.upsert_price(price)
    await audit.record(
        AuditEntry(
            actor_ref=actor_ref,
            action="price.set",
            target=price.model_id,
            detail={
                "before": _rates(current) if current is not None else None,
                "after": _rates(price),
                "confirmed": confirm,
            },
        )
    )


def _rates(price: ModelPrice) -> dict[str, float | None]:
    return {attr: getattr(price, attr) for _, attr in _RATES}
