"""The governance audit log: changes people make to how the agent is governed (prices, re-pricing, budgets).

Tool calls and approvals have their own audit rows (`agent_tool_call`, `agent_approval`); this log is for
configuration changes made at run time through the API, the console or the CLI: who, what, when, and
the before/after values. `MemoryAuditLog` here, `SqlAuditLog` in stores/sql/audit.py.

`detail` keys are Python names (`before_usd`); the HTTP audit export writes them in camelCase. Rows
written by earlier versions spelled two of them in camelCase; `stored_detail` reads both spellings.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol, runtime_checkable

__all__ = ["AuditEntry", "AuditLog", "MemoryAuditLog", "stored_detail"]

# The detail keys older versions stored in camelCase (the `prices.reprice` entry) -> their Python names.
_LEGACY_DETAIL_KEYS = {"beforeUsd": "before_usd", "afterUsd": "after_usd"}


def stored_detail(detail: Mapping[str, Any] | None) -> dict[str, Any]:
    """A stored entry's `detail` under Python names, whichever version wrote it."""
    return {_LEGACY_DETAIL_KEYS.get(key, key): value for key, value in (detail or {}).items()}


@dataclass(frozen=True, kw_only=True, slots=True)
class AuditEntry:
    """One change: `action` such as `price.set`, `prices.reprice`, `budget.set`; `detail` is JSON."""

    actor_ref: str
    action: str
    target: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)
    at: datetime = field(default_factory=lambda: datetime.now(UTC))
    id: str = field(default_factory=lambda: uuid.uuid4().hex)


@runtime_checkable
class AuditLog(Protocol):
    """Append-only; `entries` is oldest first within [since, until] (either bound optional)."""

    async def record(self, entry: AuditEntry) -> None: ...

    async def entries(
        self, *, since: datetime | None = None, until: datetime | None = None, limit: int = 1000
    ) -> list[AuditEntry]: ...


class MemoryAuditLog:
    """In-process audit log (the memory store's twin)."""

    def __init__(self) -> None:
        self._entries: list[AuditEntry] = []

    async def record(self, entry: AuditEntry) -> None:
        self._entries.append(entry)

    async def entries(
        self, *, since: datetime | None = None, until: datetime | None = None, limit: int = 1000
    ) -> list[AuditEntry]:
        rows = [e for e in self._entries if (since is None or e.at >= since) and (until is None or e.at <= until)]
        return rows[:limit]
