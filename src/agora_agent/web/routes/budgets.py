"""Budgets as data over HTTP: `{prefix}/governance/budgets` (list, PUT, DELETE) and `/budgets/usage`.

    GET    {prefix}/governance/budgets                  the stored rules + the config's defaults
    PUT    {prefix}/governance/budgets/{scope}/{key}    set one rule (scope actor|tenant; key an id or "*")
    DELETE {prefix}/governance/budgets/{scope}/{key}    remove it: the scope falls back to "*" or the config
    GET    {prefix}/governance/budgets/usage            every actor's and tenant's use against its limits

Mounted with the other governance routes (behind `governance_authorize`) when `AgentConfig.budget` is set.
Every change is audited (`budget.set` / `budget.delete`, before → after) and effective at the next chat
(the quota check reads the rules from the store, in every process). A bad body is a 422 `{error}` that
says what is wrong; an unknown scope too.

Who may edit what follows the caller's grant: a global admin edits every rule; a tenant admin
(`GovernanceScope(tenants=…)`) sees and edits only its tenants' rules — the tenant rule of a tenant in scope,
and actor rules bound to such a tenant (`tenantRef`, required for them; such a rule applies only while the
actor is in that tenant) — and sees only its tenants' usage. The `*` rules (everyone) need a global grant
to change (a tenant admin sees them: they apply to its users too).
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import JSONResponse

from agora_agent.config import AgentConfig
from agora_agent.errors import ForbiddenError, NotFoundError
from agora_agent.governance.budgets import (
    ALL,
    BudgetRule,
    BudgetRuleStore,
    Limit,
    UsageLedger,
    UsageTotals,
    check_key,
    check_scope,
    delete_budget_rule,
    limit_for,
    parse_rule,
    period_bounds,
    period_of,
    put_budget_rule,
    resets_at,
)
from agora_agent.governance.gate import Caller, GovernanceScope, Grant
from agora_agent.governance.quota import Budget
from agora_agent.service import AgentService
from agora_agent.web.deps import CallerDep, GrantDep, ServiceDep, error_responses
from agora_agent.web.routes.governance import governance_mount_plan
from agora_agent.web.schemas import wire_keys, wire_name

__all__ = ["BudgetRuleIn", "add_routes"]


class BudgetRuleIn(BaseModel):
    """A rule's body. Omitted limits mean "no limit in that unit"; both omitted exempt the scope from the
    defaults; 0 blocks it. `thresholds` (fractions, default [0.8]) raise `BudgetThresholdReached`."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    period: str = Field("day", description="day | month (UTC)")
    tokens: int | None = Field(None, description="Input + output tokens per period; null: no token limit")
    usd: float | None = Field(None, description="Recorded cost in USD per period; null: no USD limit")
    thresholds: list[float] | None = Field(None, description="Fractions of the limit that raise an event")
    tenant_ref: str | None = Field(None, alias="tenantRef", description="The tenant an actor rule belongs to")


def _rule_json(rule: BudgetRule) -> dict[str, Any]:
    return wire_keys(rule.to_dict())


def _rules(service: AgentService) -> BudgetRuleStore:
    rules = service.budget_rules
    if rules is None:  # a custom agent store: budgets stay the config's
        raise NotFoundError("budget rules need the memory or a SQL store (a custom store keeps the config's budget)")
    return rules


def _budget(service: AgentService) -> Budget:
    return service.config.budget or Budget()


def _defaults(budget: Budget) -> dict[str, Any]:
    return {
        "period": budget.period,
        "tokensPerActor": budget.tokens_per_actor,
        "usdPerActor": budget.usd_per_actor,
        "tokensPerTenant": budget.tokens_per_tenant,
        "usdPerTenant": budget.usd_per_tenant,
        "thresholds": list(budget.thresholds),
    }


async def _changed(service: AgentService, scope: str, key: str) -> None:
    """Make an edit effective in this process at once (other processes read the rules at their next check)."""
    quota = service.quota
    limits = getattr(quota, "limits", None)
    if limits is not None:
        limits.forget()
    reseed = getattr(quota, "reseed", None)
    if reseed is not None:
        await reseed(scope, key)


def _visible(rule: BudgetRule, grant: Grant) -> bool:
    if not isinstance(grant, GovernanceScope):
        return True
    return rule.key == ALL or grant.covers(rule.tenant_ref)


async def _may_edit(
    service: AgentService, caller: Caller, grant: Grant, rule: BudgetRule, existing: BudgetRule | None
) -> None:
    """ForbiddenError unless the grant covers the rule (and the one it replaces); `*` rules are global."""
    if rule.key == ALL:
        await service.global_grant(caller)  # everyone's budget is no one tenant's
        return
    if not isinstance(grant, GovernanceScope):
        return
    if not grant.covers(rule.tenant_ref):
        what = "an actor rule needs the actor's tenant (tenantRef) inside your scope" if rule.scope == "actor" else ""
        raise ForbiddenError(what or f"tenant {rule.key!r} is outside your governance scope")
    if existing is not None and not grant.covers(existing.tenant_ref):
        raise ForbiddenError(f"the budget of {rule.scope} {rule.key!r} was set outside your governance scope")


async def list_budgets(service: ServiceDep, grant: GrantDep) -> JSONResponse:
    """The stored rules (most specific wins: an actor's own, then `*`, then the config) and the defaults."""
    rules = [r for r in await _rules(service).list_rules() if _visible(r, grant)]
    return JSONResponse({"rules": [_rule_json(r) for r in rules], "defaults": _defaults(_budget(service))})


