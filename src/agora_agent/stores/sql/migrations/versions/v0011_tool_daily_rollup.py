"""daily per-tool rollup kept by triggers; the run actor index carries the run id

`per_tool_stats` aggregated every `agent_tool_call` row of its range (393 ms for 7 days, 626 ms over all
history at 2.5M tool calls on PostgreSQL): it now sums `agent_tool_daily` (UTC day x tool name x tool type:
calls, failed, rejected, ms_sum, ms_count), which triggers on `agent_tool_call` keep in step on every insert,
status / execution_ms change and delete (stores/sql/tool_rollup.py), backfilled here from the existing calls.

`pending_approvals(actor=...)` joined every pending approval to its run to resolve the actor (299 ms worst at
10k pending approvals); it now joins the actor's runs, which `ix_agent_run_actor_started` can list index-only
once it holds the run id too (same index, one more column; the runs list by actor reads it as before).

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01 23:55:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from agora_agent.stores.sql.tool_rollup import TOOL_REBUILD_SQL, tool_daily_ddl, tool_daily_drop_ddl

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "agent_tool_daily",
        sa.Column("day", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("tool_name", sa.String(length=255), nullable=False),
        sa.Column("tool_type", sa.String(length=32), nullable=False),
        sa.Column("calls", sa.BigInteger(), nullable=False),
        sa.Column("failed", sa.BigInteger(), nullable=False),
        sa.Column("rejected", sa.BigInteger(), nullable=False),
        sa.Column("ms_sum", sa.BigInteger(), nullable=False),
        sa.Column("ms_count", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("day", "tool_name", "tool_type"),
    )
    dialect = op.get_bind().dialect.name
    if dialect == "postgresql":  # no tool call changes between the backfill and the triggers
        op.execute("LOCK TABLE agent_tool_call IN SHARE ROW EXCLUSIVE MODE")
    op.execute(TOOL_REBUILD_SQL)
    for statement in tool_daily_ddl(dialect):
        op.execute(statement)
    op.drop_index("ix_agent_run_actor_started", table_name="agent_run")
    op.create_index("ix_agent_run_actor_started", "agent_run", ["actor_ref", "started_at", "id"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_agent_run_actor_started", table_name="agent_run")
    op.create_index("ix_agent_run_actor_started", "agent_run", ["actor_ref", "started_at"], unique=False)
    for statement in tool_daily_drop_ddl(op.get_bind().dialect.name):
        op.execute(statement)
    op.drop_table("agent_tool_daily")
