"""Budgets as data: per-tenant and per-actor rules stored beside the runs, edited at run time, audited.

A `BudgetRule` limits one actor (`scope="actor"`, `key=<actor id>`) or one tenant (`scope="tenant"`,
`key=<tenant ref>`) — or every actor / every tenant with `key="*"` — in tokens and/or USD per UTC day or
month. The `Budget` of `AgentConfig(budget=…)` gives the defaults; for each scope the most specific rule
wins:

    actor:  rule("actor", actor.id)      > rule("actor", "*")  > Budget(tokens_per_actor=…, usd_per_actor=…)
    tenant: rule("tenant", tenant_ref)   > rule("tenant", "*") > Budget(tokens_per_tenant=…, usd_per_tenant=…)

A rule with neither `tokens` nor `usd` exempts its scope from the default; a limit of 0 blocks it.
USD limits count the cost recorded with each usage row (the price in force when it was recorded).

Effective at once: the quota check at the start of every chat (and of every run) reads the rules from
the store, so an edit in one process is enforced by every process on the same database at the next
chat — no restart, no cache to invalidate. Model steps inside a run reuse the limits that run's check
read (for at most `LIMITS_TTL` seconds).

Each rule has `thresholds` (fractions of its limits, default 80 %): the step whose usage crosses one
raises `BudgetThresholdReached` once per period (the claim is stored, so several processes, or a
durable replay, still raise it once).

`MemoryBudgetRuleStore` and `MemoryUsageLedger` here; the SQL twins in `stores/sql/budgets.py`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from agora_agent.actors import Actor
from agora_agent.errors import InvalidRequestError
from agora_agent.governance.audit import AuditEntry, AuditLog

if TYPE_CHECKING:
    from agora_agent.governance.quota import Budget
    from agora_agent.records import UsageRecord

__all__ = [
    "ALL",
    "LIMITS_TTL",
    "BudgetRule",
    "BudgetRuleStore",
    "Limit",
    "LimitCache",
    "MemoryBudgetRuleStore",
    "MemoryUsageLedger",
    "UsageLedger",
    "UsageTotals",
    "candidate_keys",
    "check_key",
    "check_scope",
    "delete_budget_rule",
    "effective_limits",
    "limit_for",
    "parse_rule",
    "period_bounds",
    "period_of",
    "put_budget_rule",
    "resets_at",
]

ALL = "*"
"""The `key` of a rule for every actor (or every tenant) without a rule of its own."""

LIMITS_TTL = 30.0
"""Seconds a run's model steps reuse the limits its quota check read before reading them again."""

Scope = Literal["actor", "tenant"]
Period = Literal["day", "month"]
_SCOPES: tuple[str, ...] = ("actor", "tenant")
_PERIODS: tuple[str, ...] = ("day", "month")
_MAX_THRESHOLDS = 5


@dataclass(frozen=True, kw_only=True, slots=True)
class BudgetRule:
    """One stored budget. `tenant_ref`: the tenant an actor rule belongs to (who may edit it); for a
    tenant rule it is the key itself. `updated_by`/`updated_at` are stamped by the store."""

    scope: Scope
    key: str
    period: Period = "day"
    tokens: int | None = None
    usd: float | None = None
    thresholds: tuple[float, ...] = (0.8,)
    tenant_ref: str | None = None
    updated_by: str | None = None
    updated_at: datetime | None = None

    def to_dict(self) -> dict[str, Any]:
        """The rule as JSON-ready values under Python names (the web layer writes the keys in camelCase)."""
        return {
            "scope": self.scope,
            "key": self.key,
            "period": self.period,
            "tokens": self.tokens,
            "usd": self.usd,
            "thresholds": list(self.thresholds),
            "tenant_ref": self.tenant_ref,
            "updated_by": self.updated_by,
            "updated_at": self.updated_at.isoformat() if self.updated_at else None,
        }

    def audit_view(self) -> dict[str, Any]:
        """What the audit row keeps of a rule (before/after)."""
        return {"period": self.period, "tokens": self.tokens, "usd": self.usd, "thresholds": list(self.thresholds)}


