"""The SQL twins of budgets as data: `SqlBudgetRuleStore` (`agent_budget_rule`) and `SqlUsageLedger`.

Every process on the database reads the same rows, and every quota check reads them again, so an edit
made through one process is enforced by all of them at the next chat.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from agora_agent.actors import Actor
from agora_agent.governance.budgets import ALL, BudgetRule, UsageTotals
from agora_agent.stores.sql import direct
from agora_agent.stores.sql.tables import budget_rule, token_usage
from agora_agent.stores.sql.units import units_for

__all__ = [
    "RULES_FOR_CONDITION",
    "SqlBudgetRuleStore",
    "SqlUsageLedger",
    "ledger_totals",
    "rule_from_row",
    "rules_for_in",
    "rules_params",
]

_r = budget_rule.c
_u = token_usage.c


def rule_from_row(row: Any) -> BudgetRule:
    """An `agent_budget_rule` row as a `BudgetRule`."""
    return BudgetRule(
        scope="tenant" if row["scope"] == "tenant" else "actor",
        key=row["key"],
        period="month" if row["period"] == "month" else "day",
        tokens=int(row["tokens"]) if row["tokens"] is not None else None,
        usd=float(row["usd"]) if row["usd"] is not None else None,
        thresholds=tuple(float(t) for t in row["thresholds"] or ()),
        tenant_ref=row["tenant_ref"],
        updated_by=row["updated_by"],
        updated_at=row["updated_at"],
    )


def _values(rule: BudgetRule) -> dict[str, Any]:
    return {
        "scope": rule.scope,
        "key": rule.key,
        "period": rule.period,
        "tokens": rule.tokens,
        "usd": rule.usd,
        "thresholds": list(rule.thresholds),
        "tenant_ref": rule.tenant_ref,
        "updated_by": rule.updated_by,
        "updated_at": rule.updated_at,
    }


def _one(scope: str, key: str) -> Any:
    return sa.and_(_r.scope == scope, _r.key == key)


# Built once: every quota check runs it (an actor's own rule, its tenant's, and the `*` rules; one index read).
RULES_FOR_CONDITION = sa.or_(
    sa.and_(_r.scope == "actor", _r.key.in_([sa.bindparam("_actor"), ALL])),
    sa.and_(_r.scope == "tenant", _r.key.in_([sa.bindparam("_tenant"), ALL])),
)
_RULES_FOR = sa.select(budget_rule).where(RULES_FOR_CONDITION)


def rules_for_in(conn: sa.Connection, actor: Actor) -> list[BudgetRule]:
    """`SqlBudgetRuleStore.rules_for` inside the caller's unit (the quota check reads rules and counters in one)."""
    return [rule_from_row(r) for r in direct.execute(conn, _RULES_FOR, rules_params(actor)).rows]


def rules_params(actor: Actor) -> dict[str, Any]:
    """The parameters of `RULES_FOR_CONDITION` for `actor`."""
    return {"_actor": actor.id, "_tenant": actor.tenant_ref or ALL}


class SqlBudgetRuleStore:
    """Budget rules in `agent_budget_rule`, one row per (scope, key)."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self._units = units_for(engine)

    async def list_rules(self) -> list[BudgetRule]:
        stmt = sa.select(budget_rule).order_by(_r.scope, _r.key)
        rows = await self._units.run(lambda conn: conn.execute(stmt).mappings().all(), write=False)
        return [rule_from_row(r) for r in rows]

    async def get(self, scope: str, key: str) -> BudgetRule | None:
        stmt = sa.select(budget_rule).where(_one(scope, key))
        row = await self._units.run(lambda conn: conn.execute(stmt).mappings().first(), write=False)
        return rule_from_row(row) if row is not None else None

    async def rules_for(self, actor: Actor) -> list[BudgetRule]:
        """The actor's own rule, its tenant's, and the `*` rules (one indexed read)."""
        return await self._units.run(lambda conn: rules_for_in(conn, actor), write=False)

    async def put(self, rule: BudgetRule) -> BudgetRule | None:
        def unit(conn: sa.Connection) -> BudgetRule | None:
            row = conn.execute(sa.select(budget_rule).where(_one(rule.scope, rule.key))).mappings().first()
            if row is None:
                conn.execute(sa.insert(budget_rule).values(_values(rule)))
                return None
            conn.execute(sa.update(budget_rule).where(_one(rule.scope, rule.key)).values(_values(rule)))
            return rule_from_row(row)

        return await self._units.run(unit, write=True)

    async def delete(self, scope: str, key: str) -> BudgetRule | None:
        def unit(conn: sa.Connection) -> BudgetRule | None:
            row = conn.execute(sa.select(budget_rule).where(_one(scope, key))).mappings().first()
            if row is not None:
                conn.execute(sa.delete(budget_rule).where(_one(scope, key)))
            return rule_from_row(row) if row is not None else None

        return await self._units.run(unit, write=True)


def ledger_totals(conn: sa.Connection, scope: str, key: str, start: datetime, end: datetime) -> tuple[int, float]:
    """(tokens, recorded USD) of an actor's or tenant's ledger rows in [start, end], inside the caller's unit."""
    column = _u.actor_ref if scope == "actor" else _u.tenant_ref
    stmt = sa.select(
        sa.func.coalesce(sa.func.sum(_u.input_tokens + _u.output_tokens), 0),
        sa.func.coalesce(sa.func.sum(_u.cost_usd), 0.0),
    ).where(column == key, _u.created_at >= start, _u.created_at <= end)
    tokens, usd = conn.execute(stmt).one()
    return int(tokens), float(usd)


class SqlUsageLedger:
    """`UsageLedger` over `agent_token_usage`."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._units = units_for(engine)

    async def totals(self, scope: str, key: str, start: datetime, end: datetime) -> tuple[int, float]:
        return await self._units.run(lambda conn: ledger_totals(conn, scope, key, start, end), write=False)

    async def by_actor(self, start: datetime, end: datetime) -> list[UsageTotals]:
        stmt = (
            sa.select(
                _u.actor_ref,
                _u.tenant_ref,
                sa.func.sum(_u.input_tokens + _u.output_tokens),
                sa.func.coalesce(sa.func.sum(_u.cost_usd), 0.0),
            )
            .where(_u.created_at >= start, _u.created_at <= end)
            .group_by(_u.actor_ref, _u.tenant_ref)
            .order_by(_u.actor_ref, _u.tenant_ref)
        )
        rows = await self._units.run(lambda conn: conn.execute(stmt).all(), write=False)
        return [UsageTotals(str(a), t, int(tok or 0), float(usd or 0.0)) for a, t, tok, usd in rows]