async def put_budget(
    service: ServiceDep, caller: CallerDep, grant: GrantDep, scope: str, key: str, body: BudgetRuleIn
) -> JSONResponse:
    """Set the rule for one actor or tenant (or `*`: every one without its own); audited, effective at once."""
    rule = parse_rule(scope, key, body.model_dump(exclude_unset=True), spell=wire_name)
    store = _rules(service)
    await _may_edit(service, caller, grant, rule, await store.get(rule.scope, rule.key))
    previous, stored = await put_budget_rule(store, service.audit, rule, actor_ref=caller.actor.id)
    await _changed(service, rule.scope, rule.key)
    return JSONResponse({"rule": _rule_json(stored), "previous": _rule_json(previous) if previous else None})


async def delete_budget(service: ServiceDep, caller: CallerDep, grant: GrantDep, scope: str, key: str) -> JSONResponse:
    """Remove a rule; the scope falls back to the `*` rule, else the config's default. Unknown rule -> 404."""
    checked = check_scope(scope)
    check_key(key)
    store = _rules(service)
    existing = await store.get(checked, key)
    if existing is None or not _visible(existing, grant):
        raise NotFoundError(f"no budget rule for {checked} {key!r}")
    await _may_edit(service, caller, grant, existing, existing)
    previous = await delete_budget_rule(store, service.audit, checked, key, actor_ref=caller.actor.id)
    if previous is None:  # removed by someone else meanwhile
        raise NotFoundError(f"no budget rule for {checked} {key!r}")
    await _changed(service, checked, key)
    return JSONResponse({"deleted": _rule_json(previous)})


def _limit_json(limit: Limit | None, day: str, used: dict[str, tuple[int, float]]) -> dict[str, Any] | None:
    if limit is None:
        return None
    period = period_of(limit.period, day)
    tokens, usd = used[limit.period]
    shares = [tokens / limit.tokens if limit.tokens else None, usd / limit.usd if limit.usd else None]
    blocked = limit.tokens == 0 or limit.usd == 0
    share = 1.0 if blocked else max((s for s in shares if s is not None), default=None)
    return {
        "period": limit.period,
        "periodKey": period,
        "resetsAt": resets_at(period).isoformat(),
        "tokens": limit.tokens,
        "usd": limit.usd,
        "usedTokens": tokens,
        "usedUsd": usd,
        "share": share if share is None or math.isfinite(share) else None,
        "thresholds": list(limit.thresholds),
        "source": limit.source,
    }


def _merge(day_rows: list[UsageTotals], month_rows: list[UsageTotals]) -> dict[tuple[str, str], dict[str, Any]]:
    """(scope, key) -> {tenant, day: (tokens, usd), month: (tokens, usd)} for actors and tenants."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for period, rows in (("day", day_rows), ("month", month_rows)):
        for row in rows:
            targets = [("actor", row.actor_ref, row.tenant_ref)]
            if row.tenant_ref:
                targets.append(("tenant", row.tenant_ref, row.tenant_ref))
            for scope, key, tenant in targets:
                entry = out.setdefault((scope, key), {"tenant": tenant, "day": (0, 0.0), "month": (0, 0.0)})
                tokens, usd = entry[period]
                entry[period] = (tokens + row.tokens, usd + row.usd)
    return out


async def budget_usage(service: ServiceDep, grant: GrantDep) -> JSONResponse:
    """Every actor and tenant with usage this month (or a rule of its own): today's and this month's use
    (from the usage ledger, at recorded cost) against the limit that applies to it. A tenant admin sees its
    tenants' actors and tenants only."""
    ledger: UsageLedger | None = service.usage_ledger
    rules_store = _rules(service)
    if ledger is None:
        raise NotFoundError("budget usage needs the memory or a SQL store")
    budget = _budget(service)
    day = datetime.now(UTC).strftime("%Y-%m-%d")
    day_start, day_end = period_bounds(day)
    month_start, month_end = period_bounds(day[:7])
    merged = _merge(await ledger.by_actor(day_start, day_end), await ledger.by_actor(month_start, month_end))
    rules = await rules_store.list_rules()
    for rule in rules:  # a rule's own scope shows even before it used anything
        if rule.key != ALL:
            merged.setdefault((rule.scope, rule.key), {"tenant": rule.tenant_ref, "day": (0, 0.0), "month": (0, 0.0)})
    rows = []
    for (scope, key), entry in sorted(merged.items()):
        if isinstance(grant, GovernanceScope) and not grant.covers(entry["tenant"]):
            continue
        limit = limit_for(budget, rules, check_scope(scope), key, entry["tenant"])
        rows.append(
            {
                "scope": scope,
                "key": key,
                "tenantRef": entry["tenant"],
                "dayTokens": entry["day"][0],
                "dayUsd": entry["day"][1],
                "monthTokens": entry["month"][0],
                "monthUsd": entry["month"][1],
                "limit": _limit_json(limit, day, entry),
            }
        )
    return JSONResponse({"day": day, "month": day[:7], "defaults": _defaults(budget), "rows": rows})


def add_routes(router: APIRouter, config: AgentConfig) -> None:
    """Mount the budget routes with the governance routes, when budgets are on (`AgentConfig.budget`)."""
    _, gated, _ = governance_mount_plan(config)
    if not gated or config.budget is None:
        return
    tags: list[str | Any] = ["governance"]
    responses = error_responses(403, 404, 422)
    router.get("/governance/budgets", responses=responses, tags=tags)(list_budgets)
    router.get("/governance/budgets/usage", responses=responses, tags=tags)(budget_usage)
    router.put("/governance/budgets/{scope}/{key:path}", responses=responses, tags=tags)(put_budget)
    router.delete("/governance/budgets/{scope}/{key:path}", responses=responses, tags=tags)(delete_budget)
