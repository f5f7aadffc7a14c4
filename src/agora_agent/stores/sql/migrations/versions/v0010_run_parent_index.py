"""the run inspector's delegated runs: a partial index on agent_run.parent_run_id

`child_runs(run_id)` — every run inspector (`GET /agent/governance/runs/{id}/inspect`, and again for each
delegated run it shows) — filters `agent_run` on `parent_run_id`, which had no index: a sequential scan of every
run (98 ms at 2.5M runs on PostgreSQL here, 0.5 ms with this index). Partial (`parent_run_id IS NOT NULL`), so a
top-level run, most of them, adds no entry and no write cost.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01 23:30:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index(
        "ix_agent_run_parent",
        "agent_run",
        ["parent_run_id", "started_at"],
        unique=False,
        sqlite_where=sa.text("parent_run_id IS NOT NULL"),
        postgresql_where=sa.text("parent_run_id IS NOT NULL"),
    )


def downgrade() -> None:
    op.drop_index("ix_agent_run_parent", table_name="agent_run")