def _fail(message: str, field_name: str) -> InvalidRequestError:
    return InvalidRequestError(message, detail={"field": field_name})


def check_scope(scope: str) -> Scope:
    """`scope` as a `Scope`, or InvalidRequestError (HTTP 422) naming the accepted values."""
    if scope not in _SCOPES:
        raise _fail(f"unknown budget scope {scope!r}: use 'actor' or 'tenant'", "scope")
    return "actor" if scope == "actor" else "tenant"


def check_key(key: str) -> str:
    """A non-empty key of at most 255 characters without control characters."""
    if not isinstance(key, str) or not key.strip() or len(key) > 255 or any(ord(c) < 32 for c in key):
        raise _fail("a budget key is an actor id or tenant ref (1 to 255 printable characters), or '*'", "key")
    return key


def _limit_value(body: dict[str, Any], name: str, *, integer: bool) -> Any:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _fail(f"'{name}' must be a number (or null for no {name} limit)", name)
    if integer and (not float(value).is_integer() or (isinstance(value, float) and not math.isfinite(value))):
        raise _fail(f"'{name}' must be a whole number of tokens", name)
    if not math.isfinite(float(value)) or value < 0:
        raise _fail(f"'{name}' must be 0 or more (0 blocks the {name.rstrip('s')} budget)", name)
    if integer and value > 2**62:
        raise _fail(f"'{name}' is too large", name)
    return int(value) if integer else float(value)


def _thresholds(body: dict[str, Any]) -> tuple[float, ...]:
    raw = body.get("thresholds", [0.8])
    if raw is None:
        return ()
    if not isinstance(raw, list) or len(raw) > _MAX_THRESHOLDS:
        raise _fail(f"'thresholds' must be a list of at most {_MAX_THRESHOLDS} fractions such as [0.8]", "thresholds")
    values: list[float] = []
    for t in raw:
        if isinstance(t, bool) or not isinstance(t, int | float) or not math.isfinite(t) or not 0 < t <= 1:
            raise _fail("each threshold is a fraction of the limit above 0 and at most 1 (0.8 = 80 %)", "thresholds")
        values.append(float(t))
    return tuple(sorted(set(values)))


_FIELDS = frozenset({"period", "tokens", "usd", "thresholds", "tenant_ref", "scope", "key"})


def parse_rule(scope: str, key: str, body: Any, *, spell: Callable[[str], str] = str) -> BudgetRule:
    """A `BudgetRule` from a rule body `{period?, tokens?, usd?, thresholds?, tenant_ref?}` (Python names);
    InvalidRequestError (HTTP 422, `{error}` saying what is wrong, `detail.field`) otherwise. `spell` writes a
    field's name in those messages as the caller spelled it (the HTTP route passes its camelCase `wire_name`)."""
    checked_scope = check_scope(scope)
    check_key(key)
    if not isinstance(body, dict):
        raise _fail('the body must be a JSON object such as {"period": "day", "tokens": 100000}', "body")
    unknown = sorted(set(body) - _FIELDS)
    if unknown:
        names = [spell(str(name)) for name in unknown]
        raise _fail(
            f"unknown field(s) {', '.join(names)}: use period, tokens, usd, thresholds, {spell('tenant_ref')}",
            names[0],
        )
    period = body.get("period", "day")
    if period not in _PERIODS:
        raise _fail("'period' must be 'day' or 'month'", "period")
    tenant = body.get("tenant_ref")
    if tenant is not None and (not isinstance(tenant, str) or not tenant or len(tenant) > 255):
        tenant_field = spell("tenant_ref")
        raise _fail(f"'{tenant_field}' must be a tenant ref (1 to 255 characters) or null", tenant_field)
    if checked_scope == "tenant":
        tenant = None if key == ALL else key
    return BudgetRule(
        scope=checked_scope,
        key=key,
        period="month" if period == "month" else "day",
        tokens=_limit_value(body, "tokens", integer=True),
        usd=_limit_value(body, "usd", integer=False),
        thresholds=_thresholds(body),
        tenant_ref=tenant,
    )


# -- periods -------------------------------------------------------------------------------------------


