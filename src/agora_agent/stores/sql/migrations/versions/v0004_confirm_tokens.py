"""confirmed-tool tokens: one row per used token (single use across processes)

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01 08:15:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "agent_confirm_token",
        sa.Column("token_id", sa.String(length=64), nullable=False),
        sa.Column("tool_name", sa.String(length=255), nullable=False),
        sa.Column("actor_ref", sa.String(length=255), nullable=False),
        sa.Column("expires_at", sa.BigInteger(), nullable=False),
        sa.Column("used_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("token_id"),
    )
    op.create_index("ix_agent_confirm_token_expires", "agent_confirm_token", ["expires_at"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_agent_confirm_token_expires", table_name="agent_confirm_token")
    op.drop_table("agent_confirm_token")
