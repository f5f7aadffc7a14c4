"""spend as history: usage rows keep the price they were priced with; a governance audit log

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01 08:00:00

Existing rows keep their cost as it was (provider-reported or unpriced); `agora-agent prices reprice
--since …` prices them deliberately.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("agent_token_usage") as batch:
        batch.add_column(sa.Column("price_id", sa.String(length=255), nullable=True))
        batch.add_column(sa.Column("cost_source", sa.String(length=16), nullable=True))
    op.execute("UPDATE agent_token_usage SET cost_source = 'reported' WHERE cost_usd IS NOT NULL")
    op.create_table(
        "agent_audit_log",
        sa.Column("id", sa.String(length=255), nullable=False),
        sa.Column("at", sa.BigInteger(), nullable=False),
        sa.Column("actor_ref", sa.String(length=255), nullable=False),
        sa.Column("action", sa.String(length=64), nullable=False),
        sa.Column("target", sa.String(length=255), nullable=True),
        sa.Column("detail", sa.JSON(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_agent_audit_log_at", "agent_audit_log", ["at"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_agent_audit_log_at", table_name="agent_audit_log")
    op.drop_table("agent_audit_log")
    with op.batch_alter_table("agent_token_usage") as batch:
        batch.drop_column("cost_source")
        batch.drop_column("price_id")
