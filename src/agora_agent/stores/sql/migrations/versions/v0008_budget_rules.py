"""budgets as data: stored budget rules and raised threshold alerts

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01 10:45:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "agent_budget_rule",
        sa.Column("scope", sa.String(length=16), nullable=False),
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("period", sa.String(length=8), nullable=False),
        sa.Column("tokens", sa.BigInteger(), nullable=True),
        sa.Column("usd", sa.Float(), nullable=True),
        sa.Column("thresholds", sa.JSON(), nullable=False),
        sa.Column("tenant_ref", sa.String(length=255), nullable=True),
        sa.Column("updated_by", sa.String(length=255), nullable=True),
        sa.Column("updated_at", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint("scope", "key"),
    )
    op.create_table(
        "agent_budget_alert",
        sa.Column("scope", sa.String(length=16), nullable=False),
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("period", sa.String(length=16), nullable=False),
        sa.Column("unit", sa.String(length=8), nullable=False),
        sa.Column("threshold_bp", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("raised_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("scope", "key", "period", "unit", "threshold_bp"),
    )


def downgrade() -> None:
    op.drop_table("agent_budget_alert")
    op.drop_table("agent_budget_rule")
