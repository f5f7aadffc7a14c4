"""SQL persistence on SQLite (aiosqlite, the embedded default) or PostgreSQL (asyncpg).

    backend = await open_sql_backend("sqlite:///agora.db")   # or "postgresql+asyncpg://user@host/db"
    backend.store, backend.pricing, backend.queries, backend.quota(Budget(...))
    await backend.close()

Schema: `tables.py` (SQLAlchemy Core); migrations: `migrations/` (Alembic, driven by `migrate.py` and
`agora-agent db upgrade|downgrade|current`).
"""

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
