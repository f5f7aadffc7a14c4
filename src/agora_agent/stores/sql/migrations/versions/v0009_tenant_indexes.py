"""tenant-scoped governance: (tenant_ref, time) indexes on the tables a tenant admin's queries filter

A tenant admin's governance queries filter every row on `tenant_ref IN (...)` and a time range (or order by
time): spend and the budget ledger on `agent_token_usage.created_at`, tool statistics and the audit on
`agent_tool_call.created_at`, the runs list and reliability on `agent_run.started_at`, the recent threads on
`agent_thread.updated_at`. Without these the database scans the whole date range of every tenant.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01 13:40:00
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

INDEXES = (
    ("ix_agent_token_usage_tenant_created", "agent_token_usage", ["tenant_ref", "created_at"]),
    ("ix_agent_tool_call_tenant_created", "agent_tool_call", ["tenant_ref", "created_at"]),
    ("ix_agent_run_tenant_started", "agent_run", ["tenant_ref", "started_at"]),
    ("ix_agent_thread_tenant_updated", "agent_thread", ["tenant_ref", "updated_at"]),
)


def upgrade() -> None:
    for name, table, columns in INDEXES:
        op.create_index(name, table, columns, unique=False)


def downgrade() -> None:
    for name, table, _ in reversed(INDEXES):
        op.drop_index(name, table_name=table)