def period_of(period: str, day: str) -> str:
    """The counter period a UTC day (`YYYY-MM-DD`) falls in: the day itself, or `YYYY-MM`."""
    return day[:7] if period == "month" else day


def period_bounds(period_key: str) -> tuple[datetime, datetime]:
    """[start, end] (inclusive, UTC) of a period key (`YYYY-MM-DD` or `YYYY-MM`)."""
    if len(period_key) == 7:
        start = datetime.strptime(period_key, "%Y-%m").replace(tzinfo=UTC)
        following = (start + timedelta(days=32)).replace(day=1)
    else:
        start = datetime.strptime(period_key, "%Y-%m-%d").replace(tzinfo=UTC)
        following = start + timedelta(days=1)
    return start, following - timedelta(microseconds=1)


def resets_at(period_key: str) -> datetime:
    """When a period's budget comes back (the next period's first instant, UTC)."""
    return period_bounds(period_key)[1] + timedelta(microseconds=1)


# -- effective limits -------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True, slots=True)
class Limit:
    """What applies to one scope of one actor: from a rule (`source` = `rule:<scope>:<key>`) or the config."""

    scope: Scope
    key: str
    period: Period
    tokens: int | None
    usd: float | None
    thresholds: tuple[float, ...]
    source: str

    def counter(self, day: str) -> tuple[str, str, str]:
        """The (scope, key, period key) counter this limit is enforced on for a UTC day."""
        return (self.scope, self.key, period_of(self.period, day))


_DEFAULTS: dict[tuple[int, str, str], tuple[Budget, Limit | None]] = {}
"""The config default limit of a scope, made once per (budget, scope, key): every chat's quota check asks for
it, and the same `Limit` object each time keeps the limits tuple comparable by identity (`LimitCache`)."""


def _default(budget: Budget, scope: Scope, key: str) -> Limit | None:
    memo_key = (id(budget), scope, key)
    known = _DEFAULTS.get(memo_key)
    if known is not None and known[0] is budget:
        return known[1]
    limit = _make_default(budget, scope, key)
    if len(_DEFAULTS) >= 10_000:  # bounded: a long-lived process sees many actors
        _DEFAULTS.clear()
    _DEFAULTS[memo_key] = (budget, limit)  # the budget is kept, so its id stays its own
    return limit


def _make_default(budget: Budget, scope: Scope, key: str) -> Limit | None:
    tokens = budget.tokens_per_actor if scope == "actor" else budget.tokens_per_tenant
    usd = budget.usd_per_actor if scope == "actor" else budget.usd_per_tenant
    if tokens is None and usd is None:
        return None
    return Limit(
        scope=scope,
        key=key,
        period=budget.period,
        tokens=tokens,
        usd=usd,
        thresholds=budget.thresholds,
        source="config",
    )


def _from_rule(rule: BudgetRule, key: str) -> Limit | None:
    if rule.tokens is None and rule.usd is None:
        return None  # an exemption: no limit for this scope, whatever the default says
    return Limit(
        scope=rule.scope,
        key=key,
        period=rule.period,
        tokens=rule.tokens,
        usd=rule.usd,
        thresholds=rule.thresholds,
        source=f"rule:{rule.scope}:{rule.key}",
    )


def _applies(rule: BudgetRule, scope: Scope, key: str, tenant_ref: str | None) -> bool:
    # An actor rule bound to a tenant (set by that tenant's admin) applies only while the actor is in it.
    return rule.scope == scope and rule.key == key and (rule.tenant_ref is None or rule.tenant_ref == tenant_ref)


def limit_for(
    budget: Budget, rules: Sequence[BudgetRule], scope: Scope, key: str, tenant_ref: str | None = None
) -> Limit | None:
    """The limit of one actor (in `tenant_ref`) or one tenant: its own rule, else the `*` rule, else the config."""
    tenant = key if scope == "tenant" else tenant_ref
    rule = next((r for r in rules if _applies(r, scope, key, tenant)), None)
    rule = rule or next((r for r in rules if r.scope == scope and r.key == ALL), None)
    return _from_rule(rule, key) if rule is not None else _default(budget, scope, key)


