"""SQL persistence on SQLite (aiosqlite, the embedded default) or PostgreSQL (asyncpg).

    backend = await open_sql_backend("sqlite:///agora.db")   # or "postgresql+asyncpg://user@host/db"
    backend.store, backend.pricing, backend.queries, backend.quota(Budget(...))
    await backend.close()

Schema: `tables.py` (SQLAlchemy Core); migrations: `migrations/` (Alembic, driven by `migrate.py` and
`agora-agent db upgrade|downgrade|current`).

The names below are imported on first use (PEP 562), so importing one submodule (`engine`, `tables`,
`price_catalog` …) does not load every store: `agora-agent --help` and the `db` commands stay light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agora_agent._lazy import lazy_exports

if TYPE_CHECKING:
    from agora_agent.stores.sql.backend import SqlBackend, open_sql_backend
    from agora_agent.stores.sql.engine import create_engine_from_url, mask_url, normalize_url
    from agora_agent.stores.sql.migrate import prepare_schema
    from agora_agent.stores.sql.pricing import SqlPricingStore
    from agora_agent.stores.sql.queries import SqlGovernanceQueries
    from agora_agent.stores.sql.quota import SqlQuotaStore
    from agora_agent.stores.sql.store import SqlAgentStore

__all__ = [
    "SqlAgentStore",
    "SqlBackend",
    "SqlGovernanceQueries",
    "SqlPricingStore",
    "SqlQuotaStore",
    "create_engine_from_url",
    "mask_url",
    "normalize_url",
    "open_sql_backend",
    "prepare_schema",
]

_MODULE_OF = {
    "SqlAgentStore": "store",
    "SqlBackend": "backend",
    "SqlGovernanceQueries": "queries",
    "SqlPricingStore": "pricing",
    "SqlQuotaStore": "quota",
    "create_engine_from_url": "engine",
    "mask_url": "engine",
    "normalize_url": "engine",
    "open_sql_backend": "backend",
    "prepare_schema": "migrate",
}


__getattr__ = lazy_exports(__name__, {name: f"{__name__}.{module}" for name, module in _MODULE_OF.items()}, globals())


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
