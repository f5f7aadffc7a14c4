"""daily run rollup: runs per UTC day of their start and agent, by status (backfilled from the runs)

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01 08:40:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The same sums as stores/sql/rollup.py RUN_REBUILD_SQL (86_400_000_000 microseconds per day).
BACKFILL = """
INSERT INTO agent_run_daily (day, agent_name, runs, completed, failed, cancelled, running, settled, duration_ms)
SELECT started_at / 86400000000, coalesce(agent_name, ''), count(*),
       sum(CASE WHEN status = 'completed' THEN 1 ELSE 0 END),
       sum(CASE WHEN status = 'failed' THEN 1 ELSE 0 END),
       sum(CASE WHEN status = 'cancelled' THEN 1 ELSE 0 END),
       sum(CASE WHEN status = 'running' THEN 1 ELSE 0 END),
       sum(CASE WHEN finished_at IS NOT NULL AND status <> 'running' THEN 1 ELSE 0 END),
       sum(CASE WHEN finished_at IS NOT NULL AND status <> 'running'
                THEN finished_at / 1000 - started_at / 1000 ELSE 0 END)
FROM agent_run
GROUP BY started_at / 86400000000, coalesce(agent_name, '')
"""


def upgrade() -> None:
    op.create_table(
        "agent_run_daily",
        sa.Column("day", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("agent_name", sa.String(length=255), nullable=False),
        sa.Column("runs", sa.BigInteger(), nullable=False),
        sa.Column("completed", sa.BigInteger(), nullable=False),
        sa.Column("failed", sa.BigInteger(), nullable=False),
        sa.Column("cancelled", sa.BigInteger(), nullable=False),
        sa.Column("running", sa.BigInteger(), nullable=False),
        sa.Column("settled", sa.BigInteger(), nullable=False),
        sa.Column("duration_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("day", "agent_name"),
    )
    op.execute(BACKFILL)


def downgrade() -> None:
    op.drop_table("agent_run_daily")