def effective_limits(budget: Budget, rules: Sequence[BudgetRule], actor: Actor) -> tuple[Limit, ...]:
    """The limits that apply to `actor` (and its tenant): the most specific rule per scope, else the config."""
    found = [limit_for(budget, rules, "actor", actor.id, actor.tenant_ref)]
    if actor.tenant_ref:
        found.append(limit_for(budget, rules, "tenant", actor.tenant_ref))
    return tuple(limit for limit in found if limit is not None)


# -- stores ---------------------------------------------------------------------------------------------


@runtime_checkable
class BudgetRuleStore(Protocol):
    """Where the rules live. `put` and `delete` return the rule they replaced or removed (for the audit)."""

    async def list_rules(self) -> list[BudgetRule]: ...

    async def get(self, scope: str, key: str) -> BudgetRule | None: ...

    async def rules_for(self, actor: Actor) -> list[BudgetRule]:
        """The rules that could apply to `actor`: its own, its tenant's, and the `*` rules."""
        ...

    async def put(self, rule: BudgetRule) -> BudgetRule | None: ...

    async def delete(self, scope: str, key: str) -> BudgetRule | None: ...


def candidate_keys(actor: Actor) -> set[tuple[str, str]]:
    wanted = {("actor", actor.id), ("actor", ALL), ("tenant", ALL)}
    if actor.tenant_ref:
        wanted.add(("tenant", actor.tenant_ref))
    return wanted


class MemoryBudgetRuleStore:
    """In-process rules (the memory store's twin)."""

    def __init__(self) -> None:
        self._rules: dict[tuple[str, str], BudgetRule] = {}

    async def list_rules(self) -> list[BudgetRule]:
        return sorted(self._rules.values(), key=lambda r: (r.scope, r.key))

    async def get(self, scope: str, key: str) -> BudgetRule | None:
        return self._rules.get((scope, key))

    async def rules_for(self, actor: Actor) -> list[BudgetRule]:
        wanted = candidate_keys(actor)
        return [r for k, r in self._rules.items() if k in wanted]

    async def put(self, rule: BudgetRule) -> BudgetRule | None:
        previous = self._rules.get((rule.scope, rule.key))
        self._rules[(rule.scope, rule.key)] = rule
        return previous

    async def delete(self, scope: str, key: str) -> BudgetRule | None:
        return self._rules.pop((scope, key), None)


@dataclass(frozen=True, slots=True)
class UsageTotals:
    """Tokens (input + output) and recorded USD of one actor over a period (the ledger's view)."""

    actor_ref: str
    tenant_ref: str | None
    tokens: int
    usd: float


@runtime_checkable
class UsageLedger(Protocol):
    """The usage ledger as budgets read it: the truth a counter is seeded from, and the admins' usage view."""

    async def totals(self, scope: str, key: str, start: datetime, end: datetime) -> tuple[int, float]:
        """(tokens, usd) recorded for an actor or tenant with start <= created_at <= end."""
        ...

    async def by_actor(self, start: datetime, end: datetime) -> list[UsageTotals]:
        """One row per (actor, tenant) with usage in [start, end]."""
        ...


class MemoryUsageLedger:
    """`UsageLedger` over a `MemoryAgentStore`'s usage rows."""

    def __init__(self, store: Any) -> None:
        self._store = store  # a MemoryAgentStore (all_usage())

    def _rows(self, start: datetime, end: datetime) -> list[UsageRecord]:
        return [u for u in self._store.all_usage() if start <= u.created_at <= end]

    def totals_now(self, scope: str, key: str, start: datetime, end: datetime) -> tuple[int, float]:
        """`totals` without awaiting (the memory quota store seeds inside its atomic section)."""
        rows = [u for u in self._rows(start, end) if (u.actor_ref if scope == "actor" else u.tenant_ref) == key]
        return sum(u.input_tokens + u.output_tokens for u in rows), sum(u.cost_usd or 0.0 for u in rows)

    async def totals(self, scope: str, key: str, start: datetime, end: datetime) -> tuple[int, float]:
        return self.totals_now(scope, key, start, end)

    async def by_actor(self, start: datetime, end: datetime) -> list[UsageTotals]:
        sums: dict[tuple[str, str | None], list[float]] = {}
        for u in self._rows(start, end):
            acc = sums.setdefault((u.actor_ref, u.tenant_ref), [0, 0.0])
            acc[0] += u.input_tokens + u.output_tokens
            acc[1] += u.cost_usd or 0.0
        return [UsageTotals(a, t, int(v[0]), float(v[1])) for (a, t), v in sorted(sums.items(), key=str)]


