"""`SqlAuditLog` (the `agent_audit_log` table) and `reprice_usage`, the deliberate re-pricing of past spend."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

import sqlalchemy as sa
from sqlalchemy.engine import RowMapping
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from agora_agent.governance.audit import AuditEntry, stored_detail
from agora_agent.governance.pricing import ModelPrice, estimate_cost
from agora_agent.messages import Usage
from agora_agent.stores.sql.engine import WRITE
from agora_agent.stores.sql.pricing import price_from_row
from agora_agent.stores.sql.rollup import REBUILD_SQL
from agora_agent.stores.sql.tables import audit_log, model_pricing, token_usage, usage_daily

__all__ = ["RepriceResult", "SqlAuditLog", "reprice_usage"]


class SqlAuditLog:
    """The governance audit log in `agent_audit_log`."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self._writer = engine.execution_options(**{WRITE: True})

    async def record(self, entry: AuditEntry) -> None:
        async with self._writer.begin() as conn:
            await conn.execute(sa.insert(audit_log).values(_values(entry)))

    async def entries(
        self, *, since: datetime | None = None, until: datetime | None = None, limit: int = 1000
    ) -> list[AuditEntry]:
        stmt = sa.select(audit_log).order_by(audit_log.c.at, audit_log.c.id).limit(limit)
        if since is not None:
            stmt = stmt.where(audit_log.c.at >= since)
        if until is not None:
            stmt = stmt.where(audit_log.c.at <= until)
        async with self.engine.connect() as conn:
            rows = (await conn.execute(stmt)).mappings().all()
        return [
            AuditEntry(
                id=r["id"],
                at=r["at"],
                actor_ref=r["actor_ref"],
                action=r["action"],
                target=r["target"],
                detail=stored_detail(r["detail"]),
            )
            for r in rows
        ]


def _values(entry: AuditEntry) -> dict[str, object]:
    return {
        "id": entry.id,
        "at": entry.at,
        "actor_ref": entry.actor_ref,
        "action": entry.action,
        "target": entry.target,
        "detail": entry.detail,
    }


@dataclass(frozen=True, kw_only=True, slots=True)
class RepriceResult:
    """What a re-pricing changed: rows re-priced, rows left unpriced (no price), USD before and after."""

    rows: int
    unpriced: int
    before_usd: float
    after_usd: float
    audit_id: str


async def reprice_usage(
    engine: AsyncEngine,
    *,
    since: datetime,
    actor_ref: str,
    model_id: str | None = None,
    use: Literal["current", "historical"] = "current",
) -> RepriceResult:
    """Re-price the usage rows recorded at or after `since` (provider-reported costs are never touched).

    `use="current"` prices them with each model's current price (to correct a wrong price after the fact);
    `"historical"` with the price that was in force when each row was recorded (to price rows recorded
    before a price existed, once history is known). One transaction: the rows, the daily rollup rebuilt,
    and an `agent_audit_log` row (`prices.reprice`) with the before/after totals.
    """
    u = token_usage.c
    where = [u.created_at >= since, sa.or_(u.cost_source.is_(None), u.cost_source != "reported")]
    if model_id is not None:
        where.append(u.model_id == model_id)
    async with engine.execution_options(**{WRITE: True}).begin() as conn:
        rows = (
            (
                await conn.execute(
                    sa.select(
                        u.id,
                        u.model_id,
                        u.created_at,
                        u.input_tokens,
                        u.output_tokens,
                        u.cache_read_tokens,
                        u.cache_write_tokens,
                        u.cost_usd,
                    ).where(*where)
                )
            )
            .mappings()
            .all()
        )
        history = await _price_history(conn, sorted({r["model_id"] for r in rows}))
        before = sum(float(r["cost_usd"] or 0.0) for r in rows)
        repriced = [_repriced(r, _price_for(history.get(r["model_id"], []), r["created_at"], use)) for r in rows]
        updates = [update for update, _ in repriced]
        after = sum((cost for _, cost in repriced if cost is not None), 0.0)
        unpriced = sum(1 for _, cost in repriced if cost is None)
        if updates:
            await conn.execute(
                sa.update(token_usage)
                .where(u.id == sa.bindparam("row_id"))
                .values(cost_usd=sa.bindparam("cost"), price_id=sa.bindparam("pid"), cost_source=sa.bindparam("src")),
                updates,
            )
            await conn.execute(sa.delete(usage_daily))
            await conn.execute(sa.text(REBUILD_SQL))
        entry = AuditEntry(
            actor_ref=actor_ref,
            action="prices.reprice",
            target=model_id,
            detail={
                "since": since.isoformat(),
                "use": use,
                "rows": len(rows),
                "unpriced": unpriced,
                "before_usd": before,
                "after_usd": after,
            },
        )
        await conn.execute(sa.insert(audit_log).values(_values(entry)))
    return RepriceResult(rows=len(rows), unpriced=unpriced, before_usd=before, after_usd=after, audit_id=entry.id)


async def _price_history(conn: AsyncConnection, models: list[str]) -> dict[str, list[ModelPrice]]:
    """Every price of each model, oldest first (empty lists for models without one)."""
    history: dict[str, list[ModelPrice]] = {m: [] for m in models}
    if not models:
        return history
    price_rows = (
        (
            await conn.execute(
                sa.select(model_pricing)
                .where(model_pricing.c.model_id.in_(models))
                .order_by(model_pricing.c.effective_from)
            )
        )
        .mappings()
        .all()
    )
    for p in price_rows:
        history[p["model_id"]].append(price_from_row(p))
    return history


def _repriced(row: RowMapping, price: ModelPrice | None) -> tuple[dict[str, object], float | None]:
    """The update of one usage row and its new cost: priced at `price`, or unpriced (all None) without one."""
    if price is None:
        return {"row_id": row["id"], "cost": None, "pid": None, "src": None}, None
    usage = Usage(
        input_tokens=row["input_tokens"],
        output_tokens=row["output_tokens"],
        cache_read_tokens=row["cache_read_tokens"],
        cache_write_tokens=row["cache_write_tokens"],
    )
    cost = estimate_cost(usage, price)
    return {"row_id": row["id"], "cost": cost, "pid": price.id, "src": "priced"}, cost


def _price_for(history: list[ModelPrice], at: datetime, use: str) -> ModelPrice | None:
    if not history:
        return None
    if use == "current":
        return history[-1]
    in_force = [p for p in history if p.effective_from is not None and p.effective_from <= at]
    return in_force[-1] if in_force else None
