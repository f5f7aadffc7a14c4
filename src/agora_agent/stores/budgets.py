"""Which budget stores a service gets: the memory twins beside a memory store, the SQL ones beside a SQL store."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agora_agent.governance.budgets import BudgetRuleStore, MemoryBudgetRuleStore, MemoryUsageLedger, UsageLedger
from agora_agent.governance.quota import Budget, MemoryQuotaStore, QuotaStore

__all__ = ["BudgetStores", "open_budget_stores"]


@dataclass(frozen=True, kw_only=True, slots=True)
class BudgetStores:
    """The quota store enforcing the budgets, the stored rules it reads, and the ledger it is seeded from."""

    quota: QuotaStore
    rules: BudgetRuleStore
    ledger: UsageLedger


def open_budget_stores(budget: Budget, *, engine: Any = None, store: Any = None) -> BudgetStores | None:
    """SQL stores on `engine` (an AsyncEngine) when given; memory stores over a `MemoryAgentStore` otherwise.

    None for a custom agent store without an engine: budgets then stay the config's (`Budget` alone)."""
    if engine is not None:
        from agora_agent.stores.sql.budgets import SqlBudgetRuleStore, SqlUsageLedger
        from agora_agent.stores.sql.quota import SqlQuotaStore

        rules: BudgetRuleStore = SqlBudgetRuleStore(engine)
        quota = SqlQuotaStore(engine, budget, rules=rules)
        return BudgetStores(quota=quota, rules=rules, ledger=SqlUsageLedger(engine))
    from agora_agent.stores.memory import MemoryAgentStore

    if not isinstance(store, MemoryAgentStore):
        return None
    memory_rules = MemoryBudgetRuleStore()
    ledger = MemoryUsageLedger(store)
    return BudgetStores(
        quota=MemoryQuotaStore(budget, rules=memory_rules, ledger=ledger), rules=memory_rules, ledger=ledger
    )
