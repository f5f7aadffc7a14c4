"""run owner leases (process heartbeats) and expiring budget reservations

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01 08:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "agent_process",
        sa.Column("id", sa.String(length=255), nullable=False),
        sa.Column("host", sa.String(length=255), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("started_at", sa.BigInteger(), nullable=False),
        sa.Column("heartbeat_at", sa.BigInteger(), nullable=False),
        sa.Column("expires_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_agent_process_expires", "agent_process", ["expires_at"])
    op.create_table(
        "agent_run_owner",
        sa.Column("run_id", sa.String(length=255), nullable=False),
        sa.Column("owner_id", sa.String(length=255), nullable=False),
        sa.Column("claimed_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("run_id"),
    )
    op.create_index("ix_agent_run_owner_owner", "agent_run_owner", ["owner_id"])
    with op.batch_alter_table("agent_budget_reservation") as batch:
        batch.add_column(sa.Column("run_id", sa.String(length=255), nullable=True))
        batch.add_column(sa.Column("expires_at", sa.BigInteger(), nullable=True))
        batch.create_index("ix_agent_budget_reservation_run", ["run_id"])
        batch.create_index("ix_agent_budget_reservation_expires", ["expires_at"])


def downgrade() -> None:
    with op.batch_alter_table("agent_budget_reservation") as batch:
        batch.drop_index("ix_agent_budget_reservation_expires")
        batch.drop_index("ix_agent_budget_reservation_run")
        batch.drop_column("expires_at")
        batch.drop_column("run_id")
    op.drop_index("ix_agent_run_owner_owner", table_name="agent_run_owner")
    op.drop_table("agent_run_owner")
    op.drop_index("ix_agent_process_expires", table_name="agent_process")
    op.drop_table("agent_process")
