"""daily usage rollup: the ledger summed per UTC day, actor and model (backfilled from the ledger)

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30 10:43:49
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# 86_400_000_000 microseconds per day; integer division on SQLite and PostgreSQL alike.
BACKFILL = """
INSERT INTO agent_usage_daily (day, actor_ref, model_id, requests, input_tokens, output_tokens, reported_usd,
    unreported_input_tokens, unreported_output_tokens, unreported_cache_read_tokens, unreported_cache_write_tokens)
SELECT created_at / 86400000000, actor_ref, model_id, count(*), sum(input_tokens), sum(output_tokens),
       coalesce(sum(cost_usd), 0),
       sum(CASE WHEN cost_usd IS NULL THEN input_tokens ELSE 0 END),
       sum(CASE WHEN cost_usd IS NULL THEN output_tokens ELSE 0 END),
       sum(CASE WHEN cost_usd IS NULL THEN coalesce(cache_read_tokens, 0) ELSE 0 END),
       sum(CASE WHEN cost_usd IS NULL THEN coalesce(cache_write_tokens, 0) ELSE 0 END)
FROM agent_token_usage
GROUP BY created_at / 86400000000, actor_ref, model_id
"""


def upgrade() -> None:
    op.create_table(
        "agent_usage_daily",
        sa.Column("day", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("actor_ref", sa.String(length=255), nullable=False),
        sa.Column("model_id", sa.String(length=255), nullable=False),
        sa.Column("requests", sa.BigInteger(), nullable=False),
        sa.Column("input_tokens", sa.BigInteger(), nullable=False),
        sa.Column("output_tokens", sa.BigInteger(), nullable=False),
        sa.Column("reported_usd", sa.Float(), nullable=False),
        sa.Column("unreported_input_tokens", sa.BigInteger(), nullable=False),
        sa.Column("unreported_output_tokens", sa.BigInteger(), nullable=False),
        sa.Column("unreported_cache_read_tokens", sa.BigInteger(), nullable=False),
        sa.Column("unreported_cache_write_tokens", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("day", "actor_ref", "model_id"),
    )
    op.execute(BACKFILL)


def downgrade() -> None:
    op.drop_table("agent_usage_daily")