# -- the limit cache ----------------------------------------------------------------------------------------


@dataclass
class LimitCache:
    """Per-process memory of the limits each actor's last check read; `fresh` always reads the rules."""

    budget: Budget
    rules: BudgetRuleStore | None
    ttl: float = LIMITS_TTL
    _seen: dict[tuple[str, str | None], tuple[float, tuple[Limit, ...]]] = field(default_factory=dict)

    async def fresh(self, actor: Actor) -> tuple[Limit, ...]:
        """Read the rules now (every quota check does: edits are effective at the next chat)."""
        rules = await self.rules.rules_for(actor) if self.rules is not None else []
        return self.remember(actor, effective_limits(self.budget, rules, actor))

    def remember(self, actor: Actor, limits: tuple[Limit, ...]) -> tuple[Limit, ...]:
        """Keep the limits just read for `actor` (its run's model steps reuse them)."""
        if len(self._seen) > 10_000:  # bounded: a long-lived process sees many actors
            self._seen.clear()
        key = (actor.id, actor.tenant_ref)
        seen = self._seen.get(key)
        if seen is not None and seen[1] == limits:
            limits = seen[1]  # unchanged: keep the same tuple, so what the quota store worked out for it stays valid
        self._seen[key] = (time.monotonic(), limits)
        return limits

    async def current(self, actor: Actor) -> tuple[Limit, ...]:
        """The limits the actor's last check read, when younger than `ttl`; else read them again."""
        limits = self.cached(actor)
        return limits if limits is not None else await self.fresh(actor)

    def cached(self, actor: Actor) -> tuple[Limit, ...] | None:
        """`current` without reading the rules: None when they must be read (a model step's reservation asks
        this first, so the common case awaits nothing)."""
        if self.rules is None:
            return effective_limits(self.budget, [], actor)
        seen = self._seen.get((actor.id, actor.tenant_ref))
        if seen is not None and time.monotonic() - seen[0] < self.ttl:
            return seen[1]
        return None

    def forget(self) -> None:
        """Drop every remembered limit (this process edited a rule)."""
        self._seen.clear()


# -- edits (audited) --------------------------------------------------------------------------------------


async def put_budget_rule(
    rules: BudgetRuleStore, audit: AuditLog, rule: BudgetRule, *, actor_ref: str
) -> tuple[BudgetRule | None, BudgetRule]:
    """Store `rule` (stamped with who and when) and record `budget.set` with before/after."""
    stamped = replace(rule, updated_by=actor_ref, updated_at=datetime.now(UTC))
    previous = await rules.put(stamped)
    await audit.record(
        AuditEntry(
            actor_ref=actor_ref,
            action="budget.set",
            target=f"{rule.scope}:{rule.key}",
            detail={
                "before": previous.audit_view() if previous is not None else None,
                "after": stamped.audit_view(),
                "tenant": rule.tenant_ref,  # a tenant admin's audit export shows the changes of its tenants
            },
        )
    )
    return previous, stamped


async def delete_budget_rule(
    rules: BudgetRuleStore, audit: AuditLog, scope: str, key: str, *, actor_ref: str
) -> BudgetRule | None:
    """Remove a rule (the scope falls back to the `*` rule or the config) and record `budget.delete`."""
    previous = await rules.delete(scope, key)
    if previous is not None:
        await audit.record(
            AuditEntry(
                actor_ref=actor_ref,
                action="budget.delete",
                target=f"{scope}:{key}",
                detail={"before": previous.audit_view(), "after": None, "tenant": previous.tenant_ref},
            )
        )
    return previous
